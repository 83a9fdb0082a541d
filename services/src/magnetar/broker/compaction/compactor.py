"""One compaction run over a topic: Pulsar's two-phase compactor, as an I/O shell.

Input: the previous compacted view (if any) and the topic's entries after its horizon up to the
last entry at the start of the run (the new horizon). Phase one reads them all and records each
key's latest message (:class:`~.key_map.KeyMap`); phase two reads them again and writes every
entry that keeps a message into a new ledger on the bookies (the compacted ledger, created with
the managed ledger's ensemble / write quorum / ack quorum), each as :mod:`.compacted_entry`.

State lives in the topic's durable cursor ``__compaction``: its properties name the compacted
ledger (``CompactedTopicLedger``, Pulsar's name) and its mark-delete is the horizon, so the
cursor keeps the entries not compacted yet from being trimmed. Crash safety, step by step:

1. ``magnetar.compaction.floor`` records the newest ledger id of the topic (ledger ids only
   grow), then the new ledger is created and recorded at once as ``magnetar.compaction.orphan``;
2. entries are written, the ledger is closed;
3. one cursor write switches: ``CompactedTopicLedger`` = new, mark-delete = the new horizon,
   ``magnetar.compaction.orphan`` = the previous compacted ledger;
4. the previous ledger is deleted and the orphan property dropped.

A kill at any step leaves the last switched view valid; the next run (or the topic's next load)
deletes the ledger the orphan property names. A kill between the ledger's creation and the
write that names it leaves the floor alone: then the ledgers created after the floor are
listed and those whose custom metadata ``compacted-topic`` names this managed ledger (and are
not the current view) are deleted — a scan that only a crash at that moment costs.

Concurrency: runs in the topic's compaction task (:mod:`.topic_compaction`), never on the publish
path: it only reads the managed ledger and writes its own ledger, so sends go on meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from magnetar.broker.compaction.compacted_entry import CompactedEntry, encode
from magnetar.broker.compaction.compacted_view import CompactedView
from magnetar.broker.compaction.key_map import KeyMap, full_mask
from magnetar.broker.compaction.messages import MessageKey, entry_messages
from magnetar.errors import MagnetarError
from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger import ManagedCursor, ManagedLedger, Position
from magnetar.telemetry import get_logger

log = get_logger(__name__)

COMPACTION_CURSOR = "__compaction"
LEDGER_PROPERTY = "CompactedTopicLedger"
ORPHAN_PROPERTY = "magnetar.compaction.orphan"
FLOOR_PROPERTY = "magnetar.compaction.floor"
_TAG = "compacted-topic"
_READ_BATCH = 100
_WRITE_WINDOW = 64

Item = tuple[Position, list[MessageKey] | None, int | None, bytes]


class Compactor:
    """Runs compactions of one managed ledger (see the module docstring)."""

    def __init__(self, ml: ManagedLedger) -> None:
        self._ml = ml
        self.last_removed = 0  # messages the last finished run compacted out

    async def open_view(self, cursor: ManagedCursor) -> CompactedView | None:
        """The compacted view the cursor's properties name (None before the first run);
        deletes a ledger a crashed run left behind."""
        await self.delete_orphan(cursor)
        lid = cursor.properties.get(LEDGER_PROPERTY)
        if lid is None:
            return None
        reader = await self._ml.ledger_access.open_ledger(LedgerId(lid), recovery=False)
        return CompactedView(LedgerId(lid), cursor.mark_delete_position, reader)

    async def delete_orphan(self, cursor: ManagedCursor) -> None:
        """Delete what a crashed or finished run left to delete (see the module docstring)."""
        props = cursor.properties
        orphan = props.pop(ORPHAN_PROPERTY, None)
        floor = props.pop(FLOOR_PROPERTY, None)
        if orphan is None and floor is None:
            return
        current = props.get(LEDGER_PROPERTY)
        if orphan is not None and orphan != current:
            await self._delete_quietly(LedgerId(orphan))
        elif orphan is None and floor is not None:
            for lid in await self._untracked_since(floor, current):
                await self._delete_quietly(lid)
        await cursor.mark_delete(cursor.mark_delete_position, props)

    async def _untracked_since(self, floor: int, current: int | None) -> list[LedgerId]:
        """Compacted ledgers of this topic created after ``floor``, other than ``current``."""
        access = self._ml.ledger_access
        found: list[LedgerId] = []
        for lid in await access.list_ledgers():
            if lid <= floor or lid == current:
                continue
            try:
                reader = await access.open_ledger(lid, recovery=False)
            except MagnetarError:
                continue  # deleted meanwhile
            try:
                if reader.metadata.custom.get(_TAG) == self._ml.name.encode():
                    found.append(lid)
            finally:
                await reader.close()
        if found:
            log.warning("compaction_orphans_found", managed_ledger=self._ml.name, ledgers=found)
        return found

    async def run(self, cursor: ManagedCursor, previous: CompactedView | None) -> CompactedView:
        """One compaction; the new view (``previous`` itself when nothing is new). The caller
        closes ``previous`` once it has switched its readers; this deletes its ledger."""
        await self.delete_orphan(cursor)
        layout = self._ml.layout
        end = layout.last_position()
        start = cursor.mark_delete_position.after()
        if previous is not None:
            start = max(start, previous.horizon.after())
            if end <= previous.horizon:
                return previous
        keys = KeyMap()
        async for pos, messages, prior, _ in self._items(previous, start, end):
            if messages is not None:
                keys.add(pos, messages, prior)
        config = self._ml.config
        props = cursor.properties
        floor = self._ml.current_ledger_id or self._ml.layout.last_position().ledger_id
        await cursor.mark_delete(cursor.mark_delete_position, {**props, FLOOR_PROPERTY: floor})
        writer = await self._ml.ledger_access.create_ledger(
            config.ensemble_size,
            config.write_quorum,
            config.ack_quorum,
            {_TAG: self._ml.name.encode()},
        )
        lid = writer.ledger_id
        await cursor.mark_delete(cursor.mark_delete_position, {**props, ORPHAN_PROPERTY: lid})
        written = removed = 0
        window: list[asyncio.Task[EntryId]] = []
        try:
            async for pos, messages, prior, stored in self._items(previous, start, end):
                mask = _survivors(keys, pos, messages, prior)
                if messages is not None:
                    before = full_mask(len(messages)) if prior is None else prior
                    after = before if mask is None else mask
                    removed += before.bit_count() - after.bit_count()
                if mask == 0:
                    continue
                record = encode(CompactedEntry(pos, mask, stored))
                window.append(asyncio.create_task(writer.append(record)))
                written += 1
                if len(window) >= _WRITE_WINDOW:
                    await asyncio.gather(*window)
                    window.clear()
            await asyncio.gather(*window)
            await writer.close()
        except BaseException:
            for task in window:
                task.cancel()
            with contextlib.suppress(MagnetarError):
                await writer.close()
            raise
        reader = await self._ml.ledger_access.open_ledger(lid, recovery=False)
        view = CompactedView(lid, end, reader)
        switched = {k: v for k, v in props.items() if k != ORPHAN_PROPERTY}
        switched[LEDGER_PROPERTY] = lid
        if previous is not None:
            switched[ORPHAN_PROPERTY] = previous.ledger_id
        await cursor.mark_delete(end, switched)
        self.last_removed = removed
        log.info("topic_compacted", managed_ledger=self._ml.name, ledger_id=lid,
                 horizon=str(end), entries=written, keys=len(keys), removed=removed)  # fmt: skip
        return view

    async def _items(
        self, previous: CompactedView | None, start: Position, end: Position
    ) -> AsyncIterator[Item]:
        """The previous view's entries, then the topic's from ``start`` to ``end``."""
        if previous is not None:
            for first in range(0, previous.count, _READ_BATCH):
                for ce in await previous.entries(first, first + _READ_BATCH - 1):
                    yield ce.position, entry_messages(ce.stored), ce.mask, ce.stored
        pos = start
        while pos <= end:
            entries = await self._ml.read_entries(pos, _READ_BATCH)
            if not entries:
                return
            for entry in entries:
                if entry.position > end:
                    return
                yield entry.position, entry_messages(entry.data), None, entry.data
            pos = entries[-1].position.after()

    async def _delete_quietly(self, lid: LedgerId) -> None:
        try:
            await self._ml.ledger_access.delete_ledger(lid)
        except MagnetarError as exc:
            log.warning("compacted_ledger_delete_failed", managed_ledger=self._ml.name,
                        ledger_id=lid, error=repr(exc))  # fmt: skip


def _survivors(
    keys: KeyMap, pos: Position, messages: list[MessageKey] | None, prior: int | None
) -> int | None:
    """The mask to write for one entry: 0 drops it, None keeps it whole."""
    if messages is None:
        return prior  # unreadable: kept as it was
    mask = keys.retained(pos, messages, prior)
    return None if mask == full_mask(len(messages)) else mask
