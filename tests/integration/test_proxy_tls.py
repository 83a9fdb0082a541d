"""TLS through ``magnetar proxy`` with real processes (etcd, one bookie, one broker, two
proxies) and the official client: the proxies terminate TLS for clients; proxy ``to-tls``
also dials the broker's TLS ports with its own certificate (the broker requires one there),
proxy ``to-plain`` dials the broker's plain port. HTTPS admin calls are forwarded."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from tests.kit.cluster import Cluster, fresh_topic
from tests.kit.ports import free_port
from tests.kit.process import running
from tests.kit.proxy import ProxyProcess
from tests.kit.tls import TestPki, client_context

pytestmark = pytest.mark.etcd

RECEIVE_MS = 10_000


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> TestPki:
    return TestPki.create(tmp_path_factory.mktemp("proxy-pki"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, pki: TestPki) -> Iterator[Cluster]:
    broker = pki.issue("broker")
    env = {
        "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ENSEMBLE_SIZE": "1",
        "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_WRITE_QUORUM": "1",
        "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ACK_QUORUM": "1",
        "MAGNETAR_BROKER_BROKER_SERVICE_PORT_TLS": str(free_port()),
        "MAGNETAR_BROKER_WEB_SERVICE_PORT_TLS": str(free_port()),
        "MAGNETAR_BROKER_TLS_CERTIFICATE_FILE_PATH": str(broker.cert_file),
        "MAGNETAR_BROKER_TLS_KEY_FILE_PATH": str(broker.key_file),
        "MAGNETAR_BROKER_TLS_TRUST_CERTS_FILE_PATH": str(pki.ca_file),
        "MAGNETAR_BROKER_TLS_REQUIRE_TRUSTED_CLIENT_CERT_ON_CONNECT": "true",
    }
    base: Path = tmp_path_factory.mktemp("proxy-tls")
    with Cluster(
        base, bookie_count=1, broker_count=1, journal_sync=False, broker_env=env
    ).running() as started:
        yield started


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
    log = cluster.brokers[0].log_text()
    return sum(1 for line in log.splitlines() if "client_connected" in line and "tls=True" in line)


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
