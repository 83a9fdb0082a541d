"""The in-memory backend, for tests: ``memory://NAME``.

One :class:`MemoryMetadataServer` exists per NAME in this process (a module registry), so
several stores opened on the same URL share keys, versions, leases and watches, like several
processes sharing one etcd. Data outlives its clients (as on a real server) until
:meth:`MemoryMetadataServer.forget` drops the name.

Concurrency: every operation is one synchronous step on the event loop; see
:mod:`magnetar.metadata.embedded`. Use one server from one event loop at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from magnetar.metadata.embedded import EmbeddedMetadataStore, EmbeddedServer, Record


class DictKeyspace:
    """Records in a dict; scans sort on demand (metadata sets are small)."""

    def __init__(self) -> None:
        self._records: dict[str, Record] = {}

    def get(self, key: str) -> Record | None:
        return self._records.get(key)

    def scan(self, prefix: str) -> list[tuple[str, Record]]:
        return sorted((k, r) for k, r in self._records.items() if k.startswith(prefix))

    def write(self, puts: Sequence[tuple[str, Record]], deletes: Sequence[str]) -> None:
        for key, record in puts:
            self._records[key] = record
        for key in deletes:
            self._records.pop(key, None)

    def close(self) -> None:
        pass


class MemoryMetadataServer(EmbeddedServer):
    """The shared in-process server of one ``memory://NAME``."""

    _registry: ClassVar[dict[str, MemoryMetadataServer]] = {}

    def __init__(self, name: str) -> None:
        super().__init__(DictKeyspace())
        self.name = name

    @classmethod
    def named(cls, name: str) -> MemoryMetadataServer:
        """The server for ``name``, created on first use."""
        server = cls._registry.get(name)
        if server is None:
            server = cls._registry[name] = cls(name)
        return server

    @classmethod
    def forget(cls, name: str) -> None:
        """Drop ``name``'s server and data (tests); open clients keep the old one."""
        cls._registry.pop(name, None)


class MemoryMetadataStore(EmbeddedMetadataStore):
    """A client of a :class:`MemoryMetadataServer` with its own session."""

    @classmethod
    async def open(cls, name: str, *, session_timeout_s: float = 10.0) -> MemoryMetadataStore:
        if not name:
            raise ValueError("memory metadata store needs a name: memory://NAME")
        store = cls(
            MemoryMetadataServer.named(name),
            backend="memory",
            session_timeout_s=session_timeout_s,
        )
        await store.start()
        return store
