"""The geo audit's readers: each cluster's topics of a namespace, read from the earliest
message through ``magnetar.client`` (no Spark here; :mod:`.geo_sources` calls these in
executors through :mod:`.bridge`).

A message's identity across clusters is (origin, producer name, sequence id): ``origin`` is
its MessageMetadata ``replicated_from`` when set (a replicated copy), else the cluster it was
read from. Its payload digest is a CRC-32 (zlib) of the payload. A cluster that does not answer
raises :class:`~.errors.Unreachable` naming it.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator

from magnetar.audit.errors import BadAuditInput, Unreachable
from magnetar.client.client import Client
from magnetar.client.errors import ClientError
from magnetar.naming import NamespaceName
from magnetar.protocol.message_id import EARLIEST

MESSAGE_SCHEMA = (
    "cluster STRING, topic STRING, origin STRING, producer_name STRING, sequence_id BIGINT, "
    "publish_time BIGINT, digest BIGINT, message_id STRING"
)
CHUNK_MESSAGES = 1000
READ_TIMEOUT_S = 10.0


def parse_clusters(specs: list[str]) -> dict[str, str]:
    """``NAME=pulsar://host:port`` options as {name: service URL}; at least two, names unique."""
    clusters: dict[str, str] = {}
    for spec in specs:
        name, sep, url = spec.partition("=")
        if not sep or not name or not url.startswith(("pulsar://", "pulsar+ssl://")):
            raise BadAuditInput(
                f"--cluster {spec!r}: expected NAME=pulsar://host:port (the cluster's name as "
                "replication marks it, then its service URL)"
            )
        if name in clusters:
            raise BadAuditInput(f"--cluster {name} given twice")
        clusters[name] = url
    if len(clusters) < 2:
        raise BadAuditInput("the geo audit compares clusters: give --cluster at least twice")
    return clusters


def check_namespace(namespace: str) -> str:
    try:
        return str(NamespaceName.parse(namespace, strict=False))
    except ValueError as exc:
        raise BadAuditInput(f"--namespace {namespace!r}: {exc}") from exc


def _unreachable(cluster: str, url: str, exc: BaseException) -> Unreachable:
    return Unreachable("cluster", cluster, url, str(exc) or type(exc).__name__)


async def list_topics(cluster: str, url: str, namespace: str) -> list[str]:
    """The persistent topics (and partitions) of ``namespace`` in one cluster."""
    try:
        async with asyncio.timeout(READ_TIMEOUT_S * 2):
            async with Client(url, operation_timeout_s=READ_TIMEOUT_S) as client:
                return sorted(await client.lookup.topics_of_namespace(namespace, "persistent"))
    except (ClientError, OSError, TimeoutError) as exc:
        raise _unreachable(cluster, url, exc) from exc


async def list_all_topics(clusters: dict[str, str], namespace: str) -> dict[str, list[str]]:
    """:func:`list_topics` in every cluster; the first unreachable cluster is raised."""
    return {name: await list_topics(name, url, namespace) for name, url in clusters.items()}


async def read_topic(cluster: str, url: str, topic: str) -> AsyncIterator[list[tuple[object, ...]]]:
    """Every message of ``topic`` in ``cluster``, from the earliest, in chunks of rows of
    :data:`MESSAGE_SCHEMA`; stops at the last message the broker had when asked."""
    try:
        async with Client(url, operation_timeout_s=READ_TIMEOUT_S) as client:
            reader = await client.create_reader(topic, EARLIEST)
            try:
                chunk: list[tuple[object, ...]] = []
                while await reader.has_message_available():
                    message = await reader.read_next(timeout_s=READ_TIMEOUT_S)
                    chunk.append((
                        cluster, topic, message.replicated_from or cluster,
                        message.producer_name, message.sequence_id, message.publish_time_ms,
                        zlib.crc32(message.data), str(message.message_id),
                    ))  # fmt: skip
                    if len(chunk) >= CHUNK_MESSAGES:
                        yield chunk
                        chunk = []
                if chunk:
                    yield chunk
            finally:
                await reader.close()
    except (ClientError, OSError, TimeoutError) as exc:
        raise _unreachable(cluster, url, exc) from exc
