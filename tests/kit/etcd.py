"""Run a real etcd server (Debian's etcd-server package) on free loopback ports.

:class:`EtcdServer` is a :class:`~tests.kit.process.ServerProcess`: the same start, stop, kill
and log handling as the kit's bookies and standalones; it is ready when its ``/health``
endpoint says so (at ``--log-level warn`` etcd prints no ready line).
"""

from __future__ import annotations

import shutil
import subprocess
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from tests.kit.ports import free_port
from tests.kit.process import ServerProcess


def etcd_binary() -> str | None:
    return shutil.which("etcd")


@dataclass
class EtcdServer(ServerProcess):
    stop_timeout_s: ClassVar[float] = 10.0

    data_dir: Path
    client_port: int = field(default_factory=free_port)
    peer_port: int = field(default_factory=free_port)
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    _log_offset: int = 0

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def url(self) -> str:
        """The metadata URL Magnetar takes for this server."""
        return f"etcd://{self.endpoint}"

    def command(self) -> list[str]:
        binary = etcd_binary()
        if binary is None:
            raise RuntimeError(
                "etcd is not installed: run `make setup` (Debian package etcd-server)"
            )
        client = f"http://{self.endpoint}"
        peer = f"http://127.0.0.1:{self.peer_port}"
        return [
            binary,
            "--name", "test",
            "--data-dir", str(self.data_dir),
            "--listen-client-urls", client,
            "--advertise-client-urls", client,
            "--listen-peer-urls", peer,
            "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"test={peer}",
            "--log-level", "warn",
        ]  # fmt: skip

    def is_ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://{self.endpoint}/health", timeout=1) as resp:
                return b'"health":"true"' in resp.read()
        except OSError:
            return False

    def describe(self) -> str:
        return f"etcd {self.endpoint}"
