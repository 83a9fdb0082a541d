"""``ClusterData``: a cluster's service URLs as ``/admin/v2/clusters/{cluster}`` shows them.

Fields Pulsar leaves unset are omitted from ``to_json()`` (Pulsar's mapper skips nulls), so a
cluster document reads back to the same value. Used by the broker's cluster resources and the
admin client alike. Pure value; safe from any task.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from magnetar.policies.fields import obj, opt_str, str_set

_CLUSTER_FIELDS = {
    "service_url": "serviceUrl",
    "service_url_tls": "serviceUrlTls",
    "broker_service_url": "brokerServiceUrl",
    "broker_service_url_tls": "brokerServiceUrlTls",
    "proxy_service_url": "proxyServiceUrl",
    "proxy_protocol": "proxyProtocol",
    "authentication_plugin": "authenticationPlugin",
    "authentication_parameters": "authenticationParameters",
}


@dataclass(frozen=True, slots=True)
class ClusterData:
    service_url: str | None = None
    service_url_tls: str | None = None
    broker_service_url: str | None = None
    broker_service_url_tls: str | None = None
    proxy_service_url: str | None = None
    proxy_protocol: str | None = None
    peer_cluster_names: frozenset[str] = frozenset()
    # The credential this cluster's replicators present to it (Pulsar's ClusterData
    # authenticationPlugin / authenticationParameters: ``token``; ``token:<jwt>`` or
    # ``file:///path``). Stored; never shown by GET (:meth:`redacted`).
    authentication_plugin: str | None = None
    authentication_parameters: str | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            key: getattr(self, attr)
            for attr, key in _CLUSTER_FIELDS.items()
            if getattr(self, attr) is not None
        }
        if self.peer_cluster_names:
            doc["peerClusterNames"] = sorted(self.peer_cluster_names)
        return doc

    def redacted(self) -> ClusterData:
        """This value without its credential, for showing (the admin API's GET)."""
        return replace(self, authentication_parameters=None)

    @classmethod
    def from_json(cls, value: object) -> ClusterData:
        doc = obj(value, "ClusterData")
        fields = {attr: opt_str(doc, key) for attr, key in _CLUSTER_FIELDS.items()}
        peers = str_set(doc.get("peerClusterNames"), "peerClusterNames")
        return cls(**fields, peer_cluster_names=peers)
