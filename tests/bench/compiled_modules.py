"""Micro-benchmark: the mypyc-compiled modules against their own sources (not a test).

Run: ``.venv/bin/python -m tests.bench.compiled_modules [--rounds 3] [-n 20000]``

setup.py compiles the modules that pyproject.toml lists (``[tool.magnetar.mypyc]``); this
script measures what that buys on the broker's per-message work in those modules: decoding a
1 KiB SEND frame, the hand-encoded SEND_RECEIPT and MESSAGE frames, an entry's metadata peek, a
pending ack added and acknowledged, acks filling a range set with gaps, a journal record framed
alone and in a group of 16 (per record), a group of 50 adds' entry-log records and index rows
(per record), a ledger add tracked to its confirmation and an add's
outcome reported. Each round runs two worker processes in turn, one that imports the compiled
extensions (as the broker does) and one that imports the ``.py`` sources beside them (a finder
placed first on ``sys.meta_path``), so no rebuild is needed; each worker times every case by
CPU time (``time.process_time``, the best of 5 passes of ``-n`` operations). Prints, per case,
the median over the rounds of CPU microseconds per operation for both and their ratio, and the
sum: the saving per message on these paths (the broker's whole cost per message is in
docs/benchmarks.md).

Needs a compiled build (``make setup``); with ``MAGNETAR_PURE_PYTHON=1`` both sides are the
sources. Figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import collections
import importlib.abc
import importlib.machinery
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from tests.bench.report import header
from tests.kit.compiled import compiled_modules, listed_sources, module_name


class SourceFinder(importlib.abc.MetaPathFinder):
    """Finds the listed modules' ``.py`` files, ahead of their extension modules."""

    def __init__(self, names: set[str]) -> None:
        self._names = names

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self._names:
            return None
        for entry in path or sys.path:
            source = Path(entry) / f"{fullname.rpartition('.')[2]}.py"
            if source.exists():
                return importlib.util.spec_from_file_location(fullname, source)
        return None


def cases(n: int) -> dict[str, Callable[[], object]]:
    """The operations, each over ``n`` messages (imported here: after the finder is placed)."""
    from magnetar.bookie.index_rows import index_adds
    from magnetar.bookie.journal_record import JournalRecord, RecordKind, frame_records
    from magnetar.bookie.log_records import frame_adds
    from magnetar.broker.dispatch.pending_acks import PendingAcks
    from magnetar.broker.entry import entry_info
    from magnetar.broker.sends import mark_stored, pop_stored, run_columns, sends_of
    from magnetar.ids import BookieId
    from magnetar.ledger.bookie_client import AddRequest
    from magnetar.ledger.pending_adds import AddTracker
    from magnetar.managed_ledger.add_queue import (
        AddOp,
        AddQueue,
        crcs_of,
        datas_of,
        infos_of,
        report_run,
    )
    from magnetar.managed_ledger.position import Position, position
    from magnetar.managed_ledger.range_set import RangeSet
    from magnetar.protocol import client_commands, hand_encoded
    from magnetar.protocol.frame import FrameDecoder, encode_payload_command, parse_frame_body
    from magnetar.protocol.hand_decoded import SendFrame
    from magnetar.wire import pulsar_api_pb2 as pb

    metadata = pb.MessageMetadata(producer_name="p-0", sequence_id=1, publish_time=1_700_000_000)
    send = encode_payload_command(client_commands.send(1, 5), metadata, b"x" * 1024)
    section = parse_frame_body(send[4:]).payload
    assert section is not None
    stored = section.stored
    bookie = BookieId("127.0.0.1:3181")

    def decode() -> None:
        decoder = FrameDecoder()
        chunk = send * 100
        for _ in range(n // 100):
            decoder.feed(chunk)
            for _frame in decoder.frames():
                pass

    def receipts() -> None:
        for i in range(n):
            hand_encoded.send_receipt_frame(1, i, 12345, i)

    def messages() -> None:
        for i in range(n):
            hand_encoded.message_frame(1, 12345, i, -1, stored)

    def entry_infos() -> None:
        for _ in range(n):
            entry_info(stored)

    def pending_acks() -> None:
        acks = PendingAcks()
        for i in range(n):
            acks.add((1, 1), position(7, i))
        for i in range(n):
            acks.ack_individual(position(7, i))

    def range_set() -> None:
        ranges = RangeSet()
        for i in [*range(0, n, 2), *range(1, n, 2)]:
            ranges.add(position(7, i))

    def journal_records() -> None:
        parts: list[bytes] = []
        for i in range(n):
            JournalRecord(RecordKind.ADD, 7, i, i - 1, 99, b"", stored).frame_into(parts)

    def journal_group() -> None:
        records = [JournalRecord(RecordKind.ADD, 7, i, i - 1, 99, b"", stored) for i in range(16)]
        for _ in range(n // 16):
            frame_records(records)

    group = [JournalRecord(RecordKind.ADD, 7, i, i - 1, 99, b"k", stored) for i in range(50)]

    def entry_log_group() -> None:
        for _ in range(n // 50):
            frame_adds(group)

    def index_group() -> None:
        rows: list[tuple[bytes, bytes]] = []

        def put(key: bytes, value: bytes) -> None:
            rows.append((key, value))

        for _ in range(n // 50):
            index_adds(group, put, 3, 0)
            rows.clear()

    def add_tracker() -> None:
        tracker = AddTracker((bookie,), 1, 1)
        for _ in range(n):  # runs of one: the per-entry worst case
            run = tracker.new_run([stored], len(stored))
            run.requests = [AddRequest(7, run.first, -1, stored, 0, b"")]
            for target, adds in tracker.sends(run, run.first):
                tracker.on_acks(run, target, adds[-1].entry_id)

    def add_ops() -> None:
        def heard(_position: Position | None, _error: BaseException | None) -> None:
            pass

        for i in range(n):
            AddOp(stored, callback=heard).resolve(position(7, i), None)

    def add_runs() -> None:
        """A run of 200 adds as the managed ledger's dispatch walks it: queued, taken from the
        head, handed over, popped, confirmed and reported in one stretch."""

        def told(_index: int, _positions: list[Position] | None, _error: object) -> None:
            pass

        datas = [stored] * 200
        positions = [position(7, i) for i in range(200)]
        adds = AddQueue(1 << 30)
        for _ in range(n // 200):
            adds.extend_run(datas, told, None, None)
            run = adds.head_run(1 << 20, 1 << 40)
            crcs_of(run)
            datas_of(run)
            adds.pop_run(len(run))
            datas_of(run)
            infos_of(run)
            report_run(run, positions)

    def send_runs() -> None:
        """A run of 200 SENDs as a producer walks it: Sends built from the scanned frames,
        its columns handed over, marked durable and popped from the head of the queue."""
        frames = [SendFrame(1, i, None, 1, None, stored, (1, b"", 0), -1) for i in range(200)]
        positions = [position(7, i) for i in range(200)]
        for _ in range(n // 200):
            sends = sends_of(frames)
            run_columns(sends)
            mark_stored(sends, 0, positions)
            pop_stored(collections.deque(sends))

    return {
        "decode a 1 KiB SEND frame": decode,
        "SEND_RECEIPT frame": receipts,
        "MESSAGE frame": messages,
        "entry_info (metadata peek)": entry_infos,
        "pending ack: add, then ack": pending_acks,
        "range set add (with gaps)": range_set,
        "journal record frame_into": journal_records,
        "journal frame_records, 16 a group": journal_group,
        "entry-log frame_adds, 50 a group": entry_log_group,
        "index rows index_adds, 50 a group": index_group,
        "ledger add: track to confirm": add_tracker,
        "add queue: resolve by callback": add_ops,
        "add queue: a run of 200, dispatched": add_runs,
        "SENDs: a run of 200, answered": send_runs,
    }


def worker(pure: bool, n: int) -> None:
    names = {module_name(source) for source in listed_sources()}
    if pure:
        sys.meta_path.insert(0, SourceFinder(names))
    timings: dict[str, float] = {}
    for name, run in cases(n).items():
        best = float("inf")
        for _ in range(5):
            start = time.process_time()
            run()
            best = min(best, time.process_time() - start)
        timings[name] = best / n * 1e6
    compiled = sorted(m for m in names if (sys.modules[m].__file__ or "").endswith(".so"))
    print(json.dumps({"timings": timings, "compiled": compiled}))


def run_worker(pure: bool, n: int) -> dict[str, object]:
    mode = "--pure-worker" if pure else "--compiled-worker"
    command = [sys.executable, "-m", "tests.bench.compiled_modules", mode, "-n", str(n)]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    result: dict[str, object] = json.loads(out.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="worker pairs, alternated")
    parser.add_argument("-n", type=int, default=20_000, help="operations per timed pass")
    parser.add_argument("--pure-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--compiled-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pure_worker or args.compiled_worker:
        worker(args.pure_worker, args.n)
        return
    state = compiled_modules()
    print(header({"rounds": args.rounds, "n": args.n, "compiled": len(state.compiled)}))
    if not state.compiled:
        print("no compiled module in this install (run `make setup`): both sides are sources")
    pure: dict[str, list[float]] = {}
    compiled: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for side, into in ((True, pure), (False, compiled)):
            timings = run_worker(side, args.n)["timings"]
            assert isinstance(timings, dict)
            for name, value in timings.items():
                into.setdefault(name, []).append(value)
    print(f"{'case':34} {'source us':>10} {'compiled us':>12} {'ratio':>6}")
    total_pure = total_compiled = 0.0
    for name in pure:
        a, b = statistics.median(pure[name]), statistics.median(compiled[name])
        total_pure, total_compiled = total_pure + a, total_compiled + b
        print(f"{name:34} {a:10.3f} {b:12.3f} {a / b:5.2f}x")
    ratio = total_pure / total_compiled
    print(f"{'sum':34} {total_pure:10.3f} {total_compiled:12.3f} {ratio:5.2f}x")
    print(f"saved per message on these paths: {total_pure - total_compiled:.2f} us")


if __name__ == "__main__":
    main()
