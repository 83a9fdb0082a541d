"""What the managed ledger needs from the BookKeeper client, as Protocols.

``magnetar.ledger.BookKeeper`` (with its ``WriteHandle`` / ``ReadHandle`` / ``LedgerEntry`` /
``LedgerMetadataView``) satisfies these structurally; so can a test double of the ledger layer.
The contract we rely on beyond the signatures (docs/storage-api.md):

- ``append`` and ``append_callback`` assign entry ids in call order (the order in which
  ``append`` coroutines start running) and complete in id order; ``append_callback`` returns
  False (nothing done) when the writer has no room, and then the managed ledger waits in
  ``append`` tasks (in order) until those are done, so positions follow ``add_entry`` call order;
- ``append_run`` takes the longest prefix of its payloads that has room as consecutive ids (0:
  none, as ``append_callback``'s False) and reports ``(first, count, None)`` per confirmed range
  in id order, or ``(first, count, error)`` for the rest once the writer failed, never before
  it returns;
- ``open_ledger(recovery=True)`` fences and closes a ledger left OPEN, so its metadata then has
  the final ``last_entry_id`` and ``length``; a CLOSED ledger opens as is;
- ``read(first, last)`` is inclusive and may raise ``NoSuchEntry`` past what readers can see
  (the last-add-confirmed known to the bookies for an open ledger);
- errors come from ``magnetar.ledger.errors`` (``LedgerFenced``, ``NoSuchLedger``, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from magnetar.ids import EntryId, LedgerId


class LedgerEntryView(Protocol):
    @property
    def ledger_id(self) -> LedgerId: ...

    @property
    def entry_id(self) -> EntryId: ...

    @property
    def payload(self) -> bytes: ...


class LedgerMetadataLike(Protocol):
    @property
    def last_entry_id(self) -> EntryId: ...

    @property
    def length(self) -> int: ...

    @property
    def is_closed(self) -> bool: ...

    @property
    def custom(self) -> Mapping[str, bytes]: ...


class LedgerWriter(Protocol):
    @property
    def ledger_id(self) -> LedgerId: ...

    @property
    def last_add_confirmed(self) -> EntryId: ...

    async def append(self, payload: bytes) -> EntryId: ...

    def append_callback(
        self, payload: bytes, callback: Callable[[EntryId | BaseException], None]
    ) -> bool: ...

    def append_run(
        self,
        payloads: Sequence[bytes],
        callback: Callable[[int, int, BaseException | None], None],
        crcs: Sequence[int] | None = None,
    ) -> int: ...

    async def close(self) -> None: ...


class LedgerReader(Protocol):
    @property
    def metadata(self) -> LedgerMetadataLike: ...

    async def read(self, first: int, last: int) -> Sequence[LedgerEntryView]: ...

    async def close(self) -> None: ...


class LedgerAccess(Protocol):
    async def create_ledger(
        self,
        ensemble_size: int,
        write_quorum: int,
        ack_quorum: int,
        custom: Mapping[str, bytes] | None = None,
    ) -> LedgerWriter: ...

    async def open_ledger(self, ledger_id: LedgerId, recovery: bool = True) -> LedgerReader: ...

    async def delete_ledger(self, ledger_id: LedgerId) -> None: ...

    async def list_ledgers(self) -> list[LedgerId]: ...


if TYPE_CHECKING:
    from magnetar.ledger.client import BookKeeper

    def _bookkeeper_is_ledger_access(bk: BookKeeper) -> LedgerAccess:
        """mypy proves here that the real client satisfies the protocol."""
        return bk
