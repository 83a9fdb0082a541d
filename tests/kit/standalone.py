"""Run a real ``magnetar standalone`` process on free loopback ports, for broker tests.

::

    sa = StandaloneProcess(data_dir=tmp_path / "sa")
    sa.start()                  # waits for the ready line; raises StandaloneStartError with the log
    sa.service_url              # "pulsar://127.0.0.1:PORT";  sa.web_url  "http://127.0.0.1:PORT"
    sa.kill()                   # SIGKILL (a crash);  sa.stop() sends SIGTERM and waits
    sa.start()                  # restart on the same data dir and ports
    admin_call(sa, "PUT", "/admin/v2/persistent/public/default/t/partitions", 3)
    read_from_start(client, topic)      # every payload a new subscription gets, until quiet

The process's stdout and stderr go to ``<data_dir>.log`` beside the data dir (appended across
restarts); :meth:`StandaloneProcess.log_text` returns it for assertions and failure messages.
Journals skip fsync by default (tests check the broker, not the disk); pass
``journal_sync=True`` for durability tests that must survive more than a process crash.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from tests.kit.broker import BrokerEndpoints
from tests.kit.ports import free_port
from tests.kit.process import MAGNETAR_CLI, ProcessStartError, ServerProcess

if TYPE_CHECKING:
    import pulsar

READY_LINE = "magnetar broker ready"


class StandaloneStartError(ProcessStartError):
    """The process exited or did not get ready; the message holds its log tail."""


@dataclass
class StandaloneProcess(BrokerEndpoints, ServerProcess):
    ready_line: ClassVar[str] = READY_LINE
    start_error: ClassVar[type[ProcessStartError]] = StandaloneStartError
    redrawn_ports: ClassVar[tuple[str, ...]] = ("broker_port", "web_port")
    start_timeout_s: ClassVar[float] = 60.0
    stop_timeout_s: ClassVar[float] = 30.0

    data_dir: Path
    broker_port: int = field(default_factory=free_port)
    web_port: int = field(default_factory=free_port)
    journal_sync: bool = False
    log_level: str = "info"
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    _log_offset: int = 0

    def command(self) -> list[str]:
        return [
            *MAGNETAR_CLI, "standalone",
            "--data-dir", str(self.data_dir),
            *self.listener_args(),
            "--journal-sync" if self.journal_sync else "--no-journal-sync",
            "--log-level", self.log_level,
            *self.extra_args,
        ]  # fmt: skip

    def describe(self) -> str:
        return f"standalone {self.service_url}"


def topic_name(prefix: str) -> str:
    """A fresh persistent topic in public/default, so tests sharing a process never collide."""
    return f"persistent://public/default/{prefix}-{uuid.uuid4().hex[:8]}"


def official_client(process: StandaloneProcess, *, operation_timeout_s: int = 15) -> pulsar.Client:
    """An official ``pulsar.Client`` on ``process`` (warnings only in its log); close it."""
    import pulsar  # the official client; imported here so the kit loads without it

    return pulsar.Client(
        process.service_url,
        operation_timeout_seconds=operation_timeout_s,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn),
    )


def admin_call(process: StandaloneProcess, method: str, path: str, body: object = None) -> Any:
    """One admin REST call (JSON in and out, 10 s deadline); the decoded reply, None if empty.

    Blocking: from a test's event loop run it with ``asyncio.to_thread``. An HTTP error status
    raises ``urllib.error.HTTPError``.
    """
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        process.web_url + path,
        data=data,
        method=method,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        raw = response.read()
    return json.loads(raw) if raw else None


def receive_until_quiet(consumer: pulsar.Consumer, wait_ms: int) -> list[pulsar.Message]:
    """Every message ``consumer`` receives until none arrives for ``wait_ms`` (none acked)."""
    import pulsar

    got: list[pulsar.Message] = []
    while True:
        try:
            got.append(consumer.receive(timeout_millis=wait_ms))
        except pulsar.Timeout:
            return got


def read_from_start(client: pulsar.Client, topic: str, *, wait_ms: int = 500) -> list[bytes]:
    """The payloads a new subscription on ``topic`` receives from the earliest message until
    none arrives for ``wait_ms`` (none acked; the consumer is closed)."""
    import pulsar

    consumer = client.subscribe(
        topic,
        f"read-{uuid.uuid4().hex[:6]}",
        initial_position=pulsar.InitialPosition.Earliest,
    )
    try:
        return [msg.data() for msg in receive_until_quiet(consumer, wait_ms)]
    finally:
        consumer.close()
