"""TLS in a cluster with real processes (etcd, one bookie, two brokers serving TLS with client
certificates required, two proxies) and the official client.

Directly: a client given one broker's ``pulsar+ssl://`` URL works on topics owned by both
brokers (lookups answer with the owner's TLS URL), and HTTPS lookups on one broker name the
owner's TLS URLs. Through the proxies, which terminate TLS for clients: proxy ``to-tls`` also
dials the brokers' TLS ports with its own certificate, proxy ``to-plain`` their plain ports.
HTTPS admin calls are forwarded."""

from __future__ import annotations

import asyncio
import json
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.client import Client, TlsOptions
from magnetar.naming import NamespaceName
from tests.kit.broker import BrokerProcess
from tests.kit.cluster import Cluster, fresh_topic, http, one_topic_per_bundle
from tests.kit.ports import free_port
from tests.kit.process import running
from tests.kit.proxy import ProxyProcess
from tests.kit.tls import TestPki, client_context

pytestmark = pytest.mark.etcd

RECEIVE_MS = 10_000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, pki: TestPki) -> Iterator[Cluster]:
    broker = pki.issue("broker")  # both brokers serve it: it names 127.0.0.1
    env = {
        "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ENSEMBLE_SIZE": "1",
        "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_WRITE_QUORUM": "1",
        "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ACK_QUORUM": "1",
        "MAGNETAR_BROKER_TLS_CERTIFICATE_FILE_PATH": str(broker.cert_file),
        "MAGNETAR_BROKER_TLS_KEY_FILE_PATH": str(broker.key_file),
        "MAGNETAR_BROKER_TLS_TRUST_CERTS_FILE_PATH": str(pki.ca_file),
        "MAGNETAR_BROKER_TLS_REQUIRE_TRUSTED_CLIENT_CERT_ON_CONNECT": "true",
    }
    base: Path = tmp_path_factory.mktemp("proxy-tls")
    built = Cluster(base, bookie_count=1, broker_count=2, journal_sync=False, broker_env=env)
    for one in built.brokers:
        one.extra_args += [
            "--broker-service-port-tls", str(free_port()),
            "--web-service-port-tls", str(free_port()),
        ]  # fmt: skip
    with built.running() as started:
        yield started


def _tls_port(broker: BrokerProcess, which: str) -> int:
    return int(broker.extra_args[broker.extra_args.index(which) + 1])


class TlsProxy(ProxyProcess):
    tls_port: int
    web_tls_port: int


def _proxy(cluster: Cluster, pki: TestPki, name: str, to_tls: bool) -> Iterator[TlsProxy]:
    cert = pki.issue(name)
    tls_port, web_tls_port = free_port(), free_port()
    args = [
        "--service-port-tls", str(tls_port),
        "--web-service-port-tls", str(web_tls_port),
        "--tls-certificate-file-path", str(cert.cert_file),
        "--tls-key-file-path", str(cert.key_file),
    ]  # fmt: skip
    if to_tls:  # the proxy's certificate serves as its client certificate towards the broker
        args += [
            "--tls-enabled-with-broker",
            "--broker-client-trust-certs-file-path", str(pki.ca_file),
            "--broker-client-certificate-file-path", str(cert.cert_file),
            "--broker-client-key-file-path", str(cert.key_file),
        ]  # fmt: skip
    plain = cluster.new_proxy(name)
    proxy = TlsProxy(plain.data_dir, plain.metadata_url, extra_args=args)
    proxy.tls_port, proxy.web_tls_port = tls_port, web_tls_port
    with running(proxy) as started:
        yield started


@pytest.fixture(scope="module")
def to_tls(cluster: Cluster, pki: TestPki) -> Iterator[TlsProxy]:
    yield from _proxy(cluster, pki, "to-tls", to_tls=True)


@pytest.fixture(scope="module")
def to_plain(cluster: Cluster, pki: TestPki) -> Iterator[TlsProxy]:
    yield from _proxy(cluster, pki, "to-plain", to_tls=False)


def _round_trip(proxy: TlsProxy, pki: TestPki) -> list[bytes]:
    client = pulsar.Client(
        f"pulsar+ssl://127.0.0.1:{proxy.tls_port}",
        tls_trust_certs_file_path=str(pki.ca_file),
        tls_validate_hostname=True,
        operation_timeout_seconds=15,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )
    try:
        topic = fresh_topic("proxy-tls")
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic)
        for i in range(3):
            producer.send(f"m{i}".encode())
        return [consumer.receive(RECEIVE_MS).data() for _ in range(3)]
    finally:
        client.close()


def _tls_connects(cluster: Cluster) -> int:
    return sum(
        1
        for broker in cluster.brokers
        for line in broker.log_text().splitlines()
        if "client_connected" in line and "tls=True" in line
    )


def _topics_on_both_brokers(cluster: Cluster) -> list[str]:
    """One topic owned by each broker: bundles of fresh namespaces are placed by the load
    manager, so look up until both brokers own one (lookups assign the owners)."""
    picked: dict[str, str] = {}
    for _ in range(6):
        ns = NamespaceName("public", f"tls-{uuid.uuid4().hex[:6]}")
        status, body = http(cluster.brokers[0], "PUT", f"/admin/v2/namespaces/{ns}", {})
        assert status == 204, body
        for topic in one_topic_per_bundle(ns):
            picked.setdefault(cluster.owner_of(topic).broker_id, topic)
        if len(picked) == len(cluster.brokers):
            return list(picked.values())
    raise AssertionError(f"the load manager kept every bundle on {sorted(picked)}")


def test_one_brokers_tls_url_reaches_topics_of_both(cluster: Cluster, pki: TestPki) -> None:
    first = cluster.brokers[0]
    alice = pki.issue("alice", client=True)
    topics = _topics_on_both_brokers(cluster)
    client = pulsar.Client(
        f"pulsar+ssl://127.0.0.1:{_tls_port(first, '--broker-service-port-tls')}",
        tls_trust_certs_file_path=str(pki.ca_file),
        tls_validate_hostname=True,
        authentication=pulsar.AuthenticationTLS(str(alice.cert_file), str(alice.key_file)),
        operation_timeout_seconds=15,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )
    try:
        for topic in topics:
            consumer = client.subscribe(topic, "direct")
            client.create_producer(topic).send(topic.encode())
            assert consumer.receive(RECEIVE_MS).data() == topic.encode()
    finally:
        client.close()
    owners = {cluster.owner_of(t).broker_id for t in topics}
    assert len(owners) == 2, f"every topic on one broker: {owners}"


def test_https_lookup_names_the_owners_tls_urls(cluster: Cluster, pki: TestPki) -> None:
    first = cluster.brokers[0]
    https = f"https://127.0.0.1:{_tls_port(first, '--web-service-port-tls')}"
    ctx = client_context(pki, pki.issue("alice-http", client=True))
    for topic in one_topic_per_bundle(NamespaceName("public", "default")):
        path = "/lookup/v2/topic/" + topic.replace("://", "/")
        with urllib.request.urlopen(https + path, timeout=15, context=ctx) as answer:
            data = json.loads(answer.read())
        owner = next(b for b in cluster.brokers if b.service_url == data["brokerUrl"])
        tls_port = _tls_port(owner, "--broker-service-port-tls")
        assert data["brokerUrlTls"] == f"pulsar+ssl://127.0.0.1:{tls_port}"
        web_tls = _tls_port(owner, "--web-service-port-tls")
        assert data["httpUrlTls"] == f"https://127.0.0.1:{web_tls}"


def test_proxy_terminates_tls_and_dials_the_broker_with_tls(
    cluster: Cluster, to_tls: TlsProxy, pki: TestPki
) -> None:
    before = _tls_connects(cluster)
    assert _round_trip(to_tls, pki) == [b"m0", b"m1", b"m2"]
    assert _tls_connects(cluster) > before  # the lookup link and the relay came over TLS


def test_proxy_terminates_tls_in_front_of_a_plain_port(
    cluster: Cluster, to_plain: TlsProxy, pki: TestPki
) -> None:
    before = _tls_connects(cluster)
    assert _round_trip(to_plain, pki) == [b"m0", b"m1", b"m2"]
    assert _tls_connects(cluster) == before


@pytest.mark.parametrize("which", ["to-tls", "to-plain"])
def test_https_admin_through_the_proxy(
    request: pytest.FixtureRequest, pki: TestPki, which: str
) -> None:
    proxy: TlsProxy = request.getfixturevalue(which.replace("-", "_"))
    url = f"https://127.0.0.1:{proxy.web_tls_port}/admin/v2/persistent/public/default"
    with urllib.request.urlopen(url, timeout=15, context=client_context(pki)) as answer:
        assert isinstance(json.loads(answer.read()), list)


async def test_our_client_through_the_proxy_over_tls(to_plain: TlsProxy, pki: TestPki) -> None:
    topic = fresh_topic("ours-proxy-tls")
    tls = TlsOptions(trust_certs_file=str(pki.ca_file))
    url = f"pulsar+ssl://127.0.0.1:{to_plain.tls_port}"
    async with Client(url, tls=tls, operation_timeout_s=15) as client:
        consumer = await client.subscribe(topic, "s")
        producer = await client.create_producer(topic)
        await producer.send(b"through-the-proxy")
        async with asyncio.timeout(15):
            assert (await consumer.receive()).data == b"through-the-proxy"
