"""Named clusters for geo-replication tests: standalones (or brokers) that know each other.

::

    clusters = {"a": sa_a, "b": sa_b}    # processes started with --cluster-name a / b
    link_clusters(clusters)              # each registers the others (service URLs)
    ns = replicated_namespace(clusters)  # tenant + namespace on each, replicated, dedup on
    stats = topic_stats(sa_a, topic)     # the admin's topic stats (``replication`` section)

Every call is blocking admin REST (10 s deadline each); from a test's event loop run them with
``asyncio.to_thread``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any, Protocol

import httpx

from magnetar.client import Producer
from magnetar.wire import pulsar_api_pb2 as pb


class Endpoints(Protocol):
    @property
    def service_url(self) -> str: ...

    @property
    def web_url(self) -> str: ...


def _http(process: Endpoints) -> httpx.Client:
    return httpx.Client(base_url=process.web_url, timeout=10)


def cluster_name_args(name: str) -> list[str]:
    return ["--cluster-name", name]


def link_clusters(clusters: Mapping[str, Endpoints]) -> None:
    """Register every cluster in every other one's metadata (its own registers itself)."""
    for name, process in clusters.items():
        with _http(process) as http:
            for other, peer in clusters.items():
                if other == name:
                    continue
                body = {"serviceUrl": peer.web_url, "brokerServiceUrl": peer.service_url}
                response = http.put(f"/admin/v2/clusters/{other}", json=body)
                if response.status_code == 409:
                    response = http.post(f"/admin/v2/clusters/{other}", json=body)
                response.raise_for_status()


def replicated_namespace(
    clusters: Mapping[str, Endpoints],
    *,
    replicate_to: list[str] | None = None,
    deduplication: bool = True,
) -> str:
    """A fresh tenant/namespace on every cluster, replicated between ``replicate_to`` (all by
    default), deduplication on (what replicated retries need)."""
    tenant = f"geo-{uuid.uuid4().hex[:6]}"
    ns = f"{tenant}/ns"
    names = sorted(clusters)
    wanted = names if replicate_to is None else replicate_to
    for process in clusters.values():
        with _http(process) as http:
            http.put(
                f"/admin/v2/tenants/{tenant}", json={"allowedClusters": names}
            ).raise_for_status()
            http.put(f"/admin/v2/namespaces/{ns}").raise_for_status()
            http.post(
                f"/admin/v2/namespaces/{ns}/deduplication", json=deduplication
            ).raise_for_status()
            http.post(f"/admin/v2/namespaces/{ns}/replication", json=wanted).raise_for_status()
    return ns


def topic_stats(process: Endpoints, topic: str) -> dict[str, Any]:
    path = topic.replace("persistent://", "/admin/v2/persistent/") + "/stats"
    with _http(process) as http:
        response = http.get(path)
        response.raise_for_status()
        doc: dict[str, Any] = response.json()
        return doc


async def send_copy(
    producer: Producer, payload: bytes, *, origin: str, producer_name: str, sequence_id: int
) -> None:
    """Store ``payload`` as a geo-replicator stores a copy (``Producer.send_entry``): the
    origin's producer name and sequence id, ``replicated_from`` = ``origin``."""
    metadata = pb.MessageMetadata(
        producer_name=producer_name,
        sequence_id=sequence_id,
        publish_time=int(time.time() * 1000),
        replicated_from=origin,
        uncompressed_size=len(payload),
    )
    await (await producer.send_entry(metadata, payload))
