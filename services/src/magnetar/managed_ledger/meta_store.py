"""The managed ledger's persisted chain: ManagedLedgerInfo read and written by compare-and-set.

Pulsar's ``MetaStore`` for one managed ledger's own info (its cursors persist themselves: see
:mod:`.cursor`). ``keys.managed_ledger_info(name)`` holds the ledger chain, oldest first.
:meth:`MetaStore.load` reads it (creating an empty one for a new managed ledger);
:meth:`MetaStore.write` replaces it by compare-and-set on the version this owner last read or
wrote.

Invariants:

* Every write is conditional on the owner's version, and there is no retry: a ``BadVersion``
  or ``NotFound`` means another owner took over (or deleted the managed ledger), so it is
  raised as :class:`ManagedLedgerFenced` and the caller fences itself. This is why the loop of
  :func:`magnetar.metadata.store.update`, which re-reads and retries, does not fit here.
* :attr:`MetaStore.ledgers` is the chain as last written, plus closed ledgers' final counts
  recorded in memory (:meth:`MetaStore.record_closed`) that the next write carries.
* :attr:`MetaStore.properties` (the owner's key/value state, e.g. a topic's epoch) and
  :attr:`MetaStore.terminated_position` are read by :meth:`MetaStore.load` and carried by every
  write, so a rollover or trim never drops them. They change only through :meth:`MetaStore.write`
  and only once its compare-and-set succeeded: a refused write leaves memory as it was.
* Callers serialise writes with :attr:`MetaStore.lock` (opening, before anyone else can write,
  needs no lock).

Concurrency: the event loop only, no tasks of its own. Called by
:class:`magnetar.managed_ledger.managed_ledger.ManagedLedger` from its open, rollover, trim,
close and delete paths.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence

from magnetar.managed_ledger.codec import (
    ManagedLedgerInfoValue,
    decode_ledger_info,
    encode_ledger_info,
    ledger_info_of,
)
from magnetar.managed_ledger.errors import ManagedLedgerFenced
from magnetar.managed_ledger.position import Position
from magnetar.managed_ledger.trimming import LedgerInfo
from magnetar.metadata import keys
from magnetar.metadata.errors import BadVersion, KeyExists, NotFound
from magnetar.metadata.store import MetadataStore


class MetaStore:
    """See the module docstring."""

    def __init__(self, store: MetadataStore, name: str) -> None:
        self._store = store
        self._name = name
        self._key = keys.managed_ledger_info(name)
        self._version = -1
        self.lock = asyncio.Lock()
        self.ledgers: list[LedgerInfo] = []
        """The chain as last persisted (the current ledger's counts are 0 until closed)."""
        self.properties: dict[str, str] = {}
        self.terminated_position: Position | None = None

    async def load(self) -> list[LedgerInfo]:
        """The persisted chain (an empty one is created if there is none); its version becomes
        the one the next write expects. :attr:`ledgers` is set by the next write only."""
        found = await self._store.get(self._key)
        if found is None:
            try:
                self._version = await self._store.create(
                    self._key, encode_ledger_info(ledger_info_of([]))
                )
                return []
            except KeyExists:
                found = await self._store.get(self._key)
                if found is None:
                    raise ManagedLedgerFenced(self._name, "info vanished while opening") from None
        self._version = found.version
        info = decode_ledger_info(self._key, found.value)
        self.properties = dict(info.properties)
        self.terminated_position = info.terminated_position
        return list(info.ledgers)

    async def write(
        self,
        ledgers: Sequence[LedgerInfo],
        *,
        properties: Mapping[str, str] | None = None,
        terminated_position: Position | None = None,
    ) -> None:
        """CAS the chain (with new ``properties`` or a ``terminated_position`` if given, else
        the current ones); :class:`ManagedLedgerFenced` if another owner changed it. Memory
        takes the new values only once the write succeeded."""
        props = self.properties if properties is None else dict(properties)
        terminated = (
            self.terminated_position if terminated_position is None else terminated_position
        )
        data = encode_ledger_info(ManagedLedgerInfoValue(tuple(ledgers), terminated, props))
        try:
            self._version = await self._store.put(self._key, data, expected_version=self._version)
        except (BadVersion, NotFound) as exc:
            raise ManagedLedgerFenced(self._name, str(exc)) from exc
        self.ledgers = list(ledgers)
        self.properties = props
        self.terminated_position = terminated

    def record_closed(self, closed: LedgerInfo) -> None:
        """Replace ``closed``'s entry in :attr:`ledgers` (in memory only: if the write that
        follows fails, the next write carries it)."""
        self.ledgers = [closed if li.ledger_id == closed.ledger_id else li for li in self.ledgers]

    async def delete(self) -> None:
        """Remove the info (gone already is fine)."""
        with contextlib.suppress(NotFound):
            await self._store.delete(self._key)
