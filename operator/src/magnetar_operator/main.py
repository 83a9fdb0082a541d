"""``magnetar-operator``: run the kopf operator for PulsarCluster, Tenant, Namespace and Topic.

Builds the one :class:`~magnetar_operator.settings.OperatorSettings` (flags over
``MAGNETAR_OPERATOR_*`` environment variables), the Kubernetes client (in-cluster service
account, else the current kubeconfig context) and the handler registry, then runs kopf until
SIGTERM. Run one replica (the Helm chart does): kopf peering is off (``--standalone``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence

import kopf

from magnetar_operator.handlers import build_registry, configure
from magnetar_operator.kube import Kube, KubeError
from magnetar_operator.settings import OperatorSettings


async def run_operator(
    settings: OperatorSettings,
    kube: Kube,
    *,
    registry: kopf.OperatorRegistry | None = None,
    stop_flag: asyncio.Event | None = None,
    ready_flag: asyncio.Event | None = None,
    liveness: bool = True,
) -> None:
    """Run kopf in the current loop until ``stop_flag`` is set (or the task is cancelled)."""
    registry = registry or build_registry(settings)

    @kopf.on.startup(registry=registry)
    def startup(settings: kopf.OperatorSettings, **_: object) -> None:
        configure(settings, operator_settings)

    operator_settings = settings
    memo = kopf.Memo(kube=kube, settings=settings)
    await kopf.operator(
        registry=registry,
        memo=memo,
        standalone=True,
        clusterwide=settings.namespace is None,
        namespaces=[settings.namespace] if settings.namespace else (),
        liveness_endpoint=f"http://0.0.0.0:{settings.liveness_port}/healthz" if liveness else None,
        stop_flag=stop_flag,
        ready_flag=ready_flag,
    )


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``magnetar-operator`` (the Helm chart's arguments must parse)."""
    parser = argparse.ArgumentParser(
        prog="magnetar-operator",
        description="Run the Magnetar Kubernetes operator (PulsarCluster, Tenant, Namespace, "
        "Topic). Settings also come from MAGNETAR_OPERATOR_* environment variables.",
    )
    parser.add_argument("--namespace", help="Watch only this namespace (default: every one).")
    parser.add_argument("--liveness-port", type=int, help="Port of /healthz (default 8080).")
    parser.add_argument("--log-level", help="debug, info, warning, error (default info).")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    flags = {k: v for k, v in vars(args).items() if v is not None}
    settings = OperatorSettings(**flags)
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    try:
        kube = Kube.from_environment()
    except KubeError as exc:
        sys.exit(f"magnetar-operator: {exc}")
    try:
        asyncio.run(run_operator(settings, kube))
    finally:
        kube.close()
