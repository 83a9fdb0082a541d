"""The journal's files and their replay: segment naming, the log mark, and replay on open.

Layout: ``<dir>/00000001.log``, ``00000002.log``, ... each a sequence of framed records (see
:mod:`magnetar.bookie.journal_record`). ``<dir>/lastMark`` holds the *log mark*: the position
up to which every record is also durable in ledger storage, as ``segment (u64 BE) | offset
(u64 BE) | crc32c of both (u32 BE)``.

Invariants:

* The mark is replaced atomically (write a temporary file, fsync, rename, fsync the dir); a
  mark file of the wrong size or with a bad checksum is refused (:class:`JournalFailed`), never
  guessed at.
* :func:`replay` reads every record after the mark in order and applies it to the sink. It
  stops a segment at its first torn or corrupt record, truncates the segment there and logs a
  warning: every valid record before it is replayed, nothing after it is (a record after a torn
  one was never acknowledged, because the one before it had not been synced when it was
  written). Zeros alone after the last record are the writer's fill ahead of a segment it did
  not close (``JournalConfig.prealloc_bytes``): truncated the same way, logged as such.

Blocking file I/O, no threads of its own and no loop: :class:`magnetar.bookie.journal.Journal`
calls :func:`replay` and :func:`write_mark` from executor threads (at open, and at each
checkpoint), and :func:`list_segments` / :func:`segment_path` likewise.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import crc32c

from magnetar.bookie.errors import JournalFailed
from magnetar.bookie.fileio import replace_durably
from magnetar.bookie.journal_record import JournalSink, scan_segment
from magnetar.telemetry import get_logger

log = get_logger(__name__)

_MARK = struct.Struct(">QQI")
_MARK_FILE = "lastMark"
_SEGMENT_SUFFIX = ".log"
_REPLAY_CHUNK = 1024


@dataclass(frozen=True, slots=True, order=True)
class JournalPosition:
    """A byte position in the journal: (segment number, offset within it)."""

    segment: int
    offset: int


def segment_path(directory: Path, number: int) -> Path:
    return directory / f"{number:08d}{_SEGMENT_SUFFIX}"


def list_segments(directory: Path) -> list[int]:
    """Segment numbers present in ``directory``, ascending."""
    numbers = []
    for p in directory.iterdir():
        if p.suffix == _SEGMENT_SUFFIX and p.stem.isdigit():
            numbers.append(int(p.stem))
    return sorted(numbers)


def read_mark(directory: Path) -> JournalPosition:
    """The log mark, or (0, 0) when there is none (a new or never-checkpointed journal)."""
    try:
        data = (directory / _MARK_FILE).read_bytes()
    except FileNotFoundError:
        return JournalPosition(0, 0)
    if len(data) != _MARK.size:
        raise JournalFailed(f"journal mark file {directory / _MARK_FILE} has a bad size")
    segment, offset, crc = _MARK.unpack(data)
    if crc != crc32c.crc32c(data[:16]):
        raise JournalFailed(f"journal mark file {directory / _MARK_FILE} fails its checksum")
    return JournalPosition(segment, offset)


def write_mark(directory: Path, mark: JournalPosition) -> None:
    """Atomically replace the log mark (write, fsync, rename, fsync dir)."""
    body = struct.pack(">QQ", mark.segment, mark.offset)
    replace_durably(directory / _MARK_FILE, body + struct.pack(">I", crc32c.crc32c(body)))


def replay(directory: Path, sink: JournalSink) -> tuple[int, int]:
    """Apply every record after the mark to ``sink``; truncate torn tails. Blocking.

    Returns (records replayed, highest segment number seen).
    """
    mark = read_mark(directory)
    replayed = 0
    segments = list_segments(directory)
    for number in segments:
        if number < mark.segment:
            continue
        path = segment_path(directory, number)
        data = path.read_bytes()
        start = mark.offset if number == mark.segment else 0
        records, end = scan_segment(data, start)
        for i in range(0, len(records), _REPLAY_CHUNK):
            sink.apply(records[i : i + _REPLAY_CHUNK])
        replayed += len(records)
        if end < len(data):
            # Zeros alone after the last record are the writer's fill ahead (a segment it did
            # not close: a kill -9), not a torn record.
            zeros = data.count(0, end) == len(data) - end
            (log.info if zeros else log.warning)(
                "journal_zero_tail_truncated" if zeros else "journal_torn_tail_truncated",
                segment=str(path),
                valid_bytes=end,
                dropped_bytes=len(data) - end,
                records_replayed=len(records),
            )
            with open(path, "r+b") as f:
                f.truncate(end)
                os.fsync(f.fileno())
    return replayed, (segments[-1] if segments else 0)
