"""``magnetar consume TOPIC -s SUB``: print and acknowledge messages (like pulsar-client).

Output formats: text (pulsar-client's ``----- got message -----`` blocks), hex, json (one
object per line). Exits 0 after ``-n`` messages, 1 with ``error: ...`` when ``--timeout``
passes with fewer. Logic: :mod:`magnetar.tools.consume` and :mod:`magnetar.tools.messages`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from magnetar.cli.tool_session import (
    ServiceUrlOpt,
    TlsAllowInsecureOpt,
    TlsCertificateOpt,
    TlsHostnameOpt,
    TlsKeyOpt,
    TlsTrustCertsOpt,
    fail,
    run_tool,
    tls_options,
)
from magnetar.client.message import Message
from magnetar.tools.consume import ConsumeRequest, consume
from magnetar.tools.errors import ToolError
from magnetar.tools.messages import OUTPUT_FORMATS, OutputFormat, format_message
from magnetar.tools.session import DEFAULT_SERVICE_URL


def consume_command(
    topic: Annotated[str, typer.Argument(help="Topic (short names go to public/default).")],
    subscription: Annotated[
        str, typer.Option("-s", "--subscription-name", help="Subscription name.")
    ],
    subscription_type: Annotated[
        str,
        typer.Option("-t", "--subscription-type", help="exclusive, shared, failover, key_shared."),
    ] = "exclusive",
    num_messages: Annotated[
        int, typer.Option("-n", "--num-messages", help="Stop after this many (0 = forever).")
    ] = 1,
    position: Annotated[
        str, typer.Option("--position", help="Where a new subscription starts: earliest, latest.")
    ] = "latest",
    output: Annotated[str, typer.Option("-o", "--output", help="text, hex or json.")] = "text",
    base64: Annotated[
        bool, typer.Option("--base64", help="JSON output: always base64-encode the data.")
    ] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            help="Give up after this many seconds without a message (0 = wait forever);"
            " with -n 0 this ends the run normally.",
        ),
    ] = 0.0,
    service_url: ServiceUrlOpt = DEFAULT_SERVICE_URL,
    tls_trust_certs_file_path: TlsTrustCertsOpt = None,
    tls_certificate_file_path: TlsCertificateOpt = None,
    tls_key_file_path: TlsKeyOpt = None,
    tls_allow_insecure_connection: TlsAllowInsecureOpt = False,
    tls_hostname_verification: TlsHostnameOpt = True,
) -> None:
    """Receive messages, print each one, and acknowledge it."""
    fmt = output.lower()
    if fmt not in OUTPUT_FORMATS:
        raise fail(f"unknown --output {output!r}: use one of {', '.join(OUTPUT_FORMATS)}")
    chosen: OutputFormat = fmt
    try:
        request = ConsumeRequest(
            topic=topic,
            subscription=subscription,
            subscription_type=subscription_type,
            count=num_messages,
            position=position,
            timeout_s=timeout,
            service_url=service_url,
            tls=tls_options(
                tls_trust_certs_file_path,
                tls_certificate_file_path,
                tls_key_file_path,
                tls_allow_insecure_connection,
                tls_hostname_verification,
            ),
        )
    except ToolError as exc:
        raise fail(str(exc)) from exc

    def emit(message: Message) -> None:
        typer.echo(format_message(message, chosen, force_base64=base64))

    received = run_tool(lambda: consume(request, emit), service_url=service_url, topic=topic)
    typer.echo(f"{received} message{'' if received == 1 else 's'} consumed", err=True)
