"""Replicator producers on remote clusters, through ``magnetar.client``.

:class:`ClientRemoteClusters` keeps one :class:`~magnetar.client.Client` per remote cluster
(per broker service URL: an updated registration gets a new client, the old one is closed),
shared by every replicator of this broker towards that cluster, as Pulsar shares one client per
remote cluster. A multi-host ``brokerServiceUrl`` (``pulsar://h1:p1,h2:p2``) is used one host at
a time: when a producer cannot be created because the host does not answer, the cluster's
client is replaced by one on the next host (a replicator ends its round when its producer stays
detached, so a host that is gone is left behind).

A producer for a partition of a partitioned topic first makes sure the remote has the
partitioned topic (same partition count, created through the remote's admin REST API; one that
exists is left as it is), so the remote's consumers see one partitioned topic; a
non-partitioned topic is auto-created by the producer itself (the remote namespace must exist
and allow auto-creation, the default).

A message with a schema names the schema's version; :meth:`ClientRemoteClusters.register_schema`
uploads the schema to the remote (its admin REST API; an equal schema keeps its version there)
and returns the remote's version, which the replicated copy carries instead.

A remote that authenticates gets the credential of its ClusterData (Pulsar's
``authenticationPlugin`` / ``authenticationParameters``: ``token``; ``token:<jwt>`` or
``file:///path``, read off the loop): the client sends it on CONNECT and the admin calls as a
Bearer token; a changed credential gets a new client; a bad one makes the cluster unusable with
a reason naming it (never the token).

Producers are created without a send timeout, unbatched, with a queue as large as the
replicator's window: across an outage they keep their entries, reconnect with backoff and
resend in order, and the remote's deduplication drops what it already stored.

Concurrency: on the broker's loop, called from the replicators' tasks; :meth:`close` once, when
the broker stops, after its topics are closed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from magnetar.authentication.client_token import client_token
from magnetar.client import (
    AuthenticationToken,
    Client,
    ConnectionFailed,
    ConnectionLost,
    OperationTimeout,
    Producer,
)
from magnetar.client.admin import AdminClient
from magnetar.client.admin_errors import Conflict
from magnetar.geo.errors import RemoteClusterUnusable
from magnetar.naming import TopicName
from magnetar.policies import ClusterData
from magnetar.schema import SchemaData, admin_text
from magnetar.telemetry import get_logger

log = get_logger(__name__)


def service_hosts(url: str) -> list[str]:
    """The single-host URLs of a (possibly multi-host) service URL:
    ``pulsar://h1:1,h2:2`` -> ``pulsar://h1:1``, ``pulsar://h2:2``."""
    scheme, sep, hosts = url.partition("://")
    if not sep:
        return [url]
    return [f"{scheme}://{host.strip()}" for host in hosts.split(",") if host.strip()]


async def _token(cluster: str, data: ClusterData) -> str | None:
    """The token the cluster's ClusterData names (None: connect without one); a bad
    credential makes the cluster unusable with a reason (never the token itself)."""
    if not data.authentication_plugin:
        return None
    try:
        return await asyncio.to_thread(
            client_token,
            data.authentication_plugin,
            data.authentication_parameters or "",
            f"cluster {cluster!r}: authentication",
        )
    except ValueError as exc:
        raise RemoteClusterUnusable(
            f"{exc}; fix it with `magnetar admin clusters update --auth-plugin --auth-parameters`"
        ) from exc


class ClientRemoteClusters:
    """The broker's :class:`~magnetar.broker.replication.remote.RemoteClusters`."""

    def __init__(self, *, operation_timeout_s: float = 30.0) -> None:
        self._operation_timeout_s = operation_timeout_s
        # cluster -> (host URL, token, client)
        self._clients: dict[str, tuple[str, str | None, Client]] = {}
        self._next_host: dict[str, int] = {}  # cluster -> the host the next client uses
        self._partitioned: set[tuple[str, str]] = set()  # (cluster, topic) known to exist

    async def _client(self, cluster: str, data: ClusterData, url: str) -> Client:
        """The cluster's client, on one host of ``url`` (the next one after a failure), with
        the cluster's credential (a changed one gets a new client)."""
        hosts = service_hosts(url)
        host = hosts[self._next_host.get(cluster, 0) % len(hosts)]
        token = await _token(cluster, data)
        found = self._clients.get(cluster)
        if found is not None and found[:2] == (host, token):
            return found[2]
        if found is not None:
            await found[2].close()
        auth = AuthenticationToken(token) if token else None
        client = Client(host, operation_timeout_s=self._operation_timeout_s, auth=auth)
        self._clients[cluster] = (host, token, client)
        return client

    async def _failed(self, cluster: str) -> None:
        """A producer could not be created: the next attempt goes through the next host."""
        self._next_host[cluster] = self._next_host.get(cluster, 0) + 1
        found = self._clients.pop(cluster, None)
        if found is not None:
            await found[2].close()

    @contextlib.asynccontextmanager
    async def _admin(
        self, cluster: str, data: ClusterData, purpose: str
    ) -> AsyncIterator[AdminClient]:
        """The cluster's admin REST API with its credential (``purpose``: for the error)."""
        if not data.service_url:
            raise RemoteClusterUnusable(
                f"cluster {cluster!r} has no serviceUrl to {purpose} there: "
                "set it with `magnetar admin clusters update`"
            )
        token = await _token(cluster, data)
        async with AdminClient(
            data.service_url, timeout_s=self._operation_timeout_s, auth_token=token
        ) as admin:
            yield admin

    async def _ensure_partitioned(
        self, cluster: str, data: ClusterData, topic: TopicName, partitions: int
    ) -> None:
        name = str(topic.partitioned_topic_name)
        if (cluster, name) in self._partitioned:
            return
        async with self._admin(cluster, data, f"create {name}") as admin:
            try:
                await admin.create_partitioned_topic(name, partitions)
                log.info("remote_partitioned_topic_created", cluster=cluster, topic=name,
                         partitions=partitions)  # fmt: skip
            except Conflict:
                pass  # it exists there already
        self._partitioned.add((cluster, name))

    async def create_producer(
        self,
        cluster: str,
        data: ClusterData,
        topic: TopicName,
        *,
        producer_name: str,
        partitions: int,
        max_pending: int,
    ) -> Producer:
        url = data.broker_service_url
        if not url:
            raise RemoteClusterUnusable(
                f"cluster {cluster!r} has no brokerServiceUrl: "
                "set it with `magnetar admin clusters update`"
            )
        if partitions > 0:
            await self._ensure_partitioned(cluster, data, topic, partitions)
        client = await self._client(cluster, data, url)
        try:
            producer = await client.create_producer(
                str(topic),
                producer_name=producer_name,
                send_timeout_ms=0,
                max_pending_messages=max_pending,
                block_if_queue_full=True,
                batching_enabled=False,
            )
        except (ConnectionFailed, ConnectionLost, OperationTimeout):
            # The host does not answer: the next attempt (of every replicator to this cluster,
            # which share the client) goes through the next one. A refusal (TopicNotFound, say)
            # concerns one topic and keeps the client.
            await self._failed(cluster)
            raise
        if not isinstance(producer, Producer):  # a partition is never partitioned itself
            await producer.close()
            raise RemoteClusterUnusable(f"{topic} is partitioned on cluster {cluster!r}")
        return producer

    async def register_schema(
        self, cluster: str, data: ClusterData, topic: TopicName, schema: SchemaData
    ) -> int:
        payload = {
            "type": schema.type.name,
            "schema": admin_text(schema),
            "properties": dict(schema.properties),
        }
        async with self._admin(cluster, data, f"register {topic}'s schema") as admin:
            return await admin.upload_schema(str(topic.partitioned_topic_name), payload)

    async def close(self) -> None:
        clients = [client for _url, _token, client in self._clients.values()]
        self._clients.clear()
        for client in clients:
            await client.close()
