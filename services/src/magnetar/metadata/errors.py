"""Errors of the metadata store. Backends wrap their client's exceptions into these."""

from __future__ import annotations

from magnetar.errors import MagnetarError


class MetadataError(MagnetarError):
    """Base class of metadata store errors."""


class NotFound(MetadataError):
    """The key does not exist."""

    def __init__(self, key: str) -> None:
        super().__init__(f"metadata key {key!r} does not exist")
        self.key = key


class KeyExists(MetadataError):
    """create() found the key already there."""

    def __init__(self, key: str) -> None:
        super().__init__(f"metadata key {key!r} already exists")
        self.key = key


class BadVersion(MetadataError):
    """A compare-and-set saw another version than expected: someone else wrote first."""

    def __init__(self, key: str, expected: int, actual: int | None) -> None:
        found = "no key" if actual is None else f"version {actual}"
        super().__init__(f"metadata key {key!r}: expected version {expected}, found {found}")
        self.key = key
        self.expected = expected
        self.actual = actual


class SessionExpired(MetadataError):
    """The store's session (lease) is gone: its ephemeral keys were removed by the server.

    Whoever held ownership through ephemeral keys must stop acting as owner.
    """


class StoreUnavailable(MetadataError):
    """The metadata server could not be reached within the call's deadline."""

    retryable = True


class StoreClosed(MetadataError):
    """The store was closed; no further calls are accepted."""


class WatchOverflow(MetadataError):
    """A watcher fell too far behind and events were dropped; the watch is over.

    The consumer must re-read what it cares about (``list``) and open a new watch.
    """
