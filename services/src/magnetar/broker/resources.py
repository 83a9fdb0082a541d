"""The broker's persisted admin resources: clusters, tenants, namespaces with their policies, and
partitioned-topic metadata, kept in the metadata store (keys from :mod:`magnetar.metadata.keys`,
values the JSON of :mod:`magnetar.policies`).

Invariants:
- Every read-modify-write is a compare-and-set on the key's version: ``set_policies`` and
  ``update_partitions`` go through the store's ``update()`` (a conflict is retried after a
  jittered backoff, bounded attempts);
  ``update_cluster`` and ``update_tenant`` replace the whole value and raise the conflict.
- A namespace exists only under an existing tenant, and a tenant with namespaces is never
  deleted. Both sides touch the tenant's key: ``create_namespace`` creates its key and then
  rewrites the tenant at the version it read first (so a concurrent ``delete_tenant``, which
  deletes at the version it saw when it found no namespaces, fails its CAS and looks again);
  when the tenant vanished meanwhile the new namespace is removed again and the create fails.
- A partitioned topic's metadata exists only under an existing namespace (checked on create;
  ``delete_namespace`` removes the namespace's partitioned-topic metadata with it).

Concurrency: one instance per process; every method is a coroutine safe from any task on the
store's loop. Nothing is cached: each call reads the store (memory and RocksDB reads are cheap;
a watch-fed cache can be added behind the same methods).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable

from magnetar.broker.errors import (
    ClusterExists,
    ClusterNotFound,
    InvalidPartitionCount,
    InvalidResourceName,
    NamespaceExists,
    NamespaceNotFound,
    PartitionCountNotIncreased,
    PartitionedTopicExists,
    PartitionedTopicNotFound,
    TenantExists,
    TenantNotEmpty,
    TenantNotFound,
    UnknownClusters,
)
from magnetar.metadata import keys
from magnetar.metadata.errors import BadVersion, KeyExists, NotFound
from magnetar.metadata.store import MetadataStore, update
from magnetar.naming import NamespaceName, TopicName
from magnetar.policies import ClusterData, InvalidPolicies, Policies, TenantInfo, dumps, loads
from magnetar.telemetry import get_logger

log = get_logger(__name__)

_NAME = re.compile(r"^[-=:.\w]+$")


def check_name(kind: str, name: str) -> str:
    """A cluster or tenant name as Pulsar accepts it (letters, digits, ``-=:._``)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidResourceName(f"{kind} name is not valid: {name!r}")
    return name


def _decode(data: bytes, what: str) -> object:
    try:
        return loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidPolicies(f"stored {what} is not JSON") from exc


def _partitions_of(topic: TopicName, value: bytes) -> int:
    doc = _decode(value, "PartitionedTopicMetadata")
    if not isinstance(doc, dict) or not isinstance(doc.get("partitions"), int):
        raise InvalidPolicies(f"stored partitioned metadata of {topic} is malformed")
    partitions: int = doc["partitions"]
    return partitions


class BrokerResources:
    """Clusters, tenants, namespaces and partitioned topics in one metadata store."""

    def __init__(self, store: MetadataStore) -> None:
        self.store = store

    # ------------------------------------------------------------ clusters

    async def create_cluster(self, name: str, data: ClusterData) -> None:
        check_name("Cluster", name)
        try:
            await self.store.create(keys.cluster(name), dumps(data.to_json()))
        except KeyExists as exc:
            raise ClusterExists(name) from exc
        log.info("cluster_created", cluster=name)

    async def get_cluster(self, name: str) -> ClusterData:
        found = await self.store.get(keys.cluster(check_name("Cluster", name)))
        if found is None:
            raise ClusterNotFound(name)
        return ClusterData.from_json(_decode(found.value, "ClusterData"))

    async def update_cluster(self, name: str, data: ClusterData) -> None:
        key = keys.cluster(check_name("Cluster", name))
        await self._replace(key, dumps(data.to_json()), lambda: ClusterNotFound(name))

    async def delete_cluster(self, name: str) -> None:
        try:
            await self.store.delete(keys.cluster(check_name("Cluster", name)))
        except NotFound as exc:
            raise ClusterNotFound(name) from exc
        log.info("cluster_deleted", cluster=name)

    async def list_clusters(self) -> list[str]:
        found = await self.store.list_keys(keys.CLUSTERS_PREFIX)
        return [keys.last_segment_of(keys.CLUSTERS_PREFIX, k) for k in found]

    async def _check_clusters(self, info: TenantInfo) -> None:
        known = set(await self.list_clusters())
        unknown = [c for c in info.allowed_clusters if c not in known]
        if unknown:
            raise UnknownClusters(unknown)

    # ------------------------------------------------------------ tenants

    async def create_tenant(self, name: str, info: TenantInfo) -> None:
        check_name("Tenant", name)
        await self._check_clusters(info)
        try:
            await self.store.create(keys.tenant(name), dumps(info.to_json()))
        except KeyExists as exc:
            raise TenantExists(name) from exc
        log.info("tenant_created", tenant=name)

    async def get_tenant(self, name: str) -> TenantInfo:
        found = await self.store.get(keys.tenant(check_name("Tenant", name)))
        if found is None:
            raise TenantNotFound(name)
        return TenantInfo.from_json(_decode(found.value, "TenantInfo"))

    async def tenant_exists(self, name: str) -> bool:
        return await self.store.get(keys.tenant(check_name("Tenant", name))) is not None

    async def list_tenants(self) -> list[str]:
        found = await self.store.list_keys(keys.TENANTS_PREFIX)
        return [keys.last_segment_of(keys.TENANTS_PREFIX, k) for k in found]

    async def update_tenant(self, name: str, info: TenantInfo) -> None:
        key = keys.tenant(check_name("Tenant", name))
        await self._check_clusters(info)
        await self._replace(key, dumps(info.to_json()), lambda: TenantNotFound(name))

    async def _replace(self, key: str, value: bytes, not_found: Callable[[], Exception]) -> None:
        """Overwrite an existing ``key`` at the version read (a conflict is raised, not retried);
        ``not_found()`` is raised when the key is missing or deleted meanwhile."""
        found = await self.store.get(key)
        if found is None:
            raise not_found()
        try:
            await self.store.put(key, value, expected_version=found.version)
        except BadVersion as exc:
            if exc.actual is None:
                raise not_found() from exc
            raise

    async def delete_tenant(self, name: str) -> None:
        """Delete an empty tenant: :class:`TenantNotEmpty` while it has namespaces."""
        key = keys.tenant(check_name("Tenant", name))
        while True:
            found = await self.store.get(key)
            if found is None:
                raise TenantNotFound(name)
            if await self.store.list_keys(keys.namespaces_prefix(name)):
                raise TenantNotEmpty(name)
            try:
                await self.store.delete(key, expected_version=found.version)
            except NotFound as exc:
                raise TenantNotFound(name) from exc
            except BadVersion:
                continue  # a namespace may have been created meanwhile: look again
            log.info("tenant_deleted", tenant=name)
            return

    # ------------------------------------------------------------ namespaces

    async def create_namespace(self, ns: NamespaceName, policies: Policies | None = None) -> None:
        tenant_key = keys.tenant(ns.tenant)
        tenant = await self.store.get(tenant_key)
        if tenant is None:
            raise TenantNotFound(ns.tenant)
        key = keys.namespace(ns.tenant, ns.local_name)
        try:
            await self.store.create(key, dumps((policies or Policies()).to_json()))
        except KeyExists as exc:
            raise NamespaceExists(str(ns)) from exc
        # Touch the tenant at the version read before: see the module docstring.
        while True:
            try:
                await self.store.put(tenant_key, tenant.value, expected_version=tenant.version)
                break
            except BadVersion:
                current = await self.store.get(tenant_key)
                if current is None:
                    await self.store.delete(key)
                    raise TenantNotFound(ns.tenant) from None
                tenant = current
        log.info("namespace_created", namespace=str(ns))

    async def get_policies(self, ns: NamespaceName) -> Policies:
        found = await self.store.get(keys.namespace(ns.tenant, ns.local_name))
        if found is None:
            raise NamespaceNotFound(str(ns))
        return Policies.from_json(_decode(found.value, "Policies"))

    async def namespace_exists(self, ns: NamespaceName) -> bool:
        return await self.store.get(keys.namespace(ns.tenant, ns.local_name)) is not None

    async def set_policies(self, ns: NamespaceName, fn: Callable[[Policies], Policies]) -> Policies:
        """CAS-update a namespace's policies with the pure ``fn`` (it may run several times);
        returns what was stored. Conflicts are retried after a jittered backoff."""
        stored: list[Policies] = []

        def apply(value: bytes | None) -> bytes:
            if value is None:
                raise NamespaceNotFound(str(ns))
            stored[:] = [fn(Policies.from_json(_decode(value, "Policies")))]
            return dumps(stored[0].to_json())

        await update(self.store, keys.namespace(ns.tenant, ns.local_name), apply)
        return stored[0]

    async def list_namespaces(self, tenant: str) -> list[NamespaceName]:
        if not await self.tenant_exists(tenant):
            raise TenantNotFound(tenant)
        prefix = keys.namespaces_prefix(tenant)
        return [
            NamespaceName(tenant, keys.last_segment_of(prefix, k))
            for k in await self.store.list_keys(prefix)
        ]

    async def delete_namespace(self, ns: NamespaceName) -> None:
        """Delete the namespace and its partitioned-topic metadata (emptiness is the caller's)."""
        try:
            await self.store.delete(keys.namespace(ns.tenant, ns.local_name))
        except NotFound as exc:
            raise NamespaceNotFound(str(ns)) from exc
        for key in await self.store.list_keys(
            keys.partitioned_topics_prefix(ns.tenant, ns.local_name)
        ):
            with contextlib.suppress(NotFound):  # deleted concurrently: same outcome
                await self.store.delete(key)
        log.info("namespace_deleted", namespace=str(ns))

    # ------------------------------------------------------------ partitioned topics

    @staticmethod
    def _topic_key(topic: TopicName) -> str:
        return keys.partitioned_topic(
            topic.tenant, topic.namespace_local, topic.domain, topic.local_name
        )

    async def create_partitioned_topic(self, topic: TopicName, partitions: int) -> None:
        if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions <= 0:
            raise InvalidPartitionCount(partitions)
        if not await self.namespace_exists(topic.namespace):
            raise NamespaceNotFound(str(topic.namespace))
        try:
            await self.store.create(self._topic_key(topic), dumps({"partitions": partitions}))
        except KeyExists as exc:
            raise PartitionedTopicExists(str(topic)) from exc
        log.info("partitioned_topic_created", topic=str(topic), partitions=partitions)

    async def get_partitions(self, topic: TopicName) -> int:
        """The partition count of ``topic``; 0 when it is not a partitioned topic."""
        found = await self.store.get(self._topic_key(topic))
        return 0 if found is None else _partitions_of(topic, found.value)

    async def update_partitions(self, topic: TopicName, partitions: int) -> None:
        """Raise the partition count (never lower it)."""
        if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions <= 0:
            raise InvalidPartitionCount(partitions)

        def apply(value: bytes | None) -> bytes:
            if value is None:
                raise PartitionedTopicNotFound(str(topic))
            current = _partitions_of(topic, value)
            if partitions <= current:
                raise PartitionCountNotIncreased(str(topic), current, partitions)
            return dumps({"partitions": partitions})

        await update(self.store, self._topic_key(topic), apply)
        log.info("partitions_updated", topic=str(topic), partitions=partitions)

    async def delete_partitioned_topic(self, topic: TopicName) -> None:
        try:
            await self.store.delete(self._topic_key(topic))
        except NotFound as exc:
            raise PartitionedTopicNotFound(str(topic)) from exc
        log.info("partitioned_topic_deleted", topic=str(topic))

    async def list_partitioned_topics(self, ns: NamespaceName) -> list[TopicName]:
        prefix = keys.partitioned_topics_prefix(ns.tenant, ns.local_name)
        topics = []
        for key in await self.store.list_keys(prefix):
            domain, local = keys.partitioned_topic_of(ns.tenant, ns.local_name, key)
            topics.append(TopicName(domain, ns.tenant, ns.local_name, local))
        return sorted(topics)
