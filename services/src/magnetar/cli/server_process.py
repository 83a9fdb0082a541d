"""How ``magnetar bookie|broker|standalone`` turn their flags into settings and run.

One rule for all three: a flag that was given overrides the ``MAGNETAR_*`` environment, which
overrides the defaults (flags left at None are not passed to the settings class, so
pydantic-settings fills them from the environment). A setting that is missing or invalid
(no metadata URL, say) ends the process with one line per problem naming the setting, and
exit code :data:`EXIT_BAD_SETTINGS`, not a traceback. Logging is configured from the resulting
settings, then the server runs on a fresh event loop until it returns its exit code. A metadata
store that cannot be reached (at start: the store is opened first, and an unreachable etcd fails
within a few seconds) ends the process with one line naming the URL and what to do, and exit
code :data:`EXIT_METADATA_UNAVAILABLE`, not a traceback; a TLS file that does not load
(:class:`~magnetar.tls.TlsConfigError`) ends it with one line naming the file and
:data:`EXIT_BAD_SETTINGS`. The broker
and the standalone both serve :func:`admin_app` on their web port, with ``/metrics`` from the
process's one :class:`~magnetar.telemetry.metrics.Metrics`, which their commands build.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Protocol, TypeVar

import typer

if TYPE_CHECKING:
    from pydantic import BaseModel

    from magnetar.broker.service import BrokerService
    from magnetar.telemetry.metrics import Metrics


class LogSettings(Protocol):
    @property
    def log_level(self) -> str: ...

    @property
    def log_json(self) -> bool: ...


S = TypeVar("S", bound=LogSettings)

EXIT_METADATA_UNAVAILABLE = 1
EXIT_BAD_SETTINGS = 2


# A broker's named listeners (--advertised-listeners on `magnetar broker` and `standalone`).
AdvertisedListenersOpt = Annotated[
    str | None,
    typer.Option(
        help="Named listeners, e.g. 'internal:pulsar://10.0.0.5:6650,"
        "external:pulsar://lb.example:6650' (clients pick one by listener name)."
    ),
]

# The cluster this broker (or standalone) belongs to: registered under this name at first
# start, named by other clusters' replication policies (--cluster-name).
ClusterNameOpt = Annotated[
    str | None,
    typer.Option(
        help="This cluster's name (default 'standalone'): registered on first start, the name "
        "geo-replication policies use."
    ),
]


# TLS (magnetar broker, standalone, proxy): the ports and files of Pulsar's broker.conf names;
# the other TLS settings (refresh interval, protocols, ciphers, insecure) by environment only.
TlsPortOpt = Annotated[int | None, typer.Option(help="Binary protocol TLS port (6651).")]
WebTlsPortOpt = Annotated[int | None, typer.Option(help="Admin REST HTTPS port (8443).")]
TlsCertOpt = Annotated[
    str | None, typer.Option(help="PEM certificate (chain) the TLS ports serve.")
]
TlsKeyOpt = Annotated[str | None, typer.Option(help="PEM private key of that certificate.")]
TlsTrustOpt = Annotated[
    str | None, typer.Option(help="PEM CA certificates that client certificates must chain to.")
]
TlsRequireClientCertOpt = Annotated[
    bool | None,
    typer.Option(
        "--tls-require-trusted-client-cert-on-connect/--no-tls-require-trusted-client-cert-on-connect",
        help="Refuse TLS clients without a certificate the trust file vouches for.",
    ),
]


def tls_flags(
    port: int | None,
    web_port: int | None,
    cert: str | None,
    key: str | None,
    trust: str | None,
    require_client_cert: bool | None,
) -> dict[str, Any]:
    """The settings the TLS options give (None: not given, the environment decides)."""
    return {
        "broker_service_port_tls": port,
        "web_service_port_tls": web_port,
        "tls_certificate_file_path": cert,
        "tls_key_file_path": key,
        "tls_trust_certs_file_path": trust,
        "tls_require_trusted_client_cert_on_connect": require_client_cert,
    }


def run_server(
    settings_class: Callable[..., S],
    flags: dict[str, Any],
    serve: Callable[[S], Coroutine[Any, Any, int]],
) -> NoReturn:
    """Build the settings from the given ``flags``, configure logging, run ``serve``, exit."""
    from pydantic import ValidationError

    from magnetar.cli.event_loop import loop_factory
    from magnetar.metadata.errors import StoreUnavailable
    from magnetar.telemetry import configure_logging, get_logger
    from magnetar.tls import TlsConfigError

    try:
        settings = settings_class(**{k: v for k, v in flags.items() if v is not None})
    except ValidationError as exc:
        for error in exc.errors():
            name = ".".join(str(part) for part in error["loc"]) or "settings"
            typer.echo(f"magnetar: {name}: {error['msg']}", err=True)
        typer.echo(
            "magnetar: give it as a flag (see --help) or a MAGNETAR_* environment variable",
            err=True,
        )
        raise typer.Exit(EXIT_BAD_SETTINGS) from None
    configure_logging(settings.log_level, json=settings.log_json)
    # Brokers and standalones choose their event loop (``event_loop``); other roles run asyncio's.
    loop_name = getattr(settings, "event_loop", "asyncio")
    loop = loop_factory(loop_name)
    get_logger(__name__).info("event_loop_chosen", event_loop=loop_name)
    try:
        with asyncio.Runner(loop_factory=loop) as runner:
            code = runner.run(serve(settings))
    except StoreUnavailable as exc:
        get_logger(__name__).error("metadata_store_unavailable", error=str(exc))
        typer.echo(f"magnetar: {exc}", err=True)
        raise typer.Exit(EXIT_METADATA_UNAVAILABLE) from None
    except TlsConfigError as exc:
        get_logger(__name__).error("tls_settings_invalid", error=str(exc))
        typer.echo(f"magnetar: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_SETTINGS) from None
    exit_after_shutdown(code)


def exit_after_shutdown(code: int) -> NoReturn:
    """End the process once ``serve`` has returned: its ordered shutdown closed every store,
    journal and connection, and the runner has joined the executor's threads. The exit
    handlers run (logging's flush among them) and the standard streams are flushed, then the
    process ends without the interpreter's finalization, which only frees memory and modules:
    0.1 s on a quiet machine, up to a second when the cores are busy, on every stop of every
    pod (docs/benchmarks.md, "Issue 17: a stop under load")."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def admin_app(
    metrics: Metrics, settings: BaseModel | None = None
) -> Callable[[BrokerService], Any]:
    """An app factory: the admin REST app over ``service.admin`` (mypy checks TopicAdmin is a
    TopicService), serving ``metrics`` on ``/metrics`` with the broker's topic metrics and the
    event loop's lag (:mod:`magnetar.telemetry.loop_lag`) added, and the process's ``settings``
    as its runtime configuration (secrets redacted). Call it on the broker's loop.

    Imported late: FastAPI loads only in the processes that serve the admin API.
    """

    def build(service: BrokerService) -> Any:
        from magnetar.admin.app import create_app
        from magnetar.admin.broker_config import runtime_values
        from magnetar.autorecovery import BookieAdmin
        from magnetar.broker.broker_directory import BrokerDirectory
        from magnetar.broker.security import observe_authentication
        from magnetar.broker.topic_metrics import observe_topics
        from magnetar.telemetry.loop_lag import LoopLagProbe
        from magnetar.telemetry.metric_names import EVENT_LOOP_LAG

        observe_topics(metrics, service, service.config.cluster_name)
        observe_authentication(metrics, service.security, service.config.cluster_name)
        LoopLagProbe(metrics.histogram(EVENT_LOOP_LAG)).start()  # ends with the loop
        return create_app(
            service.admin,
            metrics,
            BrokerDirectory.of(service),
            BookieAdmin(service.store),
            security=service.security,
            runtime_config=None if settings is None else runtime_values(settings),
        )

    return build
