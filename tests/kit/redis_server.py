"""Run a private Redis server (Debian's redis-server package) on a free loopback port.

Never the system's service: each :class:`RedisServer` has its own directory (its append-only
file lives there) and port, and stops on SIGTERM like the kit's other processes. Used by the
side-by-side benchmark (``tests/bench/side_by_side.py``), where Redis Streams with
``appendfsync always`` is the durable peer, and by its test, which skips when the binary is
absent (``make bench-setup`` installs it).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from tests.kit.ports import free_port
from tests.kit.process import ServerProcess


def redis_binary(name: str = "redis-server") -> str | None:
    """The path of ``name`` (``redis-server``, ``redis-benchmark``), or None if absent."""
    return shutil.which(name)


@dataclass
class RedisServer(ServerProcess):
    """``appendonly``: an append-only file, synced as ``appendfsync`` says (``always``: before
    any reply, which makes Redis durable before it answers, as a journal with fsync on);
    without it Redis keeps everything in memory only. Snapshots (RDB) and AOF rewrites are off,
    so that no background fork runs during a measurement."""

    redrawn_ports: ClassVar[tuple[str, ...]] = ("port",)
    stop_timeout_s: ClassVar[float] = 10.0

    data_dir: Path
    port: int = field(default_factory=free_port)
    appendonly: bool = True
    appendfsync: str = "always"
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    _log_offset: int = 0

    def command(self) -> list[str]:
        binary = redis_binary()
        if binary is None:
            raise RuntimeError(
                "redis-server is not installed: run `make bench-setup` "
                "(Debian packages redis-server and redis-tools)"
            )
        return [
            binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--protected-mode", "yes",
            "--daemonize", "no",
            "--dir", str(self.data_dir),
            "--save", "",
            "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", self.appendfsync,
            "--auto-aof-rewrite-percentage", "0",
            "--loglevel", "warning",
        ]  # fmt: skip

    def spawn(self) -> subprocess.Popen[bytes]:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return super().spawn()

    def is_ready(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"*1\r\n$4\r\nPING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def describe(self) -> str:
        return f"redis-server 127.0.0.1:{self.port}"
