"""Run the real operator (kopf, our handlers) in the test's loop against the kmock API.

:func:`running_operator` starts :func:`magnetar_operator.main.run_operator` with short retry
and resync intervals in a thread and event loop of its own (kopf stops at once there; in the
test's loop it would wait 5 s for the fixture's teardown task) and stops it through kopf's stop
flag. :class:`FakeBookieAdmin`
serves the bookie admin REST contract on loopback (the real one lives with autorecovery in
another branch): bookie list, under-replicated count, decommission requests and their state,
each settable by the test. :func:`resource` and :func:`wait_ready` write the custom
resources and wait on their ``Ready`` condition.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kopf
import pytest
from aiohttp import web

from magnetar_operator.handlers import register_common
from magnetar_operator.handlers.cluster import register as register_clusters
from magnetar_operator.handlers.resources import register as register_resources
from magnetar_operator.handlers.resync import register as register_resync
from magnetar_operator.kube import Kube
from magnetar_operator.main import run_operator
from magnetar_operator.settings import OperatorSettings
from tests.kit.kube_mock import KubeView, kube_api

API = "pulsar.magnetar.dev/v1alpha1"
PC = (API, "pulsarclusters")
TENANTS = (API, "tenants")
NAMESPACES = (API, "namespaces")
TOPICS = (API, "topics")


def resource(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name}, "spec": spec}


async def ready(view: KubeView, kind: tuple[str, str], name: str) -> dict[str, Any] | None:
    """The object's ``Ready`` condition, or None (no object, or no such condition yet)."""
    obj = await view.get(*kind, name)
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == "Ready":
            return dict(cond)
    return None


async def wait_ready(view: KubeView, kind: tuple[str, str], name: str, reason: str = "") -> Any:
    """Wait for Ready=True, or with ``reason`` for Ready=False with that reason; the condition."""

    async def probe() -> dict[str, Any] | None:
        cond = await ready(view, kind, name)
        ok = cond is not None and cond["status"] == ("False" if reason else "True")
        return cond if ok and (not reason or cond["reason"] == reason) else None  # type: ignore[index]

    return await view.wait_for(f"{name} Ready {reason or 'True'}", probe)


@dataclass
class FakeBookieAdmin:
    """The bookie admin REST contract with state the test sets."""

    under_replicated: int = 0
    decommissions: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/admin/v2/bookies/all", self._all)
        app.router.add_get("/admin/v2/bookies/underreplicated", self._under)
        app.router.add_post("/admin/v2/bookies/{bookie}/decommission", self._decommission)
        app.router.add_get("/admin/v2/bookies/{bookie}/decommission", self._state)
        return app

    async def _all(self, request: web.Request) -> web.Response:
        return web.json_response({"bookies": []})

    async def _under(self, request: web.Request) -> web.Response:
        return web.json_response({"count": self.under_replicated, "ledgers": []})

    async def _decommission(self, request: web.Request) -> web.Response:
        bookie = request.match_info["bookie"]
        self.requests.append(bookie)
        self.decommissions.setdefault(
            bookie,
            {"bookieId": bookie, "state": "InProgress", "ledgersRemaining": 7, "message": ""},
        )
        return web.Response(status=202)

    async def _state(self, request: web.Request) -> web.Response:
        bookie = request.match_info["bookie"]
        if bookie not in self.decommissions:
            return web.json_response({"reason": f"no decommission of {bookie}"}, status=404)
        return web.json_response(self.decommissions[bookie])


@contextlib.asynccontextmanager
async def fake_admin() -> AsyncIterator[tuple[FakeBookieAdmin, str]]:
    fake = FakeBookieAdmin()
    runner = web.AppRunner(fake.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield fake, f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def running_operator(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    clusters: bool = True,
    resources: bool = True,
    broker_admin_url: str | None = None,
    namespace: str,
) -> AsyncIterator[str]:
    """The kmock API with the operator running against it, watching ``namespace`` (kmock
    cannot list our ``namespaces`` resource across namespaces); yields the API URL.

    With the cluster handlers and no ``broker_admin_url``, a :class:`FakeBookieAdmin` answers
    the bookie admin calls, so the operator never looks up a cluster's Service name (tests
    reach loopback addresses only)."""
    if clusters and broker_admin_url is None:
        async with (
            fake_admin() as (_, admin_url),
            running_operator(
                tmp_path,
                monkeypatch,
                clusters=clusters,
                resources=resources,
                broker_admin_url=admin_url,
                namespace=namespace,
            ) as url,
        ):
            yield url
        return
    async with kube_api(tmp_path) as (_, url, kubeconfig):
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        settings = OperatorSettings(
            retry_delay_s=0.3,
            resync_interval_s=0.5,
            drift_interval_s=0.5,
            admin_timeout_s=5.0,
            broker_admin_url=broker_admin_url,
            namespace=namespace,
        )
        registry = kopf.OperatorRegistry()
        register_common(registry)
        if clusters:
            register_clusters(registry, settings)
        if resources:
            register_resources(registry, settings)
        plurals = (("pulsarclusters",) if clusters else ()) + (
            ("tenants", "namespaces", "topics") if resources else ()
        )
        register_resync(registry, settings, plurals)
        kube = Kube.from_environment()
        stop, ready, done = threading.Event(), threading.Event(), threading.Event()
        errors: list[BaseException] = []
        thread = threading.Thread(
            target=asyncio.run,
            args=(_operator_loop(settings, kube, registry, stop, ready, done, errors),),
            name="kopf-operator",
            daemon=True,
        )
        thread.start()
        try:
            await asyncio.to_thread(_wait_ready, ready, done, errors)
            yield url
        finally:
            stop.set()
            await asyncio.to_thread(thread.join, 30)
            kube.close()
        assert not thread.is_alive(), "the operator did not stop within 30 s of its stop flag"
        if errors:
            raise errors[0]


def _wait_ready(ready: threading.Event, done: threading.Event, errors: list[BaseException]) -> None:
    deadline = time.monotonic() + 30
    while not ready.wait(0.05):
        if done.is_set():
            raise AssertionError("the operator exited before it was ready") from (
                errors[0] if errors else None
            )
        assert time.monotonic() < deadline, "the operator was not ready within 30 s"


async def _operator_loop(
    settings: OperatorSettings,
    kube: Kube,
    registry: kopf.OperatorRegistry,
    stop: threading.Event,
    ready: threading.Event,
    done: threading.Event,
    errors: list[BaseException],
) -> None:
    """Run the operator in an event loop of its own (the thread's), until ``stop`` is set.

    kopf counts every task created in its loop after its start as its own and, on stopping,
    waits 5 s for those before cancelling them: in the test's loop that would include the
    fixture's teardown task, which waits on kopf in turn. In a loop of its own kopf stops at
    once."""
    stop_flag, ready_flag = asyncio.Event(), asyncio.Event()

    async def relay_stop() -> None:
        await asyncio.to_thread(stop.wait)
        stop_flag.set()

    async def relay_ready() -> None:
        await ready_flag.wait()
        ready.set()

    # Both relays exist before kopf starts, so kopf leaves them alone.
    relays = [asyncio.create_task(relay_stop()), asyncio.create_task(relay_ready())]
    try:
        await run_operator(
            settings,
            kube,
            registry=registry,
            stop_flag=stop_flag,
            ready_flag=ready_flag,
            liveness=False,
        )
    except BaseException as exc:  # handed to the test's thread, which raises it
        errors.append(exc)
    finally:
        stop.set()  # ends relay_stop's wait if kopf exited on its own
        for relay in relays:
            relay.cancel()
        await asyncio.gather(*relays, return_exceptions=True)
        done.set()
