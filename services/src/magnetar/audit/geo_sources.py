"""The geo audit's Spark data source ``magnetar_topic_messages``
(:data:`~.geo_scans.MESSAGE_SCHEMA`): one partition per (cluster, topic or partition), each
read by a ``magnetar.client`` reader from the earliest message, a chunk at a time. Options:
``clusters`` (JSON name -> service URL) and ``topics`` (JSON name -> topics found there, listed
by the driver).

Concurrency: as :mod:`.sources`: ``read()`` runs its own event loop in a Python worker.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from magnetar.audit import bridge, geo_scans

TOPIC_MESSAGES = "magnetar_topic_messages"


@dataclass(frozen=True)
class _Topic(InputPartition):
    cluster: str
    url: str
    topic: str


class _MessagesReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        self._clusters: dict[str, str] = json.loads(options["clusters"])
        self._topics: dict[str, list[str]] = json.loads(options["topics"])

    def partitions(self) -> list[InputPartition]:
        return [
            _Topic(cluster, self._clusters[cluster], topic)
            for cluster, topics in sorted(self._topics.items())
            for topic in topics
        ]

    def read(self, partition: InputPartition) -> Iterator[tuple[object, ...]]:
        assert isinstance(partition, _Topic)

        def stream() -> AsyncIterator[list[tuple[object, ...]]]:
            return geo_scans.read_topic(partition.cluster, partition.url, partition.topic)

        for chunk in bridge.iterate(stream):
            yield from chunk


class TopicMessagesSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return TOPIC_MESSAGES

    def schema(self) -> str:
        return geo_scans.MESSAGE_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return _MessagesReader(self.options)
