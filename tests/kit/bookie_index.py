"""Fault injection into a stopped bookie's entry index (RocksDB under ``<data dir>/ledgers/index``).

::

    bookie.stop()                                   # SIGTERM: the journal is checkpointed
    drop_entries(bookie.data_dir, ledger_id, [3, 4, 5])
    set_digest(bookie.data_dir, ledger_id, 7, 0xDEADBEEF)
    bookie.start()

The layout is the one ``magnetar.bookie.ledger_storage`` documents: key ``b"e" | ledger id
(u64) | entry id (u64)``, value ``lac (i64) | digest (u32) | log id (u32) | offset (u64) |
length (u32)``, big-endian. The bookie must be stopped (RocksDB allows one process) and must
have been stopped cleanly, so that journal replay does not put the entries back.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path

from rocksdict import Options, Rdict

from magnetar.bookie.ledger_storage import entry_key

_DIGEST = struct.Struct(">I")
_DIGEST_OFFSET = 8  # after the i64 lac


def _open(data_dir: Path) -> Rdict:
    return Rdict(str(data_dir / "ledgers" / "index"), Options(raw_mode=True))


def drop_entries(data_dir: Path, ledger_id: int, entry_ids: Iterable[int]) -> None:
    db = _open(data_dir)
    try:
        for entry_id in entry_ids:
            key = entry_key(ledger_id, entry_id)
            assert db.get(key) is not None, f"{ledger_id}:{entry_id} is not in {data_dir}"
            db.delete(key)
        db.flush(True)
    finally:
        db.close()


def set_digest(data_dir: Path, ledger_id: int, entry_id: int, digest: int) -> None:
    db = _open(data_dir)
    try:
        key = entry_key(ledger_id, entry_id)
        value = db.get(key)
        assert value is not None, f"{ledger_id}:{entry_id} is not in {data_dir}"
        value = value[:_DIGEST_OFFSET] + _DIGEST.pack(digest) + value[_DIGEST_OFFSET + 4 :]
        db.put(key, value)
        db.flush(True)
    finally:
        db.close()
