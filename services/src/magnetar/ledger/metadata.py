"""Ledger metadata as an immutable value (BookKeeper's ``LedgerMetadata``) and its stored codec.

A ledger's metadata lives at ``keys.ledger_meta(id)`` as a ``wire.ledger_pb2.LedgerMetadata``.
:class:`LedgerMetadataView` is the in-memory form: a frozen dataclass whose ``with_*`` methods
return changed copies, so every change is built here and written by compare-and-set on the
store version (kept beside the view in :class:`VersionedLedgerMetadata`).

Invariants checked by :meth:`LedgerMetadataView.validate`: ``1 <= Aq <= Wq <= E``; at least one
ensemble segment; segments start at strictly increasing entry ids, the first at 0; every
segment has exactly E distinct bookies. Pure: no I/O; callable from any task.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from magnetar.ids import NO_ENTRY, BookieId, EntryId, LedgerId
from magnetar.ledger.errors import InvalidLedgerConfig
from magnetar.wire import ledger_pb2


class LedgerState(enum.Enum):
    OPEN = ledger_pb2.OPEN
    IN_RECOVERY = ledger_pb2.IN_RECOVERY
    CLOSED = ledger_pb2.CLOSED


Ensemble = tuple[BookieId, ...]
EnsembleSegment = tuple[EntryId, Ensemble]


def validate_quorums(ensemble_size: int, write_quorum: int, ack_quorum: int) -> None:
    """Raise :class:`InvalidLedgerConfig` unless ``1 <= Aq <= Wq <= E``."""
    if not 1 <= ack_quorum <= write_quorum <= ensemble_size:
        raise InvalidLedgerConfig(
            "quorums must satisfy 1 <= ack_quorum <= write_quorum <= ensemble_size, got "
            f"ensemble_size={ensemble_size} write_quorum={write_quorum} ack_quorum={ack_quorum}"
        )


@dataclass(frozen=True)
class LedgerMetadataView:
    """One ledger's metadata. ``ensembles`` is ((first_entry_id, bookies), ...) in entry order."""

    ensemble_size: int
    write_quorum: int
    ack_quorum: int
    ensembles: tuple[EnsembleSegment, ...]
    state: LedgerState = LedgerState.OPEN
    last_entry_id: EntryId = NO_ENTRY
    length: int = 0
    custom: Mapping[str, bytes] = field(default_factory=dict)
    master_key: bytes = b""
    ctime_ms: int = 0

    def validate(self) -> None:
        validate_quorums(self.ensemble_size, self.write_quorum, self.ack_quorum)
        if not self.ensembles:
            raise InvalidLedgerConfig("ledger metadata has no ensemble")
        previous = -1
        for first, bookies in self.ensembles:
            if first <= previous or (previous == -1 and first != 0):
                raise InvalidLedgerConfig(f"ensemble segments out of order at entry {first}")
            if len(bookies) != self.ensemble_size or len(set(bookies)) != len(bookies):
                raise InvalidLedgerConfig(
                    f"segment at entry {first} needs {self.ensemble_size} distinct bookies, "
                    f"got {list(bookies)}"
                )
            previous = first

    @property
    def is_closed(self) -> bool:
        return self.state is LedgerState.CLOSED

    @property
    def current_ensemble(self) -> Ensemble:
        return self.ensembles[-1][1]

    def ensemble_for(self, entry_id: int) -> Ensemble:
        """The bookies of the segment holding ``entry_id`` (the last segment that starts <= it)."""
        chosen = self.ensembles[0][1]
        for first, bookies in self.ensembles:
            if first > entry_id:
                break
            chosen = bookies
        return chosen

    def all_bookies(self) -> frozenset[BookieId]:
        return frozenset(b for _, bookies in self.ensembles for b in bookies)

    def with_ensemble_change(
        self, first_entry_id: EntryId, bookies: Ensemble
    ) -> LedgerMetadataView:
        """A copy whose entries from ``first_entry_id`` on live on ``bookies``.

        A segment already starting at ``first_entry_id`` (no entry written to it yet) is replaced.
        """
        kept = tuple(seg for seg in self.ensembles if seg[0] < first_entry_id)
        changed = replace(self, ensembles=(*kept, (first_entry_id, tuple(bookies))))
        changed.validate()
        return changed

    def with_bookie_replaced(
        self, first_entry_id: EntryId, old: BookieId, new: BookieId
    ) -> LedgerMetadataView:
        """A copy whose segment starting at ``first_entry_id`` names ``new`` where it named
        ``old`` (re-replication: the entries ``old`` held there were copied to ``new``)."""
        segments = []
        for first, bookies in self.ensembles:
            if first == first_entry_id:
                if old not in bookies:
                    raise InvalidLedgerConfig(f"segment at entry {first} does not name {old}")
                bookies = tuple(new if b == old else b for b in bookies)
            segments.append((first, bookies))
        changed = replace(self, ensembles=tuple(segments))
        changed.validate()
        return changed

    def with_state(self, state: LedgerState) -> LedgerMetadataView:
        return replace(self, state=state)

    def closed_at(self, last_entry_id: EntryId, length: int) -> LedgerMetadataView:
        return replace(self, state=LedgerState.CLOSED, last_entry_id=last_entry_id, length=length)

    def encode(self) -> bytes:
        msg = ledger_pb2.LedgerMetadata(
            ensemble_size=self.ensemble_size,
            write_quorum=self.write_quorum,
            ack_quorum=self.ack_quorum,
            state=self.state.value,
            last_entry_id=self.last_entry_id,
            length=self.length,
            ensembles=[
                ledger_pb2.EnsembleSegment(first_entry_id=first, bookies=list(bookies))
                for first, bookies in self.ensembles
            ],
            ctime_ms=self.ctime_ms,
            custom=dict(self.custom),
            master_key=self.master_key,
        )
        return msg.SerializeToString()

    @classmethod
    def decode(cls, data: bytes) -> LedgerMetadataView:
        """Parse stored bytes; raise :class:`InvalidLedgerConfig` if they are not valid metadata."""
        msg = ledger_pb2.LedgerMetadata()
        try:
            msg.ParseFromString(data)
            state = LedgerState(msg.state)
        except Exception as exc:  # protobuf's DecodeError, or an unknown state value
            raise InvalidLedgerConfig(f"unreadable ledger metadata: {exc}") from exc
        view = cls(
            ensemble_size=msg.ensemble_size,
            write_quorum=msg.write_quorum,
            ack_quorum=msg.ack_quorum,
            ensembles=tuple(
                (EntryId(seg.first_entry_id), tuple(BookieId(b) for b in seg.bookies))
                for seg in msg.ensembles
            ),
            state=state,
            last_entry_id=EntryId(msg.last_entry_id),
            length=msg.length,
            custom=dict(msg.custom),
            master_key=msg.master_key,
            ctime_ms=msg.ctime_ms,
        )
        view.validate()
        return view


@dataclass(frozen=True)
class VersionedLedgerMetadata:
    """Metadata with the store version it was read or written at (the CAS token)."""

    ledger_id: LedgerId
    metadata: LedgerMetadataView
    version: int
