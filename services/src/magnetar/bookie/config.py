"""The bookie core's configuration: one frozen value built once per process.

:class:`BookieConfig` carries what :class:`magnetar.bookie.bookie.Bookie` needs: its data dir
(the journal and the ledger storage sit under it unless ``journal_location`` /
``ledger_location`` put them elsewhere: :mod:`magnetar.bookie.directories`), the journal's
tuning, the read-only rules and the intervals of the background loops (checkpoint, GC, disk
check). Defaults follow BookKeeper's where it has one (``logSizeLimit``,
``compactionRateByBytes``).

Who builds it: the process settings (:mod:`magnetar.bookie.settings`) for ``magnetar bookie``
and for the standalone's in-process bookie, and tests directly. Read on the loop; never
changed after it is built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from magnetar.bookie.directories import JOURNAL_SUBDIR, LEDGERS_SUBDIR
from magnetar.bookie.journal import JournalConfig
from magnetar.bookie.ledger_storage import (
    COMPACTION_BYTES_PER_S,
    COMPACTION_THRESHOLD,
    ENTRY_LOG_PAGE_CACHE_BYTES,
    ENTRY_LOG_SIZE_LIMIT,
)


@dataclass(frozen=True, slots=True)
class BookieConfig:
    data_dir: Path
    journal: JournalConfig = field(default_factory=JournalConfig)
    force_read_only: bool = False
    min_free_disk_fraction: float = 0.05
    writable_margin_fraction: float = 0.02
    disk_check_interval_s: float = 5.0
    gc_interval_s: float = 30.0
    checkpoint_interval_s: float = 10.0
    entry_log_size_limit: int = ENTRY_LOG_SIZE_LIMIT  # BookKeeper's logSizeLimit
    # Entry-log bytes kept in the page cache behind the last one written (0: all).
    entry_log_page_cache_bytes: int = ENTRY_LOG_PAGE_CACHE_BYTES
    # Entry logs written O_DIRECT behind the appends, where the filesystem allows it.
    entry_log_direct_writes: bool = True
    compaction_threshold: float = COMPACTION_THRESHOLD
    compaction_rate_by_bytes: float = COMPACTION_BYTES_PER_S  # compactionRateByBytes
    journal_location: Path | None = None  # None: DATA/journal (BookKeeper's journalDirectories)
    ledger_location: Path | None = None  # None: DATA/ledgers (ledgerDirectories)

    @property
    def journal_dir(self) -> Path:
        return self.journal_location or self.data_dir / JOURNAL_SUBDIR

    @property
    def ledger_dir(self) -> Path:
        return self.ledger_location or self.data_dir / LEDGERS_SUBDIR
