"""Run real ``magnetar autorecovery`` processes for tests.

::

    ar = AutorecoveryProcess(data_dir=tmp / "ar-1", metadata_url=etcd.url)
    ar.start()                  # waits for the ready line; raises AutorecoveryStartError
    ar.http_url                 # "http://127.0.0.1:PORT": /metrics, /api/v1/autorecovery/...
    ar.lock_intervals()         # [(ledger_id, acquired_at, released_at)] from its JSON log
    ar.kill() / ar.stop()

Autorecovery keeps no state, so ``data_dir`` only names its log, ``<data_dir>.log``. It logs
JSON lines so that tests can read its replication-lock record. The session timeout is short by
default (2 s) so that a killed auditor's leadership passes on quickly.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from tests.kit.ports import free_port
from tests.kit.process import MAGNETAR_CLI, ProcessStartError, ServerProcess

READY_LINE = "magnetar autorecovery ready"


class AutorecoveryStartError(ProcessStartError):
    """The process exited or did not get ready; the message holds its log tail."""


@dataclass
class AutorecoveryProcess(ServerProcess):
    ready_line: ClassVar[str] = READY_LINE
    start_error: ClassVar[type[ProcessStartError]] = AutorecoveryStartError
    redrawn_ports: ClassVar[tuple[str, ...]] = ("http_port",)

    data_dir: Path
    metadata_url: str
    http_port: int = field(default_factory=free_port)
    autorecovery_id: str = field(default_factory=lambda: f"ar-{uuid.uuid4().hex[:8]}")
    session_timeout_s: float = 2.0
    lost_bookie_recovery_delay: float = 0.0
    audit_period: float = 600.0
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    _log_offset: int = 0

    def command(self) -> list[str]:
        return [
            *MAGNETAR_CLI, "autorecovery",
            "--metadata", self.metadata_url,
            "--http-server-port", str(self.http_port),
            "--bind-address", "127.0.0.1",
            "--autorecovery-id", self.autorecovery_id,
            "--session-timeout-s", str(self.session_timeout_s),
            "--lost-bookie-recovery-delay", str(self.lost_bookie_recovery_delay),
            "--audit-period", str(self.audit_period),
            "--log-json",
            *self.extra_args,
        ]  # fmt: skip

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def describe(self) -> str:
        return f"autorecovery {self.autorecovery_id}"

    def events(self, name: str) -> list[dict[str, object]]:
        """Every JSON log record of event ``name`` (across restarts)."""
        found = []
        for line in self.log_text().splitlines():
            if not line.startswith("{"):
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("event") == name:
                found.append(record)
        return found

    def lock_intervals(self) -> list[tuple[int, float, float | None]]:
        """(ledger id, acquired at, released at or None) of every replication lock it took."""
        open_at: dict[int, float] = {}
        intervals: list[tuple[int, float, float | None]] = []
        for record in self.events("replication_lock_acquired"):
            open_at[int(str(record["ledger_id"]))] = float(str(record["at"]))
        for record in self.events("replication_lock_released"):
            ledger = int(str(record["ledger_id"]))
            intervals.append((ledger, open_at.pop(ledger), float(str(record["at"]))))
        intervals += [(ledger, at, None) for ledger, at in open_at.items()]
        return intervals


def assert_no_overlapping_locks(processes: list[AutorecoveryProcess]) -> int:
    """No two processes held one ledger's replication lock at overlapping times; the number
    of lock holdings seen."""
    holdings = [(p.autorecovery_id, *i) for p in processes for i in p.lock_intervals()]
    by_ledger: dict[int, list[tuple[float, float, str]]] = {}
    for who, ledger, start, end in holdings:
        by_ledger.setdefault(ledger, []).append((start, end if end is not None else 1e18, who))
    for ledger, spans in by_ledger.items():
        spans.sort()
        for (_s1, e1, w1), (s2, _e2, w2) in itertools.pairwise(spans):
            assert s2 >= e1, f"ledger {ledger}: {w1} held it until {e1}, {w2} took it at {s2}"
    return len(holdings)
