"""The ledger storage's index: the row of each entry, and the rows of a group of journalled
records.

An entry's row in RocksDB points into the entry logs::

    key:   "e" | ledger id (u64) | entry id (u64)
    value: lac (i64) | digest (u32) | log id (u32) | offset (u64) | length (u32)

all big-endian (:data:`ENTRY_KEY`, :data:`INDEX`). :func:`index_adds` puts the rows of a group
and gathers what the group does to each ledger's meta (:class:`MetaChange`); the storage
(:mod:`magnetar.bookie.ledger_storage`) merges the changes into the metas and writes the batch.

Pure and compiled with mypyc ([tool.magnetar.mypyc]): the journal's writer thread runs
:func:`index_adds` for every group it writes, under the GIL, where the interpreted loop cost
about 0.8 us a record (docs/benchmarks.md, "Issue 17, session 17").
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from magnetar.bookie.journal_record import JournalRecord, RecordKind
from magnetar.bookie.log_records import RECORD_HEAD_SIZE

ENTRY_PREFIX = b"e"
ENTRY_KEY = struct.Struct(">cQQ")  # ENTRY_PREFIX, ledger id, entry id: packed in one call
INDEX = struct.Struct(">qIIQI")


class MetaChange:
    """What one group does to one ledger's meta: flags only get set, the LAC only grows, the
    first non-empty master key sticks."""

    def __init__(self, master_key: bytes) -> None:
        self.master_key = master_key
        self.lac = -1
        self.fenced = False
        self.deleted = False


def index_adds(
    records: Sequence[JournalRecord],
    put: Callable[[bytes, bytes], object],
    log_id: int,
    offset: int,
) -> dict[int, MetaChange]:
    """Put the row of every add of ``records`` (their records lie back to back in entry log
    ``log_id`` from ``offset``, :mod:`.log_records`) and return each
    touched ledger's :class:`MetaChange`, fences and deletes included. A group is mostly runs
    of one ledger: one lookup a run."""
    changes: dict[int, MetaChange] = {}
    pack_key = ENTRY_KEY.pack
    pack_index = INDEX.pack
    run_ledger = -1
    change = MetaChange(b"")
    for rec in records:
        ledger_id = rec.ledger_id
        if ledger_id != run_ledger:
            run_ledger = ledger_id
            found = changes.get(ledger_id)
            if found is None:
                found = changes[ledger_id] = MetaChange(rec.master_key)
            change = found
        if not change.master_key:
            change.master_key = rec.master_key
        kind = rec.kind
        if kind == RecordKind.ADD:
            length = len(rec.payload)
            put(
                pack_key(ENTRY_PREFIX, ledger_id, rec.entry_id),
                pack_index(rec.lac, rec.digest, log_id, offset, length),
            )
            offset += RECORD_HEAD_SIZE + length
            if rec.lac > change.lac:
                change.lac = rec.lac
        elif kind == RecordKind.FENCE:
            change.fenced = True
        elif kind == RecordKind.DELETE:
            change.deleted = True
    return changes
