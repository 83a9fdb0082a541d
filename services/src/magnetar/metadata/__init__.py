"""The metadata store: a versioned key-value store with sessions, watches, locks and elections.

Backends: ``etcd`` (cluster), ``rocksdb`` (standalone, embedded), ``memory`` (tests). Open one
with :func:`open_store` from a URL; the key layout lives in :mod:`magnetar.metadata.keys`.
"""

from magnetar.metadata.election import LeaderElection, current_leader
from magnetar.metadata.errors import (
    BadVersion,
    KeyExists,
    MetadataError,
    NotFound,
    SessionExpired,
    StoreClosed,
    StoreUnavailable,
    WatchOverflow,
)
from magnetar.metadata.factory import open_store
from magnetar.metadata.lock import DistributedLock
from magnetar.metadata.store import (
    EventType,
    MetadataStore,
    SessionEvent,
    Versioned,
    Watch,
    WatchEvent,
    update,
)

__all__ = [
    "BadVersion",
    "DistributedLock",
    "EventType",
    "KeyExists",
    "LeaderElection",
    "MetadataError",
    "MetadataStore",
    "NotFound",
    "SessionEvent",
    "SessionExpired",
    "StoreClosed",
    "StoreUnavailable",
    "Versioned",
    "Watch",
    "WatchEvent",
    "WatchOverflow",
    "current_leader",
    "open_store",
    "update",
]
