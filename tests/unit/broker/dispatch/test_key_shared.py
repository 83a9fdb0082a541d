"""Key_Shared selectors (AUTO_SPLIT range split, STICKY ranges) and recently joined consumers."""

from __future__ import annotations

import itertools

import pytest

from magnetar.broker.dispatch import (
    AutoSplitSelector,
    ConsumerAssignError,
    ConsumerBusy,
    ConsumerInfo,
    HashRange,
    KeySharedMeta,
    KeySharedMode,
    RecentlyJoined,
    StickySelector,
    make_key_shared_selector,
)
from magnetar.managed_ledger import Position
from magnetar.protocol.errors import server_error_for
from magnetar.wire import pulsar_api_pb2 as pb


def auto(cid: int) -> ConsumerInfo:
    return ConsumerInfo(cid, f"c{cid}", key_shared=KeySharedMeta(KeySharedMode.AUTO_SPLIT))


def sticky(cid: int, *ranges: tuple[int, int]) -> ConsumerInfo:
    meta = KeySharedMeta(KeySharedMode.STICKY, tuple(HashRange(a, b) for a, b in ranges))
    return ConsumerInfo(cid, f"c{cid}", key_shared=meta)


def covered(sel: AutoSplitSelector) -> list[HashRange]:
    return sorted(r for rs in sel.ranges().values() for r in rs)


def test_auto_split_halves_the_biggest_range_and_merges_on_leave() -> None:
    sel = AutoSplitSelector()
    assert sel.select(5) is None
    sel.add(auto(1))
    assert sel.ranges() == {(0, 1): [HashRange(0, 65535)]}
    sel.add(auto(2))  # takes the lower half
    assert sel.select(0) == sel.select(32768) == (0, 2)
    assert sel.select(32769) == sel.select(65535) == (0, 1)
    sel.add(auto(3))  # ties: the lowest biggest range is split
    assert sel.select(16384) == (0, 3)
    assert sel.select(16385) == (0, 2)
    assert covered(sel) == [HashRange(0, 16384), HashRange(16385, 32768), HashRange(32769, 65535)]
    # Leaving: the range goes to the next range up.
    sel.remove((0, 3))
    assert sel.select(100) == (0, 2)
    # The top range's owner leaves: the range below extends to the top.
    sel.remove((0, 1))
    assert sel.ranges() == {(0, 2): [HashRange(0, 65535)]}
    assert not sel.remove((0, 1))


def test_auto_split_every_slot_has_exactly_one_owner() -> None:
    sel = AutoSplitSelector()
    for cid in range(1, 8):
        sel.add(auto(cid))
    ranges = covered(sel)
    assert ranges[0].start == 0
    assert ranges[-1].end == 65535
    for a, b in itertools.pairwise(ranges):
        assert a.end + 1 == b.start
    for owner, rs in sel.ranges().items():
        for r in rs:
            assert sel.select(r.start) == sel.select(r.end) == owner


def test_auto_split_same_key_same_consumer_while_membership_is_stable() -> None:
    sel = AutoSplitSelector()
    for cid in range(1, 4):
        sel.add(auto(cid))
    picks = {sel.select(slot) for slot in (7, 7, 7)}
    assert len(picks) == 1


def test_auto_split_refuses_a_sticky_consumer() -> None:
    sel = make_key_shared_selector(KeySharedMeta(KeySharedMode.AUTO_SPLIT))
    sel.add(auto(1))
    with pytest.raises(ConsumerBusy, match="AUTO_SPLIT"):
        sel.add(sticky(2, (0, 10)))


def test_sticky_ranges_select_and_leave_gaps() -> None:
    sel = make_key_shared_selector(KeySharedMeta(KeySharedMode.STICKY))
    assert isinstance(sel, StickySelector)
    sel.add(sticky(1, (0, 99), (200, 299)))
    sel.add(sticky(2, (100, 199)))
    assert sel.select(0) == sel.select(99) == sel.select(250) == (0, 1)
    assert sel.select(100) == sel.select(199) == (0, 2)
    assert sel.select(300) is None  # nobody covers it: its entries wait
    assert sel.ranges()[(0, 1)] == [HashRange(0, 99), HashRange(200, 299)]
    sel.remove((0, 2))
    assert sel.select(150) is None
    sel.add(sticky(3, (100, 150)))  # the freed range can be taken again
    assert sel.select(150) == (0, 3)


@pytest.mark.parametrize(
    ("ranges", "reason"),
    [
        ((), "must not be empty"),
        (((5, 4),), "Invalid hash range"),
        (((0, 65536),), "Invalid hash range"),
        (((-1, 3),), "Invalid hash range"),
        (((0, 10), (10, 20)), "of the consumer overlap"),
        (((50, 60),), "Range conflict with consumer"),
        (((99, 99),), "Range conflict with consumer"),
    ],
)
def test_sticky_refuses_bad_or_overlapping_ranges(
    ranges: tuple[tuple[int, int], ...], reason: str
) -> None:
    sel = StickySelector()
    sel.add(sticky(1, (40, 99)))
    with pytest.raises(ConsumerAssignError, match=reason) as err:
        sel.add(sticky(2, *ranges))
    assert server_error_for(err.value) == pb.ConsumerAssignError
    assert sel.ranges() == {(0, 1): [HashRange(40, 99)]}  # nothing half-added


def test_recently_joined_limit_and_release() -> None:
    recent = RecentlyJoined()
    p = Position
    # Nothing outstanding: a newcomer is not restricted.
    recent.joined((0, 1), read_position=p(1, 5), oldest_unacked=None)
    recent.joined((0, 2), read_position=p(1, 5), oldest_unacked=p(1, 5))
    assert recent.limits() == {}
    recent.joined((0, 3), read_position=p(1, 5), oldest_unacked=p(1, 2))
    recent.joined((0, 4), read_position=p(1, 9), oldest_unacked=p(1, 2))
    assert recent.limits() == {(0, 3): p(1, 5), (0, 4): p(1, 9)}
    assert recent.release(p(1, 4)) == []
    assert recent.release(p(1, 5)) == [(0, 3)]
    recent.left((0, 4))
    assert recent.limits() == {}
