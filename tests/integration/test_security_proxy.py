"""Authentication at the proxy and authorization of the original principal at the broker
(etcd, 1 bookie, 1 broker, 1 proxy, all with HS256 tokens).

The proxy authenticates clients itself, connects to the broker with its own token (role
``proxy-svc``, a proxy role and a super-user there) and names each client's role as
``original_principal``: in the CONNECT of its relays and in the lookups it forwards. So the
broker authorizes the end client, never the proxy's own role alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from tests.kit.cluster import Cluster
from tests.kit.security import TokenKeys, http_as, log_mark, token_client, wait_for_log

pytestmark = pytest.mark.etcd


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, keys: TokenKeys) -> Iterator[Cluster]:
    base: Path = tmp_path_factory.mktemp("secproxy")
    proxy_token = base / "proxy.token"
    proxy_token.write_text(keys.token("proxy-svc"))
    broker_env = keys.env(
        "BROKER",
        authorization_enabled="true",
        super_user_roles="admin,proxy-svc",
        proxy_roles="proxy-svc",
        managed_ledger_default_ensemble_size="1",
        managed_ledger_default_write_quorum="1",
        managed_ledger_default_ack_quorum="1",
    )
    proxy_env = keys.env(
        "PROXY",
        broker_client_authentication_plugin="token",
        broker_client_authentication_parameters=f"file://{proxy_token}",
    )
    with Cluster(
        base,
        bookie_count=1,
        broker_count=1,
        journal_sync=False,
        broker_env=broker_env,
        proxy=True,
        proxy_env=proxy_env,
    ).running() as running:
        yield running


def through_proxy(cluster: Cluster, token: str | None, timeout_s: int = 10) -> pulsar.Client:
    return token_client(cluster.the_proxy.service_url, token, timeout_s=timeout_s)


def fresh(prefix: str) -> str:
    return f"persistent://public/default/{prefix}-{uuid.uuid4().hex[:8]}"


def test_super_user_through_the_proxy(cluster: Cluster, keys: TokenKeys) -> None:
    client = through_proxy(cluster, keys.token("admin"))
    try:
        topic = fresh("admin")
        consumer = client.subscribe(topic, "s")
        client.create_producer(topic).send(b"via proxy")
        assert consumer.receive(timeout_millis=10_000).data() == b"via proxy"
    finally:
        client.close()


def test_the_proxy_refuses_a_client_without_a_valid_token(
    cluster: Cluster, keys: TokenKeys
) -> None:
    mark = log_mark(cluster.the_proxy)
    client = through_proxy(cluster, "not-a-token", timeout_s=3)
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(fresh("refused"))
    finally:
        client.close()
    wait_for_log(cluster.the_proxy, "proxy_authentication_failed", since=mark)


def test_the_broker_authorizes_the_original_principal(cluster: Cluster, keys: TokenKeys) -> None:
    broker = cluster.brokers[0]
    admin, app = keys.token("admin"), keys.token("app")
    topic = fresh("app")
    client = through_proxy(cluster, app)
    try:
        with pytest.raises(pulsar.AuthorizationError):  # lookup, as app: no grant
            client.create_producer(topic)
        grant = "/admin/v2/namespaces/public/default/permissions/app"
        assert http_as(broker.web_url, "POST", grant, admin, ["produce"])[0] == 204
        client.create_producer(topic).send(b"app's")  # relay CONNECT names app
        with pytest.raises(pulsar.AuthorizationError):  # app may not consume
            client.subscribe(topic, "s")
    finally:
        client.close()
        http_as(broker.web_url, "DELETE", grant, admin)


def test_http_through_the_proxy_keeps_the_clients_token(cluster: Cluster, keys: TokenKeys) -> None:
    proxy = cluster.the_proxy.web_url
    assert http_as(proxy, "GET", "/admin/v2/tenants")[0] == 401
    assert http_as(proxy, "GET", "/admin/v2/tenants", keys.token("app"))[0] == 403
    assert http_as(proxy, "GET", "/admin/v2/tenants", keys.token("admin")) == (200, ["public"])
