"""``magnetar produce``: publish a few messages from arguments, a file or stdin.

:func:`collect_payloads` decides what to send (sans-I/O apart from reading the named file or
stdin, which the CLI does and passes in as bytes); :func:`produce` publishes them in order
through one producer, each ``repeat`` times, paced by ``rate`` when given, and returns the
message ids in send order. Sends are pipelined (futures awaited at the end, bounded by the
producer's pending queue), so a large file does not cost one round trip per line.

Concurrency: :func:`produce` runs on one event loop and owns its client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from magnetar.client import PartitionedProducer, Producer, TlsOptions
from magnetar.protocol.message_id import MessageId
from magnetar.tools.errors import BadInput
from magnetar.tools.messages import split_lines
from magnetar.tools.perf_config import COMPRESSIONS
from magnetar.tools.rate import Pacer
from magnetar.tools.session import DEFAULT_SERVICE_URL, open_client


@dataclass(frozen=True)
class ProduceRequest:
    """Everything one ``magnetar produce`` run needs."""

    topic: str
    payloads: Sequence[bytes]
    key: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    repeat: int = 1
    rate: float | None = None
    batching: bool = True
    compression: str = "none"
    service_url: str = DEFAULT_SERVICE_URL
    operation_timeout_s: float = 30.0
    tls: TlsOptions | None = None

    def __post_init__(self) -> None:
        if self.repeat < 1:
            raise BadInput(f"-n/--num-produce must be at least 1, got {self.repeat}")
        if self.rate is not None and self.rate <= 0:
            raise BadInput(f"--rate must be positive, got {self.rate:g}")
        if self.compression not in COMPRESSIONS:
            raise BadInput(
                f"unknown compression {self.compression!r}: use one of {', '.join(COMPRESSIONS)}"
            )


def collect_payloads(
    messages: Sequence[str], file_data: bytes | None, *, whole_file: bool
) -> list[bytes]:
    """The payloads: ``-m`` texts, else the file's (or stdin's) lines or whole content."""
    if messages and file_data is not None:
        raise BadInput("give messages with -m or a file/stdin, not both")
    if messages:
        return [m.encode("utf-8") for m in messages]
    if file_data is None:
        return []
    return [file_data] if whole_file else split_lines(file_data)


async def produce(request: ProduceRequest) -> list[MessageId]:
    """Publish every payload ``repeat`` times, in order; the ids in send order."""
    if not request.payloads:
        raise BadInput("nothing to produce: give -m TEXT, -f FILE, or lines on stdin")
    async with open_client(
        request.service_url,
        request.topic,
        operation_timeout_s=request.operation_timeout_s,
        tls=request.tls,
    ) as client:
        producer = await client.create_producer(
            request.topic,
            batching_enabled=request.batching,
            compression_type=request.compression,
        )
        futures = await _send_all(producer, request)
        results = await asyncio.gather(*futures, return_exceptions=True)
        await producer.close()
    ids: list[MessageId] = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        ids.append(result)
    return ids


async def _send_all(
    producer: Producer | PartitionedProducer, request: ProduceRequest
) -> list[asyncio.Future[MessageId]]:
    pacer = Pacer(request.rate)
    properties = dict(request.properties) or None
    futures: list[asyncio.Future[MessageId]] = []
    for payload in request.payloads:
        for _ in range(request.repeat):
            await pacer.wait()
            futures.append(
                await producer.send_async(payload, key=request.key, properties=properties)
            )
    return futures
