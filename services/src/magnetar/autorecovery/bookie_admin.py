"""Bookie administration over the metadata store: list bookies and marks, decommission.

What the broker's admin REST API (``/admin/v2/bookies/...``, :mod:`magnetar.admin.bookies`) and
``magnetar admin bookies`` show; it needs only the metadata store, so it works whether or not
an autorecovery process runs (the status is computed, :mod:`.decommission`).

- :meth:`BookieAdmin.bookies`: every bookie that ever registered (it has a cookie) or is
  registered now, with its address, rack, read-only flag, whether it is available and whether
  it is being decommissioned;
- :meth:`BookieAdmin.under_replicated`: the auditor's marks;
- :meth:`BookieAdmin.decommission`: create the request (idempotent); :class:`UnknownBookie` for
  an id no bookie ever had;
- :meth:`BookieAdmin.cancel_decommission`: withdraw the request;
- :meth:`BookieAdmin.decommission_status`: ``InProgress``/``Done``/``Failed`` with the number of
  ledgers still naming the bookie and a message.

Concurrency: stateless apart from the store; request handlers on the broker's loop call it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from magnetar.autorecovery.decommission import (
    DecommissionStatus,
    decommission_status,
    encode_request,
)
from magnetar.autorecovery.errors import NotDecommissioning, UnknownBookie
from magnetar.autorecovery.marks import UnderReplicationMark, UnderReplicationMarks
from magnetar.ids import BookieId, LedgerId
from magnetar.ledger.errors import InvalidLedgerConfig
from magnetar.ledger.metadata import LedgerMetadataView
from magnetar.metadata import KeyExists, MetadataStore, NotFound, keys
from magnetar.wire import ledger_pb2

_CALL_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class BookieView:
    bookie_id: BookieId
    address: str = ""
    rack: str = ""
    read_only: bool = False
    available: bool = False
    decommissioning: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "bookieId": self.bookie_id,
            "address": self.address,
            "rack": self.rack,
            "readOnly": self.read_only,
            "available": self.available,
            "decommissioning": self.decommissioning,
        }


class BookieAdmin:
    def __init__(self, store: MetadataStore) -> None:
        self._store = store
        self._marks = UnderReplicationMarks(store)

    async def bookies(self) -> list[BookieView]:
        async with asyncio.timeout(_CALL_TIMEOUT_S):
            listed = await self._store.list(keys.BOOKIES_PREFIX)
        known: dict[BookieId, BookieView] = {}
        decommissioning: set[BookieId] = set()
        for key, versioned in listed:
            if key.startswith(keys.BOOKIE_DECOMMISSION_PREFIX):
                decommissioning.add(keys.bookie_id_of(key))
            elif key.startswith(keys.BOOKIE_COOKIE_PREFIX):
                bookie = keys.bookie_id_of(key)
                known.setdefault(bookie, BookieView(bookie))
            elif key.startswith(keys.BOOKIE_AVAILABLE_PREFIX):
                bookie = keys.bookie_id_of(key)
                registration = ledger_pb2.BookieRegistration()
                try:
                    registration.ParseFromString(versioned.value)
                except Exception:  # a malformed registration: still an available bookie
                    registration = ledger_pb2.BookieRegistration()
                known[bookie] = BookieView(
                    bookie,
                    registration.address,
                    registration.rack,
                    registration.read_only,
                    available=True,
                )
        return [
            BookieView(
                v.bookie_id,
                v.address,
                v.rack,
                v.read_only,
                v.available,
                v.bookie_id in decommissioning,
            )
            for _, v in sorted(known.items())
        ]

    async def under_replicated(self) -> list[UnderReplicationMark]:
        async with asyncio.timeout(_CALL_TIMEOUT_S):
            return await self._marks.list()

    async def _known(self, bookie_id: BookieId) -> bool:
        async with asyncio.timeout(_CALL_TIMEOUT_S):
            for key in (keys.bookie_cookie(bookie_id), keys.bookie_available(bookie_id)):
                if await self._store.get(key) is not None:
                    return True
        return False

    async def decommission(self, bookie_id: BookieId) -> bool:
        """Request the decommission; True if this call created the request."""
        if not await self._known(bookie_id):
            raise UnknownBookie(bookie_id)
        try:
            async with asyncio.timeout(_CALL_TIMEOUT_S):
                await self._store.create(
                    keys.bookie_decommission(bookie_id), encode_request(int(time.time() * 1000))
                )
        except KeyExists:
            return False
        return True

    async def cancel_decommission(self, bookie_id: BookieId) -> None:
        """Withdraw the request: placement may use the bookie again and it turns writable
        (what was already copied elsewhere stays there); :class:`NotDecommissioning` if none."""
        try:
            async with asyncio.timeout(_CALL_TIMEOUT_S):
                await self._store.delete(keys.bookie_decommission(bookie_id))
        except NotFound as exc:
            if not await self._known(bookie_id):
                raise UnknownBookie(bookie_id) from exc
            raise NotDecommissioning(bookie_id) from exc

    async def decommission_status(self, bookie_id: BookieId) -> DecommissionStatus:
        async with asyncio.timeout(_CALL_TIMEOUT_S):
            requested = await self._store.get(keys.bookie_decommission(bookie_id))
        if requested is None:
            if not await self._known(bookie_id):
                raise UnknownBookie(bookie_id)
            raise NotDecommissioning(bookie_id)
        bookies = await self.bookies()
        writable = {b.bookie_id for b in bookies if b.available and not b.read_only}
        decommissioning = {b.bookie_id for b in bookies if b.decommissioning}
        async with asyncio.timeout(_CALL_TIMEOUT_S):
            listed = await self._store.list(keys.LEDGER_META_PREFIX)
        ledgers: list[tuple[LedgerId, LedgerMetadataView]] = []
        for key, versioned in listed:
            try:
                ledgers.append((keys.ledger_id_of(key), LedgerMetadataView.decode(versioned.value)))
            except (ValueError, InvalidLedgerConfig):
                continue
        return decommission_status(bookie_id, ledgers, writable, decommissioning)
