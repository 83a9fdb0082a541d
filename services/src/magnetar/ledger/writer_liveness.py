"""Whether a ledger's writer is alive: one ephemeral key per writing client, named in its ledgers.

Each :class:`~magnetar.ledger.client.BookKeeper` client creates ``keys.ledger_writer(id)``
(ephemeral, bound to its metadata session) when it starts, and records ``id`` under
:data:`WRITER_KEY` in the custom metadata of every ledger it creates. Autorecovery follows
BookKeeper's rule with it: the last ensemble of an OPEN ledger is left to its writer (whose
ensemble change replaces a failed bookie) while the writer's key exists; once the key is gone
(the process died, or its session expired so it can no longer write metadata) the ledger may be
fenced and closed by recovery, then re-replicated.

:class:`WriterLiveness` keeps the key in place: it re-creates it when the store reports a new
session. Its one task (re-creation) is held in a :class:`~magnetar.tasks.TaskSet` and stopped
by :meth:`WriterLiveness.close`. :func:`writer_of` and :func:`writer_alive` are for readers.
"""

from __future__ import annotations

import asyncio
import uuid

from magnetar.ledger.metadata import LedgerMetadataView
from magnetar.metadata import KeyExists, MetadataError, MetadataStore, SessionEvent, keys
from magnetar.tasks import TaskSet
from magnetar.telemetry import get_logger

log = get_logger(__name__)

WRITER_KEY = "magnetar/writer"
_CALL_TIMEOUT_S = 10.0


def writer_of(metadata: LedgerMetadataView) -> str | None:
    """The id of the client that created the ledger, if it recorded one."""
    raw = metadata.custom.get(WRITER_KEY)
    return None if not raw else raw.decode(errors="replace")


async def writer_alive(store: MetadataStore, metadata: LedgerMetadataView) -> bool | None:
    """True/False when the ledger names its writer; None when it names none."""
    writer = writer_of(metadata)
    if writer is None:
        return None
    async with asyncio.timeout(_CALL_TIMEOUT_S):
        return await store.get(keys.ledger_writer(writer)) is not None


class WriterLiveness:
    """This client's writer key (see the module docstring)."""

    def __init__(self, store: MetadataStore) -> None:
        self._store = store
        self.writer_id = uuid.uuid4().hex
        self._key = keys.ledger_writer(self.writer_id)
        self._tasks = TaskSet("ledger-writer-liveness")
        store.add_session_listener(self._on_session)

    async def register(self) -> None:
        """Create the key (an earlier create whose reply was lost already made it: fine)."""
        try:
            async with asyncio.timeout(_CALL_TIMEOUT_S):
                await self._store.create(self._key, b"", ephemeral=True)
        except KeyExists:
            pass

    def _on_session(self, event: SessionEvent) -> None:
        if event is SessionEvent.RECONNECTED:
            self._tasks.spawn(self._reregister(), name="ledger-writer-reregister")

    async def _reregister(self) -> None:
        try:
            await self.register()
        except (MetadataError, TimeoutError) as exc:
            log.warning("ledger_writer_register_failed", error=repr(exc))

    async def close(self) -> None:
        """Stop re-registering and delete the key (best effort: the session ends it anyway)."""
        await self._tasks.close()
        try:
            async with asyncio.timeout(_CALL_TIMEOUT_S):
                await self._store.delete(self._key)
        except (MetadataError, TimeoutError) as exc:
            log.info("ledger_writer_unregister_failed", error=repr(exc))
