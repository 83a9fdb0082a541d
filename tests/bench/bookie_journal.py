"""Micro-benchmark of the bookie add path: adds/s, MB/s and CPU per add, fdatasync on (not a test).

Run: ``.venv/bin/python -m tests.bench.bookie_journal [--seconds 3] [--inflight 256] [--handle]``

Default: for 1 KiB and 64 KiB entries it appends from many concurrent writers through the real
journal (group commit, one fdatasync per group) into the real ledger storage (entry logs and a
RocksDB index), in a temp dir, each case bounded in time, and prints adds/s, MB/s and the mean
group size.

``--handle``: the whole in-process add path as ``magnetar standalone`` runs it (a
``WriteHandle`` over a ``LocalBookieClient`` over a real ``Bookie``, memory metadata store), for
1 KiB and 128 KiB entries, keeping ``--inflight`` adds in flight with ``append_nowait`` (or
``append_callback`` with ``--callback``, or ``append_run`` in runs of N entries with
``--run N``). Prints adds/s and CPU microseconds per add of the
event-loop thread and of every other thread (journal, RocksDB); the loop figure is the one the
broker pays. ``--rate N``: that path at a steady N adds/s of 1 KiB (the broker's paced case
without its sockets): add -> confirmed p50/p99/p99.9, journal groups per second and their
fdatasync latency, CPU per add, and (where the journal records them) each group's stages at
p50/p99: ``queue`` (first unit's hand-off -> its group's write starts: the group wait, the
previous group, the GIL), the sync (``fdatasync``), ``apply`` (to ledger storage) and
``handback`` (the writer's post -> the loop's delivery). Compare runs alternately: the box is
shared.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from magnetar.bookie.bookie import Bookie
from magnetar.bookie.config import BookieConfig
from magnetar.bookie.journal import Journal, JournalConfig
from magnetar.bookie.journal_record import JournalRecord, RecordKind
from magnetar.bookie.ledger_storage import LedgerStorage
from magnetar.bookie.local import LocalBookie
from magnetar.bookie.registration import Registration
from magnetar.ids import BookieId
from magnetar.ledger.client import BookKeeper
from magnetar.ledger.config import LedgerClientConfig
from magnetar.ledger.write_handle import WriteHandle
from magnetar.metadata.factory import open_store
from tests.bench.report import header, percentile


class CountingStorage(LedgerStorage):
    groups = 0

    def apply(self, records: Sequence[JournalRecord], payload_crcs: Sequence[int] = ()) -> None:
        self.groups += 1
        super().apply(records)


async def run_case(directory: Path, size: int, seconds: float, inflight: int, sync: bool) -> str:
    storage = CountingStorage(directory / "ledgers")
    journal = await Journal.open(directory / "journal", storage, JournalConfig(sync=sync))
    payload = b"\xab" * size
    next_id = 0
    deadline = time.monotonic() + seconds

    async def writer() -> int:
        nonlocal next_id
        done = 0
        while time.monotonic() < deadline:
            entry_id = next_id
            next_id += 1
            await journal.append(
                JournalRecord(RecordKind.ADD, 1, entry_id, entry_id - 1, 0, b"mk", payload)
            )
            done += 1
        return done

    start = time.monotonic()
    counts = await asyncio.gather(*(writer() for _ in range(inflight)))
    elapsed = time.monotonic() - start
    await journal.close()
    storage.close()
    adds = sum(counts)
    return (
        f"entry={size // 1024:>3} KiB sync={sync!s:5} inflight={inflight:>4}: "
        f"{adds / elapsed:>10.0f} adds/s {adds * size / elapsed / 1e6:>8.1f} MB/s "
        f"mean group {adds / max(1, storage.groups):>6.1f} records"
    )


async def run_handle_case(
    directory: Path, size: int, seconds: float, inflight: int, callback: bool, run: int = 0
) -> str:
    async with _local_ledger(directory) as (_, handle):
        payload = os.urandom(size)
        finished = asyncio.Event()
        deadline = time.monotonic() + seconds
        counts = {"sent": 0, "done": 0, "owed": 0}
        payloads = [payload] * max(1, run)

        def send_run() -> None:
            taken = handle.append_run(payloads, on_range)
            assert taken, "no room: lower --inflight"
            counts["sent"] += taken
            counts["owed"] -= taken

        def on_range(_first: int, count: int, _error: BaseException | None) -> None:
            counts["done"] += count
            counts["owed"] += count
            if time.monotonic() < deadline:
                while counts["owed"] >= run:
                    send_run()
            elif counts["done"] == counts["sent"]:
                finished.set()

        def send() -> None:
            if run:
                counts["owed"] += run
                send_run()
                return
            counts["sent"] += 1
            if callback:
                assert handle.append_callback(payload, on_added)
            else:
                future = handle.append_nowait(payload)
                assert future is not None
                future.add_done_callback(on_added)

        def on_added(_: object) -> None:
            counts["done"] += 1
            if time.monotonic() < deadline:
                send()
            elif counts["done"] == counts["sent"]:
                finished.set()

        start, loop_cpu, cpu = time.monotonic(), time.thread_time(), time.process_time()
        for _ in range(inflight // run if run else inflight):
            send()
        await finished.wait()
        elapsed = time.monotonic() - start
        loop_cpu, cpu = time.thread_time() - loop_cpu, time.process_time() - cpu
    adds = counts["done"]
    mode = f"append_run({run})" if run else "append_callback" if callback else "append_nowait"
    return (
        f"handle entry={size // 1024:>3} KiB inflight={inflight:>4} "
        f"{mode}: {adds / elapsed:>9.0f} adds/s "
        f"loop {loop_cpu / adds * 1e6:6.2f} us/add, other threads "
        f"{(cpu - loop_cpu) / adds * 1e6:7.2f} us/add"
    )


async def run_paced_case(directory: Path, size: int, seconds: float, rate: float) -> str:
    """The in-process add path at a steady ``rate`` adds/s (``append_callback``, sends issued
    every half millisecond as they fall due): add -> confirmed latency percentiles, journal
    groups and fdatasync latency, CPU per add. Isolates the journal and its completion path
    from the broker's sockets and dispatch."""
    syncs: list[float] = []
    latencies: list[float] = []
    stages: dict[str, list[float]] = {"queue": [], "apply": [], "handback": []}
    async with _local_ledger(directory) as (bookie, handle):
        journal_stats = bookie.stats.journal
        journal_stats.sync_latency = _Samples(syncs)
        if hasattr(journal_stats, "queue_wait"):  # the per-stage recorders (issue 17, s10)
            journal_stats.queue_wait = _Samples(stages["queue"])
            journal_stats.apply_latency = _Samples(stages["apply"])
            journal_stats.handback_latency = _Samples(stages["handback"])
        payload = os.urandom(size)

        def on_added(sent_at: float, _: object) -> None:
            latencies.append(time.perf_counter() - sent_at)

        warmup_s = min(1.0, seconds / 4)
        start = time.perf_counter()
        sent = 0
        while (now := time.perf_counter()) - start < warmup_s:
            due = int((now - start) * rate)
            while sent < due:
                assert handle.append_callback(payload, functools.partial(on_added, now))
                sent += 1
            await asyncio.sleep(0.0005)
        latencies.clear()
        syncs.clear()
        for samples in stages.values():
            samples.clear()
        groups0 = bookie.stats.journal.syncs
        threads0 = thread_cpu_s()
        switches0 = writer_switches()
        measured0, loop_cpu, cpu = sent, time.thread_time(), time.process_time()
        begin = time.perf_counter()
        while (now := time.perf_counter()) - begin < seconds:
            due = int((now - start) * rate)
            while sent < due:
                assert handle.append_callback(payload, functools.partial(on_added, now))
                sent += 1
            await asyncio.sleep(0.0005)
        loop_cpu, cpu = time.thread_time() - loop_cpu, time.process_time() - cpu
        adds, groups = sent - measured0, bookie.stats.journal.syncs - groups0
        threads1 = thread_cpu_s()
        switches = writer_switches() - switches0
    per_thread: dict[str, float] = {}
    for key, used in threads1.items():
        name = key.split("#")[0]
        per_thread[name] = per_thread.get(name, 0.0) + used - threads0.get(key, 0.0)
    busiest = sorted(per_thread.items(), key=lambda item: -item[1])[:5]
    by_thread = ", ".join(f"{name} {used / adds * 1e6:.1f}" for name, used in busiest if used)
    lat = sorted(latencies)
    sync = sorted(syncs)
    staged = "".join(
        f"; {name} p50 {percentile(sorted(samples), 0.5) * 1e3:.2f} ms p99 "
        f"{percentile(sorted(samples), 0.99) * 1e3:.2f} ms"
        for name, samples in stages.items()
        if samples
    )
    return (
        f"paced entry={size // 1024} KiB rate={rate:.0f}/s: add->confirmed p50 "
        f"{percentile(lat, 0.5) * 1e3:.2f} ms p99 {percentile(lat, 0.99) * 1e3:.2f} ms p99.9 "
        f"{percentile(lat, 0.999) * 1e3:.2f} ms; {groups / seconds:.0f} groups/s "
        f"({adds / max(groups, 1):.1f} adds each), fdatasync p50 "
        f"{percentile(sync, 0.5) * 1e3:.2f} ms p99 {percentile(sync, 0.99) * 1e3:.2f} ms; "
        f"loop {loop_cpu / adds * 1e6:.1f} us/add, other threads "
        f"{(cpu - loop_cpu) / adds * 1e6:.1f} us/add ({by_thread}); journal writer "
        f"{switches / max(groups, 1):.1f} voluntary context switches a group{staged}"
    )


def writer_switches() -> int:
    """The journal writer thread's voluntary context switches so far (each a blocking call:
    a wait for a record, the group wait, a write or sync, a wait for the GIL). Linux only."""
    for thread in threading.enumerate():
        if thread.name == "journal-writer":
            try:
                with open(f"/proc/self/task/{thread.native_id}/status") as f:
                    for line in f:
                        if line.startswith("voluntary_ctxt_switches:"):
                            return int(line.split()[1])
            except OSError:
                return 0
    return 0


def thread_cpu_s() -> dict[str, float]:
    """CPU seconds (user + system) of each of this process's threads, keyed by a name: the
    Python thread's name where there is one, else the kernel's (RocksDB names its threads),
    then ``#`` and the thread id. Linux only (empty elsewhere)."""
    names = {thread.native_id: thread.name for thread in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK")
    found: dict[str, float] = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return found
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # the thread ended
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        name = names.get(int(tid), comm)
        found[f"{name}#{tid}"] = (int(fields[11]) + int(fields[12])) / tick
    return found


@contextlib.asynccontextmanager
async def _local_ledger(directory: Path) -> AsyncIterator[tuple[Bookie, WriteHandle]]:
    """A bookie in ``directory`` (journal fdatasync on), registered in an in-memory store, and
    a ledger (ensemble 1) written through the in-process path: the broker's own, less sockets."""
    journal = JournalConfig(sync=True, **JOURNAL_OPTIONS)  # type: ignore[arg-type]
    bookie = await Bookie.open(BookieConfig(data_dir=directory, journal=journal))
    store = await open_store(f"memory://{uuid.uuid4().hex}", session_timeout_s=5.0)
    bookie_id = BookieId("bench-local")
    registration = Registration(store, bookie_id, "127.0.0.1:9")  # never dialled
    registering = asyncio.create_task(registration.run())
    try:
        await registration.wait_registered()
        bk = await BookKeeper.start(
            store, LedgerClientConfig(), local_bookies={bookie_id: LocalBookie(bookie)}
        )
        handle = await bk.create_ledger(1, 1, 1)
        yield bookie, handle
        await handle.close()
        await bk.close()
    finally:
        registering.cancel()
        await asyncio.gather(registering, return_exceptions=True)
        await registration.unregister()
        await store.close()
        await bookie.close()


# Journal options of the in-process bookie (--no-dsync-writes, --prealloc-kbytes); filled in
# by main().
JOURNAL_OPTIONS: dict[str, object] = {}


class _Samples:
    """A journal sync-latency recorder that keeps every sample (the writer thread appends)."""

    def __init__(self, samples: list[float]) -> None:
        self._samples = samples

    def record(self, amount: float) -> None:
        self._samples.append(amount)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--inflight", type=int, default=256)
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: tmp)")
    parser.add_argument("--handle", action="store_true", help="whole in-process add path")
    parser.add_argument("--callback", action="store_true", help="--handle with append_callback")
    parser.add_argument(
        "--run", type=int, default=0, help="--handle with append_run, runs of this many entries"
    )
    parser.add_argument("--rate", type=float, default=0.0, help="paced adds/s (1 KiB, latency)")
    parser.add_argument(
        "--switch-interval-ms",
        type=float,
        default=0.0,
        help="sys.setswitchinterval for the run (default: Python's 5 ms)",
    )
    parser.add_argument(
        "--no-dsync-writes",
        action="store_true",
        help="--handle/--rate: journal write + fdatasync instead of O_DSYNC writes",
    )
    parser.add_argument(
        "--prealloc-kbytes",
        type=int,
        default=None,
        help="--handle/--rate: the journal's zero-fill ahead (0: append only; default: its own)",
    )
    args = parser.parse_args()
    if args.no_dsync_writes:
        JOURNAL_OPTIONS["dsync_writes"] = False
    if args.prealloc_kbytes is not None:
        JOURNAL_OPTIONS["prealloc_bytes"] = args.prealloc_kbytes * 1024
    if args.switch_interval_ms:
        sys.setswitchinterval(args.switch_interval_ms / 1000)
    print(header(vars(args)), flush=True)
    if args.rate:
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            print(await run_paced_case(Path(tmp), 1024, args.seconds, args.rate))
        return
    if args.handle:
        for size in (1024, 128 * 1024):
            with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
                print(
                    await run_handle_case(
                        Path(tmp), size, args.seconds, args.inflight, args.callback, args.run
                    )
                )
        return
    for size in (1024, 65536):
        for sync in (True, False):
            with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
                print(await run_case(Path(tmp), size, args.seconds, args.inflight, sync))


if __name__ == "__main__":
    asyncio.run(main())
