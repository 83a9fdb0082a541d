"""The entry log's record layout, and the framing of a group of journalled adds.

A log is a sequence of records::

    length (u32) | ledger id (u64) | entry id (u64) | crc32c (u32) | payload (length bytes)

all big-endian; the CRC covers ledger id, entry id and length (:data:`CRC_HEAD`), then the
payload. :mod:`magnetar.bookie.entry_log` writes, reads and scans them.

Pure and compiled with mypyc ([tool.magnetar.mypyc]): the journal's writer thread frames the
adds of every group it writes with one call of :func:`frame_adds`, under the GIL, where the
interpreted loop cost about 1.3 us a record (docs/benchmarks.md, "Issue 17, session 17").
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import crc32c

from magnetar.bookie.journal_record import JournalRecord, RecordKind
from magnetar.checksum import crc32c_combine

HEAD = struct.Struct(">IQQI")
RECORD_HEAD_SIZE = HEAD.size  # bytes of a record before its payload
CRC_HEAD = struct.Struct(">QQI")  # what the CRC covers before the payload


def record_crc(
    ledger_id: int, entry_id: int, payload: bytes | memoryview, payload_crc: int = -1
) -> int:
    """The checksum a record of ``payload`` carries: :data:`CRC_HEAD`'s fields, then the
    payload (what a read checks too). ``payload_crc``: ``crc32c(payload)`` where it is known
    (not -1): the record's is then combined from it, without a pass over the payload."""
    length = len(payload)
    head_crc = int(crc32c.crc32c(CRC_HEAD.pack(ledger_id, entry_id, length)))
    if payload_crc < 0:
        return int(crc32c.crc32c(payload, head_crc))
    return crc32c_combine(head_crc, payload_crc, length)


def frame_adds(
    records: Sequence[JournalRecord], payload_crcs: Sequence[int] = ()
) -> tuple[list[bytes], int, dict[int, int]]:
    """The log records of the adds among ``records`` (fences and deletes have none), back to
    back, as parts to write (each head, then its payload, uncopied); their size in bytes; and
    the bytes per ledger.

    ``payload_crcs`` (parallel to ``records``, or empty): each payload's ``crc32c`` where it
    was taken (not -1); a record's checksum is then combined from it and the head's, without
    a second pass over the payload."""
    parts: list[bytes] = []
    usage: dict[int, int] = {}
    total = 0
    run_ledger = -1
    run_bytes = 0
    pack_head = HEAD.pack
    given = len(payload_crcs) > 0
    for i, record in enumerate(records):
        if record.kind != RecordKind.ADD:
            continue
        ledger_id = record.ledger_id
        entry_id = record.entry_id
        payload = record.payload
        length = len(payload)
        checksum = record_crc(ledger_id, entry_id, payload, payload_crcs[i] if given else -1)
        parts.append(pack_head(length, ledger_id, entry_id, checksum))
        parts.append(payload)
        length += RECORD_HEAD_SIZE
        total += length
        if ledger_id != run_ledger:  # a group is mostly runs of one ledger: one sum a run
            if run_bytes:
                usage[run_ledger] = usage.get(run_ledger, 0) + run_bytes
            run_ledger, run_bytes = ledger_id, 0
        run_bytes += length
    if run_bytes:
        usage[run_ledger] = usage.get(run_ledger, 0) + run_bytes
    return parts, total, usage
