"""The MetadataStore interface: a versioned key-value store with sessions and watches.

Keys are ``/``-separated strings (build them only with :mod:`magnetar.metadata.keys`); values
are bytes. Every key carries a ``version``: 0 right after creation, +1 on every put, gone when
the key is deleted. Every read-modify-write is a compare-and-set on that version.

Each store instance owns one *session* (an etcd lease; an in-process lease for the embedded
backends) that it keeps alive in the background. Keys created with ``ephemeral=True`` are bound
to it: they vanish when the session ends, either by :meth:`MetadataStore.close` or because the
keep-alive stopped for longer than the session timeout (a crashed or partitioned process). On
expiry the store reports :class:`SessionEvent.EXPIRED` to its session listeners and then starts
a fresh session; ephemeral keys of the old session are not re-created automatically: their owner
decides (a bookie re-registers, a broker gives up ownership).

Concurrency: every method is a coroutine safe to call from any task on the store's event loop.
Blocking work (RocksDB) runs in an executor inside the backend.
"""

from __future__ import annotations

import builtins
import enum
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Protocol, Self

from magnetar.backoff import METADATA_CAS, retry
from magnetar.metadata.errors import BadVersion, KeyExists, NotFound


@dataclass(frozen=True, slots=True)
class Versioned:
    """A value with the version it was read at."""

    value: bytes
    version: int


class EventType(enum.Enum):
    PUT = "put"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change under a watched prefix. ``value``/``version`` are None for DELETE."""

    type: EventType
    key: str
    value: bytes | None
    version: int | None


class SessionEvent(enum.Enum):
    EXPIRED = "expired"  # the old session's ephemeral keys are gone
    RECONNECTED = "reconnected"  # a new session is live


class Watch(Protocol):
    """An open watch: iterate events in order; close (or leave the ``async with``) to stop.

    A watch delivers every change made after it was opened, in the store's commit order.
    """

    def __aiter__(self) -> AsyncIterator[WatchEvent]: ...

    async def close(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc: object) -> None: ...


class MetadataStore(Protocol):
    """What every backend (memory, rocksdb, etcd) provides; see the module docstring."""

    async def get(self, key: str) -> Versioned | None:
        """The value and version of ``key``, or None."""
        ...

    async def put(self, key: str, value: bytes, expected_version: int | None = None) -> int:
        """Write ``key``; return its new version.

        With ``expected_version`` the write happens only if the key exists at exactly that
        version, else :class:`BadVersion` (also when the key is missing). Without it the write
        is unconditional and creates the key (non-ephemeral) if needed.
        """
        ...

    async def create(self, key: str, value: bytes, *, ephemeral: bool = False) -> int:
        """Create ``key`` if absent (version 0), else :class:`KeyExists`."""
        ...

    async def delete(self, key: str, expected_version: int | None = None) -> None:
        """Delete ``key``: :class:`NotFound` if absent, :class:`BadVersion` on a version miss."""
        ...

    async def list(self, prefix: str) -> list[tuple[str, Versioned]]:
        """Every key starting with ``prefix`` with its value, sorted by key."""
        ...

    async def list_keys(self, prefix: str) -> builtins.list[str]:
        """Every key starting with ``prefix``, sorted."""
        ...

    def watch(self, prefix: str) -> Watch:
        """Watch every key starting with ``prefix`` from now on."""
        ...

    def add_session_listener(self, listener: Callable[[SessionEvent], None]) -> None:
        """Call ``listener`` (on the loop) when the session expires or a new one starts."""
        ...

    async def close(self) -> None:
        """End the session (its ephemeral keys vanish) and release the connection."""
        ...


def check_key(key: object) -> str:
    """Validate a key: a non-empty ``str`` starting with ``/``. Raises ValueError/TypeError."""
    if not isinstance(key, str):
        raise TypeError(f"metadata key must be str, got {type(key).__name__}")
    if not key.startswith("/") or key == "/":
        raise ValueError(f"metadata key must start with '/' and name something, got {key!r}")
    if "\x00" in key:
        raise ValueError(f"metadata key must not contain NUL: {key!r}")
    return key


def check_prefix(prefix: object) -> str:
    """Validate a prefix for list/watch: a ``str`` starting with ``/`` (``/`` means all)."""
    if not isinstance(prefix, str):
        raise TypeError(f"metadata prefix must be str, got {type(prefix).__name__}")
    if not prefix.startswith("/"):
        raise ValueError(f"metadata prefix must start with '/', got {prefix!r}")
    return prefix


def check_value(value: object) -> bytes:
    """Validate a value: exactly ``bytes``."""
    if not isinstance(value, bytes):
        raise TypeError(f"metadata value must be bytes, got {type(value).__name__}")
    return value


def check_version(version: object) -> int | None:
    """Validate an expected version: None or an int >= 0."""
    if version is None:
        return None
    if not isinstance(version, int) or isinstance(version, bool):
        raise TypeError(f"expected_version must be int or None, got {type(version).__name__}")
    if version < 0:
        raise ValueError(f"expected_version must be >= 0, got {version}")
    return version


async def update(
    store: MetadataStore,
    key: str,
    fn: Callable[[bytes | None], bytes],
    *,
    max_attempts: int = 64,
) -> Versioned:
    """Read-modify-write ``key`` with compare-and-set, retrying on conflicts.

    ``fn`` gets the current value (None if absent) and returns the new one; it may run several
    times, so it must be pure, and an exception it raises propagates at once (a caller refuses a
    missing key that way). A missing key is created (non-ephemeral). Conflicts
    (:class:`BadVersion`, :class:`KeyExists`, :class:`NotFound`) are retried after a jittered
    :data:`~magnetar.backoff.METADATA_CAS` backoff; after ``max_attempts`` the last conflict is
    raised.
    """

    async def attempt() -> Versioned:
        current = await store.get(key)
        new = fn(None if current is None else current.value)
        if current is None:
            return Versioned(new, await store.create(key, new))
        return Versioned(new, await store.put(key, new, expected_version=current.version))

    return await retry(
        attempt, METADATA_CAS, retry_on=(BadVersion, KeyExists, NotFound), max_attempts=max_attempts
    )
