"""Ledger metadata in the metadata store (BookKeeper's ``LedgerManager``): ids, create, CAS.

Ledger ids come from ``keys.LEDGER_ID_GENERATOR``, a decimal counter holding the last id handed
out, incremented by compare-and-set; ids start at 1 and are never reused. Metadata is written
only by compare-and-set on the version read before (:class:`BadVersion` propagates to the
caller, who re-reads and decides). Every store call runs under ``timeout_s``.

Concurrency: stateless apart from the store handle; any task may call any method.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

from magnetar.backoff import Backoff
from magnetar.errors import Timeout
from magnetar.ids import LedgerId
from magnetar.ledger.errors import NoSuchLedger
from magnetar.ledger.metadata import LedgerMetadataView, VersionedLedgerMetadata
from magnetar.metadata import BadVersion, KeyExists, MetadataStore, NotFound, keys

_MAX_ID_ATTEMPTS = 100


class LedgerManager:
    def __init__(self, store: MetadataStore, timeout_s: float = 10.0) -> None:
        self._store = store
        self._timeout_s = timeout_s

    async def allocate_ledger_id(self) -> LedgerId:
        backoff = Backoff(initial=0.005, cap=0.2)
        for _ in range(_MAX_ID_ATTEMPTS):
            async with self._deadline("allocate_ledger_id"):
                current = await self._store.get(keys.LEDGER_ID_GENERATOR)
                try:
                    if current is None:
                        await self._store.create(keys.LEDGER_ID_GENERATOR, b"1")
                        return LedgerId(1)
                    next_id = int(current.value.decode()) + 1
                    await self._store.put(
                        keys.LEDGER_ID_GENERATOR,
                        str(next_id).encode(),
                        expected_version=current.version,
                    )
                    return LedgerId(next_id)
                except (BadVersion, KeyExists):
                    pass  # another client took this id; try the next one
            await asyncio.sleep(backoff.next())
        raise Timeout(f"could not allocate a ledger id after {_MAX_ID_ATTEMPTS} attempts")

    async def create(
        self, ledger_id: LedgerId, meta: LedgerMetadataView
    ) -> VersionedLedgerMetadata:
        meta.validate()
        async with self._deadline("create_ledger_metadata"):
            version = await self._store.create(keys.ledger_meta(ledger_id), meta.encode())
        return VersionedLedgerMetadata(ledger_id, meta, version)

    async def read(self, ledger_id: LedgerId) -> VersionedLedgerMetadata:
        async with self._deadline("read_ledger_metadata"):
            got = await self._store.get(keys.ledger_meta(ledger_id))
        if got is None:
            raise NoSuchLedger(ledger_id)
        return VersionedLedgerMetadata(ledger_id, LedgerMetadataView.decode(got.value), got.version)

    async def write(
        self, current: VersionedLedgerMetadata, new: LedgerMetadataView
    ) -> VersionedLedgerMetadata:
        """CAS ``new`` over ``current``; :class:`BadVersion` if someone else wrote in between."""
        new.validate()
        async with self._deadline("write_ledger_metadata"):
            version = await self._store.put(
                keys.ledger_meta(current.ledger_id), new.encode(), expected_version=current.version
            )
        return VersionedLedgerMetadata(current.ledger_id, new, version)

    async def delete(self, ledger_id: LedgerId) -> None:
        try:
            async with self._deadline("delete_ledger_metadata"):
                await self._store.delete(keys.ledger_meta(ledger_id))
        except NotFound as exc:
            raise NoSuchLedger(ledger_id) from exc

    async def list_ledgers(self) -> list[LedgerId]:
        async with self._deadline("list_ledgers"):
            found = await self._store.list_keys(keys.LEDGER_META_PREFIX)
        return [keys.ledger_id_of(key) for key in found]

    def _deadline(self, what: str) -> _Deadline:
        return _Deadline(self._timeout_s, what)


class _Deadline:
    """``asyncio.timeout`` that raises our :class:`Timeout` naming the operation."""

    def __init__(self, seconds: float, what: str) -> None:
        self._cm = asyncio.timeout(seconds)
        self._what = what
        self._seconds = seconds

    async def __aenter__(self) -> None:
        await self._cm.__aenter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self._cm.__aexit__(exc_type, exc, tb)
        except TimeoutError as err:
            raise Timeout(
                f"{self._what}: metadata store did not answer in {self._seconds}s"
            ) from err
