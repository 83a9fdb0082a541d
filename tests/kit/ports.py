"""Free loopback ports and readiness waits (a port that accepts, a condition that holds)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for_port(port: int, timeout: float = 20.0, host: str = "127.0.0.1") -> None:
    """Block until something accepts TCP connections on host:port, or raise TimeoutError."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listening on {host}:{port} after {timeout}s") from None
            time.sleep(0.05)


def wait_until(
    condition: Callable[[], bool], timeout_s: float = 10.0, interval_s: float = 0.05
) -> None:
    """Poll ``condition`` until it is true, or raise TimeoutError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met after {timeout_s}s")
        time.sleep(interval_s)
