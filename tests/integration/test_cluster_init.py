"""``magnetar cluster init`` against a real etcd: creates the cluster metadata once, then
leaves it as it is (the Kubernetes operator's init Job may run it again)."""

from __future__ import annotations

import asyncio
import uuid

from typer.testing import CliRunner

from magnetar.broker.resources import BrokerResources
from magnetar.cli.main import app
from magnetar.metadata.factory import open_store
from magnetar.naming import NamespaceName
from magnetar.policies import ClusterData
from tests.kit.etcd import EtcdServer


def _init(metadata: str, cluster: str, web_url: str) -> tuple[int, str]:
    args = ["cluster", "init", "--metadata", metadata, "--cluster", cluster]
    args += ["--web-url", web_url, "--service-url", "pulsar://brokers:6650"]
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output


def test_init_creates_once_then_reports_existing(etcd_server: EtcdServer) -> None:
    cluster = f"c{uuid.uuid4().hex[:8]}"
    code, out = _init(etcd_server.url, cluster, "http://brokers:8080")
    assert code == 0, out
    assert f"cluster {cluster} created" in out
    code, out = _init(etcd_server.url, cluster, "http://elsewhere:8080")
    assert code == 0, out
    assert f"cluster {cluster} exists" in out
    assert "namespace public/default exists" in out

    async def read_back() -> tuple[ClusterData, bool]:
        store = await open_store(etcd_server.url)
        try:
            resources = BrokerResources(store)
            public_default = NamespaceName("public", "default")
            return await resources.get_cluster(cluster), await resources.namespace_exists(
                public_default
            )
        finally:
            await store.close()

    data, namespace_exists = asyncio.run(read_back())
    assert data.service_url == "http://brokers:8080"  # the second run changed nothing
    assert data.broker_service_url == "pulsar://brokers:6650"
    assert namespace_exists


def test_init_names_an_unreachable_store() -> None:
    code, out = _init("etcd://127.0.0.1:9", "c", "http://b:8080")
    assert code == 1
    assert "magnetar cluster init:" in out
