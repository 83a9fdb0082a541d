"""The bookie: BookKeeper's storage node.

A journal (append-only segments, group commit, fdatasync) makes every add durable before it
is acknowledged; ledger storage keeps entry payloads in entry logs and an index plus
per-ledger state (master key, fence, LAC, tombstones) in RocksDB; the core
(:mod:`magnetar.bookie.bookie`) enforces fencing, master keys and read-only mode; a thin gRPC
servicer exposes it; cookies and an ephemeral registration tie the process to its data dir and
the cluster's metadata. :mod:`magnetar.bookie.server` runs it all.
"""

from magnetar.bookie.bookie import Bookie
from magnetar.bookie.bookie_protocol import AddOp, Status
from magnetar.bookie.config import BookieConfig
from magnetar.bookie.journal import JournalConfig

__all__ = ["AddOp", "Bookie", "BookieConfig", "JournalConfig", "Status"]
