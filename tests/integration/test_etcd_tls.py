"""etcd over TLS with a real etcd started with TLS flags and ``--client-cert-auth``: the
metadata store with a client certificate works, without one it is refused with a clear error,
and a ``magnetar bookie`` process registers through it from its settings."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from magnetar.metadata.errors import StoreUnavailable
from magnetar.metadata.factory import open_store
from magnetar.tls import read_pem_files
from tests.kit.bookie import BookieProcess
from tests.kit.etcd import etcd_binary
from tests.kit.process import MAGNETAR_CLI, running
from tests.kit.tls import TestPki, TlsEtcdServer

pytestmark = pytest.mark.etcd


@pytest.fixture(scope="module")
def tls_etcd(tmp_path_factory: pytest.TempPathFactory, pki: TestPki) -> Iterator[TlsEtcdServer]:
    if etcd_binary() is None:
        pytest.fail("etcd is not installed: run `make setup` (installs Debian's etcd-server)")
    server = TlsEtcdServer(data_dir=tmp_path_factory.mktemp("tls-etcd") / "data", pki=pki)
    with running(server, clean_exit=False) as started:
        yield started


async def test_metadata_store_over_tls_with_a_client_certificate(
    tls_etcd: TlsEtcdServer, pki: TestPki
) -> None:
    me = pki.issue("broker-etcd", client=True)
    tls = read_pem_files(str(pki.ca_file), str(me.cert_file), str(me.key_file))
    store = await open_store(tls_etcd.url, session_timeout_s=5, tls=tls)
    try:
        await store.put("/tls-test/key", b"over-tls")
        found = await store.get("/tls-test/key")
        assert found is not None
        assert found.value == b"over-tls"
    finally:
        await store.close()


@pytest.mark.parametrize("how", ["without a client certificate", "without TLS"])
async def test_metadata_store_refused(tls_etcd: TlsEtcdServer, pki: TestPki, how: str) -> None:
    tls = read_pem_files(str(pki.ca_file)) if how == "without a client certificate" else None
    with pytest.raises(StoreUnavailable, match="metadata_store_tls"):
        await open_store(tls_etcd.url, session_timeout_s=5, tls=tls)


def test_bookie_registers_through_tls_etcd(
    tls_etcd: TlsEtcdServer, pki: TestPki, tmp_path_factory: pytest.TempPathFactory
) -> None:
    me = pki.issue("bookie-etcd", client=True)
    env = {
        "MAGNETAR_BOOKIE_METADATA_STORE_TLS_TRUST_CERTS_FILE_PATH": str(pki.ca_file),
        "MAGNETAR_BOOKIE_METADATA_STORE_TLS_CERTIFICATE_FILE_PATH": str(me.cert_file),
        "MAGNETAR_BOOKIE_METADATA_STORE_TLS_KEY_FILE_PATH": str(me.key_file),
    }
    bookie = BookieProcess(
        tmp_path_factory.mktemp("etcd-tls-bookie") / "data",
        tls_etcd.url,
        journal_sync=False,
        env=env,
    )
    with running(bookie):  # ready = registered in etcd
        assert "bookie_registered" in bookie.log_text()


def test_cluster_init_through_tls_etcd(tls_etcd: TlsEtcdServer, pki: TestPki) -> None:
    me = pki.issue("init-job", client=True)
    command = [
        *MAGNETAR_CLI, "cluster", "init",
        "--metadata", tls_etcd.url,
        "--cluster", "tls-cluster",
        "--web-url", "http://brokers:8080",
        "--service-url", "pulsar://brokers:6650",
        "--web-url-tls", "https://brokers:8443",
        "--service-url-tls", "pulsar+ssl://brokers:6651",
        "--metadata-store-tls-trust-certs-file-path", str(pki.ca_file),
        "--metadata-store-tls-certificate-file-path", str(me.cert_file),
        "--metadata-store-tls-key-file-path", str(me.key_file),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "cluster tls-cluster created" in done.stdout
