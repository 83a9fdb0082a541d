"""Run a real etcd server (Debian's etcd-server package) on free loopback ports."""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.kit.ports import free_port


def etcd_binary() -> str | None:
    return shutil.which("etcd")


@dataclass
class EtcdServer:
    data_dir: Path
    client_port: int = field(default_factory=free_port)
    peer_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def url(self) -> str:
        """The metadata URL Magnetar takes for this server."""
        return f"etcd://{self.endpoint}"

    def start(self, timeout: float = 30.0) -> None:
        binary = etcd_binary()
        if binary is None:
            raise RuntimeError(
                "etcd is not installed: run `make setup` (Debian package etcd-server)"
            )
        client = f"http://127.0.0.1:{self.client_port}"
        peer = f"http://127.0.0.1:{self.peer_port}"
        log = open(self.data_dir.parent / f"etcd-{self.client_port}.log", "wb")  # noqa: SIM115
        self.process = subprocess.Popen(
            [
                binary,
                "--name",
                "test",
                "--data-dir",
                str(self.data_dir),
                "--listen-client-urls",
                client,
                "--advertise-client-urls",
                client,
                "--listen-peer-urls",
                peer,
                "--initial-advertise-peer-urls",
                peer,
                "--initial-cluster",
                f"test={peer}",
                "--log-level",
                "warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"etcd exited with {self.process.returncode}; see {log.name}")
            try:
                with urllib.request.urlopen(f"{client}/health", timeout=1) as resp:
                    if b'"health":"true"' in resp.read():
                        return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"etcd not healthy on {client} after {timeout}s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
