"""Mutual-TLS authentication end to end: the role is the client certificate's CN.

A standalone with TLS ports (a CA generated for the module), the ``tls`` and ``token``
providers and authorization on, super-user ``admin-cert``. The official client authenticates
with ``AuthenticationTLS`` on ``pulsar+ssl://``; HTTPS requests with a client certificate are
authenticated the same way.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator

import pulsar
import pytest

from tests.kit.ports import free_port
from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess, topic_name
from tests.kit.tls import IssuedCert, TestPki, client_context, tls_server_args


class MtlsStandalone(StandaloneProcess):
    tls_port: int
    web_tls_port: int


@pytest.fixture(scope="module")
def mtls(tmp_path_factory: pytest.TempPathFactory, pki: TestPki) -> Iterator[MtlsStandalone]:
    tls_port, web_tls_port = free_port(), free_port()
    process = MtlsStandalone(
        data_dir=tmp_path_factory.mktemp("mtls") / "data",
        extra_args=[
            *tls_server_args(pki, pki.issue("broker"), port=tls_port, web_port=web_tls_port),
            "--authentication-enabled",
            "--authentication-providers",
            "tls,token",
            "--token-secret-key",
            "data:;base64," + "A" * 44,
            "--authorization-enabled",
            "--super-user-roles",
            "admin-cert",
        ],
    )
    process.tls_port, process.web_tls_port = tls_port, web_tls_port
    with running(process) as started:
        yield started


def tls_client(process: MtlsStandalone, pki: TestPki, cert: IssuedCert) -> pulsar.Client:
    return pulsar.Client(
        f"pulsar+ssl://127.0.0.1:{process.tls_port}",
        tls_trust_certs_file_path=str(pki.ca_file),
        authentication=pulsar.AuthenticationTLS(str(cert.cert_file), str(cert.key_file)),
        operation_timeout_seconds=10,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )


def https_get(process: MtlsStandalone, path: str, context: ssl.SSLContext) -> int:
    url = f"https://127.0.0.1:{process.web_tls_port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=10, context=context) as response:
            json.loads(response.read())
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_the_certificates_cn_is_the_role(mtls: MtlsStandalone, pki: TestPki) -> None:
    admin = tls_client(mtls, pki, pki.issue("admin-cert", client=True))
    try:
        topic = topic_name("mtls")
        consumer = admin.subscribe(topic, "s")
        admin.create_producer(topic).send(b"by certificate")
        assert consumer.receive(timeout_millis=10_000).data() == b"by certificate"
    finally:
        admin.close()
    intruder = tls_client(mtls, pki, pki.issue("intruder", client=True))
    try:
        with pytest.raises(pulsar.AuthorizationError):
            intruder.create_producer(topic_name("mtls"))
    finally:
        intruder.close()
    assert "role=intruder" in mtls.log_text()


def test_https_client_certificates_authenticate(mtls: MtlsStandalone, pki: TestPki) -> None:
    admin = client_context(pki, pki.issue("admin-cert-web", client=True))
    assert https_get(mtls, "/admin/v2/tenants", admin) == 403  # CN admin-cert-web: no rights
    root = client_context(pki, pki.issue("admin-cert", client=True))
    assert https_get(mtls, "/admin/v2/tenants", root) == 200
    assert https_get(mtls, "/admin/v2/tenants", client_context(pki)) == 401  # no certificate
