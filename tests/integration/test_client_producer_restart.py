"""Our producer across a broker crash: kill -9, restart on the same data dir, no acked send lost.

Messages acknowledged before the crash must survive it (the standalone syncs its journal), and
messages sent while the broker is down stay pending in the producer, which reconnects with
backoff and resends them in order once the broker is back. The official consumer then reads
everything from the start, in order, with no gap.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest

from magnetar.client.client import Client
from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess, topic_name


@pytest.fixture(scope="module")
def durable_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneProcess]:
    sa = StandaloneProcess(
        data_dir=tmp_path_factory.mktemp("sa-restart") / "data", journal_sync=True
    )
    with running(sa, clean_exit=False) as process:
        yield process


async def test_producer_survives_kill_and_restart(durable_standalone: StandaloneProcess) -> None:
    sa = durable_standalone
    topic = topic_name("cp-restart")
    async with Client(sa.service_url, operation_timeout_s=15) as ours:
        producer = await ours.create_producer(topic, batching_max_messages=20)
        before = [producer.send_nowait(b"before-%d" % i) for i in range(100)]
        await producer.flush()
        await asyncio.gather(*before)  # all acknowledged: they must survive the crash

        await asyncio.to_thread(sa.kill)
        during = [producer.send_nowait(b"during-%d" % i) for i in range(50)]
        await asyncio.sleep(0.3)  # the producer notices and starts its backoff loop
        assert not any(f.done() for f in during)
        await asyncio.to_thread(sa.start)
        async with asyncio.timeout(30):
            ids = await asyncio.gather(*during)
        after = await producer.send(b"after")
    assert ids == sorted(ids)
    assert after > ids[-1]

    def read_back() -> list[bytes]:
        client: Any = pulsar.Client(sa.service_url, operation_timeout_seconds=10)
        try:
            consumer = client.subscribe(
                topic, "check", initial_position=pulsar.InitialPosition.Earliest
            )
            return [consumer.receive(timeout_millis=5000).data() for _ in range(151)]
        finally:
            client.close()

    expected = [b"before-%d" % i for i in range(100)] + [b"during-%d" % i for i in range(50)]
    assert await asyncio.to_thread(read_back) == [*expected, b"after"]


def test_big_batched_entries_read_back_from_the_bookie_after_a_restart(
    durable_standalone: StandaloneProcess,
) -> None:
    """Batches of 16 KiB messages (entries of about 100 KiB): their digests are combined from
    the SENDs' checked checksums, and after a restart (an empty entry cache) every entry is
    read from the bookie, its digest checked, and every message comes back as it was sent."""
    sa = durable_standalone
    topic = topic_name("big-batches")
    payloads = [os.urandom(16 * 1024) for _ in range(120)]
    client: Any = pulsar.Client(sa.service_url, operation_timeout_seconds=15)
    try:
        producer = client.create_producer(
            topic, batching_enabled=True, batching_max_messages=8, batching_max_publish_delay_ms=50
        )
        for payload in payloads:
            producer.send_async(payload, None)
        producer.flush()
    finally:
        client.close()
    sa.stop()
    sa.start()
    client = pulsar.Client(sa.service_url, operation_timeout_seconds=15)
    try:
        consumer = client.subscribe(
            topic, "check", initial_position=pulsar.InitialPosition.Earliest
        )
        got = [consumer.receive(timeout_millis=10_000).data() for _ in payloads]
    finally:
        client.close()
    assert got == payloads
