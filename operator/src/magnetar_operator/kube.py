"""The one module that talks to the Kubernetes API (besides kopf's own watching and patching).

:class:`Kube` reads, creates, merge-patches and deletes the namespaced objects the operator
owns, by ``apiVersion``/``kind`` through a small table of the kinds it renders (no discovery).
``apply`` is level-based: create if missing, else merge-patch with the desired fields, leaving
fields Kubernetes makes immutable (a StatefulSet's claim templates, selectors) as they are, so
a spec change never dead-ends in a 422 (pain 1 of KUBERNETES.md).

It wraps the official ``kubernetes`` client (blocking), each call run in a worker thread under
a deadline; errors become :class:`KubeError` (``status`` = the HTTP status). Safe from any task
of the operator's loop; one instance per process.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
from collections.abc import Mapping
from typing import Any

import kubernetes

Obj = dict[str, Any]
TIMEOUT_S = 30.0

# kind -> plural (the group/version comes from the object's apiVersion)
PLURALS = {
    "ConfigMap": "configmaps",
    "Service": "services",
    "ServiceAccount": "serviceaccounts",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "Pod": "pods",
    "Secret": "secrets",
    "Certificate": "certificates",
    "Event": "events",
    "StatefulSet": "statefulsets",
    "Deployment": "deployments",
    "Job": "jobs",
    "PodDisruptionBudget": "poddisruptionbudgets",
    "Role": "roles",
    "RoleBinding": "rolebindings",
    "ScheduledSparkApplication": "scheduledsparkapplications",
    "SparkApplication": "sparkapplications",
    "PulsarCluster": "pulsarclusters",
    "Tenant": "tenants",
    "Namespace": "namespaces",
    "Topic": "topics",
}
# Fields the API server refuses to change on an existing object: sent on create only.
IMMUTABLE = {
    "StatefulSet": ("selector", "serviceName", "volumeClaimTemplates", "podManagementPolicy"),
    "Deployment": ("selector",),
    "PodDisruptionBudget": (),
    "Service": ("clusterIP",),
}


class KubeError(Exception):
    """A Kubernetes API call failed; ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def collection_path(api_version: str, kind: str, namespace: str) -> str:
    plural = PLURALS.get(kind)
    if plural is None:
        raise KubeError(f"the operator does not manage kind {kind!r}")
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    return f"{base}/namespaces/{namespace}/{plural}"


def object_path(api_version: str, kind: str, namespace: str, name: str) -> str:
    return f"{collection_path(api_version, kind, namespace)}/{name}"


def patch_body(existing: Mapping[str, Any], desired: Obj) -> Obj:
    """The merge patch that makes ``existing`` carry ``desired``'s fields (immutable ones
    left out)."""
    body: Obj = {
        "metadata": {
            key: desired["metadata"][key]
            for key in ("labels", "annotations", "ownerReferences")
            if key in desired["metadata"]
        }
    }
    for key, value in desired.items():
        if key in ("apiVersion", "kind", "metadata", "status"):
            continue
        if key == "spec" and isinstance(value, dict):
            frozen = IMMUTABLE.get(desired["kind"], ())
            value = {k: v for k, v in value.items() if k not in frozen}
        body[key] = value
    return body


class Kube:
    """Namespaced CRUD of the operator's objects; see the module docstring."""

    def __init__(self, api: kubernetes.client.ApiClient) -> None:
        self._api = api

    @classmethod
    def from_environment(cls) -> Kube:
        """In a pod: the service account; elsewhere: the current kubeconfig context."""
        try:
            kubernetes.config.load_incluster_config()
        except kubernetes.config.ConfigException as in_pod:
            # read KUBECONFIG now: the client reads it once, at import
            config_file = os.environ.get("KUBECONFIG")
            try:
                kubernetes.config.load_kube_config(config_file=config_file)
            except (kubernetes.config.ConfigException, OSError) as exc:
                where = f"KUBECONFIG={config_file}" if config_file else "~/.kube/config"
                raise KubeError(
                    f"no Kubernetes API to talk to: not in a pod ({in_pod}) and no usable "
                    f"kubeconfig at {where} ({exc}); run in a pod with a service account, "
                    "or point KUBECONFIG at a cluster's config"
                ) from exc
        return cls(kubernetes.client.ApiClient())

    def close(self) -> None:
        self._api.close()

    def _request(self, method: str, path: str, body: object, content_type: str) -> Any:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        _, url, headers, payload, _ = self._api.param_serialize(
            method, path, header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        try:
            response = self._api.call_api(
                method, url, header_params=headers, body=payload, _request_timeout=TIMEOUT_S
            )
            data = response.read()
        except Exception as exc:  # urllib3 and the client raise many types; wrap them all
            raise KubeError(f"{method} {path}: {exc}") from exc
        if response.status == 404:
            return None
        if response.status >= 400:
            reason = data.decode(errors="replace")[:500] if data else response.reason
            raise KubeError(f"{method} {path}: {response.status} {reason}", response.status)
        return json.loads(data) if data else {}

    async def _call(
        self,
        method: str,
        path: str,
        body: object = None,
        content_type: str = "application/json",
    ) -> Any:
        async with asyncio.timeout(TIMEOUT_S + 5):
            return await asyncio.to_thread(self._request, method, path, body, content_type)

    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> Obj | None:
        """The object, or None when it does not exist."""
        found = await self._call("GET", object_path(api_version, kind, namespace, name))
        return dict(found) if found is not None else None

    async def list_labelled(
        self, api_version: str, kind: str, namespace: str, labels: Mapping[str, str]
    ) -> list[Obj]:
        """The objects whose labels include ``labels``."""
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        path = collection_path(api_version, kind, namespace) + f"?labelSelector={selector}"
        found = await self._call("GET", path) or {}
        items = [dict(item) for item in found.get("items", [])]
        # filtered here too: a selector is a promise of the server, checked cheaply
        return [
            item
            for item in items
            if all(
                item.get("metadata", {}).get("labels", {}).get(k) == v for k, v in labels.items()
            )
        ]

    async def create(self, obj: Obj) -> Obj:
        meta = obj["metadata"]
        path = collection_path(obj["apiVersion"], obj["kind"], meta["namespace"])
        created = await self._call("POST", path, obj)
        return dict(created or obj)

    async def apply(self, obj: Obj) -> tuple[Obj, bool, list[str]]:
        """Create ``obj`` or merge-patch the existing one: the result, whether anything was
        sent that differs from what was there, and the immutable fields that differ but were
        not sent (:func:`frozen_changes`)."""
        meta = obj["metadata"]
        existing = await self.get(obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"])
        if existing is None:
            try:
                return await self.create(obj), True, []
            except KubeError as exc:
                if exc.status != 409:  # created meanwhile: patch it below
                    raise
            existing = await self.get(
                obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"]
            )
            if existing is None:
                raise KubeError(f"{obj['kind']} {meta['name']}: conflict, then not found", 409)
        body = patch_body(existing, obj)
        frozen = frozen_changes(existing, obj)
        if _contains(existing, body):
            return existing, False, frozen
        path = object_path(obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"])
        patched = await self._call("PATCH", path, body, "application/merge-patch+json")
        return dict(patched or existing), True, frozen

    async def create_if_missing(self, obj: Obj) -> Obj:
        """The existing object, or ``obj`` created (a concurrent creation is not an error)."""
        meta = obj["metadata"]
        where = (obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"])
        existing = await self.get(*where)
        if existing is not None:
            return existing
        try:
            return await self.create(obj)
        except KubeError as exc:
            if exc.status != 409:
                raise
        return await self.get(*where) or obj

    async def list_all(self, api_version: str, kind: str, namespace: str | None) -> list[Obj]:
        """Every object of ``kind`` in ``namespace`` (None: in every namespace)."""
        if namespace is None:
            base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
            path = f"{base}/{PLURALS[kind]}"
        else:
            path = collection_path(api_version, kind, namespace)
        found = await self._call("GET", path) or {}
        return [dict(item) for item in found.get("items", [])]

    async def patch_status(self, obj: Mapping[str, Any], status: Mapping[str, Any]) -> None:
        """Merge ``status`` into ``obj``'s status subresource (the spec is never written)."""
        meta = obj["metadata"]
        path = object_path(obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"])
        body = {"status": dict(status)}
        await self._call("PATCH", f"{path}/status", body, "application/merge-patch+json")

    async def event(
        self, involved: Mapping[str, Any], kind: str, reason: str, message: str
    ) -> None:
        """Post a Kubernetes Event (``kind`` Normal or Warning) about ``involved``."""
        meta = involved["metadata"]
        stamp = _now()
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": involved["apiVersion"],
                "kind": involved["kind"],
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta.get("uid", ""),
            },
            "type": kind,
            "reason": reason,
            "message": message[:1024],
            "source": {"component": "magnetar-operator"},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": "magnetar-operator",
        }
        await self._call("POST", collection_path("v1", "Event", meta["namespace"]), event)

    async def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        """Delete it (background propagation); False when it did not exist."""
        path = object_path(api_version, kind, namespace, name)
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        return await self._call("DELETE", path, body) is not None


def _now() -> str:
    return datetime.datetime.now(tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _contains(existing: Any, wanted: Any) -> bool:
    """Whether merge-patching ``existing`` with ``wanted`` would change nothing (fields the
    server added, such as defaults inside list items, do not count as a difference)."""
    if isinstance(wanted, Mapping):
        return isinstance(existing, Mapping) and all(
            _contains(existing.get(k), v) for k, v in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(existing, list)
            and len(existing) == len(wanted)
            and all(_contains(e, w) for e, w in zip(existing, wanted, strict=True))
        )
    return bool(existing == wanted)


def frozen_changes(existing: Mapping[str, Any], desired: Obj) -> list[str]:
    """The immutable ``spec`` fields whose desired value differs from the existing object's
    (they are not sent: the API server would refuse the whole patch)."""
    spec, wanted = existing.get("spec") or {}, desired.get("spec") or {}
    return [
        f"spec.{key}"
        for key in IMMUTABLE.get(desired["kind"], ())
        if key in wanted and key != "clusterIP" and not _contains(spec.get(key), wanted[key])
    ]
