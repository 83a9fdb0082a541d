"""Run a real ``magnetar proxy`` process in front of a cluster's brokers, for tests.

::

    proxy = ProxyProcess(data_dir=tmp / "proxy", metadata_url=etcd.url)
    proxy.start()               # waits for the ready line; raises ProxyStartError with the log
    proxy.service_url           # "pulsar://127.0.0.1:PORT": what the client is given
    proxy.web_url               # "http://127.0.0.1:PORT": admin calls, /metrics, /status.html
    proxy.stop()                # SIGTERM

The proxy keeps no state, so ``data_dir`` only names its log, ``<data_dir>.log``. ``env``
reaches its ``MAGNETAR_PROXY_*`` settings (a short handshake timeout, say).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from tests.kit.ports import free_port
from tests.kit.process import MAGNETAR_CLI, ProcessStartError, ServerProcess

READY_LINE = "magnetar proxy ready"


class ProxyStartError(ProcessStartError):
    """The proxy exited or did not get ready; the message holds its log tail."""


@dataclass
class ProxyProcess(ServerProcess):
    ready_line: ClassVar[str] = READY_LINE
    start_error: ClassVar[type[ProcessStartError]] = ProxyStartError
    redrawn_ports: ClassVar[tuple[str, ...]] = ("service_port", "web_port")

    data_dir: Path
    metadata_url: str
    service_port: int = field(default_factory=free_port)
    web_port: int = field(default_factory=free_port)
    log_level: str = "info"
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    _log_offset: int = 0

    @property
    def service_url(self) -> str:
        return f"pulsar://127.0.0.1:{self.service_port}"

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def command(self) -> list[str]:
        return [
            *MAGNETAR_CLI, "proxy",
            "--metadata", self.metadata_url,
            "--service-port", str(self.service_port),
            "--web-service-port", str(self.web_port),
            "--advertised-address", "127.0.0.1",
            "--bind-address", "127.0.0.1",
            "--log-level", self.log_level,
            *self.extra_args,
        ]  # fmt: skip

    def describe(self) -> str:
        return f"proxy {self.service_url}"
