"""The journal's record format: how one journalled change is laid out in a segment.

A segment is a sequence of framed records::

    length (u32 BE) | crc32c(payload) (u32 BE) | payload (length bytes)

and the payload is a :class:`JournalRecord` (an add, a fence or a ledger delete)::

    kind (u8) | ledger id (u64) | entry id (i64) | lac (i64) | digest (u32)
    | master key length (u16) | master key | entry payload

Pure: bytes in, bytes or records out; no files, no threads, no loop. :func:`scan_segment` is
the one decoder: it stops at the first torn or corrupt record (short, zero length, CRC mismatch,
undecodable head) and never returns a damaged record.

Who calls it: the bookie core builds records on the event loop
(:mod:`magnetar.bookie.bookie`); the journal's writer thread frames them
(:func:`frame_records`); replay (:mod:`magnetar.bookie.journal_replay`) scans them,
in an executor thread; ledger storage applies them (:class:`JournalSink`).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Sequence
from typing import NamedTuple, Protocol

import crc32c

from magnetar.checksum import COMBINE_FROM, KEEP_GIL, crc32c_combine

_FRAME = struct.Struct(">II")
_RECORD = struct.Struct(">BQqqIH")
_RECORD_OVERHEAD = _FRAME.size + _RECORD.size  # framed bytes of a record besides key+payload


class RecordKind(enum.IntEnum):
    ADD = 1
    FENCE = 2
    DELETE = 3


class JournalRecord(NamedTuple):
    """One journalled change. ``entry_id``/``lac``/``digest``/``payload`` matter for ADD only.

    A NamedTuple rather than a frozen dataclass: the bookie builds one per add on the event
    loop, and a tuple is cheaper to build (why per-message values are NamedTuples:
    docs/benchmarks.md, broker round 3)."""

    kind: RecordKind
    ledger_id: int
    entry_id: int = -1
    lac: int = -1
    digest: int = 0
    master_key: bytes = b""
    payload: bytes = b""

    def encode(self) -> bytes:
        return b"".join((self._head(), self.payload))

    def _head(self) -> bytes:
        """The encoded record up to its payload."""
        head = _RECORD.pack(
            self.kind,
            self.ledger_id,
            self.entry_id,
            self.lac,
            self.digest,
            len(self.master_key),
        )
        return head + self.master_key

    def frame_into(self, parts: list[bytes]) -> None:
        """Append this record's on-disk form (``frame(self.encode())``) to ``parts`` without
        copying the payload: the CRC runs over the head, then continues over the payload."""
        head = self._head()
        crc = crc32c.crc32c(self.payload, crc32c.crc32c(head))
        parts += (_FRAME.pack(len(head) + len(self.payload), crc), head, self.payload)

    @classmethod
    def decode(cls, data: bytes | memoryview) -> JournalRecord:
        kind, ledger_id, entry_id, lac, digest, mk_len = _RECORD.unpack_from(data, 0)
        start = _RECORD.size
        return cls(
            kind=RecordKind(kind),
            ledger_id=ledger_id,
            entry_id=entry_id,
            lac=lac,
            digest=digest,
            master_key=bytes(data[start : start + mk_len]),
            payload=bytes(data[start + mk_len :]),
        )


class JournalSink(Protocol):
    """Where journalled records go after they are durable (ledger storage).

    Both methods are called from executor threads or the journal's writer thread, never from
    the loop.
    """

    def apply(self, records: Sequence[JournalRecord], payload_crcs: Sequence[int] = ()) -> None:
        """Apply records in order. Must be idempotent: replay may apply a record again.

        ``payload_crcs``: what :func:`frame_records` returned for them (each payload's
        ``crc32c``, or -1 where not taken), so that a long payload is not read again for its
        own checksum; empty when not known (replay)."""
        ...

    def flush(self) -> None:
        """Make every record applied so far durable without the journal."""
        ...


def framed_size(records: Sequence[JournalRecord]) -> int:
    """Bytes ``records`` take in a segment (frame headers included)."""
    size = sum([len(r.master_key) + len(r.payload) for r in records])
    return size + _RECORD_OVERHEAD * len(records)


def frame_records(
    records: Sequence[JournalRecord], known: Sequence[int] = ()
) -> tuple[list[bytes], int, list[int]]:
    """The on-disk form of ``records`` in order, as parts to write (``frame_into`` of each,
    in one compiled loop: the writer thread frames a whole group with one call), their total
    size in bytes, and the checksum of each payload taken on the way (``crc32c(payload)``, or
    -1 where the payload is shorter than :data:`~magnetar.checksum.COMBINE_FROM` and was
    checksummed in one pass with its head). Payloads are not copied.

    A long payload is read once: its record's checksum is combined from the head's and the
    payload's, and the caller can combine the entry log's from the same payload checksum
    (:meth:`JournalSink.apply`). ``known`` (parallel to ``records``, or empty): payload
    checksums the caller has already (-1 where not), which are used instead of reading the
    payload at all; one that is wrong makes its record fail its CRC at replay."""
    parts: list[bytes] = []
    payload_crcs: list[int] = []
    total = 0
    pack_frame = _FRAME.pack
    pack_record = _RECORD.pack
    crc = crc32c.crc32c
    given = iter(known) if known else None
    for record in records:
        key = record.master_key
        payload = record.payload
        head = pack_record(
            record.kind, record.ledger_id, record.entry_id, record.lac, record.digest, len(key)
        )
        if key:
            head += key
        size = len(payload)
        payload_crc = -1 if given is None else next(given)
        if payload_crc >= 0:
            checksum = crc32c_combine(crc(head), payload_crc, size)
            payload_crcs.append(payload_crc)
        elif size < COMBINE_FROM:
            checksum = crc(payload, crc(head))
            payload_crcs.append(-1)
        else:
            payload_crc = crc(payload, 0, KEEP_GIL)  # the writer must not wait for the loop
            checksum = crc32c_combine(crc(head), payload_crc, size)
            payload_crcs.append(payload_crc)
        length = len(head) + size
        parts += (pack_frame(length, checksum), head, payload)
        total += length + _FRAME.size
    return parts, total, payload_crcs


def frame(payload: bytes) -> bytes:
    """The on-disk form of one record payload."""
    return _FRAME.pack(len(payload), crc32c.crc32c(payload)) + payload


def scan_segment(data: bytes, start: int) -> tuple[list[JournalRecord], int]:
    """Decode records from ``start``; return them and the offset just after the last good one."""
    records: list[JournalRecord] = []
    view = memoryview(data)
    pos = start
    while pos + _FRAME.size <= len(data):
        length, crc = _FRAME.unpack_from(data, pos)
        body_start = pos + _FRAME.size
        if length == 0 or body_start + length > len(data):
            break
        body = view[body_start : body_start + length]
        if crc32c.crc32c(body) != crc:
            break
        try:
            records.append(JournalRecord.decode(body))
        except (struct.error, ValueError):
            break
        pos = body_start + length
    return records, pos
