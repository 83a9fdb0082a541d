"""``magnetar cluster up|status|down`` as a user runs them: a real etcd, 3 bookies, 2 brokers.

The command runs as its own process (``up --detach`` returns once every member is ready); the
official pulsar-client produces through the printed service URL and consumes part; ``status``
sees every member healthy, the topic's bundle owner and no under-replicated ledger, then, once a
bookie is killed, the topic's ledgers as under-replicated; ``down`` stops them all; ``up`` again on
the same data dir comes back on the same URLs and the rest of the messages are there, none of
the acknowledged ones.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from tests.kit.etcd import etcd_binary
from tests.kit.ports import wait_until
from tests.kit.process import MAGNETAR_CLI

pytestmark = pytest.mark.etcd

MESSAGES = 20


def cluster(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MAGNETAR_CLI, "cluster", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def url(output: str, label: str) -> str:
    found = re.search(rf"^{label} URL:\s+(\S+)$", output, re.MULTILINE)
    assert found, output
    return found.group(1)


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    if etcd_binary() is None:
        pytest.fail("etcd is not installed: run `make setup` (installs Debian's etcd-server)")
    path = tmp_path / "cluster"
    try:
        yield path
    finally:
        if (path / "cluster.json").exists():
            cluster("down", "--data-dir", str(path))


def up(data_dir: Path) -> str:
    result = cluster(
        "up", "--data-dir", str(data_dir), "--bookies", "3", "--brokers", "2", "--detach"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def client(service_url: str) -> pulsar.Client:
    return pulsar.Client(
        service_url,
        operation_timeout_seconds=15,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn),
    )


def test_up_status_down_up_keeps_every_message(data_dir: Path) -> None:
    first = up(data_dir)
    service_url = url(first, "service")
    assert service_url.startswith("pulsar://127.0.0.1:")
    assert service_url.count(",") == 1  # both brokers, the client's multi-host form
    assert url(first, "metadata").startswith("etcd://127.0.0.1:")
    assert url(first, "admin").startswith("http://127.0.0.1:")

    again = cluster("up", "--data-dir", str(data_dir))
    assert again.returncode == 1
    assert "already running" in again.stderr
    assert "cluster down" in again.stderr

    topic = f"persistent://public/default/cluster-{uuid.uuid4().hex[:8]}"
    c = client(service_url)
    try:
        producer = c.create_producer(topic)
        consumer = c.subscribe(topic, "keeper", initial_position=pulsar.InitialPosition.Earliest)
        for i in range(MESSAGES):
            producer.send(f"m-{i}".encode())
        for i in range(MESSAGES // 2):
            message = consumer.receive(timeout_millis=10_000)
            assert message.data() == f"m-{i}".encode()
            consumer.acknowledge(message)
    finally:
        c.close()

    status = cluster("status", "--data-dir", str(data_dir))
    assert status.returncode == 0, status.stdout + status.stderr
    assert "6/6 members up (etcd 1/1, bookies 3/3, brokers 2/2)" in status.stdout
    rows = [line.split() for line in status.stdout.splitlines() if line.endswith("healthy")]
    assert [row[0] for row in rows] == [
        "etcd", "bookie-1", "bookie-2", "bookie-3", "broker-1", "broker-2",
    ]  # fmt: skip
    assert all(row[2].isdigit() for row in rows)  # a pid each
    owners = [line.split() for line in status.stdout.splitlines() if line.startswith("public/")]
    assert owners, status.stdout  # the topic's bundle, owned by one of the brokers
    assert all(o[0] == "public/default" and o[2].startswith("pulsar://") for o in owners), owners
    assert "under-replicated ledgers: 0" in status.stdout

    # A bookie killed without a clean stop: once its registration's lease runs out, every
    # ledger of the topic (E3: all three bookies) lacks a copy, and status names it.
    state = json.loads((data_dir / "cluster.json").read_text())
    bookie_3_pid = next(m["pid"] for m in state["members"] if m["name"] == "bookie-3")
    os.kill(bookie_3_pid, signal.SIGKILL)

    seen: list[str] = []

    def under_replicated() -> bool:
        seen.append(cluster("status", "--data-dir", str(data_dir)).stdout)
        found = re.search(r"^under-replicated ledgers: (\d+)$", seen[-1], re.MULTILINE)
        return found is not None and int(found.group(1)) > 0

    wait_until(under_replicated, timeout_s=30, interval_s=0.5)
    degraded = seen[-1]
    assert "5/6 members up (etcd 1/1, bookies 2/3, brokers 2/2)" in degraded
    missing = [line.split() for line in degraded.splitlines() if line.endswith("bookie-3")]
    assert missing, degraded
    assert all(row[0].isdigit() for row in missing), degraded

    down = cluster("down", "--data-dir", str(data_dir))
    assert down.returncode == 0, down.stdout + down.stderr
    assert down.stdout.index("stopping 2 brokers") < down.stdout.index("stopping etcd")
    stopped = cluster("status", "--data-dir", str(data_dir))
    assert stopped.returncode == 1
    assert "0/6 members up" in stopped.stdout
    assert "bundle owners: the metadata store did not answer" in stopped.stdout
    for name in ("etcd", "bookie-1", "bookie-2", "bookie-3", "broker-1", "broker-2"):
        assert (data_dir / "logs" / f"{name}.log").stat().st_size > 0

    state = json.loads((data_dir / "cluster.json").read_text())
    broker_2_port = next(m["port"] for m in state["members"] if m["name"] == "broker-2")
    with socket.create_server(("127.0.0.1", broker_2_port)):
        taken = cluster("up", "--data-dir", str(data_dir))
    assert taken.returncode == 1
    assert f"port {broker_2_port} of broker-2 is in use" in taken.stderr

    second = up(data_dir)
    assert url(second, "service") == service_url
    c = client(service_url)
    try:
        consumer = c.subscribe(topic, "keeper")
        rest = []
        for _ in range(MESSAGES // 2):
            message = consumer.receive(timeout_millis=10_000)
            rest.append(message.data().decode())
            consumer.acknowledge(message)
        assert rest == [f"m-{i}" for i in range(MESSAGES // 2, MESSAGES)]
        with pytest.raises(pulsar.Timeout):
            consumer.receive(timeout_millis=500)
    finally:
        c.close()


def test_foreground_up_shows_status_and_stops_everything_on_sigterm(data_dir: Path) -> None:
    out_path = data_dir.parent / "up.out"
    with open(out_path, "wb") as out:
        process = subprocess.Popen(
            [*MAGNETAR_CLI, "cluster", "up", "--data-dir", str(data_dir),
             "--bookies", "1", "--brokers", "1"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        line = "3/3 members up (etcd 1/1, bookies 1/1, brokers 1/1)"
        wait_until(lambda: line in out_path.read_text(), timeout_s=90, interval_s=0.2)
        c = client(url(out_path.read_text(), "service"))
        try:  # one bookie: the brokers' quorums were fitted to it
            topic = f"persistent://public/default/fg-{uuid.uuid4().hex[:8]}"
            c.create_producer(topic).send(b"one")
        finally:
            c.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, out_path.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    output = out_path.read_text()
    assert output.index("stopping 1 broker") < output.index("stopping 1 bookie")
    assert output.index("stopping 1 bookie") < output.index("stopping etcd")
    assert output.rstrip().endswith("cluster stopped")
    assert "0/3 members up" in cluster("status", "--data-dir", str(data_dir)).stdout
