"""The metadata store: a versioned key-value store with sessions, watches, locks and elections.

Backends: ``etcd`` (cluster), ``rocksdb`` (standalone, embedded), ``memory`` (tests). Open one
with :func:`open_store` from a URL; the key layout lives in :mod:`magnetar.metadata.keys`.
"""

from magnetar.metadata.errors import (
    BadVersion,
    KeyExists,
    MetadataError,
    NotFound,
    SessionExpired,
    StoreClosed,
    StoreUnavailable,
)
from magnetar.metadata.store import (
    EventType,
    MetadataStore,
    SessionEvent,
    Versioned,
    Watch,
    WatchEvent,
)

__all__ = [
    "BadVersion",
    "EventType",
    "KeyExists",
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
]
