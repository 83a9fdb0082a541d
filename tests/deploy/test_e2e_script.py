"""e2e/run.py without a cluster: --help, the order of a dry run, and its pure helpers."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.kit.kube import E2E_SCRIPT as SCRIPT
from tests.kit.kube import load_e2e_script


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60
    )


def test_help_describes_the_run() -> None:
    result = _run("--help")
    assert result.returncode == 0, result.stderr
    for words in ("kind cluster", "--dry-run", "pulsar-client", "3 -> 4 -> 3", "--keep"):
        assert words in result.stdout


def test_an_image_without_a_tag_is_a_usage_error() -> None:
    result = _run("--image", "magnetar", "--dry-run")
    assert result.returncode == 2
    assert "--image 'magnetar' needs a tag" in result.stderr


def test_dry_run_prints_every_step_in_order_and_runs_nothing() -> None:
    result = _run("--dry-run", "--cluster", "t1", "--image", "reg/magnetar:t")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    expected = [
        "kind create cluster --name t1",
        "docker build -t reg/magnetar:t",
        "kind load docker-image reg/magnetar:t --name t1",
        "helm install magnetar charts/magnetar",
        "waiting for pulsarclusters.pulsar.magnetar.dev/demo Ready",
        "waiting for tenants.pulsar.magnetar.dev/acme Ready",
        "waiting for namespaces.pulsar.magnetar.dev/acme-orders Ready",
        "waiting for topics.pulsar.magnetar.dev/acme-orders-incoming Ready",
        "pulsar-client: produce 10 and consume 10 on persistent://acme/orders/incoming",
        '"replicas": 4',
        '"replicas": 3',
        '"image": "reg/magnetar:t-roll"',
        "pulsar-client: produce 10 and consume 10",
        "delete topics.pulsar.magnetar.dev acme-orders-incoming",
        "kind delete cluster --name t1",
    ]
    position = 0
    for line in expected:  # each after the one before
        found = out.find(line, position)
        assert found >= 0, f"{line!r} missing after position {position} in:\n{out}"
        position = found + len(line)
    assert out.rstrip().endswith("dry run: nothing was run")


def test_ready_pending_needs_the_current_generation_and_ready_true() -> None:
    e2e = load_e2e_script()
    ready = {"type": "Ready", "status": "True", "reason": "Running"}
    current = {"metadata": {"generation": 3}, "status": {"observedGeneration": 3}}
    assert (
        e2e.ready_pending({**current, "status": {"observedGeneration": 3, "conditions": [ready]}})
        is None
    )
    stale = {
        "metadata": {"generation": 4},
        "status": {"observedGeneration": 3, "conditions": [ready]},
    }
    assert "observedGeneration 3 (generation 4)" in e2e.ready_pending(stale)
    waiting = {"type": "Ready", "status": "False", "reason": "BookiesNotReady", "message": "2/3"}
    pending = e2e.ready_pending(
        {**current, "status": {"observedGeneration": 3, "conditions": [waiting]}}
    )
    assert pending == "Ready=False (BookiesNotReady: 2/3)"
    assert "no Ready condition yet" in e2e.ready_pending(current)


@pytest.mark.parametrize(
    ("url", "service"),
    [
        ("pulsar://demo-proxy.pulsar.svc:6650", "demo-proxy"),
        ("http://demo-broker.pulsar.svc.cluster.local:8080/", "demo-broker"),
        ("", "fallback"),
    ],
)
def test_service_from_url(url: str, service: str) -> None:
    assert load_e2e_script().service_from_url(url, "fallback") == service


def test_topic_name_from_the_example_topic() -> None:
    e2e = load_e2e_script()
    topic = e2e.load_example("Topic")
    assert e2e.topic_name(topic) == "persistent://acme/orders/incoming"
    topic["spec"]["persistent"] = False
    assert e2e.topic_name(topic).startswith("non-persistent://")
