"""Persisted formats of the managed ledger <-> values: ManagedLedgerInfo, ManagedCursorInfo.

The wire types live in ``proto/magnetar/wire/ledger.proto`` (``magnetar.wire.ledger_pb2``);
this module is the only place that builds or parses them for the managed ledger. Decoding
checks the invariants the rest of the package relies on (ledger ids increasing, ranges inside
one ledger) and raises :class:`CorruptInfo` otherwise. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from google.protobuf.message import DecodeError

from magnetar.ids import LedgerId
from magnetar.managed_ledger import batch_deletion
from magnetar.managed_ledger.batch_deletion import BatchDeletion, mask_to_words, words_to_mask
from magnetar.managed_ledger.errors import CorruptInfo
from magnetar.managed_ledger.position import Position, position
from magnetar.managed_ledger.range_set import RangeSet
from magnetar.managed_ledger.trimming import LedgerInfo
from magnetar.wire import ledger_pb2


@dataclass(frozen=True, slots=True)
class ManagedLedgerInfoValue:
    """The decoded ManagedLedgerInfo: the ledger chain, oldest first."""

    ledgers: tuple[LedgerInfo, ...] = ()
    terminated_position: Position | None = None
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CursorInfoValue:
    """The decoded ManagedCursorInfo."""

    mark_delete: Position
    individually_deleted: tuple[tuple[Position, Position], ...] = ()
    properties: Mapping[str, int] = field(default_factory=dict)
    last_active_ms: int = 0
    # Partly acked batches: (entry, unacked-index mask words); see .batch_deletion.
    batch_deleted: tuple[BatchDeletion, ...] = ()

    def range_set(self) -> RangeSet:
        return RangeSet(self.individually_deleted)

    def batch_masks(self) -> dict[Position, int]:
        """Entry -> unacked-index mask (bit i set = index i unacked)."""
        return {pos: words_to_mask(words) for pos, words in self.batch_deleted}


def _pos_to_pb(pos: Position, out: ledger_pb2.Position) -> None:
    out.ledger_id = pos.ledger_id
    out.entry_id = pos.entry_id


def _pos_from_pb(pb: ledger_pb2.Position) -> Position:
    return position(pb.ledger_id, pb.entry_id)


def encode_ledger_info(info: ManagedLedgerInfoValue) -> bytes:
    pb = ledger_pb2.ManagedLedgerInfo()
    for li in info.ledgers:
        pb.ledgers.add(
            ledger_id=li.ledger_id, entries=li.entries, size=li.size, timestamp_ms=li.timestamp_ms
        )
    if info.terminated_position is not None:
        _pos_to_pb(info.terminated_position, pb.terminated_position)
    pb.properties.update(info.properties)
    return pb.SerializeToString()


def decode_ledger_info(key: str, data: bytes) -> ManagedLedgerInfoValue:
    pb = ledger_pb2.ManagedLedgerInfo()
    try:
        pb.ParseFromString(data)
    except DecodeError as exc:
        raise CorruptInfo(key, str(exc)) from exc
    ledgers = tuple(
        LedgerInfo(LedgerId(li.ledger_id), li.entries, li.size, li.timestamp_ms)
        for li in pb.ledgers
    )
    for a, b in pairwise(ledgers):
        if b.ledger_id <= a.ledger_id:
            raise CorruptInfo(key, f"ledger {b.ledger_id} follows ledger {a.ledger_id}")
    if any(li.entries < 0 or li.size < 0 for li in ledgers):
        raise CorruptInfo(key, "negative entry count or size")
    terminated = (
        _pos_from_pb(pb.terminated_position) if pb.HasField("terminated_position") else None
    )
    return ManagedLedgerInfoValue(ledgers, terminated, dict(pb.properties))


def encode_cursor_info(info: CursorInfoValue) -> bytes:
    pb = ledger_pb2.ManagedCursorInfo(last_active_ms=info.last_active_ms)
    _pos_to_pb(info.mark_delete, pb.mark_delete)
    for lower, upper in info.individually_deleted:
        r = pb.individually_deleted.add()
        _pos_to_pb(lower, r.lower)
        _pos_to_pb(upper, r.upper)
    pb.properties.update(info.properties)
    batch_deletion.encode(info.batch_deleted, pb)
    return pb.SerializeToString()


def decode_cursor_info(key: str, data: bytes) -> CursorInfoValue:
    pb = ledger_pb2.ManagedCursorInfo()
    try:
        pb.ParseFromString(data)
    except DecodeError as exc:
        raise CorruptInfo(key, str(exc)) from exc
    ranges: list[tuple[Position, Position]] = []
    for r in pb.individually_deleted:
        lower, upper = _pos_from_pb(r.lower), _pos_from_pb(r.upper)
        if lower.ledger_id != upper.ledger_id or upper <= lower:
            raise CorruptInfo(key, f"bad range ({lower}, {upper}]")
        ranges.append((lower, upper))
    return CursorInfoValue(
        _pos_from_pb(pb.mark_delete),
        tuple(ranges),
        dict(pb.properties),
        pb.last_active_ms,
        batch_deletion.decode(key, pb),
    )


def cursor_info_of(
    mark_delete: Position,
    ranges: RangeSet,
    properties: Mapping[str, int] | None = None,
    last_active_ms: int = 0,
    batch_masks: Mapping[Position, int] | None = None,
) -> CursorInfoValue:
    batches = tuple(sorted((p, mask_to_words(m)) for p, m in (batch_masks or {}).items()))
    return CursorInfoValue(
        mark_delete, tuple(ranges.ranges()), dict(properties or {}), last_active_ms, batches
    )


def ledger_info_of(
    ledgers: Sequence[LedgerInfo], properties: Mapping[str, str] | None = None
) -> ManagedLedgerInfoValue:
    return ManagedLedgerInfoValue(tuple(ledgers), None, dict(properties or {}))
