"""Geo-replication between two standalones that both authenticate and authorize, each with its
own signing key: the replicator of ``a`` reaches ``b`` with the credential of ``b``'s
ClusterData on ``a`` (``authenticationPlugin`` / ``authenticationParameters``, set with
``magnetar admin clusters create --auth-plugin --auth-parameters``); the credential is not shown
by ``clusters get`` nor written to a log."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator

import pulsar
import pytest

from tests.kit.geo import cluster_name_args
from tests.kit.process import MAGNETAR_CLI, running
from tests.kit.security import TokenKeys, http_as, token_client
from tests.kit.standalone import StandaloneProcess

REPLICATOR = "replicator"


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TokenKeys]:
    return {n: TokenKeys.hmac(tmp_path_factory.mktemp(f"keys-{n}")) for n in ("a", "b")}


@pytest.fixture(scope="module")
def clusters(
    tmp_path_factory: pytest.TempPathFactory, keys: dict[str, TokenKeys]
) -> Iterator[dict[str, StandaloneProcess]]:
    base = tmp_path_factory.mktemp("geo-auth")
    processes = {
        n: StandaloneProcess(
            data_dir=base / n,
            extra_args=cluster_name_args(n),
            env=keys[n].env(
                "STANDALONE",
                authorization_enabled="true",
                super_user_roles=f"admin,{REPLICATOR}",
            ),
        )
        for n in ("a", "b")
    }
    with running(processes["a"]), running(processes["b"]):
        yield processes


def admin(process: StandaloneProcess, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MAGNETAR_CLI, "admin", "--admin-url", process.web_url, "--auth-token", token, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )


def client(process: StandaloneProcess, token: str) -> pulsar.Client:
    return token_client(process.service_url, token, timeout_s=20)


def test_replicator_uses_the_remote_clusters_credential(
    clusters: dict[str, StandaloneProcess], keys: dict[str, TokenKeys]
) -> None:
    a, b = clusters["a"], clusters["b"]
    admin_a, admin_b = keys["a"].token("admin"), keys["b"].token("admin")
    # b's credential for a's replicators: a token of b's own key, given inline.
    for_b = keys["b"].token(REPLICATOR)
    done = admin(
        a, admin_a, "clusters", "create", "b", "--url", b.web_url, "--broker-url",
        b.service_url, "--auth-plugin", "token", "--auth-parameters", f"token:{for_b}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    status, shown = http_as(a.web_url, "GET", "/admin/v2/clusters/b", admin_a)
    assert status == 200, shown
    assert shown["authenticationPlugin"] == "token"
    assert "authenticationParameters" not in shown
    assert for_b not in admin(a, admin_a, "--json", "clusters", "get", "b").stdout
    status, body = http_as(
        b.web_url, "PUT", "/admin/v2/clusters/a", admin_b,
        {"serviceUrl": a.web_url, "brokerServiceUrl": a.service_url},
    )  # fmt: skip
    assert status in (204, 409), body

    tenant = f"geo-{uuid.uuid4().hex[:6]}"
    ns = f"{tenant}/ns"
    for process, token in ((a, admin_a), (b, admin_b)):
        for method, path, body in (
            ("PUT", f"/admin/v2/tenants/{tenant}", {"allowedClusters": ["a", "b"]}),
            ("PUT", f"/admin/v2/namespaces/{ns}", None),
            ("POST", f"/admin/v2/namespaces/{ns}/deduplication", True),
            ("POST", f"/admin/v2/namespaces/{ns}/replication", ["a", "b"]),
        ):
            status, answer = http_as(process.web_url, method, path, token, body)
            assert status in (200, 204), (method, path, answer)

    topic = f"persistent://{ns}/orders"
    on_b = client(b, admin_b)
    on_a = client(a, admin_a)
    try:
        consumer = on_b.subscribe(topic, "remote")
        producer = on_a.create_producer(topic)
        sent = [b"geo-%d" % i for i in range(10)]
        for payload in sent:
            producer.send(payload)
        got = []
        deadline = time.monotonic() + 60
        while len(got) < len(sent):
            assert time.monotonic() < deadline, f"replicated only {got}"
            try:
                got.append(consumer.receive(timeout_millis=1000).data())
            except pulsar.Timeout:
                continue
        assert got == sent
    finally:
        on_a.close()
        on_b.close()
    for process in (a, b):
        assert for_b not in process.log_text()
