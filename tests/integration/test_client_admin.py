"""``AdminClient`` against a real ``magnetar standalone``: every method, over real HTTP.

Messages for the cursor operations (skip, clear backlog, reset by time and by id, expiry) are
produced with the OFFICIAL pulsar-client, and their effect is read back through the stats the
admin client returns, as an operator would check it. Error answers must arrive as the typed
error for their status with the server's reason. A silent socket stands in for a hung server
(deadline) and a closed port for an unreachable one.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pulsar
import pytest

from magnetar.client.admin import AdminClient
from magnetar.client.admin_errors import (
    AdminTimeout,
    AdminUnreachable,
    Conflict,
    Forbidden,
    NotAcceptable,
    NotAllowed,
    NotFound,
    PreconditionFailed,
    Unprocessable,
)
from magnetar.policies import (
    AutoTopicCreationOverride,
    BacklogQuota,
    ClusterData,
    PersistencePolicies,
    RetentionPolicies,
    TenantInfo,
)
from magnetar.policies.message_id import EARLIEST, MessageIdData
from tests.kit.ports import free_port
from tests.kit.standalone import StandaloneProcess, official_client

ALLOWED = frozenset({"standalone"})


def _uid() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture
async def admin(standalone: StandaloneProcess) -> AsyncIterator[AdminClient]:
    async with AdminClient(standalone.web_url, timeout_s=10) as client:
        yield client


async def _backlog(admin: AdminClient, topic: str, sub: str) -> int:
    stats: Mapping[str, Any] = await admin.get_stats(topic)
    return int(stats["subscriptions"][sub]["msgBacklog"])


async def _wait_backlog(admin: AdminClient, topic: str, sub: str, want: int) -> None:
    deadline = time.monotonic() + 10
    while (have := await _backlog(admin, topic, sub)) != want:
        assert time.monotonic() < deadline, f"backlog of {sub} stays {have}, expected {want}"
        await asyncio.sleep(0.05)


async def test_clusters_and_tenants(admin: AdminClient, standalone: StandaloneProcess) -> None:
    assert await admin.list_clusters() == ["standalone"]
    cluster = await admin.get_cluster("standalone")
    assert cluster.broker_service_url == standalone.service_url
    assert cluster.service_url == standalone.web_url
    with pytest.raises(NotFound):
        await admin.get_cluster("nowhere")

    tenant = f"t-{_uid()}"
    await admin.create_tenant(tenant, TenantInfo(frozenset({"ops"}), ALLOWED))
    assert tenant in await admin.list_tenants()
    assert await admin.get_tenant(tenant) == TenantInfo(frozenset({"ops"}), ALLOWED)
    with pytest.raises(Conflict):
        await admin.create_tenant(tenant, TenantInfo(allowed_clusters=ALLOWED))
    await admin.update_tenant(tenant, TenantInfo(frozenset({"ops", "dev"}), ALLOWED))
    assert (await admin.get_tenant(tenant)).admin_roles == {"ops", "dev"}

    await admin.create_namespace(f"{tenant}/ns")
    with pytest.raises(Conflict):
        await admin.delete_tenant(tenant)  # it still has a namespace
    await admin.delete_tenant(tenant, force=True)
    with pytest.raises(NotFound) as missing:
        await admin.get_tenant(tenant)
    assert missing.value.status == 404
    assert tenant in missing.value.reason


async def test_namespace_policies(admin: AdminClient) -> None:
    tenant = f"t-{_uid()}"
    ns = f"{tenant}/orders"
    await admin.create_tenant(tenant, TenantInfo(allowed_clusters=ALLOWED))
    await admin.create_namespace(ns)
    assert await admin.list_namespaces(tenant) == [ns]
    with pytest.raises(Conflict):
        await admin.create_namespace(ns)
    policies = await admin.get_policies(ns)
    assert policies["retention_policies"] is None

    assert await admin.get_retention(ns) is None
    await admin.set_retention(ns, RetentionPolicies(120, 1024))
    assert await admin.get_retention(ns) == RetentionPolicies(120, 1024)
    assert (await admin.get_policies(ns))["retention_policies"]["retentionSizeInMB"] == 1024

    assert await admin.get_message_ttl(ns) is None
    await admin.set_message_ttl(ns, 3600)
    assert await admin.get_message_ttl(ns) == 3600
    with pytest.raises(PreconditionFailed):
        await admin.set_message_ttl(ns, -5)
    await admin.remove_message_ttl(ns)
    assert await admin.get_message_ttl(ns) is None

    quota = BacklogQuota(100 << 20, -1, "producer_exception")
    await admin.set_backlog_quota(ns, quota)
    assert await admin.get_backlog_quotas(ns) == {"destination_storage": quota}
    with pytest.raises(PreconditionFailed, match="Retention Quota must exceed"):
        await admin.set_backlog_quota(ns, BacklogQuota(2 << 30))  # above the 1 GiB retention
    await admin.remove_backlog_quota(ns)
    assert await admin.get_backlog_quotas(ns) == {}
    await admin.remove_retention(ns)
    assert await admin.get_retention(ns) is None

    await admin.set_deduplication(ns, True)
    assert await admin.get_deduplication(ns) is True
    await admin.remove_deduplication(ns)
    assert await admin.get_deduplication(ns) is None

    auto = AutoTopicCreationOverride(True, "partitioned", 3)
    await admin.set_auto_topic_creation(ns, auto)
    assert await admin.get_auto_topic_creation(ns) == auto
    await admin.remove_auto_topic_creation(ns)
    assert await admin.get_auto_topic_creation(ns) is None

    assert await admin.get_schema_compatibility_strategy(ns) == "UNDEFINED"
    await admin.set_schema_compatibility_strategy(ns, "backward")
    assert await admin.get_schema_compatibility_strategy(ns) == "BACKWARD"
    with pytest.raises(PreconditionFailed):
        await admin.set_schema_compatibility_strategy(ns, "SIDEWAYS")

    await admin.grant_permission(ns, "app", ["produce", "consume"])
    await admin.grant_permission(ns, "reader", ["consume"])
    assert await admin.get_permissions(ns) == {
        "app": {"produce", "consume"},
        "reader": {"consume"},
    }
    await admin.revoke_permission(ns, "app")
    assert await admin.get_permissions(ns) == {"reader": {"consume"}}

    await admin.create_topic(f"{ns}/t")
    with pytest.raises(Conflict):
        await admin.delete_namespace(ns)  # it still has a topic
    await admin.delete_namespace(ns, force=True)
    with pytest.raises(NotFound):
        await admin.get_policies(ns)
    await admin.delete_tenant(tenant)


async def test_persistence(admin: AdminClient, standalone: StandaloneProcess) -> None:
    ns = f"public/p-{_uid()}"
    await admin.create_namespace(ns)
    assert await admin.get_persistence(ns) is None
    await admin.set_persistence(ns, PersistencePolicies(1, 1, 1, 2.5))
    assert await admin.get_persistence(ns) == PersistencePolicies(1, 1, 1, 2.5)
    assert (await admin.get_policies(ns))["persistence"]["bookkeeperEnsemble"] == 1
    with pytest.raises(PreconditionFailed, match="Bookkeeper-Ensemble must be <= 5"):
        await admin.set_persistence(ns, PersistencePolicies(6, 6, 1))
    # As in Pulsar, more bookies than there are is accepted (bookies come and go); the
    # ledger cannot be created (the broker waits for bookies a while, then answers "need 2
    # writable bookies, 1 available"), and a producer fails instead of hanging.
    await admin.set_persistence(ns, PersistencePolicies(2, 2, 2))
    client = official_client(standalone, operation_timeout_s=3)
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(f"persistent://{ns}/t")
    finally:
        client.close()
    await admin.remove_persistence(ns)
    assert await admin.get_persistence(ns) is None
    client = official_client(standalone, operation_timeout_s=10)
    try:  # a new topic: the broker's defaults (E1 on a standalone) again
        client.create_producer(f"persistent://{ns}/t2").send(b"stored")
    finally:
        client.close()
    # Not deleted here: the first topic's load still waits for a second bookie (and would
    # answer the delete with that 500); the module's standalone goes at the end anyway.


async def test_replication_clusters(admin: AdminClient) -> None:
    peer = f"peer-{_uid()}"
    await admin.create_cluster(peer, ClusterData(service_url="http://127.0.0.1:1"))
    assert peer in await admin.list_clusters()
    await admin.update_cluster(peer, ClusterData(broker_service_url="pulsar://127.0.0.1:2"))
    assert (await admin.get_cluster(peer)).broker_service_url == "pulsar://127.0.0.1:2"
    tenant = f"t-{_uid()}"
    ns = f"{tenant}/geo"
    await admin.create_tenant(tenant, TenantInfo(allowed_clusters=ALLOWED))
    await admin.create_namespace(ns)
    assert await admin.get_replication_clusters(ns) == []

    await admin.set_replication_clusters(ns, ["standalone"])
    assert await admin.get_replication_clusters(ns) == ["standalone"]
    with pytest.raises(Forbidden) as not_allowed:  # registered, but not for this tenant
        await admin.set_replication_clusters(ns, ["standalone", peer])
    assert peer in not_allowed.value.reason
    assert tenant in not_allowed.value.reason
    with pytest.raises(Forbidden) as unknown:
        await admin.set_replication_clusters(ns, ["nowhere"])
    assert "Invalid cluster id: nowhere" in unknown.value.reason
    for bad in ([], ["global"]):
        with pytest.raises(PreconditionFailed):
            await admin.set_replication_clusters(ns, bad)
    assert await admin.get_replication_clusters(ns) == ["standalone"]  # refusals changed nothing

    await admin.update_tenant(tenant, TenantInfo(allowed_clusters=ALLOWED | {peer}))
    await admin.set_replication_clusters(ns, ["standalone", peer])
    assert await admin.get_replication_clusters(ns) == sorted(["standalone", peer])
    assert sorted((await admin.get_policies(ns))["replication_clusters"]) == sorted(
        ["standalone", peer]
    )
    await admin.delete_tenant(tenant, force=True)
    await admin.delete_cluster(peer)
    assert peer not in await admin.list_clusters()


async def test_partitioned_topics(admin: AdminClient) -> None:
    topic = f"persistent://public/default/parts-{_uid()}"
    await admin.create_partitioned_topic(topic, 2)
    assert topic in await admin.list_partitioned_topics("public/default")
    assert (await admin.get_partitioned_topic_metadata(topic)).partitions == 2
    with pytest.raises(NotAcceptable):
        await admin.create_partitioned_topic(f"{topic}-zero", 0)
    await admin.update_partitioned_topic(topic, 3)
    with pytest.raises(Unprocessable):
        await admin.update_partitioned_topic(topic, 2)
    listed = await admin.list_topics("public/default")
    assert {f"{topic}-partition-{i}" for i in range(3)} <= set(listed)

    await admin.create_subscription(topic, "audit", EARLIEST)
    assert await admin.get_subscriptions(topic) == ["audit"]
    stats = await admin.get_partitioned_stats(topic, per_partition=True)
    assert stats["metadata"] == {"partitions": 3}
    assert set(stats["partitions"]) == {f"{topic}-partition-{i}" for i in range(3)}
    assert "audit" in stats["subscriptions"]
    assert (await admin.get_partitioned_stats(topic))["partitions"] == {}
    with pytest.raises(NotAllowed):
        await admin.skip_messages(topic, "audit", 1)
    await admin.unload_topic(topic)
    await admin.delete_subscription(topic, "audit")
    assert await admin.get_subscriptions(topic) == []
    await admin.delete_partitioned_topic(topic)
    assert topic not in await admin.list_partitioned_topics("public/default")
    with pytest.raises(NotFound):
        await admin.get_partitioned_stats(topic)


async def test_cursor_operations_on_real_messages(
    admin: AdminClient, client: Any, standalone: StandaloneProcess
) -> None:
    topic = f"persistent://public/default/cursor-{_uid()}"
    await admin.create_topic(topic)
    assert topic in await admin.list_topics("public/default", "persistent")
    with pytest.raises(Conflict):
        await admin.create_topic(topic)
    await admin.create_subscription(topic, "audit", EARLIEST)
    await admin.create_subscription(topic, "late")  # at the end: sees nothing produced before
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode()) for i in range(5)]
    producer.close()
    sent_at = time.monotonic()
    await _wait_backlog(admin, topic, "audit", 5)
    assert await _backlog(admin, topic, "late") == 5  # created before the sends

    await admin.skip_messages(topic, "audit", 2)
    await _wait_backlog(admin, topic, "audit", 3)
    await admin.clear_backlog(topic, "audit")
    await _wait_backlog(admin, topic, "audit", 0)
    await admin.reset_cursor(topic, "audit", 0)  # back to the first message
    await _wait_backlog(admin, topic, "audit", 5)
    third = MessageIdData(ids[2].ledger_id(), ids[2].entry_id())
    await admin.reset_cursor_to_message_id(topic, "audit", third)
    await _wait_backlog(admin, topic, "audit", 3)
    await asyncio.sleep(max(0.0, sent_at + 1.1 - time.monotonic()))  # all older than 1 s now
    await admin.expire_messages(topic, "audit", 1)
    await _wait_backlog(admin, topic, "audit", 0)
    await admin.expire_messages_all_subscriptions(topic, 1)
    await _wait_backlog(admin, topic, "late", 0)

    internal = await admin.get_internal_stats(topic)
    assert set(internal["cursors"]) == {"audit", "late"}
    assert internal["entriesAddedCounter"] == 5
    lookup = await admin.lookup_topic(topic)
    assert lookup.broker_url == standalone.service_url
    assert lookup.http_url == standalone.web_url
    await admin.unload_topic(topic)
    assert await admin.get_subscriptions(topic) == ["audit", "late"]  # survive the unload

    await admin.delete_subscription(topic, "late")
    with pytest.raises(NotFound):
        await admin.delete_subscription(topic, "late")
    consumer = client.subscribe(topic, "audit")
    with pytest.raises(PreconditionFailed):
        await admin.delete_topic(topic)  # a consumer is connected
    consumer.close()
    await admin.delete_topic(topic, force=True)
    with pytest.raises(NotFound):
        await admin.get_stats(topic)


async def test_bad_names_and_missing_namespaces(admin: AdminClient) -> None:
    with pytest.raises(NotFound, match="does not exist"):
        await admin.list_topics("public/nowhere")
    with pytest.raises(NotFound):
        await admin.get_stats(f"persistent://public/nowhere/t-{_uid()}")
    with pytest.raises(NotFound):
        await admin.lookup_topic(f"public/nowhere/t-{_uid()}")
    with pytest.raises(PreconditionFailed):
        await admin.create_namespace("public/bad$name")
    with pytest.raises(ValueError, match="tenant/namespace"):
        await admin.list_topics("public")  # refused before any request


async def test_unreachable_and_hung_servers() -> None:
    async with AdminClient(f"http://127.0.0.1:{free_port()}", timeout_s=5) as nobody:
        with pytest.raises(AdminUnreachable) as unreachable:
            await nobody.list_clusters()
        assert unreachable.value.retryable

    requests: list[bytes] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        requests.append(await reader.readuntil(b"\r\n\r\n"))
        await reader.read()  # never answers; returns when the client hangs up

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        client = AdminClient(f"http://127.0.0.1:{port}", timeout_s=0.3, auth_token="tok")
        async with client:
            started = time.monotonic()
            with pytest.raises(AdminTimeout):
                await client.list_tenants()
            assert time.monotonic() - started < 3
    finally:
        server.close()
    assert b"GET /admin/v2/tenants " in requests[0]
    assert b"authorization: bearer tok" in requests[0].lower()


async def test_follows_a_brokers_redirect(standalone: StandaloneProcess) -> None:
    """A Pulsar broker answers 307 for topics it does not own; the client follows it."""

    async def redirect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request_line = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")[0]
        path = request_line.split(b" ")[1].decode()
        writer.write(
            b"HTTP/1.1 307 Temporary Redirect\r\n"
            + f"Location: {standalone.web_url}{path}\r\n".encode()
            + b"Content-Length: 0\r\n\r\n"
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(redirect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with AdminClient(f"http://127.0.0.1:{port}", timeout_s=5) as admin:
            assert await admin.list_clusters() == ["standalone"]
            assert (await admin.get_tenant("public")).allowed_clusters == ALLOWED
    finally:
        server.close()


async def test_bookies_of_a_standalone(admin: AdminClient) -> None:
    (bookie,) = await admin.list_bookies()
    assert bookie["available"] is True
    assert bookie["decommissioning"] is False
    marks = await admin.list_under_replicated()
    assert marks == {"count": 0, "ledgers": []}
    with pytest.raises(NotFound) as unknown:
        await admin.decommission_bookie("no-such-bookie")
    assert "no-such-bookie" in unknown.value.reason
    with pytest.raises(NotFound) as never:
        await admin.get_decommission(str(bookie["bookieId"]))
    assert "No decommission was requested" in never.value.reason
