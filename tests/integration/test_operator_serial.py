"""Two passes over one object never interleave: the change handler's and the resync's.

Each pass reads the children, plans and writes. A pass that read before another one wrote
would write back what it planned from the old world: a bookie roll stepped its partition
back from 2 to 3 that way (the flaky roll test of session 16). The operator's real passes
(:func:`sync_cluster`, :func:`sync_resource`) run here against the kmock API, through a
:class:`Kube` that notes which pass made each call and yields between calls, so two
unserialized passes would interleave on every run.
"""

from __future__ import annotations

import asyncio
import contextvars
from pathlib import Path
from typing import Any

import pytest

from magnetar_operator.handlers.cluster import sync_cluster
from magnetar_operator.handlers.resources import sync_resource
from magnetar_operator.handlers.serial import passes_under_way
from magnetar_operator.kube import Kube
from magnetar_operator.settings import OperatorSettings
from tests.integration.operator_kit import fake_admin
from tests.kit.kube_mock import KubeView, kube_api

NS = "pulsar"
API = "pulsar.magnetar.dev/v1alpha1"

_pass: contextvars.ContextVar[str] = contextvars.ContextVar("pass", default="")


class NotingKube(Kube):
    """The operator's client; each call noted with the pass that made it."""

    calls: list[str]

    async def _call(self, method: str, path: str, body: object = None, *args: Any) -> Any:
        self.calls.append(_pass.get())
        await asyncio.sleep(0.005)  # let the other pass run, if it may
        return await super()._call(method, path, body, *args)


def cluster(name: str) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "PulsarCluster",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"bookies": {"replicas": 3}, "brokers": {"replicas": 2}},
    }


async def created(view: KubeView, plural: str, obj: dict[str, Any]) -> dict[str, Any]:
    await view.create(API, plural, obj)
    found = await view.get(API, plural, obj["metadata"]["name"])
    assert found is not None
    return dict(found)


async def run_as(name: str, work: Any) -> Any:
    _pass.set(name)
    return await work


def runs_of(calls: list[str]) -> list[str]:
    """The passes in the order their calls came, each run of calls once: ["a", "b"] when
    one pass ran after the other, more when they interleaved."""
    runs: list[str] = []
    for who in calls:
        if not runs or runs[-1] != who:
            runs.append(who)
    return runs


@pytest.fixture
async def kube(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    async with kube_api(tmp_path) as (_, url, kubeconfig):
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        client = NotingKube.from_environment()
        assert isinstance(client, NotingKube)
        client.calls = []
        view = KubeView(url, NS)
        try:
            yield client, view
        finally:
            await view.close()
            client.close()


async def test_two_passes_over_a_cluster_run_one_after_the_other(kube: Any) -> None:
    client, view = kube
    body = await created(view, "pulsarclusters", cluster("demo"))
    async with fake_admin() as (_, admin_url):
        settings = OperatorSettings(broker_admin_url=admin_url, namespace=NS)
        outcomes = await asyncio.gather(
            run_as("handler", sync_cluster(client, settings, body, changed=True)),
            run_as("resync", sync_cluster(client, settings, body)),
        )
    assert all(o.plan is not None for o in outcomes)  # both passes planned
    assert sorted(runs_of(client.calls)) == ["handler", "resync"], runs_of(client.calls)
    assert passes_under_way() == 0  # the lock of a finished pass is dropped


async def test_passes_over_two_clusters_are_not_held_up_by_each_other(kube: Any) -> None:
    client, view = kube
    bodies = [await created(view, "pulsarclusters", cluster(name)) for name in ("one", "two")]
    async with fake_admin() as (_, admin_url):
        settings = OperatorSettings(broker_admin_url=admin_url, namespace=NS)
        await asyncio.gather(
            run_as("one", sync_cluster(client, settings, bodies[0])),
            run_as("two", sync_cluster(client, settings, bodies[1])),
        )
    assert len(runs_of(client.calls)) > 2  # they ran at once


async def test_two_passes_over_a_topic_run_one_after_the_other(kube: Any) -> None:
    client, view = kube
    topic = {
        "apiVersion": API,
        "kind": "Topic",
        "metadata": {"name": "orders", "namespace": NS},
        "spec": {"clusterRef": "missing", "tenant": "acme", "namespace": "shop"},
    }
    body = await created(view, "topics", topic)
    settings = OperatorSettings(namespace=NS)
    results = await asyncio.gather(
        run_as("handler", sync_resource(client, settings, "topics", body, drift=False)),
        run_as("resync", sync_resource(client, settings, "topics", body, drift=True)),
    )
    assert [r.reason for r in results] == ["ClusterNotFound", "ClusterNotFound"]
    assert sorted(runs_of(client.calls)) == ["handler", "resync"], runs_of(client.calls)
