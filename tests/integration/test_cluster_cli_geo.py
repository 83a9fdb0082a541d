"""``magnetar cluster up --clusters a,b`` as a user runs it: two named clusters on loopback,
each with its own etcd, bookie and broker, registered with each other.

After ``up --detach``: ``set-clusters`` on each (the command it prints) is the only step left;
a message produced in ``a`` with the official client arrives in ``b`` marked as replicated
from ``a``; ``status`` reports both clusters healthy; ``up`` with other names on the same data
dir is refused; ``down`` stops both.
"""

from __future__ import annotations

import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pulsar
import pytest

from tests.kit.etcd import etcd_binary
from tests.kit.process import MAGNETAR_CLI

pytestmark = pytest.mark.etcd


def run(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MAGNETAR_CLI, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    if etcd_binary() is None:
        pytest.fail("etcd is not installed: run `make setup` (installs Debian's etcd-server)")
    path = tmp_path / "geo"
    try:
        yield path
    finally:
        if (path / "instance.json").exists():
            run("cluster", "down", "--data-dir", str(path))


def test_up_two_named_clusters_replicate_once_the_namespace_says_so(data_dir: Path) -> None:
    up = run(
        "cluster", "up", "--data-dir", str(data_dir), "--clusters", "a,b",
        "--bookies", "1", "--brokers", "1", "--detach",
    )  # fmt: skip
    assert up.returncode == 0, up.stdout + up.stderr
    urls = dict(re.findall(r"^cluster (\w+) ready in .*\n\s+service URL:\s+(\S+)", up.stdout, re.M))
    assert set(urls) == {"a", "b"}, up.stdout
    commands = re.findall(r"^\s+(magnetar admin .*set-clusters.*)$", up.stdout, re.M)
    assert len(commands) == 2, up.stdout
    for command in commands:
        done = run(*command.split()[1:])
        assert done.returncode == 0, done.stdout + done.stderr

    topic = f"persistent://public/default/geo-{uuid.uuid4().hex[:6]}"
    client_a = pulsar.Client(urls["a"], operation_timeout_seconds=15)
    client_b = pulsar.Client(urls["b"], operation_timeout_seconds=15)
    try:
        consumer = client_b.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        client_a.create_producer(topic).send(b"from-a")
        message = consumer.receive(timeout_millis=30_000)
        assert message.data() == b"from-a"
    finally:
        client_a.close()
        client_b.close()
    admin_b = re.search(r"--admin-url (\S+) .*--clusters a,b$", commands[1], re.M)
    assert admin_b is not None
    path = topic.replace("persistent://", "/admin/v2/persistent/") + "/examinemessage"
    headers = httpx.get(
        admin_b.group(1) + path,
        params={"initialPosition": "earliest", "messagePosition": "1"},
        timeout=10,
    ).headers
    assert headers["X-Pulsar-replicated-from"] == "a"

    status = run("cluster", "status", "--data-dir", str(data_dir))
    assert status.returncode == 0, status.stdout + status.stderr
    assert re.search(r"^cluster a: 3/3 members up", status.stdout, re.M), status.stdout
    assert re.search(r"^cluster b: 3/3 members up", status.stdout, re.M), status.stdout

    other = run("cluster", "up", "--data-dir", str(data_dir), "--clusters", "x,y", "--detach")
    assert other.returncode == 1
    assert "holds clusters a,b, not x,y" in other.stderr

    down = run("cluster", "down", "--data-dir", str(data_dir))
    assert down.returncode == 0, down.stdout + down.stderr
    assert "cluster stopped" in down.stdout
    status = run("cluster", "status", "--data-dir", str(data_dir))
    assert status.returncode == 1


def test_bad_cluster_names_are_refused_before_anything_starts(tmp_path: Path) -> None:
    result = run("cluster", "up", "--data-dir", str(tmp_path / "x"), "--clusters", "a,a")
    assert result.returncode == 2, result.stderr
    assert "names a cluster twice" in result.stderr
    assert not (tmp_path / "x").exists()  # the other refusals: tests/unit/localcluster
