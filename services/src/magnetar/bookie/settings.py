"""The bookie process's one settings object (pydantic-settings, env prefix ``MAGNETAR_BOOKIE_``).

Built once by ``magnetar bookie`` from its flags over the environment, then passed down; no
module reads the environment itself. Names follow BookKeeper's bk_server.conf where a
BookKeeper operator would look (``journalSyncData`` -> ``journal_sync``, ``diskUsageThreshold``
-> ``min_free_disk_fraction`` expressed as the free share).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from magnetar.bookie.config import BookieConfig
from magnetar.bookie.directories import layout_problem
from magnetar.bookie.journal import JournalConfig
from magnetar.bookie.ledger_storage import (
    COMPACTION_BYTES_PER_S,
    COMPACTION_THRESHOLD,
    ENTRY_LOG_PAGE_CACHE_BYTES,
    ENTRY_LOG_SIZE_LIMIT,
)
from magnetar.tls import PemServerTls
from magnetar.tls.settings import MetadataStoreTlsSettings

_JOURNAL = JournalConfig()  # the journal's own defaults, which the settings' follow


class BookieStorageSettings(BaseSettings):
    """How a bookie's journal and ledger storage are tuned. ``magnetar bookie`` and the
    standalone's in-process bookie share these fields, each under its own env prefix."""

    model_config = SettingsConfigDict(frozen=True)

    journal_sync: bool = True
    journal_max_group_wait_ms: float = Field(default=1.0, ge=0, le=1000)  # journalMaxGroupWaitMSec
    # Write each journal group through an O_DSYNC descriptor (one system call) instead of a
    # write then an fdatasync; the same durability (docs/storage.md, "The journal's write").
    journal_dsync_writes: bool = True
    # With O_DSYNC writes: open the journal's segments O_DIRECT too where the filesystem allows
    # it, so a group skips the page cache (docs/storage.md, "The journal's write").
    journal_direct_writes: bool = True
    # Keep this many KiB of the journal segment zero-filled ahead of its end while groups are
    # small, so a group's sync carries no file metadata (docs/storage.md, "The journal's
    # preallocated segment"); 0: append only. In the spirit of journalPreAllocSizeMB.
    journal_prealloc_kbytes: int = Field(
        default=_JOURNAL.prealloc_bytes // 1024, ge=0, le=64 * 1024
    )
    # Drop the journal's synced pages from the page cache (journalRemovePagesFromCache):
    # docs/storage.md, "The journal's pages".
    journal_remove_pages_from_cache: bool = _JOURNAL.remove_pages_from_cache
    # Export the journal's per-group stage histograms (queue wait, apply, hand-back to the
    # loop): a few microseconds a group, one of them on the event loop; for tail hunting.
    journal_stage_metrics: bool = False
    entry_log_size_limit: int = Field(default=ENTRY_LOG_SIZE_LIMIT, ge=1 << 20)  # logSizeLimit
    # Entry-log MiB kept in the page cache behind the last byte written; older pages are
    # dropped once written back (docs/storage.md, "Entry logs in the page cache"). 0: all.
    entry_log_page_cache_mbytes: int = Field(default=ENTRY_LOG_PAGE_CACHE_BYTES >> 20, ge=0)
    # Write the entry logs O_DIRECT from two buffers, behind the appends, where the filesystem
    # allows it (docs/storage.md, "Entry logs written behind"); the page-cache window above
    # then has nothing to keep. False: buffered appends.
    entry_log_direct_writes: bool = True
    # A sealed entry log with less than this share of live bytes is compacted.
    compaction_threshold: float = Field(default=COMPACTION_THRESHOLD, ge=0, le=1)
    compaction_rate_by_bytes: int = Field(default=COMPACTION_BYTES_PER_S, gt=0)  # bytes per second
    # The journal's and the ledger storage's own dirs, e.g. the journal on its own volume
    # (BookKeeper's journalDirectories, ledgerDirectories); default: under the data dir.
    journal_dir: Path | None = None
    ledger_dir: Path | None = None

    def storage_config(
        self, data_dir: Path, reserved: tuple[tuple[str, Path], ...] = ()
    ) -> BookieConfig:
        """A bookie config with these settings (the rest at their defaults); a layout whose
        dirs cannot work together (:func:`~magnetar.bookie.directories.layout_problem`, which
        ``reserved`` is passed to) raises ``ValueError`` saying why."""
        data_dir = data_dir.absolute()
        config = BookieConfig(
            data_dir=data_dir,
            journal_location=self.journal_dir.absolute() if self.journal_dir else None,
            ledger_location=self.ledger_dir.absolute() if self.ledger_dir else None,
            journal=JournalConfig(
                sync=self.journal_sync,
                max_group_wait_ms=self.journal_max_group_wait_ms,
                dsync_writes=self.journal_dsync_writes,
                direct_writes=self.journal_direct_writes,
                prealloc_bytes=self.journal_prealloc_kbytes * 1024,
                remove_pages_from_cache=self.journal_remove_pages_from_cache,
                stage_metrics=self.journal_stage_metrics,
            ),
            entry_log_size_limit=self.entry_log_size_limit,
            entry_log_page_cache_bytes=self.entry_log_page_cache_mbytes << 20,
            entry_log_direct_writes=self.entry_log_direct_writes,
            compaction_threshold=self.compaction_threshold,
            compaction_rate_by_bytes=self.compaction_rate_by_bytes,
        )
        problem = layout_problem(data_dir, config.journal_dir, config.ledger_dir, reserved)
        if problem is not None:
            raise ValueError(problem)
        return config


class BookieSettings(BookieStorageSettings, MetadataStoreTlsSettings):
    model_config = SettingsConfigDict(env_prefix="MAGNETAR_BOOKIE_", frozen=True)

    data_dir: Path
    metadata_url: str
    port: int = Field(default=3181, ge=0, le=65535)
    # BookKeeper's httpServerPort: /metrics, /api/v1/bookie/state, /api/v1/bookie/is_ready.
    http_server_port: int = Field(default=8000, ge=0, le=65535)
    bind_address: str = "127.0.0.1"
    bookie_id: str | None = None
    # The failure domain (BookKeeper's rack, e.g. a zone): ensembles spread over racks.
    rack: str = ""
    advertised_address: str | None = None
    journal_segment_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    session_timeout_s: float = Field(default=10.0, gt=0)
    read_only: bool = False
    min_free_disk_fraction: float = Field(default=0.05, ge=0, lt=1)
    disk_check_interval_s: float = Field(default=5.0, gt=0)
    gc_interval_s: float = Field(default=30.0, gt=0)
    checkpoint_interval_s: float = Field(default=10.0, gt=0)
    shutdown_step_timeout_s: float = Field(default=10.0, gt=0)
    register_timeout_s: float = Field(default=60.0, gt=0)
    log_level: str = "info"
    log_json: bool = False
    # TLS on the gRPC port (bk_server.conf's tlsCertificatePath, tlsKeyStore with
    # tlsKeyStoreType=PEM, tlsTrustStore, tlsClientAuthentication): on when the certificate is
    # set; the files are re-read when they change (docs/security.md, "TLS").
    tls_certificate_path: str = ""
    tls_key_store: str = ""
    tls_trust_store: str = ""
    tls_client_authentication: bool = False
    tls_cert_refresh_check_duration_sec: float = Field(default=300.0, ge=0)

    @model_validator(mode="after")
    def _check_layout(self) -> BookieSettings:
        self.bookie_config()  # raises ValueError naming what is wrong with the dirs
        return self

    def server_tls(self) -> PemServerTls | None:
        if not self.tls_certificate_path and not self.tls_key_store:
            return None
        return PemServerTls(
            cert_file=self.tls_certificate_path,
            key_file=self.tls_key_store,
            trust_certs_file=self.tls_trust_store,
            require_client_auth=self.tls_client_authentication,
            refresh_interval_s=self.tls_cert_refresh_check_duration_sec,
        )

    @property
    def address(self) -> str:
        """The host:port clients use (registered in metadata)."""
        return self.advertised_address or f"127.0.0.1:{self.port}"

    @property
    def effective_bookie_id(self) -> str:
        return self.bookie_id or self.address

    def bookie_config(self) -> BookieConfig:
        config = self.storage_config(self.data_dir.absolute())
        return replace(
            config,
            journal=replace(config.journal, segment_bytes=self.journal_segment_bytes),
            force_read_only=self.read_only,
            min_free_disk_fraction=self.min_free_disk_fraction,
            disk_check_interval_s=self.disk_check_interval_s,
            gc_interval_s=self.gc_interval_s,
            checkpoint_interval_s=self.checkpoint_interval_s,
        )
