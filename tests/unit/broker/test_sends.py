"""The per-SEND loops of a run (broker.sends, compiled): the Sends built from scanned frames,
the columns a run hands the topic, the positions of a durable stretch, and the stretch of
stored SENDs answered from the head of a producer's queue."""

from __future__ import annotations

import collections

import pytest

from magnetar.broker.deduplication import DupStatus, Verdict
from magnetar.broker.sends import Send, mark_stored, pop_stored, run_columns, sends_of
from magnetar.errors import MagnetarError
from magnetar.managed_ledger.position import position
from magnetar.protocol.hand_decoded import SendFrame


def _frame(sequence_id: int, *, count: int = 1, crc: int = -1, facts: bool = True) -> SendFrame:
    return SendFrame(
        producer_id=7,
        sequence_id=sequence_id,
        highest_sequence_id=sequence_id + 10 if count > 1 else None,
        num_messages=count,
        chunk=None,
        stored=b"s%d" % sequence_id,
        facts=(max(count, 1), b"key", 5) if facts else None,
        stored_crc=crc,
    )


def _stored(sequence_id: int, size: int = 3, count: int = 1) -> Send:
    send = Send(sequence_id, None, count, b"x" * size)
    send.message_id = position(1, sequence_id)
    send.finished = True
    return send


def test_a_run_of_frames_becomes_sends_in_order_with_the_dispatchers_facts() -> None:
    frames = [_frame(0), _frame(1, count=3, crc=99), _frame(2, count=0, facts=False)]
    sends = sends_of(frames)
    assert [s.sequence_id for s in sends] == [0, 1, 2]
    assert [s.highest_sequence_id for s in sends] == [None, 11, None]
    assert [s.num_messages for s in sends] == [1, 3, 1]  # a count below 1 counts as 1
    assert [s.stored for s in sends] == [b"s0", b"s1", b"s2"]
    assert [s.stored_crc for s in sends] == [-1, 99, -1]
    assert sends[0].facts == (1, b"key", 5, None)  # the chunk tag is None
    assert sends[1].facts == (3, b"key", 5, None)
    assert sends[2].facts is None
    for send in sends:
        assert send.origin is None
        assert send.chunk is None
        assert not send.finished
        assert send.message_id is None
        assert send.error is None
        assert send.verdict.status is DupStatus.NOT_DUP


def test_a_replicators_sends_carry_their_origins() -> None:
    origins = [("us-east-p", 5, 5), None]
    sends = sends_of([_frame(0), _frame(1)], origins)
    assert [s.origin for s in sends] == origins
    assert [s.sequence_id for s in sends] == [0, 1]  # the replicator's own ids stay


def test_a_runs_columns_carry_checksums_only_when_the_first_send_has_one() -> None:
    plain = sends_of([_frame(0), _frame(1, count=2)])
    stored, counts, facts, crcs = run_columns(plain)
    assert stored == [b"s0", b"s1"]
    assert counts == [1, 2]
    assert crcs is None
    assert facts == [(1, b"key", 5, None), (2, b"key", 5, None)]
    big = sends_of([_frame(0, crc=11), _frame(1, crc=12)])
    assert run_columns(big)[3] == [11, 12]
    assert run_columns([]) == ([], [], [], None)


def test_a_durable_stretch_finishes_its_sends_at_their_positions() -> None:
    sends = [Send(n, None, 1, b"x") for n in range(5)]
    mark_stored(sends, 1, [position(3, 0), position(3, 1)])
    assert [s.finished for s in sends] == [False, True, True, False, False]
    assert sends[1].message_id == position(3, 0)
    assert sends[2].message_id == position(3, 1)
    assert sends[3].message_id is None
    with pytest.raises(ValueError, match="3 positions from SEND 3 of a run of 5"):
        mark_stored(sends, 3, [position(3, 2), position(3, 3), position(3, 4)])
    assert not sends[3].finished  # nothing was marked


def test_the_head_gives_its_stored_stretch_and_stops_at_the_first_other_send() -> None:
    failed = _stored(2)
    failed.error = MagnetarError("refused")
    duplicate = _stored(4)
    duplicate.verdict = Verdict(DupStatus.DUP)
    unfinished = Send(6, None, 1, b"x")
    pending = collections.deque(
        [_stored(0, 4, 2), _stored(1, 5), failed, _stored(3), duplicate, _stored(5), unfinished]
    )
    stored, messages, size = pop_stored(pending)
    assert [s.sequence_id for s in stored] == [0, 1]
    assert (messages, size) == (3, 9)
    assert pending[0] is failed  # left for the caller to answer
    pending.popleft()
    stored, _, _ = pop_stored(pending)
    assert [s.sequence_id for s in stored] == [3]
    assert pending[0] is duplicate
    pending.popleft()
    stored, _, _ = pop_stored(pending)
    assert [s.sequence_id for s in stored] == [5]
    assert pending[0] is unfinished
    assert pop_stored(pending) == ([], 0, 0)
    unfinished.finished = True  # finished without a position (cancelled): not stored
    assert pop_stored(pending) == ([], 0, 0)
    assert len(pending) == 1
