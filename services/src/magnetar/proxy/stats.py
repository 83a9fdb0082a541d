"""The proxy's counters: plain integers the connections bump, read by the metrics at scrape time.

One :class:`ProxyStats` per process, built by the entry point, shared by the listener, every
client connection and the lookups. Counting costs an integer add per relayed chunk (not per
frame: the relay never looks at frames). Concurrency: on the proxy's loop only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ProxyStats:
    active_connections: int = 0  # client connections open now (lookup and relay)
    active_relays: int = 0  # of which relayed to a broker
    new_connections: int = 0  # accepted since start
    rejected_connections: int = 0  # refused: bad handshake, not a broker, broker unreachable
    bytes_from_clients: int = 0  # relayed client -> broker
    bytes_to_clients: int = 0  # relayed broker -> client
    lookups_served: int = 0  # LOOKUP answered Connect
    lookups_failed: int = 0  # LOOKUP answered Failed
    dropped_slow: int = 0  # relays dropped because a peer stopped taking bytes
