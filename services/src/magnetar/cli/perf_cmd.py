"""``magnetar perf produce|consume|e2e TOPIC``: load a broker and measure rate and latency.

A progress line per second goes to stderr; the final summary to stdout (text, or one JSON
object with ``--json``). ``--use-official-client`` runs the same load with ``pulsar-client``
for comparison. Logic: :mod:`magnetar.tools.perf` and :mod:`magnetar.tools.perf_official`.
"""

from __future__ import annotations

from collections.abc import Callable
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
    reported_errors,
    run_tool,
    tls_options,
)
from magnetar.client.admin_models import DEFAULT_WEB_SERVICE_URL
from magnetar.tools.errors import ToolError
from magnetar.tools.perf_config import Mode, PerfConfig, PerfResult
from magnetar.tools.session import DEFAULT_SERVICE_URL

perf = typer.Typer(
    help="Load a topic and measure throughput and latency (like pulsar-perf).",
    no_args_is_help=True,
)

Topic = Annotated[str, typer.Argument(help="Topic (with --topics N: its prefix, suffix -i).")]
Rate = Annotated[
    float | None, typer.Option("-r", "--rate", help="Messages per second (default: max rate).")
]
Count = Annotated[
    int, typer.Option("-n", "--num-messages", help="Stop after this many (0 = no limit).")
]
Time = Annotated[float, typer.Option("--time", help="Stop after this many seconds (0 = no limit).")]
Size = Annotated[int, typer.Option("-s", "--size", help="Message size in bytes.")]
Producers = Annotated[int, typer.Option("--producers", help="Producers per topic.")]
Consumers = Annotated[int, typer.Option("--consumers", help="Consumers per topic.")]
Topics = Annotated[int, typer.Option("--topics", help="Number of topics (names TOPIC-i).")]
Partitions = Annotated[
    int, typer.Option("--partitions", help="Create each topic with N partitions (admin API).")
]
Batching = Annotated[bool, typer.Option("--batching/--no-batching", help="Batch messages.")]
BatchMax = Annotated[int, typer.Option("--batch-max-messages", help="Messages per batch.")]
BatchDelay = Annotated[int, typer.Option("--batch-delay-ms", help="Max wait to fill a batch.")]
Compression = Annotated[
    str, typer.Option("-c", "--compression", help="none, lz4, zlib, zstd or snappy.")
]
MaxPending = Annotated[int, typer.Option("--max-pending", help="Messages in flight per producer.")]
Subscription = Annotated[str, typer.Option("--subscription", help="Subscription name.")]
SubType = Annotated[
    str | None,
    typer.Option(
        "-t",
        "--subscription-type",
        help="exclusive, shared, failover, key_shared"
        " (default: exclusive; shared with --consumers > 1).",
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")]
Official = Annotated[
    bool,
    typer.Option("--use-official-client", help="Use the official pulsar-client for comparison."),
]
AdminUrl = Annotated[
    str,
    typer.Option("--admin-url", envvar="MAGNETAR_ADMIN_URL", help="Admin REST URL (--partitions)."),
]


def _progress(line: str) -> None:
    typer.echo(line, err=True)


def _run(config: PerfConfig, json_output: bool, official: bool) -> None:
    result: PerfResult
    if official:
        from magnetar.tools.perf_official import run_official

        if config.partitions:
            from magnetar.tools.perf import create_partitioned_topics

            run_tool(
                lambda: create_partitioned_topics(config),
                service_url=config.service_url,
                topic=config.topic,
            )
        with reported_errors(service_url=config.service_url, topic=config.topic):
            result = run_official(config, _progress)
    else:
        from magnetar.tools.perf import run_perf

        result = run_tool(
            lambda: run_perf(config, _progress), service_url=config.service_url, topic=config.topic
        )
    typer.echo(result.to_json() if json_output else result.summary_text())


def _command(mode: Mode) -> Callable[..., None]:
    def command(
        topic: Topic,
        rate: Rate = None,
        num_messages: Count = 0,
        time_s: Time = 0.0,
        size: Size = 1024,
        producers: Producers = 1,
        consumers: Consumers = 1,
        topics: Topics = 1,
        partitions: Partitions = 0,
        batching: Batching = True,
        batch_max_messages: BatchMax = 1000,
        batch_delay_ms: BatchDelay = 10,
        compression: Compression = "none",
        max_pending: MaxPending = 1000,
        subscription: Subscription = "perf-sub",
        subscription_type: SubType = None,
        json_output: Json = False,
        use_official_client: Official = False,
        service_url: ServiceUrlOpt = DEFAULT_SERVICE_URL,
        admin_url: AdminUrl = DEFAULT_WEB_SERVICE_URL,
        tls_trust_certs_file_path: TlsTrustCertsOpt = None,
        tls_certificate_file_path: TlsCertificateOpt = None,
        tls_key_file_path: TlsKeyOpt = None,
        tls_allow_insecure_connection: TlsAllowInsecureOpt = False,
        tls_hostname_verification: TlsHostnameOpt = True,
    ) -> None:
        try:
            config = PerfConfig(
                mode=mode,
                topic=topic,
                rate=rate,
                count=num_messages,
                time_s=time_s,
                size=size,
                producers=producers,
                consumers=consumers,
                topics=topics,
                partitions=partitions,
                batching=batching,
                batch_max_messages=batch_max_messages,
                batch_delay_ms=batch_delay_ms,
                compression=compression.lower(),
                max_pending=max_pending,
                subscription=subscription,
                subscription_type=subscription_type.lower() if subscription_type else None,
                service_url=service_url,
                admin_url=admin_url,
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
        _run(config, json_output, use_official_client)

    return command


perf.command("produce", help="Publish at --rate (or max rate); latency = send to broker receipt.")(
    _command("produce")
)
perf.command("consume", help="Receive and acknowledge; latency = publish (stamp) to receive.")(
    _command("consume")
)
perf.command("e2e", help="Produce and consume together; latency = send stamp to receive.")(
    _command("e2e")
)

__all__ = ["perf"]
