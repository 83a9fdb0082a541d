"""``magnetar cluster up --proxy``: a local cluster whose front door is a proxy.

``up --detach`` prints the proxy's service and admin URLs first; the official client, given only
the service URL, produces and consumes; the admin URL answers admin calls (forwarded to the
brokers; ``magnetar admin`` given that URL reads a topic's stats on its owner); ``status`` shows
the proxy healthy; ``down`` stops it with the rest.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from tests.integration.test_cluster_cli import cluster, url
from tests.kit.etcd import etcd_binary
from tests.kit.process import MAGNETAR_CLI

pytestmark = pytest.mark.etcd


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


def test_cluster_up_with_a_proxy_prints_the_proxy_first(data_dir: Path) -> None:
    result = cluster(
        "up", "--data-dir", str(data_dir), "--bookies", "1", "--brokers", "2", "--proxy",
        "--detach",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    state = json.loads((data_dir / "cluster.json").read_text())
    proxy = next(m for m in state["members"] if m["role"] == "proxy")
    service_url = url(result.stdout, "service")
    admin_url = url(result.stdout, "admin")
    assert service_url == f"pulsar://127.0.0.1:{proxy['port']}"
    assert admin_url == f"http://127.0.0.1:{proxy['second_port']}"

    topic = f"persistent://public/default/cli-proxy-{uuid.uuid4().hex[:8]}"
    client = pulsar.Client(service_url, operation_timeout_seconds=15)
    try:
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic)
        for i in range(10):
            producer.send(f"m{i}".encode())
        assert [consumer.receive(10_000).data() for _ in range(10)] == [
            f"m{i}".encode() for i in range(10)
        ]
    finally:
        client.close()
    with urllib.request.urlopen(f"{admin_url}/admin/v2/tenants", timeout=10) as response:
        assert "public" in json.loads(response.read())
    stats = subprocess.run(
        [*MAGNETAR_CLI, "admin", "--admin-url", admin_url, "--json", "topics", "stats", topic],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert stats.returncode == 0, stats.stdout + stats.stderr
    assert json.loads(stats.stdout)["msgInCounter"] == 10

    status = cluster("status", "--data-dir", str(data_dir))
    assert status.returncode == 0, status.stdout + status.stderr
    assert "proxy 1/1" in status.stdout
    down = cluster("down", "--data-dir", str(data_dir))
    assert down.returncode == 0, down.stdout + down.stderr
    assert "stopping proxy" in down.stdout
