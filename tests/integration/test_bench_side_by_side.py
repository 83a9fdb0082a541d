"""The side-by-side benchmark's pieces work (tests/bench/side_by_side.py): the Pulsar sink that
measures the generator's ceiling answers the official client, the RESP codec parses what Redis
sends, and the Redis Streams generator drives a real redis-server (skipped without one: CI does
not install Redis; ``make bench-setup`` does). No speed is asserted."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from tests.bench import redis_streams, side_by_side
from tests.bench.broker_official_client import Target, run_scenario
from tests.bench.load_window import CTX, run_window
from tests.bench.pulsar_sink import SinkProcess
from tests.bench.redis_streams import RespError, RespReader, command
from tests.kit.process import running
from tests.kit.redis_server import RedisServer, redis_binary

needs_redis = pytest.mark.skipif(
    redis_binary() is None, reason="redis-server is not installed (make bench-setup)"
)


@pytest.fixture(scope="module")
def sink(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SinkProcess]:
    with running(SinkProcess(data_dir=tmp_path_factory.mktemp("sink") / "sink")) as process:
        yield process


def test_sink_acknowledges_official_sends(sink: SinkProcess) -> None:
    client = pulsar.Client(sink.service_url, operation_timeout_seconds=10)
    try:
        single = client.create_producer("persistent://public/default/sink-single")
        first, second = single.send(b"one"), single.send(b"two")
        assert (first.ledger_id(), first.entry_id()) == (1, 1)
        assert (second.ledger_id(), second.entry_id()) == (1, 2)
        batched = client.create_producer(
            "persistent://public/default/sink-batched",
            batching_enabled=True,
            batching_max_publish_delay_ms=5,
        )
        receipts: list[pulsar.Result] = []
        for i in range(20):
            batched.send_async(b"%d" % i, lambda res, _mid: receipts.append(res))
        batched.flush()
        assert receipts == [pulsar.Result.Ok] * 20
        single.close()
        batched.close()
    finally:
        client.close()


def test_generator_runs_against_the_sink(sink: SinkProcess) -> None:
    """A whole (short) benchmark run of the Pulsar generator against the sink: what the
    side-by-side benchmark does for the generator's ceiling."""
    args = argparse.Namespace(seconds=1.0, warmup=0.3, size=256, producers=1, pending=100,
                              consumer=False, client="official")  # fmt: skip
    assert sink.process is not None
    target = Target(sink.service_url, "", (sink.process.pid,))
    result = run_scenario(target, "batched-1", args, 2000.0, 0.0)
    assert result.published > 0
    assert result.errors == 0
    assert result.p99_ms > 0


@pytest.mark.parametrize("cut", [1, 3, 7, 12, 20, 33])
def test_resp_reader_across_reads(cut: int) -> None:
    wire = (
        b"$15\r\n1700000000000-0\r\n-ERR no such key\r\n:42\r\n+OK\r\n$-1\r\n"
        b"*1\r\n*2\r\n$1\r\nk\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nd\r\n$2\r\n\r\n\r\n"
    )
    reader = RespReader()
    replies = []
    for at in range(0, len(wire), cut):
        reader.feed(wire[at : at + cut])
        replies += reader.replies()
    assert replies[0] == b"1700000000000-0"
    assert isinstance(replies[1], RespError)
    assert "no such key" in str(replies[1])
    assert replies[2:5] == [42, b"OK", None]
    assert replies[5] == [[b"k", [[b"1-0", [b"d", b"\r\n"]]]]]
    assert command(b"XLEN", b"k") == b"*2\r\n$4\r\nXLEN\r\n$1\r\nk\r\n"


@pytest.fixture(scope="module")
def durable_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(data_dir=tmp_path_factory.mktemp("redis") / "redis")
    with running(server) as process:
        yield process


@needs_redis
def test_private_redis_is_durable_before_it_answers(durable_redis: RedisServer) -> None:
    call = redis_streams.Call(durable_redis.port)
    try:
        assert call(b"CONFIG", b"GET", b"appendfsync") == [b"appendfsync", b"always"]
        assert call(b"CONFIG", b"GET", b"appendonly") == [b"appendonly", b"yes"]
        assert call(b"CONFIG", b"GET", b"bind")[1] == b"127.0.0.1"
    finally:
        call.close()


@needs_redis
def test_redis_generator_publishes_and_consumes(durable_redis: RedisServer) -> None:
    """The paced scenario's Redis half, short: producers' XADDs acknowledged and in the stream,
    the consumer's XREAD BLOCK receives them with their stamped send times."""
    spec = {"port": durable_redis.port, "key": "paced", "size": 128, "pending": 50,
            "batched": False, "rate": 300.0, "stamp": True}  # fmt: skip
    measured, _, _ = run_window(
        lambda *child: CTX.Process(target=redis_streams.producer_main, args=(spec, *child)),
        lambda *child: CTX.Process(target=redis_streams.consumer_main, args=(spec, *child)),
        producers=2,
        warmup=0.3,
        seconds=0.6,
        probe=lambda: None,
    )
    assert measured.errors == 0
    assert 0 < measured.consumed <= measured.published + 50
    assert measured.e2e_latencies
    assert measured.latencies
    call = redis_streams.Call(durable_redis.port)
    try:
        # Everything acknowledged is in the stream (warm-up and drain add to it).
        assert call(b"XLEN", b"paced") >= measured.published
    finally:
        call.close()


@needs_redis
def test_redis_batched_run_in_memory(tmp_path: Path) -> None:
    """side_by_side's own run: a fresh private server, pipelined XADDs, a Result."""
    args = argparse.Namespace(seconds=0.6, warmup=0.3, producers=1, pending=200, rate=0.0,
                              redis_benchmark=False)  # fmt: skip
    scenario = side_by_side.Scenario("batched", batched=True, size=128, paced=False)
    result, bench = side_by_side.run_redis(scenario, args, tmp_path, durable=False)
    assert bench == 0.0
    assert result.errors == 0
    assert result.published > 0
    assert list(tmp_path.iterdir()) == []  # the server's directory and log are removed
