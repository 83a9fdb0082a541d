"""What ``magnetar produce``, ``consume`` and ``perf`` share on the command line.

:func:`fail` is the one way a ``magnetar`` tool or admin command prints ``error: ...`` on stderr
and exits 1. :func:`reported_errors` turns a ``MagnetarError`` into such a line (worded by
:func:`magnetar.tools.errors.explain`) and Ctrl-C into exit code 130; :func:`run_tool` runs a
tool coroutine in ``asyncio.run`` with quiet client logs inside it, and ``perf
--use-official-client`` wraps its threaded run in it. Wiring only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from magnetar.errors import MagnetarError
from magnetar.telemetry import configure_logging
from magnetar.tools.errors import explain

if TYPE_CHECKING:
    from magnetar.client.settings import TlsOptions

T = TypeVar("T")

ServiceUrlOpt = Annotated[
    str,
    typer.Option(
        "--service-url",
        envvar="MAGNETAR_SERVICE_URL",
        help="The broker's binary protocol URL.",
    ),
]


# TLS of the client tools (produce, consume, perf, admin), named after the server settings.
TlsTrustCertsOpt = Annotated[
    str | None,
    typer.Option(
        "--tls-trust-certs-file-path",
        envvar="MAGNETAR_TLS_TRUST_CERTS_FILE_PATH",
        help="PEM CA certificates that the server's certificate must chain to.",
    ),
]
TlsCertificateOpt = Annotated[
    str | None,
    typer.Option(
        "--tls-certificate-file-path",
        envvar="MAGNETAR_TLS_CERTIFICATE_FILE_PATH",
        help="The client's PEM certificate (mutual TLS).",
    ),
]
TlsKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--tls-key-file-path",
        envvar="MAGNETAR_TLS_KEY_FILE_PATH",
        help="The PEM key of the client's certificate.",
    ),
]
TlsAllowInsecureOpt = Annotated[
    bool,
    typer.Option(
        "--tls-allow-insecure-connection",
        help="Accept a server certificate that is not trusted (testing only).",
    ),
]
TlsHostnameOpt = Annotated[
    bool,
    typer.Option(
        "--tls-hostname-verification/--no-tls-hostname-verification",
        help="Check that the server's certificate names the host dialled.",
    ),
]


def tls_options(
    trust: str | None,
    cert: str | None,
    key: str | None,
    allow_insecure: bool,
    hostname_verification: bool,
) -> TlsOptions | None:
    """The client's TLS options from the flags; None when none was given (defaults apply)."""
    from magnetar.client.settings import TlsOptions

    if (cert is None) != (key is None):
        raise fail("--tls-certificate-file-path and --tls-key-file-path go together")
    if trust is None and cert is None and not allow_insecure and hostname_verification:
        return None
    return TlsOptions(
        trust_certs_file=trust,
        cert_file=cert,
        key_file=key,
        allow_insecure_connection=allow_insecure,
        validate_hostname=hostname_verification,
    )


def fail(message: str) -> typer.Exit:
    """Print ``error: message`` on stderr; the caller raises the returned exit-1."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(1)


@contextmanager
def reported_errors(*, service_url: str, topic: str | None) -> Iterator[None]:
    """A MagnetarError inside becomes ``error: ...`` and exit 1; Ctrl-C exits 130."""
    try:
        yield
    except MagnetarError as exc:
        raise fail(explain(exc, service_url=service_url, topic=topic)) from exc
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def run_tool(
    main: Callable[[], Coroutine[Any, Any, T]], *, service_url: str, topic: str | None
) -> T:
    """``asyncio.run(main())`` inside :func:`reported_errors`."""
    configure_logging("error")
    with reported_errors(service_url=service_url, topic=topic):
        return asyncio.run(main())
