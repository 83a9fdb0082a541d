"""Round-trips of the persisted ManagedLedgerInfo and ManagedCursorInfo."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magnetar.ids import LedgerId
from magnetar.managed_ledger.codec import (
    CursorInfoValue,
    ManagedLedgerInfoValue,
    decode_cursor_info,
    decode_ledger_info,
    encode_cursor_info,
    encode_ledger_info,
)
from magnetar.managed_ledger.errors import CorruptInfo
from magnetar.managed_ledger.position import position
from magnetar.managed_ledger.range_set import RangeSet
from magnetar.managed_ledger.trimming import LedgerInfo

i63 = st.integers(0, 2**62)


@st.composite
def ledger_infos(draw: st.DrawFn) -> ManagedLedgerInfoValue:
    ids = sorted(set(draw(st.lists(i63, max_size=8))))
    ledgers = tuple(
        LedgerInfo(LedgerId(i), draw(st.integers(0, 10**9)), draw(i63), draw(i63)) for i in ids
    )
    terminated = draw(st.none() | st.builds(position, i63, st.integers(-1, 2**62)))
    props = draw(st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3))
    return ManagedLedgerInfoValue(ledgers, terminated, props)


@st.composite
def cursor_infos(draw: st.DrawFn) -> CursorInfoValue:
    rs = RangeSet()
    for lid, a, n in draw(
        st.lists(st.tuples(st.integers(1, 5), st.integers(-1, 100), st.integers(1, 50)))
    ):
        rs.add_range(position(lid, a), position(lid, a + n))
    md = draw(st.builds(position, st.integers(0, 5), st.integers(-1, 100)))
    rs.remove_up_to(md)
    props = draw(st.dictionaries(st.text(max_size=5), st.integers(-(2**63), 2**63 - 1)))
    return CursorInfoValue(md, tuple(rs.ranges()), props, draw(i63))


@given(ledger_infos())
def test_ledger_info_round_trip(info: ManagedLedgerInfoValue) -> None:
    assert decode_ledger_info("k", encode_ledger_info(info)) == info


@given(cursor_infos())
def test_cursor_info_round_trip(info: CursorInfoValue) -> None:
    back = decode_cursor_info("k", encode_cursor_info(info))
    assert back == info
    assert list(back.range_set().ranges()) == list(info.individually_deleted)


def test_decreasing_ledger_ids_are_corrupt() -> None:
    bad = ManagedLedgerInfoValue((LedgerInfo(LedgerId(5)), LedgerInfo(LedgerId(3))))
    with pytest.raises(CorruptInfo):
        decode_ledger_info("k", encode_ledger_info(bad))


def test_garbage_is_corrupt() -> None:
    with pytest.raises(CorruptInfo):
        decode_cursor_info("k", b"\xff\xff\xff")
