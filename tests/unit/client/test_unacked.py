"""The ack-timeout tracker (sans-I/O)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from magnetar.client.unacked import UnackedTracker
from magnetar.protocol.message_id import MessageId


def test_disabled_tracks_nothing() -> None:
    t = UnackedTracker(0)
    t.add(MessageId(1, 1), now=0)
    assert len(t) == 0
    assert t.expired(1e9) == []


def test_expiry_returns_entries_once_and_acks_remove() -> None:
    t = UnackedTracker(10)
    t.add(MessageId(1, 1), now=0)
    t.add(MessageId(1, 2, 0), now=1)
    t.add(MessageId(1, 2, 1), now=2)
    t.add(MessageId(1, 3), now=3)
    t.remove(MessageId(1, 1))
    assert t.next_deadline() == 11
    assert t.expired(11.5) == [MessageId(1, 2)]
    assert len(t) == 1  # both indexes of entry 2 went with it
    assert t.expired(13) == [MessageId(1, 3)]


def test_whole_entry_ack_removes_its_indexes_and_cumulative_removes_prefix() -> None:
    t = UnackedTracker(10)
    for e in range(5):
        for i in range(2):
            t.add(MessageId(1, e, i), now=0)
    t.remove(MessageId(1, 4))
    assert len(t) == 8
    t.remove_up_to(MessageId(1, 2, 0))
    assert sorted(t._deadlines) == [MessageId(1, 2, 1), MessageId(1, 3, 0), MessageId(1, 3, 1)]
    t.remove_up_to(MessageId(1, 3))
    assert len(t) == 0


@given(st.lists(st.tuples(st.integers(0, 20), st.booleans()), max_size=60))
def test_every_unacked_message_expires_exactly_once(ops: list[tuple[int, bool]]) -> None:
    t = UnackedTracker(5)
    now = 0.0
    live: set[int] = set()
    for entry, ack in ops:
        now += 1
        if ack:
            t.remove(MessageId(1, entry))
            live.discard(entry)
        else:
            t.add(MessageId(1, entry), now)
            live.add(entry)
    expired = t.expired(now + 5)
    assert sorted(m.entry_id for m in expired) == sorted(live)
    assert t.expired(now + 100) == []
