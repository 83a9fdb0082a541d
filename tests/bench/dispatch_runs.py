"""Micro-benchmark: the consumer side of one subscription, in process (not a test).

Run: ``.venv/bin/python -m tests.bench.dispatch_runs [--entries 20000] [--bursts 1,10,100]
[--sub-type shared] [--rounds 3]``

Builds a real managed ledger over one in-process bookie (``tests.kit.stack``, journal sync
off: the adds are not what is measured) and a real :class:`PersistentSubscription` with one
consumer whose connection is a sink that counts the MESSAGE frames queued on it. For each burst
size it adds ``--entries`` 1 KiB entries (official-client-like metadata) ``burst`` at a time;
after each burst it gives the consumer ``burst`` permits (FLOW), waits until the dispatcher has
written the burst, and once ``--ack-ids`` entries are unacknowledged acknowledges them in one
ACK frame (individual acks, no ack sets), as the official client groups its acks. Only that
part is timed: the CPU time of the event loop's thread (``time.thread_time``) from the FLOW to
the end of the ACK, per entry, in microseconds (median of ``--rounds``); it includes the
asyncio steps (task wake-ups, the cursor's persistence) and, at small bursts, the time the
loop thread spends beside the bookie's threads still settling the burst's adds. A burst of 1
is what a paced publisher costs per message (one dispatch step per entry); 100 is a consumer
catching up (the read budget).

The figures are in docs/benchmarks.md ("Issue 17, session 10"). On a shared machine compare
A/B runs alternately; the thread CPU time is steadier than throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import struct
import tempfile
import time
from pathlib import Path

from magnetar.broker.consumer import Consumer
from magnetar.broker.subscription import PersistentSubscription
from magnetar.managed_ledger import ManagedLedgerConfig, ManagedLedgerFactory, Position
from magnetar.protocol.version import MAX_PROTOCOL_VERSION, PeerFeatures
from magnetar.telemetry import configure_logging
from magnetar.wire import pulsar_api_pb2 as pb
from tests.bench.report import header
from tests.kit.stack import storage_stack

_SUB_TYPES = {
    "exclusive": pb.CommandSubscribe.Exclusive,
    "failover": pb.CommandSubscribe.Failover,
    "shared": pb.CommandSubscribe.Shared,
    "key_shared": pb.CommandSubscribe.Key_Shared,
}


class SinkCnx:
    """A connection that counts the frames queued on it (a run's parts are head + entry)."""

    address = "127.0.0.1:0"
    connection_id = 1
    is_open = True
    caller = None

    def __init__(self) -> None:
        self.features = PeerFeatures(MAX_PROTOCOL_VERSION, "bench")
        self.frames = 0
        self.target = 0
        self.reached = asyncio.Event()

    def _count(self, frames: int) -> None:
        self.frames += frames
        if self.frames >= self.target:
            self.reached.set()

    def write_command(self, command: pb.BaseCommand) -> None:
        pass

    def write(self, frame: bytes) -> None:
        self._count(1)

    def write_parts(self, head: bytes, tail: bytes) -> None:
        self._count(1)

    def write_frames(self, parts: list[bytes]) -> None:
        self._count(len(parts) // 2)

    async def drain(self) -> None:
        pass

    def forget_producer(self, producer_id: int) -> None:
        pass

    def forget_consumer(self, consumer_id: int) -> None:
        pass


def stored_entry(sequence_id: int, payload: bytes) -> bytes:
    """An entry as an official client's SEND stores it (no checksum part)."""
    meta = pb.MessageMetadata(
        producer_name="standalone-0-1",
        sequence_id=sequence_id,
        publish_time=int(time.time() * 1000),
        uncompressed_size=len(payload),
    ).SerializeToString()
    return struct.pack(">I", len(meta)) + meta + payload


async def one_round(
    factory: ManagedLedgerFactory,
    entries: int,
    burst: int,
    ack_ids: int,
    sub_type: pb.CommandSubscribe.SubType.ValueType,
    n: int,
) -> tuple[float, float]:
    """Microseconds of loop-thread CPU per entry: (dispatch steps, acks)."""
    ml = await factory.open(
        f"bench-{burst}-{n}", ManagedLedgerConfig(ensemble_size=1, write_quorum=1, ack_quorum=1)
    )
    cursor = await ml.open_cursor("sub")
    sub = PersistentSubscription("persistent://bench/ns/t", "sub", ml, cursor, sub_type)
    # The bench runs the dispatch steps itself (no dispatcher task), so that only the step is
    # timed, not the task switches around it.
    sub._ensure_task = lambda: None  # type: ignore[method-assign]
    cnx = SinkCnx()
    consumer = Consumer(cnx, 1, "c", "sub", sub_type)
    sub.add_consumer(consumer)
    payload = bytes(1024)
    dispatch = ack = 0.0
    unacked: list[Position] = []
    try:
        for start in range(0, entries, burst):
            positions: list[Position] = list(
                await asyncio.gather(
                    *(ml.add_entry(stored_entry(start + i, payload)) for i in range(burst))
                )
            )
            target = cnx.frames + burst
            began = time.thread_time()
            sub.flow(consumer, burst)
            while cnx.frames < target:
                async with sub._lock:
                    await sub._dispatch_once()
            dispatched = time.thread_time()
            dispatch += dispatched - began
            unacked += positions
            if len(unacked) >= ack_ids or start + burst >= entries:
                await sub.acknowledge(
                    consumer, pb.CommandAck.Individual, [(p, None) for p in unacked]
                )
                unacked = []
                ack += time.thread_time() - dispatched
    finally:
        await sub.close()
        await ml.close()
    done = entries - entries % burst or entries
    return dispatch / done * 1e6, ack / done * 1e6


async def run(args: argparse.Namespace) -> None:
    sub_type = _SUB_TYPES[args.sub_type]
    with tempfile.TemporaryDirectory() as tmp:
        async with storage_stack(Path(tmp), bookies=1, transport="in-process") as stack:
            factory = ManagedLedgerFactory(stack.store, stack.bk)
            try:
                for burst in args.bursts:
                    got = [
                        await one_round(factory, args.entries, burst, args.ack_ids, sub_type, n)
                        for n in range(args.rounds)
                    ]
                    steps = statistics.median(d for d, _ in got)
                    acks = statistics.median(a for _, a in got)
                    runs = " ".join(f"{d:.1f}+{a:.1f}" for d, a in got)
                    print(
                        f"burst={burst:4d} {args.sub_type}: dispatch {steps:5.1f} + ack {acks:5.1f}"
                        f" us/entry loop-thread CPU (rounds {runs})",
                        flush=True,
                    )
            finally:
                await factory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--entries", type=int, default=20_000, help="entries per round")
    parser.add_argument(
        "--bursts",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[1, 10, 100],
        help="entries added, flowed and acked at a time (comma-separated)",
    )
    parser.add_argument(
        "--ack-ids",
        type=int,
        default=100,
        help="ids per ACK frame (the official client groups its acks; at least one a burst)",
    )
    parser.add_argument("--sub-type", choices=sorted(_SUB_TYPES), default="shared")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per burst; the median")
    args = parser.parse_args()
    configure_logging("error")
    print(header(vars(args)), flush=True)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
