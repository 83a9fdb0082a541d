"""Run a real ``magnetar standalone`` process on free loopback ports, for broker tests.

::

    sa = StandaloneProcess(data_dir=tmp_path / "sa")
    sa.start()                  # waits for the ready line; raises StandaloneStartError with the log
    sa.service_url              # "pulsar://127.0.0.1:PORT";  sa.web_url  "http://127.0.0.1:PORT"
    sa.kill()                   # SIGKILL (a crash);  sa.stop() sends SIGTERM and waits
    sa.start()                  # restart on the same data dir and ports

The process's stdout and stderr go to ``<data_dir>.log`` beside the data dir (appended across
restarts); :meth:`StandaloneProcess.log_text` returns it for assertions and failure messages.
Journals skip fsync by default (tests check the broker, not the disk); pass
``journal_sync=True`` for durability tests that must survive more than a process crash.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from tests.kit.ports import free_port

READY_LINE = "magnetar broker ready"
_LAUNCH = "from magnetar.cli.main import app; app()"


class StandaloneStartError(RuntimeError):
    """The process exited or did not get ready; the message holds its log tail."""


@dataclass
class StandaloneProcess:
    data_dir: Path
    broker_port: int = field(default_factory=free_port)
    web_port: int = field(default_factory=free_port)
    journal_sync: bool = False
    log_level: str = "info"
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    _log_offset: int = 0

    @property
    def service_url(self) -> str:
        return f"pulsar://127.0.0.1:{self.broker_port}"

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.log"

    def log_text(self, since_start: bool = False) -> str:
        try:
            data = self.log_path.read_bytes()
        except FileNotFoundError:
            return ""
        return data[self._log_offset if since_start else 0 :].decode(errors="replace")

    def command(self) -> list[str]:
        return [
            sys.executable, "-c", _LAUNCH, "standalone",
            "--data-dir", str(self.data_dir),
            "--broker-port", str(self.broker_port),
            "--web-port", str(self.web_port),
            "--advertised-address", "127.0.0.1",
            "--bind-address", "127.0.0.1",
            "--journal-sync" if self.journal_sync else "--no-journal-sync",
            "--log-level", self.log_level,
            *self.extra_args,
        ]  # fmt: skip

    def start(self, timeout: float = 60.0) -> None:
        """Start and wait for the ready line."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("standalone is already running")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it
        try:
            self.process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **self.env}
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if READY_LINE in self.log_text(since_start=True):
                return
            if self.process.poll() is not None:
                raise StandaloneStartError(
                    f"standalone exited with {self.process.returncode}:\n"
                    f"{self.log_text(since_start=True)[-4000:]}"
                )
            time.sleep(0.05)
        self.kill()
        raise StandaloneStartError(
            f"standalone not ready after {timeout}s:\n{self.log_text(since_start=True)[-4000:]}"
        )

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM and wait for a clean exit (SIGKILL after ``timeout``). Returns the exit code."""
        if self.process is None:
            return None
        process, self.process = self.process, None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                return process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
        return process.wait()

    def kill(self) -> None:
        """SIGKILL: no shutdown at all, as a crash."""
        if self.process is None:
            return
        process, self.process = self.process, None
        if process.poll() is None:
            process.kill()
        process.wait()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


def topic_name(prefix: str) -> str:
    """A fresh persistent topic in public/default, so tests sharing a process never collide."""
    return f"persistent://public/default/{prefix}-{uuid.uuid4().hex[:8]}"
