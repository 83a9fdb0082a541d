"""A server process under test: spawn, wait for its ready line, stop, kill, restart.

:class:`ServerProcess` is a mixin for the kit's dataclasses (``EtcdServer``, ``BookieProcess``,
``StandaloneProcess``). They hold the fields (``data_dir``, ``env``, ``process``,
``_log_offset``) and say what to run (:meth:`command`) and what line means ready (or override
:meth:`is_ready`, as ``EtcdServer`` does with its health endpoint); the mixin does the rest.
Output goes to ``<data_dir>.log`` beside the data dir, appended across restarts, so a failure
message can show the log of the current start only.

:func:`running` is the start-yield-stop shape every fixture wants::

    @pytest.fixture(scope="module")
    def standalone(tmp_path_factory):
        sa = StandaloneProcess(data_dir=tmp_path_factory.mktemp("ttl") / "data", env=ENV)
        with running(sa) as process:       # asserts a clean exit (0) on SIGTERM at the end
            yield process
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar, TypeVar

from tests.kit.ports import free_port

MAGNETAR_CLI = (sys.executable, "-c", "from magnetar.cli.main import app; app()")
"""The ``magnetar`` command run by this interpreter (no installed console script needed)."""


class ProcessStartError(RuntimeError):
    """The process exited or did not get ready; the message holds its log tail."""


class ServerProcess:
    ready_line: ClassVar[str]
    start_error: ClassVar[type[ProcessStartError]] = ProcessStartError
    start_timeout_s: ClassVar[float] = 30.0
    stop_timeout_s: ClassVar[float] = 20.0
    #: fields holding ports from ``free_port()`` that a failed first start may draw again
    redrawn_ports: ClassVar[tuple[str, ...]] = ()

    data_dir: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None
    _log_offset: int

    def command(self) -> list[str]:
        raise NotImplementedError

    def describe(self) -> str:
        """How failure messages name this process."""
        return type(self).__name__

    def is_ready(self) -> bool:
        """Polled by :meth:`start`: by default, whether this start's log holds ``ready_line``."""
        return self.ready_line in self.log_text(since_start=True)

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.log"

    def log_text(self, since_start: bool = False) -> str:
        try:
            data = self.log_path.read_bytes()
        except FileNotFoundError:
            return ""
        return data[self._log_offset if since_start else 0 :].decode(errors="replace")

    def spawn(self) -> subprocess.Popen[bytes]:
        """Start the process without waiting for readiness (for tests that expect a refusal)."""
        if self.running:
            raise RuntimeError(f"{self.describe()} is already running")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it
        try:
            self.process = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env},
            )
        finally:
            log.close()
        return self.process

    def start(self, timeout: float | None = None) -> None:
        """Start and wait for the ready line; raise ``start_error`` with the log tail.

        ``free_port()`` can only hand out a port that was free a moment ago: on a first start
        that fails because one of :attr:`redrawn_ports` was taken meanwhile, those ports are
        drawn again and the start is retried (twice at most). A restart keeps its ports."""
        for attempt in range(3):
            try:
                self._start_once(timeout)
                self._ready_once = True
                return
            except ProcessStartError:
                if attempt == 2 or not self._redraw_ports():
                    raise

    def _redraw_ports(self) -> bool:
        if getattr(self, "_ready_once", False) or not self.redrawn_ports:
            return False
        log = self.log_text(since_start=True).lower()
        if "address already in use" not in log and "failed to bind" not in log:
            return False
        for name in self.redrawn_ports:
            setattr(self, name, free_port())
        return True

    def _start_once(self, timeout: float | None) -> None:
        timeout = self.start_timeout_s if timeout is None else timeout
        process = self.spawn()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.is_ready():
                return
            if process.poll() is not None:
                raise self.start_error(
                    f"{self.describe()} exited with {process.returncode}:\n"
                    f"{self.log_text(since_start=True)[-4000:]}"
                )
            time.sleep(0.05)
        self.kill()
        raise self.start_error(
            f"{self.describe()} not ready after {timeout}s:\n"
            f"{self.log_text(since_start=True)[-4000:]}"
        )

    def wait_exit(self, timeout: float = 30.0) -> int:
        if self.process is None:
            raise RuntimeError("not started")
        return self.process.wait(timeout=timeout)

    def stop(self, timeout: float | None = None) -> int | None:
        """SIGTERM and wait for a clean exit (SIGKILL after ``timeout``). Returns the exit code."""
        if self.process is None:
            return None
        process, self.process = self.process, None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                return process.wait(timeout=self.stop_timeout_s if timeout is None else timeout)
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

    async def astart(self, ready_within_s: float | None = None) -> None:
        await asyncio.to_thread(self.start, ready_within_s)

    async def astop(self, exit_within_s: float | None = None) -> int | None:
        return await asyncio.to_thread(self.stop, exit_within_s)

    async def akill(self) -> None:
        await asyncio.to_thread(self.kill)


P = TypeVar("P", bound=ServerProcess)


@contextmanager
def running(process: P, *, clean_exit: bool = True) -> Iterator[P]:
    """Start ``process`` (waiting for its ready line), yield it, then stop it with SIGTERM.

    With ``clean_exit`` the exit code must be 0 (the failure shows the log tail); pass
    ``clean_exit=False`` for processes a test kills or whose exit code it checks itself.
    """
    process.start()
    try:
        yield process
    finally:
        code = process.stop()
        if clean_exit:
            assert code == 0, (
                f"{process.describe()} exited with {code}:\n{process.log_text()[-4000:]}"
            )
