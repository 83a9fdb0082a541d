"""TLS on a real standalone with the official client and ours: ``pulsar+ssl://`` produce and
consume with the trust file (hostname validation on and off), a server certificate the client
does not trust, client certificates required, HTTPS admin and lookups carrying the TLS URLs,
and a certificate rotated on disk under a running broker.

The certificates come from a CA generated for the module (:mod:`tests.kit.tls`)."""

from __future__ import annotations

import asyncio
import json
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.client import Client
from magnetar.client.admin import AdminClient
from magnetar.client.errors import TlsVerificationFailed
from magnetar.client.settings import TlsOptions
from tests.kit.ports import free_port
from tests.kit.process import MAGNETAR_CLI, running
from tests.kit.standalone import StandaloneProcess, topic_name
from tests.kit.tls import TestPki, client_context, served_serial, tls_server_args

TIMEOUT_MS = 10_000


@pytest.fixture(scope="module")
def other_pki(tmp_path_factory: pytest.TempPathFactory) -> TestPki:
    """A second CA, which the standalones do not know."""
    return TestPki.create(tmp_path_factory.mktemp("other-pki"), "other-ca")


class TlsStandalone(StandaloneProcess):
    tls_port: int
    web_tls_port: int

    @property
    def tls_url(self) -> str:
        return f"pulsar+ssl://127.0.0.1:{self.tls_port}"

    @property
    def https_url(self) -> str:
        return f"https://127.0.0.1:{self.web_tls_port}"


def _start(
    tmp: Path, pki: TestPki, cert_name: str, *, require: bool = False, **cert_kw: tuple[str, ...]
) -> Iterator[TlsStandalone]:
    server = pki.issue(cert_name, **cert_kw)
    tls_port, web_tls_port = free_port(), free_port()
    process = TlsStandalone(
        data_dir=tmp / "data",
        extra_args=tls_server_args(
            pki, server, port=tls_port, web_port=web_tls_port, require_client_cert=require
        ),
        env={"MAGNETAR_STANDALONE_TLS_CERT_REFRESH_CHECK_DURATION_SEC": "0"},
    )
    process.tls_port, process.web_tls_port = tls_port, web_tls_port
    with running(process) as started:
        yield started


@pytest.fixture(scope="module")
def tls_sa(tmp_path_factory: pytest.TempPathFactory, pki: TestPki) -> Iterator[TlsStandalone]:
    """TLS beside the plain ports; client certificates optional (SAN 127.0.0.1, localhost)."""
    yield from _start(tmp_path_factory.mktemp("tls"), pki, "broker")


@pytest.fixture(scope="module")
def mtls_sa(tmp_path_factory: pytest.TempPathFactory, pki: TestPki) -> Iterator[TlsStandalone]:
    """Client certificates required; the server certificate names a host nobody dials."""
    yield from _start(
        tmp_path_factory.mktemp("mtls"),
        pki,
        "broker-elsewhere",
        require=True,
        dns=("broker.invalid",),
        ips=(),
    )


def official(url: str, pki: TestPki, timeout_s: int = 10, **kw: object) -> pulsar.Client:
    return pulsar.Client(
        url,
        tls_trust_certs_file_path=str(pki.ca_file),
        operation_timeout_seconds=timeout_s,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
        **kw,
    )


def round_trip(client: pulsar.Client, prefix: str) -> list[bytes]:
    topic = topic_name(prefix)
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic)
    for i in range(3):
        producer.send(f"m{i}".encode())
    return [consumer.receive(TIMEOUT_MS).data() for _ in range(3)]


@pytest.mark.parametrize("validate_hostname", [True, False])
def test_official_client_produces_and_consumes_over_tls(
    tls_sa: TlsStandalone, pki: TestPki, validate_hostname: bool
) -> None:
    client = official(tls_sa.tls_url, pki, tls_validate_hostname=validate_hostname)
    try:
        assert round_trip(client, "tls") == [b"m0", b"m1", b"m2"]
    finally:
        client.close()


def test_official_client_refuses_a_server_it_does_not_trust(
    tls_sa: TlsStandalone, other_pki: TestPki
) -> None:
    client = official(tls_sa.tls_url, other_pki)
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(topic_name("untrusted"))
    finally:
        client.close()


def test_plain_port_still_serves_beside_tls(tls_sa: TlsStandalone) -> None:
    client = pulsar.Client(tls_sa.service_url, operation_timeout_seconds=10)
    try:
        assert round_trip(client, "plain") == [b"m0", b"m1", b"m2"]
    finally:
        client.close()


def _get_json(url: str, ctx: ssl.SSLContext) -> dict[str, str]:
    with urllib.request.urlopen(url, timeout=10, context=ctx) as answer:
        result: dict[str, str] = json.loads(answer.read())
        return result


def test_https_lookup_and_cluster_carry_the_tls_urls(tls_sa: TlsStandalone, pki: TestPki) -> None:
    topic = topic_name("lookup").replace("persistent://", "/lookup/v2/topic/persistent/")
    data = _get_json(tls_sa.https_url + topic, client_context(pki))
    assert data["brokerUrlTls"] == tls_sa.tls_url
    assert data["httpUrlTls"] == tls_sa.https_url
    assert data["brokerUrl"] == tls_sa.service_url
    assert data["httpUrl"] == tls_sa.web_url
    cluster = _get_json(tls_sa.https_url + "/admin/v2/clusters/standalone", client_context(pki))
    assert cluster["brokerServiceUrlTls"] == tls_sa.tls_url
    assert cluster["serviceUrlTls"] == tls_sa.https_url


def test_https_refuses_a_client_that_does_not_trust_it(
    tls_sa: TlsStandalone, other_pki: TestPki
) -> None:
    with pytest.raises(urllib.error.URLError) as refused:
        _get_json(tls_sa.https_url + "/admin/v2/clusters", client_context(other_pki))
    assert isinstance(refused.value.reason, ssl.SSLCertVerificationError)


async def test_our_clients_over_tls(tls_sa: TlsStandalone, pki: TestPki) -> None:
    tls = TlsOptions(trust_certs_file=str(pki.ca_file))
    async with AdminClient(tls_sa.https_url, tls=tls) as admin:
        assert "public" in await admin.list_tenants()
    topic = topic_name("ours")
    async with Client(tls_sa.tls_url, tls=tls, operation_timeout_s=10) as client:
        # The binary lookup answers a TLS client with the pulsar+ssl:// address.
        found = await client.lookup.lookup(topic)
        assert found.logical_address == f"127.0.0.1:{tls_sa.tls_port}"
        producer = await client.create_producer(topic)
        consumer = await client.subscribe(topic, "s")
        await producer.send(b"over-tls")
        async with asyncio.timeout(10):
            assert (await consumer.receive()).data == b"over-tls"


async def test_our_client_refuses_an_untrusted_server(
    tls_sa: TlsStandalone, other_pki: TestPki
) -> None:
    tls = TlsOptions(trust_certs_file=str(other_pki.ca_file))
    async with Client(tls_sa.tls_url, tls=tls, operation_timeout_s=5) as client:
        with pytest.raises(TlsVerificationFailed, match="certificate"):
            await client.create_producer(topic_name("ours-untrusted"))


def test_client_certificate_required(mtls_sa: TlsStandalone, pki: TestPki) -> None:
    alice = pki.issue("alice", client=True)
    # The server certificate names broker.invalid only: hostname validation must be off.
    client = official(
        mtls_sa.tls_url,
        pki,
        tls_validate_hostname=False,
        authentication=pulsar.AuthenticationTLS(str(alice.cert_file), str(alice.key_file)),
    )
    try:
        assert round_trip(client, "mtls") == [b"m0", b"m1", b"m2"]
    finally:
        client.close()
    # Refused at each handshake: the client retries until its operation timeout.
    without = official(mtls_sa.tls_url, pki, timeout_s=2, tls_validate_hostname=False)
    try:
        with pytest.raises(pulsar.PulsarException):
            without.create_producer(topic_name("mtls-none"))
    finally:
        without.close()


def test_hostname_validation_refuses_a_certificate_for_another_host(
    mtls_sa: TlsStandalone, pki: TestPki
) -> None:
    alice = pki.issue("alice-hv", client=True)
    client = official(
        mtls_sa.tls_url,
        pki,
        tls_validate_hostname=True,
        authentication=pulsar.AuthenticationTLS(str(alice.cert_file), str(alice.key_file)),
    )
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(topic_name("hostname"))
    finally:
        client.close()


def test_https_with_client_certificate_required(mtls_sa: TlsStandalone, pki: TestPki) -> None:
    bob = pki.issue("bob", client=True)
    with_cert = client_context(pki, bob, check_hostname=False)
    assert _get_json(mtls_sa.https_url + "/admin/v2/clusters", with_cert) == ["standalone"]
    without = client_context(pki, check_hostname=False)
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
        _get_json(mtls_sa.https_url + "/admin/v2/clusters", without)


def _wait_for_serial(port: int, pki: TestPki, serial: int) -> None:
    deadline = time.monotonic() + 15
    while (served := served_serial(port, pki)) != serial:
        assert time.monotonic() < deadline, f"still serving {served}, not {serial}"
        time.sleep(0.1)


def test_rotated_certificate_is_served_to_new_clients(tls_sa: TlsStandalone, pki: TestPki) -> None:
    # Rotating the module's certificate leaves the other tests as they were: the same names,
    # the same CA; only the key and the serial change.
    cert = pki.issue("broker")  # a first rotation: the files the standalone serves, rewritten
    _wait_for_serial(tls_sa.tls_port, pki, cert.serial)
    old = official(tls_sa.tls_url, pki)
    topic = topic_name("rotation")
    try:
        producer = old.create_producer(topic)
        consumer = old.subscribe(topic, "s")
        producer.send(b"before")
        rotated = pki.reissue(cert)
        assert rotated.serial != cert.serial
        _wait_for_serial(tls_sa.tls_port, pki, rotated.serial)
        _wait_for_serial(tls_sa.web_tls_port, pki, rotated.serial)
        # The connection made before the rotation goes on.
        producer.send(b"after")
        assert [consumer.receive(TIMEOUT_MS).data() for _ in range(2)] == [b"before", b"after"]
        # A new client handshakes with the new certificate, and works.
        fresh = official(tls_sa.tls_url, pki)
        try:
            assert round_trip(fresh, "rotated") == [b"m0", b"m1", b"m2"]
        finally:
            fresh.close()
    finally:
        old.close()


def _magnetar(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MAGNETAR_CLI, *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_cli_tools_over_tls(tls_sa: TlsStandalone, pki: TestPki, other_pki: TestPki) -> None:
    topic, trust = topic_name("cli-tls"), str(pki.ca_file)
    sent = _magnetar("produce", topic, "-m", "secret", "--service-url", tls_sa.tls_url,
                     "--tls-trust-certs-file-path", trust)  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    got = _magnetar("consume", topic, "-s", "s", "-n", "1", "--position", "earliest",
                    "--timeout", "10", "--service-url", tls_sa.tls_url,
                    "--tls-trust-certs-file-path", trust)  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert "content:secret" in got.stdout
    tenants = _magnetar("admin", "--admin-url", tls_sa.https_url, "--json",
                        "--tls-trust-certs-file-path", trust, "tenants", "list")  # fmt: skip
    assert tenants.returncode == 0, tenants.stderr
    assert "public" in json.loads(tenants.stdout)
    refused = _magnetar("produce", topic, "-m", "x", "--service-url", tls_sa.tls_url,
                        "--tls-trust-certs-file-path", str(other_pki.ca_file))  # fmt: skip
    assert refused.returncode == 1
    assert "certificate" in refused.stderr


def test_bad_tls_settings_refuse_to_start(tmp_path: Path) -> None:
    base = ["standalone", "--data-dir", str(tmp_path / "data"), "--broker-port", "0",
            "--web-port", "0", "--broker-service-port-tls", "0"]  # fmt: skip
    no_cert = _magnetar(*base)
    assert no_cert.returncode == 2
    assert "tls_certificate_file_path and tls_key_file_path" in no_cert.stderr
    missing = _magnetar(*base, "--tls-certificate-file-path", str(tmp_path / "gone.pem"),
                        "--tls-key-file-path", str(tmp_path / "gone.key"))  # fmt: skip
    assert missing.returncode == 2
    assert "gone.pem" in missing.stderr
    assert "Traceback" not in missing.stderr
