"""Batch-index acks stored with a cursor (managed_ledger/batch_deletion.py): codec round trips,
compatibility with the proto field they stand for, and CursorState's batch bookkeeping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magnetar.ids import LedgerId
from magnetar.managed_ledger.batch_deletion import mask_to_words, words_to_mask
from magnetar.managed_ledger.codec import (
    CursorInfoValue,
    cursor_info_of,
    decode_cursor_info,
    encode_cursor_info,
)
from magnetar.managed_ledger.cursor_state import CursorState
from magnetar.managed_ledger.errors import CorruptInfo
from magnetar.managed_ledger.layout import LedgerLayout
from magnetar.managed_ledger.position import position
from magnetar.managed_ledger.range_set import RangeSet
from magnetar.wire import ledger_pb2

int64 = st.integers(-(2**63), 2**63 - 1)
words = st.lists(int64, max_size=3).map(tuple)
positions = st.builds(position, st.integers(0, 2**40), st.integers(0, 2**40))


@st.composite
def cursor_infos(draw: st.DrawFn) -> CursorInfoValue:
    rs = RangeSet()
    for lid, a, n in draw(
        st.lists(st.tuples(st.integers(1, 5), st.integers(-1, 100), st.integers(1, 50)))
    ):
        rs.add_range(position(lid, a), position(lid, a + n))
    md = draw(st.builds(position, st.integers(0, 5), st.integers(-1, 100)))
    rs.remove_up_to(md)
    props = draw(st.dictionaries(st.text(max_size=5), int64, max_size=3))
    batches = draw(st.dictionaries(positions, words, max_size=6))
    return CursorInfoValue(md, tuple(rs.ranges()), props, draw(st.integers(0, 2**62)),
                           tuple(sorted(batches.items())))  # fmt: skip


@given(cursor_infos())
def test_cursor_info_with_batches_round_trips(info: CursorInfoValue) -> None:
    assert decode_cursor_info("k", encode_cursor_info(info)) == info


@given(st.integers(0, 2**200))
def test_mask_words_round_trip(mask: int) -> None:
    assert words_to_mask(mask_to_words(mask)) == mask
    assert all(-(2**63) <= w < 2**63 for w in mask_to_words(mask))


@given(st.dictionaries(positions, st.integers(1, 2**130), max_size=5))
def test_masks_survive_cursor_info_of(masks: dict[object, int]) -> None:
    info = cursor_info_of(position(0, -1), RangeSet(), batch_masks=masks)  # type: ignore[arg-type]
    assert decode_cursor_info("k", encode_cursor_info(info)).batch_masks() == masks


@given(cursor_infos())
def test_records_are_the_declared_proto_field(info: CursorInfoValue) -> None:
    declared = ledger_pb2.ManagedCursorInfo.FromString(encode_cursor_info(info))
    got = tuple(
        (position(r.position.ledger_id, r.position.entry_id), tuple(r.delete_set))
        for r in declared.batched_entry_deletion_index_info
    )
    assert got == info.batch_deleted


def test_mark_delete_kept_beside_batches() -> None:
    info = cursor_info_of(position(3, 4), RangeSet(), batch_masks={position(3, 7): 0b1011})
    old = ledger_pb2.ManagedCursorInfo.FromString(encode_cursor_info(info))
    assert (old.mark_delete.ledger_id, old.mark_delete.entry_id) == (3, 4)


def test_record_without_position_is_corrupt() -> None:
    bad = ledger_pb2.ManagedCursorInfo()
    bad.batched_entry_deletion_index_info.add().delete_set.append(5)
    with pytest.raises(CorruptInfo, match="without a position"):
        decode_cursor_info("k", bad.SerializeToString())


# ---------------------------------------------------------------------------- CursorState


def layout(entries: int = 10) -> LedgerLayout:
    return LedgerLayout([(LedgerId(1), entries)])


def test_partial_batch_ack_is_kept_then_completed() -> None:
    lay = layout()
    state = CursorState(position(1, -1))
    assert state.batch_acked(position(1, 3), 0b1111110000, lay)
    assert state.batch_unacked(position(1, 3)) == 0b1111110000
    assert not state.is_acknowledged(position(1, 3))
    assert not state.batch_acked(position(1, 3), 0b1111111111, lay)  # nothing new acked
    assert state.batch_acked(position(1, 3), 0b0000001111, lay)  # ANDed: no index left
    assert state.is_acknowledged(position(1, 3))
    assert state.batch_unacked(position(1, 3)) is None


def test_whole_acks_drop_partial_batches() -> None:
    lay = layout()
    state = CursorState(position(1, -1))
    state.batch_acked(position(1, 2), 0b10, lay)
    state.batch_acked(position(1, 5), 0b10, lay)
    state.deleted([position(1, 5)], lay)
    assert state.batch_unacked(position(1, 5)) is None
    state.mark_deleted(position(1, 2), lay)
    assert state.batch_deleted == {}
    assert not state.batch_acked(position(1, 1), 0b1, lay)  # already acknowledged


def test_reset_clears_and_constructor_filters() -> None:
    lay = layout()
    batches = {position(1, 3): 1, position(1, 6): 1, position(1, 8): 0b110, position(1, 9): 0}
    state = CursorState(
        position(1, 4),
        individually_deleted=RangeSet([(position(1, 5), position(1, 6))]),
        batch_deleted=batches,
    )
    assert state.batch_deleted == {position(1, 8): 0b110}
    state.reset(position(1, 2), lay)
    assert state.batch_deleted == {}
