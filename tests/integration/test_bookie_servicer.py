"""The gRPC servicer in-process on 127.0.0.1: pipelined add batches, reads, fencing, listing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from magnetar.bookie.bookie import Bookie
from magnetar.bookie.config import BookieConfig
from magnetar.bookie.servicer import BookieServicer, start_server
from magnetar.wire import bookie_pb2 as pb
from magnetar.wire import bookie_pb2_grpc as pb_grpc
from tests.kit.bookie import BookieClient, entry

MK = b"mk"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[BookieClient]:
    bookie = await Bookie.open(BookieConfig(data_dir=tmp_path))
    server, port = await start_server(BookieServicer(bookie, "bk-test"), "127.0.0.1:0")
    async with BookieClient(f"127.0.0.1:{port}") as c:
        yield c
    await server.stop(1)
    await bookie.close()


async def test_pipelined_batches_all_acknowledged(client: BookieClient) -> None:
    batches = [[entry(1, b * 50 + i, b"x" * 1024) for i in range(50)] for b in range(40)]
    results = await asyncio.wait_for(client.add_batches(batches, MK), 30)
    assert sorted(results) == list(range(40))
    for index, batch in results.items():
        assert [r.entry_id for r in batch] == [index * 50 + i for i in range(50)]
        assert {r.status for r in batch} == {pb.OK}
    got = await client.read_range(1, 0, 1999)
    assert [r.entry_id for r in got] == list(range(2000))


async def test_large_entries_fit(client: BookieClient) -> None:
    batch = [entry(2, i, bytes([i]) * 65536) for i in range(64)]  # a 4 MiB batch
    results = await client.add(batch, MK)
    assert {r.status for r in results} == {pb.OK}
    read = await client.read_entry(2, 63)
    assert read.entry.payload == bytes([63]) * 65536


async def test_statuses_on_the_wire(client: BookieClient) -> None:
    missing = await client.read_entry(3, 0)
    assert missing.status == pb.NO_SUCH_LEDGER
    assert (await client.add([entry(3, 0, b"a")], MK))[0].status == pb.OK
    assert (await client.add([entry(3, 1, b"b")], b"wrong"))[0].status == pb.UNAUTHORIZED
    assert (await client.read_entry(3, 5)).status == pb.NO_SUCH_ENTRY
    fence_read = await client.read_entry(3, -1, fence=True, master_key=MK)
    assert (fence_read.status, fence_read.entry_id) == (pb.OK, 0)
    assert (await client.add([entry(3, 1, b"b")], MK))[0].status == pb.FENCED
    empty = await client.read_range(3, 5, 9)
    assert [r.status for r in empty] == [pb.NO_SUCH_ENTRY]
    lac = await client.stub.ReadLastAddConfirmed(pb.ReadLacRequest(ledger_id=3), timeout=5)
    assert (lac.status, lac.last_entry_id) == (pb.OK, 0)
    listing = await client.list_ledgers()
    assert [(x.ledger_id, x.fenced, [(r.first, r.last) for r in x.ranges]) for x in listing] == [
        (3, True, [(0, 0)])
    ]
    deleted = await client.stub.DeleteLedger(pb.DeleteLedgerRequest(ledger_id=3), timeout=5)
    assert deleted.status == pb.OK
    assert (await client.read_entry(3, 0)).status == pb.NO_SUCH_LEDGER
    info = await client.info()
    assert (info.bookie_id, info.read_only, info.ledger_count) == ("bk-test", False, 0)


async def test_idle_add_stream_survives_frequent_client_keepalive_pings(tmp_path: Path) -> None:
    # The ledger client pings an idle channel (keep-alive); a server with gRPC's default
    # minimum ping interval (5 min) answers a few pings with GOAWAY "too_many_pings", which
    # kills the add stream and made a one-bookie standalone refuse every write.
    bookie = await Bookie.open(BookieConfig(data_dir=tmp_path))
    server, port = await start_server(BookieServicer(bookie, "bk-ping"), "127.0.0.1:0")
    channel = grpc.aio.insecure_channel(
        f"127.0.0.1:{port}",
        options=[
            ("grpc.keepalive_time_ms", 300),
            ("grpc.keepalive_timeout_ms", 2_000),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.max_pings_without_data", 0),
        ],
    )
    requests: asyncio.Queue[pb.AddRequest] = asyncio.Queue()

    async def stream() -> AsyncIterator[pb.AddRequest]:
        while True:
            yield await requests.get()

    def add(entry_id: int) -> pb.AddRequest:
        return pb.AddRequest(
            batch_id=entry_id,
            entries=[pb.AddEntry(entry=entry(9, entry_id, b"p"), master_key=MK)],
        )

    try:
        call = pb_grpc.BookieStub(channel).AddEntries(stream())
        responses = call.__aiter__()
        await requests.put(add(0))
        first = await asyncio.wait_for(responses.__anext__(), 10)
        assert [r.status for r in first.results] == [pb.OK]
        await asyncio.sleep(3.0)  # ~10 keep-alive pings on an idle stream
        await requests.put(add(1))
        second = await asyncio.wait_for(responses.__anext__(), 10)
        assert [r.status for r in second.results] == [pb.OK]
        call.cancel()
    finally:
        await channel.close()
        await server.stop(1)
        await bookie.close()


async def test_a_drain_answers_what_the_stream_holds_then_ends_it(tmp_path: Path) -> None:
    # A stopping bookie must not wait for its clients to end their add streams (they never
    # do), nor drop what it already journalled: each stream answers its submitted batches,
    # then ends with UNAVAILABLE; a new stream is refused.
    bookie = await Bookie.open(BookieConfig(data_dir=tmp_path))
    servicer = BookieServicer(bookie, "bk-drain")
    server, port = await start_server(servicer, "127.0.0.1:0")
    more = asyncio.Event()  # never set: the client keeps its stream open, as a broker does

    async def requests() -> AsyncIterator[pb.AddRequest]:
        for batch_id in range(5):
            yield pb.AddRequest(
                batch_id=batch_id,
                entries=[pb.AddEntry(entry=entry(9, batch_id, b"d" * 100), master_key=MK)],
            )
        await more.wait()

    async def nothing() -> AsyncIterator[pb.AddRequest]:
        await more.wait()  # (a client still writing to a refused stream sees INTERNAL instead)
        yield pb.AddRequest()

    answered: list[int] = []

    async def read_to_the_end(call: Any) -> None:
        while (response := await asyncio.wait_for(call.read(), 10)) is not grpc.aio.EOF:
            answered.append(response.batch_id)

    try:
        async with BookieClient(f"127.0.0.1:{port}") as client:
            call = client.stub.AddEntries(requests(), timeout=30)
            answered.append((await call.read()).batch_id)  # the stream is up and adding
            servicer.drain()
            with pytest.raises(grpc.aio.AioRpcError) as ended:  # not EOF: a status
                await read_to_the_end(call)
            assert ended.value.code() == grpc.StatusCode.UNAVAILABLE
            refused = client.stub.AddEntries(nothing(), timeout=30)
            with pytest.raises(grpc.aio.AioRpcError) as again:
                await asyncio.wait_for(refused.read(), 10)
            assert again.value.code() == grpc.StatusCode.UNAVAILABLE
            stored = await client.read_range(9, 0, 4)
        # Every batch it answered is stored (those it took but had not answered are too).
        assert set(answered) <= {r.entry_id for r in stored if r.status == pb.OK}
    finally:
        await server.stop(1)
        await bookie.close()
