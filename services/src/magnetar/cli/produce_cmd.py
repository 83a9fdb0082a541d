"""``magnetar produce TOPIC``: publish messages from -m, a file or stdin (like pulsar-client).

Prints ``N messages produced`` (each message id too with ``-v``); failures print one
``error: ...`` line on stderr and exit 1. Logic: :mod:`magnetar.tools.produce`.
"""

from __future__ import annotations

import sys
from pathlib import Path
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
from magnetar.tools.errors import ToolError
from magnetar.tools.messages import format_message_id, parse_properties
from magnetar.tools.produce import ProduceRequest, collect_payloads, produce
from magnetar.tools.session import DEFAULT_SERVICE_URL


def produce_command(
    topic: Annotated[str, typer.Argument(help="Topic (short names go to public/default).")],
    message: Annotated[
        list[str] | None,
        typer.Option("-m", "--messages", help="A message to send (repeatable)."),
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option("-f", "--file", help="Send this file's lines (or all of it: --whole-file)."),
    ] = None,
    whole_file: Annotated[
        bool, typer.Option("--whole-file", help="Send the file or stdin as one message.")
    ] = False,
    key: Annotated[str | None, typer.Option("-k", "--key", help="Message key.")] = None,
    prop: Annotated[
        list[str] | None,
        typer.Option("-p", "--property", help="A property key=value (repeatable)."),
    ] = None,
    num_produce: Annotated[
        int, typer.Option("-n", "--num-produce", help="Send each message this many times.")
    ] = 1,
    rate: Annotated[
        float | None, typer.Option("-r", "--rate", help="Messages per second (default: no limit).")
    ] = None,
    batching: Annotated[
        bool, typer.Option("--batching/--no-batching", help="Batch messages.")
    ] = True,
    compression: Annotated[
        str, typer.Option("-c", "--compression", help="none, lz4, zlib, zstd or snappy.")
    ] = "none",
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Print each message id.")
    ] = False,
    service_url: ServiceUrlOpt = DEFAULT_SERVICE_URL,
    tls_trust_certs_file_path: TlsTrustCertsOpt = None,
    tls_certificate_file_path: TlsCertificateOpt = None,
    tls_key_file_path: TlsKeyOpt = None,
    tls_allow_insecure_connection: TlsAllowInsecureOpt = False,
    tls_hostname_verification: TlsHostnameOpt = True,
) -> None:
    """Publish messages given with -m, read from a file, or one per line on stdin."""
    try:
        data: bytes | None = None
        if not message:
            data = file.read_bytes() if file is not None else sys.stdin.buffer.read()
        elif file is not None:
            raise ToolError("give messages with -m or a file (-f), not both")
        request = ProduceRequest(
            topic=topic,
            payloads=collect_payloads(message or [], data, whole_file=whole_file),
            key=key,
            properties=parse_properties(prop or []),
            repeat=num_produce,
            rate=rate,
            batching=batching,
            compression=compression.lower(),
            service_url=service_url,
            tls=tls_options(
                tls_trust_certs_file_path,
                tls_certificate_file_path,
                tls_key_file_path,
                tls_allow_insecure_connection,
                tls_hostname_verification,
            ),
        )
    except OSError as exc:
        raise fail(f"cannot read {file}: {exc.strerror or exc}") from exc
    except ToolError as exc:
        raise fail(str(exc)) from exc
    ids = run_tool(lambda: produce(request), service_url=service_url, topic=topic)
    if verbose:
        for message_id in ids:
            typer.echo(format_message_id(message_id))
    typer.echo(f"{len(ids)} message{'' if len(ids) == 1 else 's'} produced")
