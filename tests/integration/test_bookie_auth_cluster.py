"""A cluster whose bookies authenticate their callers (etcd, 3 bookies, 1 broker, 1
autorecovery, all with HS256 tokens): the broker writes and reads through the bookies with its
own token (bookkeeper_client_authentication_*) while the official client holds its own; a
bookie is decommissioned, so autorecovery copies its closed ledgers through authenticating
bookies with its token; no token reaches a log or the broker's runtime configuration."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.ledger.metadata import LedgerMetadataView
from magnetar.metadata import keys as metadata_keys
from magnetar.metadata.factory import open_store
from tests.kit.cluster import Cluster, fresh_topic, wait_for
from tests.kit.security import TokenKeys, http_as, token_client

pytestmark = pytest.mark.etcd


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, keys: TokenKeys) -> Iterator[Cluster]:
    base: Path = tmp_path_factory.mktemp("bkauth")
    (base / "broker.token").write_text(keys.token("broker-svc"))
    (base / "autorecovery.token").write_text(keys.token("autorecovery-svc"))
    bookie_client = {
        "bookkeeper_client_authentication_plugin": "token",
        "bookkeeper_client_authentication_parameters": "file://{}",
    }
    broker_env = keys.env(
        "BROKER",
        authorization_enabled="true",
        super_user_roles="admin",
        managed_ledger_default_ensemble_size="2",
        managed_ledger_default_write_quorum="2",
        managed_ledger_default_ack_quorum="2",
        # Ledgers roll over quickly: autorecovery copies closed ones.
        managed_ledger_max_entries_per_ledger="10",
        managed_ledger_min_ledger_rollover_time_minutes="0",
        bookkeeper_client_authentication_plugin="token",
        bookkeeper_client_authentication_parameters=f"file://{base / 'broker.token'}",
    )
    autorecovery_env = {
        "MAGNETAR_AUTORECOVERY_" + k.upper(): v.format(base / "autorecovery.token")
        for k, v in bookie_client.items()
    }
    with Cluster(
        base,
        bookie_count=3,
        broker_count=1,
        autorecovery_count=1,
        journal_sync=False,
        broker_env=broker_env,
        bookie_env=keys.env("BOOKIE", bookie_allowed_roles="broker-svc,autorecovery-svc"),
        autorecovery_env=autorecovery_env,
    ).running(graceful_stop=False) as running:
        yield running


def _client(cluster: Cluster, token: str) -> pulsar.Client:
    return token_client(cluster.service_url, token, timeout_s=20)


def _ledgers_naming(cluster: Cluster, bookie_id: str) -> list[int]:
    """The ledgers whose metadata names ``bookie_id`` in any ensemble (read from etcd)."""

    async def read() -> list[int]:
        store = await open_store(cluster.etcd.url)
        try:
            listed = await store.list(metadata_keys.LEDGER_META_PREFIX)
        finally:
            await store.close()
        return [
            metadata_keys.ledger_id_of(key)
            for key, v in listed
            if bookie_id in LedgerMetadataView.decode(v.value).all_bookies()
        ]

    return asyncio.run(read())


def test_produce_and_consume_through_authenticating_bookies(
    cluster: Cluster, keys: TokenKeys
) -> None:
    client = _client(cluster, keys.token("admin"))
    try:
        topic = fresh_topic("bkauth")
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic)
        for i in range(20):
            producer.send(b"m-%d" % i)
        got = [consumer.receive(timeout_millis=10_000).data() for _ in range(20)]
        assert got == [b"m-%d" % i for i in range(20)]
    finally:
        client.close()


@pytest.mark.timeout(180)
def test_autorecovery_copies_ledgers_through_authenticating_bookies(
    cluster: Cluster, keys: TokenKeys
) -> None:
    admin = keys.token("admin")
    client = _client(cluster, admin)
    try:
        topic = fresh_topic("bkauth-recovery")
        consumer = client.subscribe(topic, "keep")
        producer = client.create_producer(topic, batching_enabled=False)
        sent = [b"r-%d" % i for i in range(30)]
        for payload in sent:
            producer.send(payload)
        victim = max(cluster.bookies, key=lambda b: len(_ledgers_naming(cluster, b.bookie_id)))
        before = set(_ledgers_naming(cluster, victim.bookie_id))
        assert before, "no ledger on any bookie"
        path = f"/admin/v2/bookies/{victim.bookie_id}/decommission"
        web = cluster.brokers[0].web_url
        status, body = http_as(web, "POST", path, admin)
        assert status == 202, body
        recovery = cluster.autorecoveries[0]

        def copied() -> bool:
            # Producing goes on: the open ledger naming the victim rolls over and closes. A
            # ledger that stays open (a cursor's) may keep the decommission InProgress; the
            # closed ones must be copied off the victim by autorecovery, with its token.
            sent.append(b"r-%d" % len(sent))
            producer.send(sent[-1])
            return bool(before - set(_ledgers_naming(cluster, victim.bookie_id)))

        wait_for(copied, f"a ledger copied off {victim.bookie_id}", 60)
        assert "ledger_rereplicated" in recovery.log_text()
        status, body = http_as(web, "GET", path, admin)
        assert status == 200, body
        assert body["state"] in ("InProgress", "Done"), body
        victim.stop()  # read everything back without it
        got = [consumer.receive(timeout_millis=10_000).data() for _ in sent]
        assert got == sent
    finally:
        client.close()


def test_no_token_in_logs_or_runtime_configuration(cluster: Cluster, keys: TokenKeys) -> None:
    tokens = [
        (cluster.base / "broker.token").read_text(),
        (cluster.base / "autorecovery.token").read_text(),
    ]
    status, config = http_as(
        cluster.brokers[0].web_url, "GET", "/admin/v2/brokers/configuration/runtime",
        keys.token("admin"),
    )  # fmt: skip
    assert status == 200, config
    assert "bookkeeper_client_authentication_parameters" in config
    for token in tokens:
        assert token not in json.dumps(config)
        for process in cluster.members():
            assert token not in process.log_text(), f"token in {process.describe()}"
