"""The ``replication`` section of a topic's stats, shaped as Pulsar's ReplicatorStats.

One entry per remote cluster: the clusters this topic replicates to (its replicators: out
rates, ``replicationBacklog``, ``connected``, ``replicationDelayInSeconds``,
``outboundConnection``) and the clusters that replicate into it (their ``pulsar.repl.*``
producers here: in rates, ``inboundConnection``). Pure: reads the objects it is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from magnetar.broker.replication.replicator import Replicator
from magnetar.broker.stats import ZERO, Rate, iso_utc


@dataclass(frozen=True, slots=True)
class Inbound:
    """A remote cluster's replicator producer connected to this topic."""

    rate: Rate
    address: str
    connected_since: float


def replication_stats(
    replicators: Mapping[str, Replicator], inbound: Mapping[str, Inbound], window_s: float
) -> dict[str, Any]:
    section: dict[str, Any] = {}
    for cluster in sorted({*replicators, *inbound}):
        replicator = replicators.get(cluster)
        source = inbound.get(cluster)
        rate_in = ZERO if source is None else source.rate
        rate_out = ZERO if replicator is None else replicator.rate_out.rate(window_s)
        section[cluster] = {
            "msgRateIn": rate_in.messages,
            "msgThroughputIn": rate_in.bytes,
            "msgRateOut": rate_out.messages,
            "msgThroughputOut": rate_out.bytes,
            "msgRateExpired": 0.0,
            "replicationBacklog": 0 if replicator is None else replicator.backlog,
            "connected": replicator is not None and replicator.connected,
            "replicationDelayInSeconds": 0 if replicator is None else replicator.delay_s(),
            "inboundConnection": None if source is None else source.address,
            "inboundConnectedSince": None if source is None else iso_utc(source.connected_since),
            "outboundConnection": None if replicator is None else replicator.outbound_connection,
            "outboundConnectedSince": None
            if replicator is None or replicator.connected_since is None
            else iso_utc(replicator.connected_since),
        }
    return section
