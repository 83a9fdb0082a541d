"""Values only the admin client models, with Pulsar's admin v2 JSON field names.

``PartitionedTopicMetadata``, ``LookupData`` and ``BundlesData`` are frozen dataclasses; the
documents the broker models too (``ClusterData``, ``TenantInfo``, ``RetentionPolicies``,
``BacklogQuota``, ``AutoTopicCreationOverride``, and ``MessageIdData``, a position as the admin API
takes it) are the shared shapes of :mod:`magnetar.policies`, and names are
:mod:`magnetar.naming`'s. Stats stay raw JSON mappings because their fields grow with every Pulsar
release. ``to_json()`` gives the request body; ``from_json()`` reads an answer leniently (unknown
fields ignored, missing ones defaulted, as Pulsar's own Jackson mapper does) and raises
:class:`UnexpectedResponse` when the answer is not an object at all.

Pure values; safe from any task or thread. No HTTP here.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from magnetar.client.admin_errors import UnexpectedResponse

DEFAULT_WEB_SERVICE_URL = "http://127.0.0.1:8080"


def _obj(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise UnexpectedResponse(f"expected a JSON object for {what}, got {type(value).__name__}")
    return value


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
class BundlesData:
    """A namespace's bundle boundaries (hex strings ``0x00000000`` .. ``0xffffffff``)."""

    boundaries: tuple[str, ...]
    num_bundles: int

    @property
    def bundles(self) -> list[str]:
        """The bundle names, as the admin paths spell them: ``0x00000000_0x40000000``."""
        b = self.boundaries
        return [f"{lo}_{hi}" for lo, hi in itertools.pairwise(b)]

    def to_json(self) -> dict[str, Any]:
        return {"boundaries": list(self.boundaries), "numBundles": self.num_bundles}

    @classmethod
    def from_json(cls, value: object) -> BundlesData:
        doc = _obj(value, "BundlesData")
        boundaries = tuple(str(b) for b in doc.get("boundaries") or ())
        return cls(boundaries, int(doc.get("numBundles", max(len(boundaries) - 1, 0))))
