"""``AdminClient``: a typed asyncio client of the Pulsar admin REST v2 API (and lookup v2).

::

    async with AdminClient("http://127.0.0.1:8080") as admin:
        await admin.create_tenant("acme", TenantInfo(allowed_clusters=frozenset({"standalone"})))
        await admin.create_namespace("acme/orders")
        await admin.set_retention("acme/orders", RetentionPolicies(60, 100))
        stats = await admin.get_stats("persistent://acme/orders/in")

Works against Magnetar and Apache Pulsar alike: paths and bodies are Pulsar's. Namespaces are
``"tenant/ns"`` strings and topics whatever :meth:`magnetar.naming.TopicName.parse` takes
(``persistent://t/n/x``, ``t/n/x`` or a bare name in ``public/default``); only their shape is
checked here, the server validates the characters. Values are the frozen dataclasses of
:mod:`magnetar.policies` (shared with the broker) and :mod:`magnetar.client.admin_models`; stats
are the server's JSON as a read-only mapping.

Errors: an HTTP error answer raises the :mod:`magnetar.client.admin_errors` class for its status,
carrying the server's ``reason``; no answer raises ``AdminUnreachable``; a call that runs past
``timeout_s`` raises ``AdminTimeout``. Calls are not retried here (most are not idempotent);
``err.retryable`` says when a caller may retry.

Nothing is logged here: every failure reaches the caller as an exception, and the CLI's stdout
stays clean for ``--json``. This is the one module that imports httpx.

Concurrency: one instance may be used by many tasks of one event loop at once (httpx pools
connections); close it with ``aclose()`` or ``async with``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from magnetar.client.admin_errors import (
    AdminTimeout,
    AdminUnreachable,
    NotFound,
    UnexpectedResponse,
    error_for_status,
)
from magnetar.client.admin_messages import AdminMessage, messages_from_answer
from magnetar.client.admin_models import (
    DEFAULT_WEB_SERVICE_URL,
    BundlesData,
    LookupData,
    PartitionedTopicMetadata,
)
from magnetar.client.settings import TlsOptions
from magnetar.naming import NON_PERSISTENT, PERSISTENT, NamespaceName, TopicName
from magnetar.policies import (
    AutoTopicCreationOverride,
    BacklogQuota,
    ClusterData,
    DelayedDeliveryPolicies,
    InvalidPolicies,
    MessageIdData,
    PersistencePolicies,
    RetentionPolicies,
    TenantInfo,
)
from magnetar.policies.message_id import LATEST

V2 = "/admin/v2"
T = TypeVar("T")


def _bookie_decommission(bookie_id: str) -> str:
    return f"{V2}/bookies/{quote(bookie_id, safe=':')}/decommission"


def _tenant(tenant: str) -> str:
    return f"{V2}/tenants/{quote(tenant, safe='')}"


def _ns(namespace: str) -> str:
    return f"{V2}/namespaces/{NamespaceName.parse(namespace, strict=False).rest_path}"


def _topic(topic: str) -> str:
    return f"{V2}/{TopicName.parse(topic, strict=False).rest_path}"


def _schema(topic: str) -> str:
    """``/admin/v2/schemas/tenant/ns/topic``: a topic's schemas (no domain; partitions share
    their partitioned topic's)."""
    name = TopicName.parse(topic, strict=False).partitioned_topic_name
    parts = (name.tenant, name.namespace_local, name.local_name)
    return f"{V2}/schemas/" + "/".join(quote(p, safe="") for p in parts)


def _sub(topic: str, sub: str) -> str:
    return f"{_topic(topic)}/subscription/{quote(sub, safe='')}"


def _str_list(value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UnexpectedResponse(f"expected a JSON list of strings, got {value!r:.200}")
    return value


def _read(from_json: Callable[[object], T], value: object) -> T:
    """A shared shape from a server's answer; a malformed one is an unexpected response."""
    try:
        return from_json(value)
    except InvalidPolicies as exc:
        raise UnexpectedResponse(f"malformed answer: {exc.reason}") from exc


def _mapping(value: object) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise UnexpectedResponse(f"expected a JSON object, got {value!r:.200}")
    return value


def _reason(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("reason"), str):
        return str(body["reason"])
    text = response.text.strip()
    return text[:500] if text else response.reason_phrase or f"HTTP {response.status_code}"


class AdminClient:
    """Typed calls of the admin REST v2 API; see the module docstring."""

    def __init__(
        self,
        web_service_url: str = DEFAULT_WEB_SERVICE_URL,
        *,
        timeout_s: float = 30.0,
        auth_token: str | None = None,
        tls: TlsOptions | None = None,
    ) -> None:
        """``tls``: how an ``https://`` URL is verified (trust file, hostname validation, a
        client certificate for mutual TLS); the system's CAs when None."""
        self.web_service_url = web_service_url.rstrip("/")
        self.timeout_s = timeout_s
        headers = {"Accept": "application/json"}
        if auth_token:
            headers["Authorization"] = f"Bearer {auth_token}"
        self._http = httpx.AsyncClient(
            base_url=self.web_service_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s),
            follow_redirects=True,  # a Pulsar broker redirects (307) to a topic's owner
            verify=(tls or TlsOptions()).ssl_context(),
        )

    async def __aenter__(self) -> AdminClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(
        self,
        method: str,
        path: str,
        *,
        body: object = None,
        params: Mapping[str, str] | None = None,
        text: bool = False,
    ) -> Any:
        """One HTTP call under the deadline; the decoded JSON answer (with ``text``: the text),
        or None for no content."""
        response = await self._request(method, path, body=body, params=params)
        if response.status_code == 204 or not response.content:
            return None
        if text:
            return response.text
        try:
            return response.json()
        except ValueError as exc:
            raise UnexpectedResponse(f"{method} {path}: answer is not JSON") from exc

    async def _request(
        self,
        method: str,
        path: str,
        *,
        body: object = None,
        params: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """One HTTP call under the deadline; the answer, unless it is an error (raised)."""
        content = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if content is not None else None
        try:
            async with asyncio.timeout(self.timeout_s):
                response = await self._http.request(
                    method, path, content=content, headers=headers, params=params
                )
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise AdminTimeout(f"{method} {path}: no answer within {self.timeout_s}s") from exc
        except httpx.RequestError as exc:
            reason = f"cannot reach {self.web_service_url}: {exc or type(exc).__name__}"
            raise AdminUnreachable(reason) from exc
        if response.status_code >= 400:
            raise error_for_status(response.status_code, _reason(response))
        if response.status_code >= 300:
            reason = f"{method} {path}: unexpected answer {response.reason_phrase}"
            raise UnexpectedResponse(reason, response.status_code)
        return response

    # ------------------------------------------------------------------ clusters

    async def list_clusters(self) -> list[str]:
        return _str_list(await self._call("GET", f"{V2}/clusters"))

    async def get_cluster(self, cluster: str) -> ClusterData:
        path = f"{V2}/clusters/{quote(cluster, safe='')}"
        return _read(ClusterData.from_json, await self._call("GET", path))

    async def create_cluster(self, cluster: str, data: ClusterData) -> None:
        """Register a cluster (its service URLs), e.g. a geo-replication peer."""
        await self._call("PUT", f"{V2}/clusters/{quote(cluster, safe='')}", body=data.to_json())

    async def update_cluster(self, cluster: str, data: ClusterData) -> None:
        await self._call("POST", f"{V2}/clusters/{quote(cluster, safe='')}", body=data.to_json())

    async def delete_cluster(self, cluster: str) -> None:
        await self._call("DELETE", f"{V2}/clusters/{quote(cluster, safe='')}")

    # ------------------------------------------------------------------ brokers

    async def list_brokers(self, cluster: str) -> list[str]:
        """The live brokers' web addresses (``host:port``)."""
        return _str_list(await self._call("GET", f"{V2}/brokers/{quote(cluster, safe='')}"))

    async def get_leader_broker(self) -> Mapping[str, Any]:
        """Pulsar's LeaderBroker: ``brokerId`` and ``serviceUrl``."""
        return _mapping(await self._call("GET", f"{V2}/brokers/leaderBroker"))

    async def healthcheck(self) -> str:
        """``ok`` when the broker serves and its metadata store answers."""
        return str(await self._call("GET", f"{V2}/brokers/health", text=True))

    async def get_owned_namespaces(self, cluster: str, broker: str) -> Mapping[str, Any]:
        """The bundles ``broker`` (a web ``host:port``) owns, by name."""
        path = f"{V2}/brokers/{quote(cluster, safe='')}/{quote(broker, safe=':')}/ownedNamespaces"
        return _mapping(await self._call("GET", path))

    async def get_load_report(self) -> Mapping[str, Any]:
        """The broker's load report (Pulsar's LocalBrokerData)."""
        return _mapping(await self._call("GET", f"{V2}/broker-stats/load-report"))

    async def get_broker_topics_stats(self) -> Mapping[str, Any]:
        """Stats of the broker's topics: namespace -> bundle -> domain -> topic -> TopicStats."""
        return _mapping(await self._call("GET", f"{V2}/broker-stats/topics"))

    async def get_broker_metrics(self) -> list[Mapping[str, Any]]:
        """The broker's namespace metrics: Pulsar's Metrics (``metrics``, ``dimensions``)."""
        found = await self._call("GET", f"{V2}/broker-stats/metrics")
        if not isinstance(found, list):
            raise UnexpectedResponse(f"expected a JSON array, got {found!r:.200}")
        return [_mapping(item) for item in found]

    # ------------------------------------------------------------------ bookies

    async def list_bookies(self) -> list[Mapping[str, Any]]:
        """Every bookie: ``bookieId`` (and Magnetar's address, rack, readOnly, available,
        decommissioning)."""
        found = _mapping(await self._call("GET", f"{V2}/bookies/all")).get("bookies")
        if not isinstance(found, list):
            raise UnexpectedResponse(f"expected a bookies list, got {found!r:.200}")
        return [_mapping(item) for item in found]

    async def list_under_replicated(self) -> Mapping[str, Any]:
        """``count`` and ``ledgers`` (``ledgerId``, ``missingBookies``) marked by the auditor."""
        return _mapping(await self._call("GET", f"{V2}/bookies/underreplicated"))

    async def get_under_replicated_count(self) -> int:
        """How many ledgers are under-replicated now (0: every entry has its copies)."""
        count = (await self.list_under_replicated()).get("count")
        if not isinstance(count, int):
            raise UnexpectedResponse(f"under-replicated count is not an integer: {count!r:.80}")
        return count

    async def decommission_bookie(self, bookie_id: str) -> None:
        """Request the decommission of ``bookie_id`` (idempotent)."""
        await self._call("POST", _bookie_decommission(bookie_id))

    async def cancel_decommission(self, bookie_id: str) -> None:
        """Withdraw the decommission of ``bookie_id``."""
        await self._call("DELETE", _bookie_decommission(bookie_id))

    async def get_decommission(self, bookie_id: str) -> Mapping[str, Any]:
        """``bookieId``, ``state`` (InProgress, Done, Failed), ``ledgersRemaining``, ``message``."""
        return _mapping(await self._call("GET", _bookie_decommission(bookie_id)))

    # ------------------------------------------------------------------ tenants

    async def list_tenants(self) -> list[str]:
        return _str_list(await self._call("GET", f"{V2}/tenants"))

    async def get_tenant(self, tenant: str) -> TenantInfo:
        return _read(TenantInfo.from_json, await self._call("GET", _tenant(tenant)))

    async def create_tenant(self, tenant: str, info: TenantInfo | None = None) -> None:
        await self._call("PUT", _tenant(tenant), body=(info or TenantInfo()).to_json())

    async def update_tenant(self, tenant: str, info: TenantInfo) -> None:
        await self._call("POST", _tenant(tenant), body=info.to_json())

    async def delete_tenant(self, tenant: str, *, force: bool = False) -> None:
        await self._call("DELETE", _tenant(tenant), params=_force(force))

    # ------------------------------------------------------------------ namespaces

    async def list_namespaces(self, tenant: str) -> list[str]:
        return _str_list(await self._call("GET", f"{V2}/namespaces/{quote(tenant, safe='')}"))

    async def create_namespace(
        self, namespace: str, policies: Mapping[str, Any] | None = None
    ) -> None:
        await self._call("PUT", _ns(namespace), body=dict(policies or {}))

    async def delete_namespace(self, namespace: str, *, force: bool = False) -> None:
        await self._call("DELETE", _ns(namespace), params=_force(force))

    async def get_policies(self, namespace: str) -> Mapping[str, Any]:
        return _mapping(await self._call("GET", _ns(namespace)))

    async def get_retention(self, namespace: str) -> RetentionPolicies | None:
        value = await self._call("GET", f"{_ns(namespace)}/retention")
        return None if value is None else _read(RetentionPolicies.from_json, value)

    async def set_retention(self, namespace: str, retention: RetentionPolicies) -> None:
        await self._call("POST", f"{_ns(namespace)}/retention", body=retention.to_json())

    async def remove_retention(self, namespace: str) -> None:
        await self._call("DELETE", f"{_ns(namespace)}/retention")

    async def get_persistence(self, namespace: str) -> PersistencePolicies | None:
        """The namespace's ensemble and quorums; None: not set (the broker's defaults apply)."""
        value = await self._call("GET", f"{_ns(namespace)}/persistence")
        return None if value is None else _read(PersistencePolicies.from_json, value)

    async def set_persistence(self, namespace: str, persistence: PersistencePolicies) -> None:
        """New ledgers of the namespace's topics use these (PreconditionFailed above the
        broker's managedLedgerMax* bounds)."""
        await self._call("POST", f"{_ns(namespace)}/persistence", body=persistence.to_json())

    async def remove_persistence(self, namespace: str) -> None:
        await self._call("DELETE", f"{_ns(namespace)}/persistence")

    async def get_message_ttl(self, namespace: str) -> int | None:
        value = await self._call("GET", f"{_ns(namespace)}/messageTTL")
        return None if value is None else int(value)

    async def set_message_ttl(self, namespace: str, seconds: int) -> None:
        await self._call("POST", f"{_ns(namespace)}/messageTTL", body=seconds)

    async def remove_message_ttl(self, namespace: str) -> None:
        await self._call("DELETE", f"{_ns(namespace)}/messageTTL")

    async def get_compaction_threshold(self, namespace: str) -> int | None:
        value = await self._call("GET", f"{_ns(namespace)}/compactionThreshold")
        return None if value is None else int(value)

    async def set_compaction_threshold(self, namespace: str, threshold_bytes: int) -> None:
        await self._call("PUT", f"{_ns(namespace)}/compactionThreshold", body=threshold_bytes)

    async def remove_compaction_threshold(self, namespace: str) -> None:
        await self._call("DELETE", f"{_ns(namespace)}/compactionThreshold")

    async def get_backlog_quotas(self, namespace: str) -> dict[str, BacklogQuota]:
        value = _mapping(await self._call("GET", f"{_ns(namespace)}/backlogQuotaMap"))
        return {kind: _read(BacklogQuota.from_json, q) for kind, q in value.items()}

    async def set_backlog_quota(
        self, namespace: str, quota: BacklogQuota, quota_type: str = "destination_storage"
    ) -> None:
        path, params = f"{_ns(namespace)}/backlogQuota", {"backlogQuotaType": quota_type}
        await self._call("POST", path, body=quota.to_json(), params=params)

    async def remove_backlog_quota(
        self, namespace: str, quota_type: str = "destination_storage"
    ) -> None:
        params = {"backlogQuotaType": quota_type}
        await self._call("DELETE", f"{_ns(namespace)}/backlogQuota", params=params)

    async def get_deduplication(self, namespace: str) -> bool | None:
        value = await self._call("GET", f"{_ns(namespace)}/deduplication")
        return None if value is None else bool(value)

    async def set_deduplication(self, namespace: str, enabled: bool) -> None:
        await self._call("POST", f"{_ns(namespace)}/deduplication", body=enabled)

    async def remove_deduplication(self, namespace: str) -> None:
        await self._call("DELETE", f"{_ns(namespace)}/deduplication")

    async def get_delayed_delivery(self, namespace: str) -> DelayedDeliveryPolicies | None:
        """The namespace's delayedDelivery policy; None: not set (the broker's defaults apply)."""
        value = await self._call("GET", f"{_ns(namespace)}/delayedDelivery")
        return None if value is None else _read(DelayedDeliveryPolicies.from_json, value)

    async def set_delayed_delivery(self, namespace: str, policy: DelayedDeliveryPolicies) -> None:
        await self._call("POST", f"{_ns(namespace)}/delayedDelivery", body=policy.to_json())

    async def remove_delayed_delivery(self, namespace: str) -> None:
        await self._call("DELETE", f"{_ns(namespace)}/delayedDelivery")

    async def get_auto_topic_creation(self, namespace: str) -> AutoTopicCreationOverride | None:
        value = await self._call("GET", f"{_ns(namespace)}/autoTopicCreation")
        return None if value is None else _read(AutoTopicCreationOverride.from_json, value)

    async def set_auto_topic_creation(
        self, namespace: str, override: AutoTopicCreationOverride
    ) -> None:
        await self._call("POST", f"{_ns(namespace)}/autoTopicCreation", body=override.to_json())

    async def remove_auto_topic_creation(self, namespace: str) -> None:
        await self._call("DELETE", f"{_ns(namespace)}/autoTopicCreation")

    async def get_schema_compatibility_strategy(self, namespace: str) -> str:
        value = await self._call("GET", f"{_ns(namespace)}/schemaCompatibilityStrategy")
        return "UNDEFINED" if value is None else str(value)

    async def set_schema_compatibility_strategy(self, namespace: str, strategy: str) -> None:
        path = f"{_ns(namespace)}/schemaCompatibilityStrategy"
        await self._call("PUT", path, body=strategy.upper())

    async def get_replication_clusters(self, namespace: str) -> list[str]:
        return _str_list(await self._call("GET", f"{_ns(namespace)}/replication"))

    async def set_replication_clusters(self, namespace: str, clusters: Iterable[str]) -> None:
        """Replicate the namespace's topics to ``clusters`` (Pulsar's ``set-clusters``)."""
        await self._call("POST", f"{_ns(namespace)}/replication", body=sorted(set(clusters)))

    async def get_permissions(self, namespace: str) -> dict[str, frozenset[str]]:
        value = _mapping(await self._call("GET", f"{_ns(namespace)}/permissions"))
        return {role: frozenset(_str_list(actions)) for role, actions in value.items()}

    async def grant_permission(self, namespace: str, role: str, actions: Iterable[str]) -> None:
        path = f"{_ns(namespace)}/permissions/{quote(role, safe='')}"
        await self._call("POST", path, body=sorted(set(actions)))

    async def revoke_permission(self, namespace: str, role: str) -> None:
        await self._call("DELETE", f"{_ns(namespace)}/permissions/{quote(role, safe='')}")

    # ------------------------------------------------------------------ namespace bundles
    async def get_bundles(self, namespace: str) -> BundlesData:
        return BundlesData.from_json(await self._call("GET", f"{_ns(namespace)}/bundles"))

    async def unload_namespace(self, namespace: str) -> None:
        """Unload every bundle of the namespace, whichever broker owns it."""
        await self._call("PUT", f"{_ns(namespace)}/unload")

    async def unload_namespace_bundle(self, namespace: str, bundle: str) -> None:
        """Unload one bundle (``0x00000000_0x40000000``); the owner does it."""
        await self._call("PUT", f"{_ns(namespace)}/{quote(bundle, safe='')}/unload")

    async def split_namespace_bundle(
        self,
        namespace: str,
        bundle: str,
        *,
        unload: bool = False,
        algorithm: str | None = None,
    ) -> None:
        """Split one bundle in two (the owner does it); ``algorithm`` is Pulsar's
        ``splitAlgorithmName`` (``range_equally_divide`` when None)."""
        params = {"unload": str(unload).lower()}
        if algorithm is not None:
            params["splitAlgorithmName"] = algorithm
        path = f"{_ns(namespace)}/{quote(bundle, safe='')}/split"
        await self._call("PUT", path, params=params)

    # ------------------------------------------------------------------ topics

    async def list_topics(self, namespace: str, domain: str | None = None) -> list[str]:
        """Topics and partitions of ``namespace``; both domains unless ``domain`` is given."""
        return await self._list(namespace, domain, "")

    async def list_partitioned_topics(self, namespace: str, domain: str | None = None) -> list[str]:
        return await self._list(namespace, domain, "/partitioned")

    async def _list(self, namespace: str, domain: str | None, suffix: str) -> list[str]:
        ns = NamespaceName.parse(namespace, strict=False).rest_path
        names: list[str] = []
        for d in (domain,) if domain else (PERSISTENT, NON_PERSISTENT):
            names += _str_list(await self._call("GET", f"{V2}/{d}/{ns}{suffix}"))
        return names

    async def create_topic(self, topic: str) -> None:
        """A non-partitioned topic."""
        await self._call("PUT", _topic(topic))

    async def create_partitioned_topic(self, topic: str, partitions: int) -> None:
        await self._call("PUT", f"{_topic(topic)}/partitions", body=partitions)

    async def update_partitioned_topic(self, topic: str, partitions: int) -> None:
        """Raise the partition count (Pulsar never shrinks it: 422)."""
        await self._call("POST", f"{_topic(topic)}/partitions", body=partitions)

    async def get_partitioned_topic_metadata(self, topic: str) -> PartitionedTopicMetadata:
        value = await self._call("GET", f"{_topic(topic)}/partitions")
        return PartitionedTopicMetadata.from_json(value)

    async def delete_topic(self, topic: str, *, force: bool = False) -> None:
        await self._call("DELETE", _topic(topic), params=_force(force))

    async def delete_partitioned_topic(self, topic: str, *, force: bool = False) -> None:
        await self._call("DELETE", f"{_topic(topic)}/partitions", params=_force(force))

    async def get_stats(self, topic: str) -> Mapping[str, Any]:
        return _mapping(await self._call("GET", f"{_topic(topic)}/stats"))

    async def get_partitioned_stats(
        self, topic: str, *, per_partition: bool = False
    ) -> Mapping[str, Any]:
        params = {"perPartition": "true" if per_partition else "false"}
        path = f"{_topic(topic)}/partitioned-stats"
        return _mapping(await self._call("GET", path, params=params))

    async def get_internal_stats(self, topic: str) -> Mapping[str, Any]:
        return _mapping(await self._call("GET", f"{_topic(topic)}/internalStats"))

    async def get_subscriptions(self, topic: str) -> list[str]:
        return _str_list(await self._call("GET", f"{_topic(topic)}/subscriptions"))

    async def create_subscription(
        self, topic: str, subscription: str, position: MessageIdData = LATEST
    ) -> None:
        await self._call("PUT", _sub(topic, subscription), body=position.to_json())

    async def delete_subscription(
        self, topic: str, subscription: str, *, force: bool = False
    ) -> None:
        await self._call("DELETE", _sub(topic, subscription), params=_force(force))

    async def skip_messages(self, topic: str, subscription: str, count: int) -> None:
        await self._call("POST", f"{_sub(topic, subscription)}/skip/{count}")

    async def clear_backlog(self, topic: str, subscription: str) -> None:
        """Skip every message of the subscription's backlog (pulsar-admin ``clear-backlog``)."""
        await self._call("POST", f"{_sub(topic, subscription)}/skip_all")

    async def reset_cursor(self, topic: str, subscription: str, timestamp_ms: int) -> None:
        """Move the cursor to the first message published at or after ``timestamp_ms``."""
        await self._call("POST", f"{_sub(topic, subscription)}/resetcursor/{timestamp_ms}")

    async def reset_cursor_to_message_id(
        self, topic: str, subscription: str, message_id: MessageIdData
    ) -> None:
        path = f"{_sub(topic, subscription)}/resetcursor"
        await self._call("POST", path, body=message_id.to_json())

    async def expire_messages(self, topic: str, subscription: str, seconds: int) -> None:
        """Skip the messages of ``subscription`` older than ``seconds``."""
        await self._call("POST", f"{_sub(topic, subscription)}/expireMessages/{seconds}")

    async def expire_messages_all_subscriptions(self, topic: str, seconds: int) -> None:
        path = f"{_topic(topic)}/all_subscription/expireMessages/{seconds}"
        await self._call("POST", path)

    async def unload_topic(self, topic: str) -> None:
        await self._call("PUT", f"{_topic(topic)}/unload")

    async def terminate_topic(self, topic: str) -> MessageIdData:
        """End a persistent topic for good (no more publishing); its last message id."""
        return _read(
            MessageIdData.from_json, await self._call("POST", f"{_topic(topic)}/terminate")
        )

    async def peek_messages(
        self, topic: str, subscription: str, count: int = 1
    ) -> list[AdminMessage]:
        """Up to ``count`` messages the subscription has not acknowledged, oldest first, without
        consuming them (fewer if the backlog is shorter)."""
        if count < 1:
            raise ValueError(f"count must be 1 or more, got {count}")
        out: list[AdminMessage] = []
        position = 1
        while len(out) < count:
            path = f"{_sub(topic, subscription)}/position/{position}"
            try:
                out.extend(await self._messages(path))
            except NotFound as exc:
                if not exc.reason.startswith("Message not found"):
                    raise  # no such topic or subscription
                break  # the backlog ends here
            position += 1
        return out[:count]

    async def examine_message(
        self, topic: str, initial_position: str = "latest", position: int = 1
    ) -> list[AdminMessage]:
        """The ``position``-th stored message from the ``earliest`` or back from the ``latest``
        (a batch: all its messages)."""
        params = {"initialPosition": initial_position, "messagePosition": str(position)}
        return await self._messages(f"{_topic(topic)}/examinemessage", params)

    async def get_message_by_id(
        self, topic: str, ledger_id: int, entry_id: int
    ) -> list[AdminMessage]:
        """The message (a batch: all its messages) stored at ``ledger_id:entry_id``."""
        return await self._messages(f"{_topic(topic)}/ledger/{ledger_id}/entry/{entry_id}")

    async def compact_topic(self, topic: str) -> None:
        """Start compacting a persistent topic (Conflict if a compaction is running)."""
        await self._call("PUT", f"{_topic(topic)}/compaction")

    async def compaction_status(self, topic: str) -> dict[str, str]:
        """Pulsar's LongRunningProcessStatus: ``status`` (NOT_RUN, RUNNING, SUCCESS, ERROR)
        and ``lastError``."""
        value = _mapping(await self._call("GET", f"{_topic(topic)}/compaction"))
        return {
            "status": str(value.get("status", "")),
            "lastError": str(value.get("lastError") or ""),
        }

    async def get_last_message_id(self, topic: str) -> MessageIdData:
        return _read(
            MessageIdData.from_json, await self._call("GET", f"{_topic(topic)}/lastMessageId")
        )

    async def _messages(
        self, path: str, params: Mapping[str, str] | None = None
    ) -> list[AdminMessage]:
        response = await self._request("GET", path, params=params)
        return messages_from_answer(response.headers, response.content)

    # ------------------------------------------------------------------ schemas

    async def get_schema(self, topic: str, version: int | None = None) -> Mapping[str, Any]:
        """The latest schema (or one version): ``{"version", "type", "timestamp", "data",
        "properties"}``; NotFound when the topic has none."""
        path = f"{_schema(topic)}/schema" + ("" if version is None else f"/{version}")
        return _mapping(await self._call("GET", path))

    async def get_all_schemas(self, topic: str) -> list[Mapping[str, Any]]:
        """Every version since the last deletion, oldest first."""
        answer = _mapping(await self._call("GET", f"{_schema(topic)}/schemas"))
        found = answer.get("getSchemaResponses")
        if not isinstance(found, list):
            raise UnexpectedResponse(f"expected getSchemaResponses, got {answer!r:.200}")
        return [_mapping(entry) for entry in found]

    async def upload_schema(self, topic: str, payload: Mapping[str, Any]) -> int:
        """Upload pulsar-admin's ``{"type", "schema", "properties"}``; the version it got (an
        equal schema keeps its version). Conflict when the topic's strategy refuses it."""
        answer = _mapping(await self._call("POST", f"{_schema(topic)}/schema", body=payload))
        version = _mapping(answer.get("version")).get("version")
        if not isinstance(version, int):
            raise UnexpectedResponse(f"expected a version, got {answer!r:.200}")
        return version

    async def delete_schema(self, topic: str, *, force: bool = False) -> int | None:
        """Delete the topic's schema: the deletion's version (None with ``force``: the whole
        history is gone)."""
        path = f"{_schema(topic)}/schema"
        answer = _mapping(await self._call("DELETE", path, params=_force(force)))
        version = answer.get("version")
        return version if isinstance(version, int) else None

    async def test_schema_compatibility(
        self, topic: str, payload: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        """``{"isCompatibility": bool, "schemaCompatibilityStrategy": str}`` for a payload."""
        path = f"{_schema(topic)}/compatibility"
        return _mapping(await self._call("POST", path, body=payload))

    async def lookup_topic(self, topic: str) -> LookupData:
        path = f"/lookup/v2/topic/{TopicName.parse(topic, strict=False).rest_path}"
        return LookupData.from_json(await self._call("GET", path))


def _force(force: bool) -> dict[str, str] | None:
    return {"force": "true"} if force else None
