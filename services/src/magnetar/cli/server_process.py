"""How ``magnetar bookie|broker|standalone`` turn their flags into settings and run.

One rule for all three: a flag that was given overrides the ``MAGNETAR_*`` environment, which
overrides the defaults (flags left at None are not passed to the settings class, so
pydantic-settings fills them from the environment). A setting that is missing or invalid
(no metadata URL, say) ends the process with one line per problem naming the setting, and
exit code :data:`EXIT_BAD_SETTINGS`, not a traceback. Logging is configured from the resulting
settings, then the server runs on a fresh event loop until it returns its exit code. A metadata
store that cannot be reached (at start: the store is opened first, and an unreachable etcd fails
within a few seconds) ends the process with one line naming the URL and what to do, and exit
code :data:`EXIT_METADATA_UNAVAILABLE`, not a traceback. The broker
and the standalone both serve :func:`admin_app` on their web port, with ``/metrics`` from the
process's one :class:`~magnetar.telemetry.metrics.Metrics`, which their commands build.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Protocol, TypeVar

import typer

if TYPE_CHECKING:
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


def run_server(
    settings_class: Callable[..., S],
    flags: dict[str, Any],
    serve: Callable[[S], Coroutine[Any, Any, int]],
) -> NoReturn:
    """Build the settings from the given ``flags``, configure logging, run ``serve``, exit."""
    from pydantic import ValidationError

    from magnetar.metadata.errors import StoreUnavailable
    from magnetar.telemetry import configure_logging, get_logger

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
    try:
        code = asyncio.run(serve(settings))
    except StoreUnavailable as exc:
        get_logger(__name__).error("metadata_store_unavailable", error=str(exc))
        typer.echo(f"magnetar: {exc}", err=True)
        raise typer.Exit(EXIT_METADATA_UNAVAILABLE) from None
    raise typer.Exit(code)


def admin_app(metrics: Metrics) -> Callable[[BrokerService], Any]:
    """An app factory: the admin REST app over ``service.admin`` (mypy checks TopicAdmin is a
    TopicService), serving ``metrics`` on ``/metrics`` with the broker's topic metrics added.

    Imported late: FastAPI loads only in the processes that serve the admin API.
    """

    def build(service: BrokerService) -> Any:
        from magnetar.admin.app import create_app
        from magnetar.autorecovery import BookieAdmin
        from magnetar.broker.broker_directory import BrokerDirectory
        from magnetar.broker.topic_metrics import observe_topics

        observe_topics(metrics, service, service.config.cluster_name)
        return create_app(
            service.admin, metrics, BrokerDirectory.of(service), BookieAdmin(service.store)
        )

    return build
