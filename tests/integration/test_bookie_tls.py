"""Bookie gRPC over TLS with real processes: a ``magnetar bookie`` serving TLS with client
authentication, the BookKeeper client writing and reading a ledger through it with its own
certificate, and refused without one (or without TLS); its certificate rotated on disk is
served to new connections."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from magnetar.ledger import BookKeeper, LedgerClientConfig
from magnetar.ledger.errors import LedgerError
from magnetar.metadata import MetadataStore
from magnetar.tls import PemFiles, read_pem_files
from tests.kit.bookie import BookieProcess, client_seeing, written_and_read
from tests.kit.etcd import EtcdServer
from tests.kit.process import running
from tests.kit.tls import TestPki, bookie_tls_args, served_serial

pytestmark = pytest.mark.etcd

QUICK = {"add_timeout_s": 2.0, "read_timeout_s": 2.0, "ensemble_change_timeout_s": 2.0}


@pytest.fixture(scope="module")
def tls_bookie(
    etcd_server: EtcdServer, tmp_path_factory: pytest.TempPathFactory, pki: TestPki
) -> Iterator[BookieProcess]:
    process = BookieProcess(
        tmp_path_factory.mktemp("tls-bookie") / "data",
        etcd_server.url,
        journal_sync=False,
        extra_args=bookie_tls_args(pki, pki.issue("bookie")),
        env={"MAGNETAR_BOOKIE_TLS_CERT_REFRESH_CHECK_DURATION_SEC": "0"},
    )
    with running(process) as started:
        yield started


async def _client(store: MetadataStore, bookie: BookieProcess, tls: PemFiles | None) -> BookKeeper:
    """A client whose registry holds exactly the TLS bookie (the session's etcd may have
    registrations of other tests' bookies: only this one is live here, the rest expire)."""
    config = LedgerClientConfig(tls=tls, bookie_wait_s=15, **QUICK)
    return await client_seeing(store, config, {bookie.bookie_id})


async def test_ledger_written_and_read_over_mutual_tls(
    tls_bookie: BookieProcess, store: MetadataStore, pki: TestPki
) -> None:
    broker = pki.issue("broker-client", client=True)
    tls = read_pem_files(str(pki.ca_file), str(broker.cert_file), str(broker.key_file))
    bk = await _client(store, tls_bookie, tls)
    try:
        payloads = [b"tls-%d" % i for i in range(5)]
        assert await written_and_read(bk, payloads) == payloads
    finally:
        await bk.close()


@pytest.mark.parametrize("how", ["no client certificate", "no TLS"])
async def test_refused_without_client_certificate(
    tls_bookie: BookieProcess, store: MetadataStore, pki: TestPki, how: str
) -> None:
    tls = read_pem_files(str(pki.ca_file)) if how == "no client certificate" else None
    bk = await _client(store, tls_bookie, tls)
    try:
        wh = await bk.create_ledger(1, 1, 1)
        with pytest.raises(LedgerError):
            await asyncio.wait_for(wh.append(b"refused"), 20)
    finally:
        await bk.close()


def test_rotated_certificate_is_served(tls_bookie: BookieProcess, pki: TestPki) -> None:
    # The same name and CA: the module's other tests are unaffected by the rotation.
    rotated = pki.issue("bookie")
    deadline = time.monotonic() + 15
    while (served := served_serial(tls_bookie.port, pki)) != rotated.serial:
        assert time.monotonic() < deadline, f"still serving {served}"
        time.sleep(0.1)
