"""A producer's SENDs in flight (:class:`Send`), and the per-SEND loops of a run of them.

A :class:`Send` is one SEND from its frame to its answer: what the publish path reads of the
frame, then its deduplication verdict and its outcome (a position, or an error). The loops a
run of SENDs takes on its way (:func:`sends_of`, :func:`run_columns`, :func:`mark_stored`,
:func:`pop_stored`) are here, compiled with the class (mypyc, ``[tool.magnetar.mypyc]``), where
each SEND's fields are read and written natively: :mod:`.producer` calls each once a run. As
interpreted loops they cost about half a microsecond a SEND (docs/benchmarks.md, "Issue 17,
session 19").

Pure: no I/O, no clock, no task. Used by :class:`~magnetar.broker.producer.Producer` on the
broker's loop.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

from magnetar.broker.deduplication import NOT_TRACKED, Chunk, DupStatus, Verdict
from magnetar.errors import MagnetarError
from magnetar.managed_ledger import Position
from magnetar.protocol.hand_decoded import SendFrame
from magnetar.protocol.message_id import MessageId

# Where an add landed: the fast path reports the managed ledger's Position (no MessageId is
# built per SEND); both have the ledger_id and entry_id a receipt needs.
Stored = MessageId | Position
# (producer name, sequence id, highest sequence id) deduplication keys a SEND by.
Origin = tuple[str, int, int | None]


class Send:
    """One SEND in flight; ``finished`` once its outcome (or duplicate verdict) is known.

    A plain class with its own ``__init__``, not a dataclass: compiled, its construction is
    native (one is built for every SEND)."""

    __slots__ = (
        "chunk",
        "error",
        "facts",
        "finished",
        "highest_sequence_id",
        "message_id",
        "num_messages",
        "origin",
        "sequence_id",
        "stored",
        "stored_crc",
        "verdict",
    )

    def __init__(
        self,
        sequence_id: int,
        highest_sequence_id: int | None,
        num_messages: int,
        stored: bytes,
        chunk: Chunk | None = None,
        origin: Origin | None = None,
        facts: object = None,
        stored_crc: int = -1,
    ) -> None:
        self.sequence_id = sequence_id
        self.highest_sequence_id = highest_sequence_id
        self.num_messages = num_messages
        self.stored = stored
        self.chunk = chunk
        self.origin = origin  # a replicated entry: deduplicated by its origin's ids
        # What the dispatcher reads of the entry, as the SEND's scan read it (the
        # subscription's Facts), kept with the cached entry so a dispatch does not read it
        # again; None: unknown.
        self.facts = facts
        self.stored_crc = stored_crc  # crc32c(stored) where the SEND's scan checked it
        self.verdict: Verdict = NOT_TRACKED
        self.finished = False
        self.message_id: Stored | None = None
        self.error: MagnetarError | None = None

    def __repr__(self) -> str:
        return (
            f"Send(sequence_id={self.sequence_id}, num_messages={self.num_messages}, "
            f"finished={self.finished}, message_id={self.message_id}, error={self.error!r})"
        )


def sends_of(
    frames: Sequence[SendFrame], origins: Sequence[Origin | None] | None = None
) -> list[Send]:
    """The :class:`Send` of each SEND frame of a run, in order; ``origins`` (parallel to
    ``frames``) for a replicator's, else none has one. A message count below 1 counts as 1;
    the scan's facts become the dispatcher's (their chunk tag None: a scanned SEND with
    facts is not a chunk)."""
    sends: list[Send] = []
    for i, frame in enumerate(frames):
        count = frame.num_messages
        facts = frame.facts
        sends.append(
            Send(
                frame.sequence_id,
                frame.highest_sequence_id,
                count if count > 1 else 1,
                frame.stored,
                frame.chunk,
                None if origins is None else origins[i],
                None if facts is None else (facts[0], facts[1], facts[2], None),
                frame.stored_crc,
            )
        )
    return sends


def run_columns(
    sends: Sequence[Send],
) -> tuple[list[bytes], list[int], list[object], list[int] | None]:
    """What a run of ``sends`` hands the topic, column by column: the stored bytes, the
    message counts, the facts, and the checksums (None unless the first SEND has one: only a
    run of big SENDs carries them)."""
    stored: list[bytes] = []
    counts: list[int] = []
    facts: list[object] = []
    crcs: list[int] | None = [] if sends and sends[0].stored_crc >= 0 else None
    for send in sends:
        stored.append(send.stored)
        counts.append(send.num_messages)
        facts.append(send.facts)
        if crcs is not None:
            crcs.append(send.stored_crc)
    return stored, counts, facts, crcs


def mark_stored(sends: Sequence[Send], index: int, positions: Sequence[Position]) -> None:
    """SENDs ``index ..`` of a run are durable at ``positions`` (one each, in order): record
    where and finish them. Raises ValueError when the run has fewer SENDs than that."""
    count = len(positions)
    if index < 0 or index + count > len(sends):
        raise ValueError(f"{count} positions from SEND {index} of a run of {len(sends)}")
    for k in range(count):
        send = sends[index + k]
        send.message_id = positions[k]
        send.finished = True


def pop_stored(pending: collections.deque[Send]) -> tuple[list[Send], int, int]:
    """Pop the stretch of stored SENDs at the head of ``pending`` (finished, stored, not a
    duplicate, not failed): them, their messages and their bytes. Stops at the first SEND that
    is not finished, or finished otherwise (the caller answers that one)."""
    stored: list[Send] = []
    messages = 0
    size = 0
    not_dup = DupStatus.NOT_DUP
    while pending:
        head = pending[0]
        if (
            not head.finished
            or head.message_id is None
            or head.error is not None
            or head.verdict.status is not not_dup
        ):
            break
        pending.popleft()
        stored.append(head)
        messages += head.num_messages
        size += len(head.stored)
    return stored, messages, size
