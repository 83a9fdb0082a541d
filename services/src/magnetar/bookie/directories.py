"""Where a bookie keeps its state: the data dir, the journal dir and the ledger dir.

By default the journal and the ledger storage sit under the data dir (``DATA/journal``,
``DATA/ledgers``). Either may be moved elsewhere — the journal onto its own volume, say, so
that its fdatasync on every acknowledgement's path does not queue behind the entry logs'
writeback (BookKeeper's ``journalDirectories`` and ``ledgerDirectories``). The data dir keeps
the cookie (:mod:`magnetar.bookie.cookie`), which also records both dirs.

:func:`layout_problem` is the pure check of a layout (called by the settings, so that a bad
one is refused before anything starts); :func:`ensure_writable` is the I/O check made when
the bookie opens. Called from the settings objects and :meth:`magnetar.bookie.bookie.Bookie.open`.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from magnetar.bookie.errors import StorageUnavailable

JOURNAL_SUBDIR = "journal"
LEDGERS_SUBDIR = "ledgers"


def _inside(path: Path, other: Path) -> bool:
    return path == other or other in path.parents


def layout_problem(
    data_dir: Path,
    journal_dir: Path,
    ledger_dir: Path,
    reserved: tuple[tuple[str, Path], ...] = (),
) -> str | None:
    """Why the three absolute dirs cannot work together, or None. The journal and the ledger
    storage each own their dir (the journal deletes old segment files it finds in its own; the
    ledger storage's entry logs have the same file names), so they must differ and neither
    may lie inside the other; neither may be the data dir itself, which holds the cookie and
    (by default) both of them, nor overlap a ``reserved`` dir (name, path) of another owner
    (the standalone's metadata store: RocksDB's own ``*.log`` files)."""
    if journal_dir == ledger_dir:
        return (
            f"the journal dir and the ledger dir are the same ({journal_dir}): give each its own "
            "dir (--journal-dir, --ledger-dir)"
        )
    for name, path, other_name, other in (
        ("journal", journal_dir, "ledger", ledger_dir),
        ("ledger", ledger_dir, "journal", journal_dir),
    ):
        if _inside(path, other):
            return (
                f"the {name} dir {path} lies inside the {other_name} dir {other}: give each "
                "its own dir, neither inside the other"
            )
        if path == data_dir:
            default = data_dir / (JOURNAL_SUBDIR if name == "journal" else LEDGERS_SUBDIR)
            return (
                f"the {name} dir is the data dir itself ({data_dir}): use a dir of its own "
                f"(the default is {default})"
            )
        if _inside(data_dir, path):
            return f"the data dir {data_dir} lies inside the {name} dir {path}: move one of them"
        for reserved_name, reserved_path in reserved:
            if _inside(path, reserved_path) or _inside(reserved_path, path):
                return (
                    f"the {name} dir {path} overlaps the {reserved_name} dir {reserved_path}: "
                    "give it a dir of its own"
                )
    return None


def ensure_writable(directory: Path, what: str) -> None:
    """Create ``directory`` if needed and prove it writable (a probe file written, synced and
    removed); raise :class:`StorageUnavailable` naming ``what`` and the dir otherwise.
    Blocking: run it in an executor."""
    probe = directory / f".probe-{uuid.uuid4().hex[:8]}"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, b"x")
            os.fsync(fd)
        finally:
            os.close(fd)
        probe.unlink()
    except OSError as exc:
        raise StorageUnavailable(
            f"the {what} dir {directory} is not writable ({exc.strerror or exc}): check the "
            "path, its volume (mounted? read-only? full?) and the process's permissions"
        ) from exc
