"""Values the admin client sends and receives, with Pulsar's admin v2 JSON field names.

Frozen dataclasses for shapes that are stable (``ClusterData``, ``TenantInfo``,
``RetentionPolicies``, ``BacklogQuota``, ``AutoTopicCreationOverride``,
``PartitionedTopicMetadata``, ``LookupData``, ``MessageId``); stats stay raw JSON mappings because
their fields grow with every Pulsar release. ``to_json()`` gives the request body;
``from_json()`` reads an answer leniently (unknown fields ignored, missing ones defaulted, as
Pulsar's own Jackson mapper does) and raises :class:`UnexpectedResponse` when the answer is not
an object at all.

``TopicRef.parse`` and ``NamespaceRef.parse`` accept what pulsar-admin accepts: a full
``persistent://tenant/ns/topic``, ``tenant/ns/topic`` (persistent) or a bare ``topic``
(``public/default``). They check the shape only; the server validates names.

Pure values; safe from any task or thread. No HTTP here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from magnetar.client.admin_errors import UnexpectedResponse
from magnetar.client.topic_name import TopicName, parse_topic_name

MAX_ID = (1 << 63) - 1
DEFAULT_WEB_SERVICE_URL = "http://127.0.0.1:8080"


def _obj(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise UnexpectedResponse(f"expected a JSON object for {what}, got {type(value).__name__}")
    return value


def _seg(part: str) -> str:
    return quote(part, safe="")


@dataclass(frozen=True, slots=True)
class NamespaceRef:
    tenant: str
    namespace: str

    @classmethod
    def parse(cls, text: str) -> NamespaceRef:
        parts = text.split("/")
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"a namespace is tenant/namespace, got {text!r}")
        return cls(parts[0], parts[1])

    @property
    def path(self) -> str:
        return f"{_seg(self.tenant)}/{_seg(self.namespace)}"

    def __str__(self) -> str:
        return f"{self.tenant}/{self.namespace}"


class TopicRef:
    """A topic as the admin REST API names it: :func:`parse_topic_name` without the legacy
    tenant/cluster/namespace/topic form (the server validates the local name)."""

    @staticmethod
    def parse(text: str) -> TopicName:
        """The parsed name; ``.path`` is its URL-encoded REST path. Raises a ValueError."""
        return parse_topic_name(text, legacy_cluster=False)


@dataclass(frozen=True, slots=True)
class ClusterData:
    service_url: str | None = None
    broker_service_url: str | None = None
    service_url_tls: str | None = None
    broker_service_url_tls: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "serviceUrl": self.service_url,
            "brokerServiceUrl": self.broker_service_url,
            "serviceUrlTls": self.service_url_tls,
            "brokerServiceUrlTls": self.broker_service_url_tls,
        }

    @classmethod
    def from_json(cls, value: object) -> ClusterData:
        doc = _obj(value, "ClusterData")
        return cls(
            doc.get("serviceUrl"),
            doc.get("brokerServiceUrl"),
            doc.get("serviceUrlTls"),
            doc.get("brokerServiceUrlTls"),
        )


@dataclass(frozen=True, slots=True)
class TenantInfo:
    admin_roles: frozenset[str] = frozenset()
    allowed_clusters: frozenset[str] = frozenset()

    def to_json(self) -> dict[str, Any]:
        return {
            "adminRoles": sorted(self.admin_roles),
            "allowedClusters": sorted(self.allowed_clusters),
        }

    @classmethod
    def from_json(cls, value: object) -> TenantInfo:
        doc = _obj(value, "TenantInfo")
        return cls(
            frozenset(doc.get("adminRoles") or ()), frozenset(doc.get("allowedClusters") or ())
        )


@dataclass(frozen=True, slots=True)
class RetentionPolicies:
    """-1 means unlimited; 0 keeps nothing beyond what subscriptions still need."""

    retention_time_in_minutes: int = 0
    retention_size_in_mb: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "retentionTimeInMinutes": self.retention_time_in_minutes,
            "retentionSizeInMB": self.retention_size_in_mb,
        }

    @classmethod
    def from_json(cls, value: object) -> RetentionPolicies:
        doc = _obj(value, "RetentionPolicies")
        return cls(int(doc.get("retentionTimeInMinutes", 0)), int(doc.get("retentionSizeInMB", 0)))


BACKLOG_QUOTA_TYPES = ("destination_storage", "message_age")
BACKLOG_QUOTA_POLICIES = (
    "producer_request_hold",
    "producer_exception",
    "consumer_backlog_eviction",
)


@dataclass(frozen=True, slots=True)
class BacklogQuota:
    """``limit_size`` in bytes, ``limit_time`` in seconds; -1 means no limit."""

    limit_size: int = -1
    limit_time: int = -1
    policy: str = "producer_request_hold"

    def to_json(self) -> dict[str, Any]:
        return {"limitSize": self.limit_size, "limitTime": self.limit_time, "policy": self.policy}

    @classmethod
    def from_json(cls, value: object) -> BacklogQuota:
        doc = _obj(value, "BacklogQuota")
        size = doc.get("limitSize", doc.get("limit", -1))
        return cls(int(size), int(doc.get("limitTime", -1)), str(doc.get("policy", "")))


@dataclass(frozen=True, slots=True)
class AutoTopicCreationOverride:
    allow_auto_topic_creation: bool = True
    topic_type: str = "non-partitioned"
    default_num_partitions: int | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "allowAutoTopicCreation": self.allow_auto_topic_creation,
            "topicType": self.topic_type,
        }
        if self.default_num_partitions is not None:
            doc["defaultNumPartitions"] = self.default_num_partitions
        return doc

    @classmethod
    def from_json(cls, value: object) -> AutoTopicCreationOverride:
        doc = _obj(value, "AutoTopicCreationOverride")
        partitions = doc.get("defaultNumPartitions")
        return cls(
            bool(doc.get("allowAutoTopicCreation", True)),
            str(doc.get("topicType", "non-partitioned")),
            None if partitions is None else int(partitions),
        )


@dataclass(frozen=True, slots=True)
class PartitionedTopicMetadata:
    """``partitions == 0`` means the topic is not partitioned."""

    partitions: int

    def to_json(self) -> dict[str, Any]:
        return {"partitions": self.partitions}

    @classmethod
    def from_json(cls, value: object) -> PartitionedTopicMetadata:
        return cls(int(_obj(value, "PartitionedTopicMetadata").get("partitions", 0)))


@dataclass(frozen=True, slots=True)
class LookupData:
    broker_url: str | None
    http_url: str | None
    broker_url_tls: str | None = None
    http_url_tls: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerUrl": self.broker_url,
            "brokerUrlTls": self.broker_url_tls,
            "httpUrl": self.http_url,
            "httpUrlTls": self.http_url_tls,
        }

    @classmethod
    def from_json(cls, value: object) -> LookupData:
        doc = _obj(value, "LookupData")
        return cls(
            doc.get("brokerUrl"), doc.get("httpUrl"), doc.get("brokerUrlTls"), doc.get("httpUrlTls")
        )


@dataclass(frozen=True, slots=True)
class MessageId:
    """A position as the admin API takes it (Pulsar's ``MessageIdImpl``)."""

    ledger_id: int
    entry_id: int
    partition_index: int = -1

    @classmethod
    def parse(cls, text: str) -> MessageId:
        """``ledger:entry`` or ``ledger:entry:partition``, or ``earliest`` / ``latest``."""
        word = text.strip().lower()
        if word == "earliest":
            return EARLIEST
        if word == "latest":
            return LATEST
        try:
            numbers = [int(p) for p in word.split(":")]
        except ValueError:
            numbers = []
        if len(numbers) not in (2, 3):
            raise ValueError(
                f"a message id is ledgerId:entryId[:partition], earliest or latest; got {text!r}"
            )
        return cls(*numbers)

    def to_json(self) -> dict[str, Any]:
        return {
            "ledgerId": self.ledger_id,
            "entryId": self.entry_id,
            "partitionIndex": self.partition_index,
        }


EARLIEST = MessageId(-1, -1)
LATEST = MessageId(MAX_ID, MAX_ID)
