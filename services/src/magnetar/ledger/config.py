"""Settings of the ledger client (one frozen value, built by the process entry point)."""

from __future__ import annotations

from dataclasses import dataclass, field

from magnetar.ledger.placement import PlacementPolicy
from magnetar.tls import PemFiles


@dataclass(frozen=True)
class LedgerClientConfig:
    """Timeouts in seconds, sizes in entries / bytes. Defaults suit a LAN cluster."""

    add_timeout_s: float = 10.0  # an add batch not acked in time fails its bookie
    read_timeout_s: float = 10.0  # every unary/streaming bookie call
    metadata_timeout_s: float = 10.0  # every metadata store call
    max_pending_adds: int = 10_000  # per write handle: append() waits beyond this
    max_pending_add_bytes: int = 64 * 1024 * 1024
    max_batch_entries: int = 500  # entries coalesced into one AddRequest
    max_batch_bytes: int = 4 * 1024 * 1024
    max_inflight_batches: int = 16  # per bookie stream
    max_queued_adds: int = 100_000  # per bookie, bounded by the handles' pending limits
    ensemble_change_timeout_s: float = 30.0  # waiting for a replacement bookie
    bookie_quarantine_s: float = 30.0  # a failed bookie is not placed in ensembles this long
    read_concurrency: int = 64  # entries read at once by one read() call
    placement_policy: PlacementPolicy = PlacementPolicy.RANDOM
    bookie_wait_s: float = 10.0  # create_ledger waits this long for enough writable bookies
    # TLS to the bookies' gRPC ports (trust, and a client certificate for mutual TLS); None: plain.
    tls: PemFiles | None = None
    # A bearer token sent with every bookie call (bookkeeper_client_authentication_*); "": none.
    auth_token: str = field(default="", repr=False)
