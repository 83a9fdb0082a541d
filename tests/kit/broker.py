"""Run real ``magnetar broker`` processes (cluster members over etcd and bookies) for tests.

::

    broker = BrokerProcess(data_dir=tmp / "broker-a", metadata_url=etcd.url)
    broker.start()              # waits for the ready line; raises BrokerStartError with the log
    broker.service_url          # "pulsar://127.0.0.1:PORT";  broker.web_url  "http://127.0.0.1:PORT"
    broker.broker_id            # "127.0.0.1:PORT", its key in the broker registry
    broker.pause() / resume()   # SIGSTOP / SIGCONT: a hung process (split-brain tests)
    broker.stop()               # SIGTERM: unloads its bundles, then exits

A broker keeps no state, so ``data_dir`` only names its log, ``<data_dir>.log``. The session
timeout is short by default (2 s) so that ownership moves quickly after a crash or a freeze.
"""

from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from tests.kit.ports import free_port
from tests.kit.process import MAGNETAR_CLI, ProcessStartError, ServerProcess

READY_LINE = "magnetar broker ready"


class BrokerStartError(ProcessStartError):
    """The broker exited or did not get ready; the message holds its log tail."""


class BrokerEndpoints:
    """The two loopback ports a broker serves on (a broker process or a standalone), its URLs,
    and the command-line options that bind and advertise them."""

    broker_port: int
    web_port: int

    @property
    def service_url(self) -> str:
        return f"pulsar://127.0.0.1:{self.broker_port}"

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def broker_id(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    def listener_args(self) -> list[str]:
        return [
            "--broker-port", str(self.broker_port),
            "--web-port", str(self.web_port),
            "--advertised-address", "127.0.0.1",
            "--bind-address", "127.0.0.1",
        ]  # fmt: skip


@dataclass
class BrokerProcess(BrokerEndpoints, ServerProcess):
    ready_line: ClassVar[str] = READY_LINE
    start_error: ClassVar[type[ProcessStartError]] = BrokerStartError
    redrawn_ports: ClassVar[tuple[str, ...]] = ("broker_port", "web_port")
    start_timeout_s: ClassVar[float] = 60.0
    stop_timeout_s: ClassVar[float] = 30.0

    data_dir: Path
    metadata_url: str
    broker_port: int = field(default_factory=free_port)
    web_port: int = field(default_factory=free_port)
    session_timeout_s: float = 2.0
    log_level: str = "info"
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    _log_offset: int = 0

    def command(self) -> list[str]:
        return [
            *MAGNETAR_CLI, "broker",
            "--metadata", self.metadata_url,
            *self.listener_args(),
            "--log-level", self.log_level,
            *self.extra_args,
        ]  # fmt: skip

    def spawn(self) -> subprocess.Popen[bytes]:
        self.env.setdefault("MAGNETAR_BROKER_SESSION_TIMEOUT_S", str(self.session_timeout_s))
        return super().spawn()

    def pause(self) -> None:
        """SIGSTOP: the process hangs (no keep-alive, no I/O) until :meth:`resume`."""
        if self.process is not None:
            self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGCONT)

    def describe(self) -> str:
        return f"broker {self.service_url}"
