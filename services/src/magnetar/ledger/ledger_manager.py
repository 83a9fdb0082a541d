"""Ledger metadata in the metadata store (BookKeeper's ``LedgerManager``): ids, create, CAS.

Ledger ids come from ``keys.LEDGER_ID_GENERATOR``, a decimal counter holding the last id handed
out, incremented by the store's ``update()`` (compare-and-set); ids start at 1 and are never
reused. Metadata is written only by compare-and-set on the version read before
(:class:`BadVersion` propagates to the caller, who re-reads and decides). Every store call (the
whole id allocation, its retries included) runs under ``timeout_s``.

Concurrency: stateless apart from the store handle; any task may call any method.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

from magnetar.errors import Timeout
from magnetar.ids import LedgerId
from magnetar.ledger.errors import NoSuchLedger
from magnetar.ledger.metadata import LedgerMetadataView, VersionedLedgerMetadata
from magnetar.metadata import BadVersion, KeyExists, MetadataStore, NotFound, keys, update

_MAX_ID_ATTEMPTS = 100


class LedgerManager:
    def __init__(self, store: MetadataStore, timeout_s: float = 10.0) -> None:
        self._store = store
        self._timeout_s = timeout_s

    async def allocate_ledger_id(self) -> LedgerId:
        """The next ledger id: the generator's counter incremented by the store's ``update()``
        (compare-and-set, retried on conflicts), the whole allocation under ``timeout_s``."""
        try:
            async with self._deadline("allocate_ledger_id"):
                allocated = await update(
                    self._store,
                    keys.LEDGER_ID_GENERATOR,
                    _next_ledger_id,
                    max_attempts=_MAX_ID_ATTEMPTS,
                )
        except (BadVersion, KeyExists, NotFound) as exc:  # other clients won every round
            raise Timeout(
                f"could not allocate a ledger id after {_MAX_ID_ATTEMPTS} attempts"
            ) from exc
        return LedgerId(int(allocated.value.decode()))

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


def _next_ledger_id(last: bytes | None) -> bytes:
    """The generator's new value: ids start at 1 and go up by one."""
    return b"1" if last is None else str(int(last.decode()) + 1).encode()


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
