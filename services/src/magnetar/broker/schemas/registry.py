"""The broker's schema registry: each topic's schema history in the metadata store, the
compatibility strategy that applies to it, and the decisions for producers, consumers and the
admin API.

One history per *schema id*, Pulsar's ``tenant/namespace/topic`` of the partitioned topic:
partitions share their partitioned topic's schemas, and the persistent and non-persistent topic
of one name share theirs (key: :func:`magnetar.metadata.keys.schema`).

The strategy is the namespace's ``schemaCompatibilityStrategy`` unless that is UNDEFINED, else
the broker's ``schema_compatibility_strategy`` (FULL by default, as Pulsar's). Magnetar has no
``isAllowAutoUpdateSchema`` / ``schemaAutoUpdateCompatibilityStrategy`` policies: a producer may
always add a new version that its strategy accepts.

* A producer with a schema gets the version equal to it (same type and data), or adds a new one
  after :func:`~magnetar.schema.check_new_schema`; without a schema it gets no version.
* A consumer with a schema on a topic without one registers it when the topic is idle (no
  producers, no other consumers, no stored data), else is refused ("Topic does not have schema
  to check"); on a topic with one it passes :func:`~magnetar.schema.check_consumer_schema`.
* Deleting appends a deletion marker (a new version); ``force`` removes the whole history.

Every change is a compare-and-set on the history's key (the store's ``update()``), so two
brokers adding versions at once get distinct, consecutive versions.

Concurrency: one instance per broker; coroutines safe from any task on the broker's loop.
"""

from __future__ import annotations

import time

from magnetar.broker.resources import BrokerResources
from magnetar.metadata import keys
from magnetar.metadata.errors import NotFound
from magnetar.metadata.store import MetadataStore, update
from magnetar.naming import TopicName
from magnetar.schema import (
    IncompatibleSchema,
    SchemaData,
    SchemaEntry,
    SchemaHistory,
    SchemaNotFound,
    Strategy,
    check_consumer_schema,
    check_new_schema,
    validate,
)
from magnetar.telemetry import get_logger

log = get_logger(__name__)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _key(topic: TopicName) -> str:
    base = topic.partitioned_topic_name
    return keys.schema(base.tenant, base.namespace_local, base.local_name)


class SchemaRegistry:
    """Schema histories by topic (see the module docstring)."""

    def __init__(
        self, store: MetadataStore, resources: BrokerResources, default_strategy: Strategy
    ) -> None:
        if default_strategy == Strategy.UNDEFINED:
            raise ValueError("the broker's default schema compatibility strategy must be defined")
        self._store = store
        self._resources = resources
        self._default = default_strategy

    async def strategy(self, topic: TopicName) -> Strategy:
        policies = await self._resources.get_policies(topic.namespace)
        own = Strategy(policies.schema_compatibility_strategy)
        return self._default if own == Strategy.UNDEFINED else own

    async def history(self, topic: TopicName) -> SchemaHistory:
        found = await self._store.get(_key(topic))
        return SchemaHistory() if found is None else SchemaHistory.decode(found.value)

    async def latest(self, topic: TopicName) -> SchemaEntry:
        latest = (await self.history(topic)).latest()
        if latest is None:
            raise SchemaNotFound(f"Schema not found for topic {topic.partitioned_topic_name}")
        return latest

    async def version(self, topic: TopicName, version: int) -> SchemaEntry:
        return (await self.history(topic)).version(version)

    async def add(self, topic: TopicName, schema: SchemaData) -> int:
        """The version of ``schema`` for ``topic``: an existing equal one, or a new one that
        the topic's strategy accepts (:class:`IncompatibleSchema` otherwise)."""
        validate(schema)
        history = await self.history(topic)
        found = history.find(schema)
        if found is not None:
            return found
        strategy = await self.strategy(topic)
        versions: list[int] = []

        def add_version(raw: bytes | None) -> bytes:
            current = SchemaHistory() if raw is None else SchemaHistory.decode(raw)
            existing = current.find(schema)
            if existing is not None:  # another broker added it meanwhile
                versions.append(existing)
                return current.encode()
            active = [e.schema for e in current.active() if e.schema is not None]
            check_new_schema(active, schema, strategy)
            grown = current.with_schema(schema, _now_ms())
            versions.append(len(grown.entries) - 1)
            return grown.encode()

        await update(self._store, _key(topic), add_version)
        version = versions[-1]
        log.info("schema_added", topic=str(topic.partitioned_topic_name), version=version,
                 type=schema.type.name, strategy=strategy.value)  # fmt: skip
        return version

    async def check_consumer(self, topic: TopicName, schema: SchemaData, idle: bool) -> None:
        """Admit a consumer's schema (see the module docstring)."""
        validate(schema)
        history = await self.history(topic)
        active = [e.schema for e in history.active() if e.schema is not None]
        if not active:
            if not idle:
                raise IncompatibleSchema("Topic does not have schema to check")
            await self.add(topic, schema)
            return
        check_consumer_schema(active, schema, await self.strategy(topic))

    async def delete(self, topic: TopicName, *, force: bool = False) -> int | None:
        """Delete the topic's schema: the deletion marker's version; None when forced (the
        whole history removed). :class:`SchemaNotFound` when there is nothing to delete."""
        key = _key(topic)
        if force:
            try:
                await self._store.delete(key)
            except NotFound as exc:
                raise SchemaNotFound(f"No schema for topic {topic.partitioned_topic_name}") from exc
            log.info("schema_history_deleted", topic=str(topic.partitioned_topic_name))
            return None
        versions: list[int] = []

        def mark_deleted(raw: bytes | None) -> bytes:
            current = SchemaHistory() if raw is None else SchemaHistory.decode(raw)
            if current.latest() is None:
                raise SchemaNotFound(f"No schema for topic {topic.partitioned_topic_name}")
            grown = current.with_deletion(_now_ms())
            versions.append(len(grown.entries) - 1)
            return grown.encode()

        await update(self._store, key, mark_deleted)
        log.info("schema_deleted", topic=str(topic.partitioned_topic_name), version=versions[-1])
        return versions[-1]
