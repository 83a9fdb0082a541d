"""The negative-ack tracker: whole entries redelivered after the delay (sans-I/O)."""

from __future__ import annotations

from magnetar.client.negative_acks import NegativeAckTracker
from magnetar.protocol.message_id import MessageId


def test_entries_come_due_after_the_delay_once() -> None:
    t = NegativeAckTracker(redelivery_delay_s=5)
    t.add(MessageId(1, 1), now=100)
    t.add(MessageId(1, 2, 3, partition=2), now=101)
    assert t.next_deadline() == 105
    assert t.due(104.9) == []
    assert t.due(105) == [MessageId(1, 1)]
    assert t.due(200) == [MessageId(1, 2, partition=2)]  # batch index -> whole entry
    assert t.due(300) == []
    assert t.next_deadline() is None


def test_indexes_of_one_entry_merge_and_renack_moves_deadline() -> None:
    t = NegativeAckTracker(redelivery_delay_s=1)
    t.add(MessageId(1, 1, 0), now=0)
    t.add(MessageId(1, 1, 1), now=3)
    assert len(t) == 1
    assert t.due(2) == []
    assert t.due(4) == [MessageId(1, 1)]


def test_discard_and_clear() -> None:
    t = NegativeAckTracker(redelivery_delay_s=0)
    t.add(MessageId(1, 1), now=0)
    t.add(MessageId(1, 2), now=0)
    t.discard(MessageId(1, 1, 4))
    assert t.due(0) == [MessageId(1, 2)]
    t.add(MessageId(1, 3), now=0)
    t.clear()
    assert t.due(10) == []
