"""An in-memory Kubernetes API for operator tests: kmock's emulator, taught our resources.

:func:`kube_api` starts kmock's :class:`~kmock.KubernetesEmulator` on a loopback port with
the discovery information of every kind the operator reads or writes (our four CRDs with
their status subresource, the core, apps, batch, policy and RBAC kinds, Secrets,
cert-manager's Certificate, the spark-operator's ScheduledSparkApplication), and writes a
kubeconfig pointing at it, so the operator logs in exactly as it would to a real cluster
(``KUBECONFIG``).

:class:`GenerationalEmulator` adds what the real API server does and kmock leaves out:
``metadata.generation`` starts at 1 and grows with every change of ``spec``, and a write to
the ``status`` subresource changes only ``status``. The operator relies on both (a stale
Deployment status is never taken for a finished roll).

:class:`KubeView` reads and writes objects for the test itself (the role of the workload
controllers: marking pods ready), through the same HTTP API.
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import json
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import kmock

GROUP = "pulsar.magnetar.dev"

RESOURCES: dict[str, tuple[str, bool, tuple[str, ...]]] = {
    # "group/version/plural": (kind, namespaced, subresources)
    f"{GROUP}/v1alpha1/pulsarclusters": ("PulsarCluster", True, ("status",)),
    f"{GROUP}/v1alpha1/tenants": ("Tenant", True, ("status",)),
    f"{GROUP}/v1alpha1/namespaces": ("Namespace", True, ("status",)),
    f"{GROUP}/v1alpha1/topics": ("Topic", True, ("status",)),
    "v1/configmaps": ("ConfigMap", True, ()),
    "v1/services": ("Service", True, ()),
    "v1/serviceaccounts": ("ServiceAccount", True, ()),
    "v1/persistentvolumeclaims": ("PersistentVolumeClaim", True, ()),
    "v1/pods": ("Pod", True, ()),
    "v1/secrets": ("Secret", True, ()),
    "v1/events": ("Event", True, ()),
    "v1/namespaces": ("Namespace", False, ()),
    "apps/v1/statefulsets": ("StatefulSet", True, ("status",)),
    "apps/v1/deployments": ("Deployment", True, ("status",)),
    "batch/v1/jobs": ("Job", True, ("status",)),
    "policy/v1/poddisruptionbudgets": ("PodDisruptionBudget", True, ("status",)),
    "rbac.authorization.k8s.io/v1/roles": ("Role", True, ()),
    "rbac.authorization.k8s.io/v1/rolebindings": ("RoleBinding", True, ()),
    "cert-manager.io/v1/certificates": ("Certificate", True, ("status",)),
    "sparkoperator.k8s.io/v1beta2/scheduledsparkapplications": (
        "ScheduledSparkApplication",
        True,
        ("status",),
    ),
}
VERBS = {"get", "list", "watch", "create", "update", "patch", "delete"}


class GenerationalEmulator(kmock.KubernetesEmulator):  # type: ignore[misc]
    """kmock's emulator with what the API server adds: ``uid``, ``creationTimestamp`` and
    ``generation`` on create, a name from ``generateName``, ``generation`` + 1 when a write
    changes ``spec``, a ``resourceVersion`` on every write, and a write to the ``status``
    subresource changing nothing but ``status``. The changes go into the
    request before kmock stores it, so watch events carry them too."""

    _version = 0

    async def _handle(self, request: Any) -> Any:
        data = request.data if isinstance(request.data, dict) else None
        if request.resource is not None and data is not None:
            meta = data.setdefault("metadata", {})
            self._version += 1
            if request.action == kmock.action.CREATE:
                if "name" not in meta and "generateName" in meta:
                    meta["name"] = f"{meta['generateName']}{uuid.uuid4().hex[:10]}"
                meta["resourceVersion"] = str(self._version)
                meta.setdefault("uid", str(uuid.uuid4()))
                meta.setdefault("generation", 1)
                meta.setdefault("creationTimestamp", _now())
            elif request.action == kmock.action.UPDATE and request.name is not None:
                key = (request.resource, request.namespace, request.name)
                stored = self.objects[key].raw if key in self.objects else None
                if getattr(request, "subresource", None) == "status":
                    for field in [k for k in data if k != "status"]:
                        del data[field]
                elif stored is not None and "spec" in data:
                    merged = _merge(copy.deepcopy(stored.get("spec")), data["spec"])
                    if merged != stored.get("spec"):
                        gen = int(stored.get("metadata", {}).get("generation") or 1)
                        data.setdefault("metadata", {})["generation"] = gen + 1
                data.setdefault("metadata", {})["resourceVersion"] = str(self._version)
        elif request.resource is not None and isinstance(request.data, list) and request.data:
            key = (request.resource, request.namespace, request.name)
            stored = self.objects[key].raw if key in self.objects else {}
            current = stored.get("metadata", {}).get("resourceVersion")
            for op in request.data:
                stale = op.get("op") == "test" and op.get("value") != current
                if stale and op.get("path") == "/metadata/resourceVersion":
                    # as the API server answers a patch made against an old version
                    raise kmock.KubernetesError(
                        status=422, reason="Invalid", message="the object has been modified"
                    )
            self._version += 1  # a JSON patch (kopf's finalizers): a new version too
            version = str(self._version)
            request.data.append(
                {"op": "add", "path": "/metadata/resourceVersion", "value": version}
            )
        return await super()._handle(request)


def _merge(base: Any, patch: Any) -> Any:
    """A JSON merge patch (RFC 7386) applied to ``base``."""
    if not isinstance(patch, dict):
        return patch
    result = dict(base) if isinstance(base, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


def _now() -> str:
    return datetime.datetime.now(tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_kubeconfig(path: Path, url: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "mock", "cluster": {"server": url}}],
        "users": [{"name": "mock", "user": {"token": "test"}}],
        "contexts": [{"name": "mock", "context": {"cluster": "mock", "user": "mock"}}],
        "current-context": "mock",
    }
    path.write_text(json.dumps(config))
    return path


@asynccontextmanager
async def kube_api(tmp_path: Path) -> AsyncIterator[tuple[Any, str, Path]]:
    """The emulator, its URL and a kubeconfig file for it."""
    async with GenerationalEmulator() as handler, kmock.Server(handler) as server:
        for key, (kind, namespaced, subresources) in RESOURCES.items():
            handler.resources[key] = kmock.ResourceInfo(
                kind=kind,
                namespaced=namespaced,
                singular=kind.lower(),
                verbs=VERBS,
                subresources=set(subresources),
            )
        url = str(server.url).rstrip("/")
        yield handler, url, write_kubeconfig(tmp_path / "kubeconfig", url)


def _path(api_version: str, plural: str, namespace: str, name: str | None = None) -> str:
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    path = f"{base}/namespaces/{namespace}/{plural}"
    return f"{path}/{name}" if name else path


class KubeView:
    """The test's own client of the emulator (what kubectl and the controllers would do)."""

    def __init__(self, url: str, namespace: str) -> None:
        self.url = url
        self.namespace = namespace
        self._session = aiohttp.ClientSession(base_url=url)

    async def close(self) -> None:
        await self._session.close()

    async def get(self, api_version: str, plural: str, name: str) -> dict[str, Any] | None:
        async with self._session.get(_path(api_version, plural, self.namespace, name)) as r:
            if r.status == 404:
                return None
            r.raise_for_status()
            found: dict[str, Any] = await r.json()
            return found

    async def list(self, api_version: str, plural: str) -> list[dict[str, Any]]:
        async with self._session.get(_path(api_version, plural, self.namespace)) as r:
            r.raise_for_status()
            return list((await r.json()).get("items", []))

    async def create(self, api_version: str, plural: str, obj: dict[str, Any]) -> None:
        obj.setdefault("metadata", {})["namespace"] = self.namespace
        async with self._session.post(_path(api_version, plural, self.namespace), json=obj) as r:
            r.raise_for_status()

    async def patch(
        self,
        api_version: str,
        plural: str,
        name: str,
        body: dict[str, Any],
        *,
        status: bool = False,
    ) -> None:
        path = _path(api_version, plural, self.namespace, name) + ("/status" if status else "")
        headers = {"Content-Type": "application/merge-patch+json"}
        async with self._session.patch(path, data=json.dumps(body), headers=headers) as r:
            r.raise_for_status()

    async def delete(self, api_version: str, plural: str, name: str) -> None:
        async with self._session.delete(_path(api_version, plural, self.namespace, name)) as r:
            r.raise_for_status()

    async def wait_for(
        self,
        what: str,
        probe: Callable[[], Any],
        *,
        deadline_s: float = 30.0,
        interval: float = 0.1,
    ) -> Any:
        """Poll the async ``probe`` until it returns something truthy; fail naming ``what``."""
        last: Any = None
        try:
            async with asyncio.timeout(deadline_s):
                while True:
                    last = await probe()
                    if last:
                        return last
                    await asyncio.sleep(interval)
        except TimeoutError:
            raise AssertionError(
                f"timed out after {deadline_s}s waiting for {what}; last: {last!r:.2000}"
            ) from None
