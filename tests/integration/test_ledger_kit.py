"""Support for the ledger integration tests: bookie processes and a writer process.

Starts real ``magnetar bookie`` processes on free loopback ports (until ``tests/kit/bookie.py``
is shared by every suite) and, run as ``python -m tests.integration.test_ledger_kit writer``,
is the separate writer process the recovery test kills with SIGKILL. Holds no tests.
"""

from __future__ import annotations

import asyncio
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.kit.ports import free_port

READY = "magnetar bookie ready"
SESSION_TIMEOUT_S = "2"


def _magnetar() -> list[str]:
    return [sys.executable, "-c", "from magnetar.cli.main import app; app()"]


@dataclass
class BookieProcess:
    data_dir: Path
    metadata_url: str
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[str] | None = None

    @property
    def bookie_id(self) -> str:
        return f"ledger-test-{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.data_dir / "bookie.log", "w")  # noqa: SIM115
        self.process = subprocess.Popen(
            [
                *_magnetar(),
                "bookie",
                "--data-dir",
                str(self.data_dir),
                "--port",
                str(self.port),
                "--metadata",
                self.metadata_url,
                "--bookie-id",
                self.bookie_id,
                "--session-timeout-s",
                SESSION_TIMEOUT_S,
                "--no-journal-sync",
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"bookie exited {self.process.returncode}; see {log.name}")
            readable, _, _ = select.select([self.process.stdout], [], [], 0.1)
            if readable and READY in self.process.stdout.readline():
                return
        self.kill()
        raise TimeoutError(f"bookie on port {self.port} not ready after {timeout}s")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


def start_bookies(count: int, metadata_url: str, base: Path) -> list[BookieProcess]:
    bookies = [BookieProcess(base / f"bookie-{i}", metadata_url) for i in range(count)]
    try:
        for bookie in bookies:
            bookie.start()
    except BaseException:
        for bookie in bookies:
            bookie.kill()
        raise
    return bookies


async def _writer(metadata_url: str, count: int) -> None:
    """Create a ledger, print its id, append ``count`` entries (8 in flight), print each ack."""
    from magnetar.ledger import BookKeeper, LedgerClientConfig
    from magnetar.metadata.factory import open_store

    store = await open_store(metadata_url, session_timeout_s=2)
    bk = await BookKeeper.start(store, LedgerClientConfig(add_timeout_s=3, read_timeout_s=3))
    handle = await bk.create_ledger(3, 3, 2)
    print(f"ledger {handle.ledger_id}", flush=True)
    slots = asyncio.Semaphore(8)

    async def one(i: int) -> None:
        try:
            entry_id = await handle.append(f"entry-{i}".encode())
            print(f"confirmed {entry_id}", flush=True)
        finally:
            slots.release()

    async with asyncio.TaskGroup() as tg:
        for i in range(count):
            await slots.acquire()
            tg.create_task(one(i))
            await asyncio.sleep(0.002)
    print("done", flush=True)
    await asyncio.sleep(3600)  # the test kills us


if __name__ == "__main__":
    if sys.argv[1:2] == ["writer"]:
        asyncio.run(_writer(sys.argv[2], int(sys.argv[3])))
