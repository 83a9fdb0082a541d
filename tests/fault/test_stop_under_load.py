"""Fault tests: ``magnetar standalone`` stopped cleanly (SIGTERM) while producers run flat out,
restarted on the same dirs, with its journal and its ledger storage in dirs of their own; and
one bookie of a loaded cluster stopped the same way while the broker goes on writing.

Workload: two official-client producers on one topic, one batching and one not
(:class:`tests.fault.workload.Publisher`, seeded; seed printed, ``MAGNETAR_FAULT_SEED``
repeats a run), still sending when the SIGTERM comes and through the restart (the client
resends what was pending). Fault: SIGTERM under that load; the stop must exit 0, and its time
is printed (not asserted: the machine is shared). Checker (:mod:`tests.fault.checker`): every
message acknowledged before the stop, during it or after the restart is stored, first
occurrences in send order (the stop answers the sends it stored, but only within a bound:
past it, a send may be stored twice, at-least-once; test_broker_graceful_stop.py checks the
exactly-once case). And the layout: the journal's segments and the entry logs are where
``--journal-dir`` and ``--ledger-dir`` said, nothing of them under the data dir.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pulsar

from tests.fault.checker import check_stored, read_stored
from tests.fault.crash import fault_rng
from tests.fault.workload import Publisher
from tests.kit.bookie import BookieProcess
from tests.kit.cluster import Cluster, fresh_topic
from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess, official_client, topic_name

ACKED_BEFORE_STOP = 1500  # per producer
ACKED_AFTER_RESTART = 300  # more per producer, once restarted


def test_sigterm_under_load_keeps_every_acknowledged_message(tmp_path: Path) -> None:
    seed, rng = fault_rng()
    journal_dir, ledger_dir = tmp_path / "journal-volume", tmp_path / "ledger-volume"
    sa = StandaloneProcess(
        data_dir=tmp_path / "data",
        journal_sync=True,
        extra_args=["--journal-dir", str(journal_dir), "--ledger-dir", str(ledger_dir)],
        # Small entry logs: several are sealed and summarized, and reopened after the restart.
        env={"MAGNETAR_STANDALONE_ENTRY_LOG_SIZE_LIMIT": str(1 << 20)},
    )
    topic = topic_name("sigterm-under-load")
    with running(sa) as process:
        client = official_client(process, operation_timeout_s=30)
        try:
            publishers = _loaded(client, topic, rng, batched_rate=4000.0, unbatched_rate=1500.0)

            stopping = time.monotonic()
            code = process.stop()
            print(f"standalone stop under load: {time.monotonic() - stopping:.2f} s")
            assert code == 0, f"seed {seed}: exit {code}\n{process.log_text()[-3000:]}"
            sent_at_stop = {p.name: p.sent for p in publishers}
            assert all(p.sent > p.acked_count() for p in publishers), (
                f"seed {seed}: no send was in flight at the stop"
            )
            assert sorted(p.name for p in journal_dir.glob("*.log")), "no journal segment"
            assert sorted((ledger_dir / "entrylogs").glob("*.log")), "no entry log"
            bookie_dir = tmp_path / "data" / "bookie"
            assert not (bookie_dir / "journal").exists()
            assert not (bookie_dir / "ledgers").exists()

            process.start()
            for publisher in publishers:
                publisher.wait_acked(publisher.acked_count() + ACKED_AFTER_RESTART, 60)
                publisher.stop()
            acked = {p.name: p.acked() for p in publishers}
            assert all(sent_at_stop[n] <= max(a, default=0) for n, a in acked.items()), (
                f"seed {seed}: the producers did not go on after the restart"
            )
            stored = read_stored(client, topic, "all")
        finally:
            client.close()
    check_stored(stored, acked, seed)


def test_sigterm_of_a_loaded_bookie_keeps_every_acknowledged_message(tmp_path: Path) -> None:
    """A bookie of the ensemble stopped cleanly under load: its add streams answer what they
    journalled and end, the broker changes ensemble and goes on; nothing acknowledged is lost
    and the bookie exits 0 (its stop time printed)."""
    seed, rng = fault_rng()
    cluster = Cluster(
        tmp_path,
        bookie_count=3,
        broker_count=1,
        broker_env={
            "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ENSEMBLE_SIZE": "2",
            "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_WRITE_QUORUM": "2",
            "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ACK_QUORUM": "2",
        },
    )
    topic = fresh_topic("bookie-sigterm")
    with cluster.running():
        client = cluster.client()
        try:
            publishers = _loaded(client, topic, rng, batched_rate=2000.0, unbatched_rate=1000.0)
            target = max(cluster.bookies, key=_journal_bytes)  # one the ledger writes to
            assert _journal_bytes(target) > 0, f"seed {seed}: no bookie journals entries"
            stopping = time.monotonic()
            code = target.stop()
            print(f"bookie stop under load: {time.monotonic() - stopping:.2f} s")
            assert code == 0, f"seed {seed}: exit {code}\n{target.log_text()[-3000:]}"
            for publisher in publishers:
                publisher.wait_acked(publisher.acked_count() + ACKED_AFTER_RESTART, 60)
                publisher.stop()
            acked = {p.name: p.acked() for p in publishers}
            target.start()  # back for the read: entries it alone answered for are read there
            stored = read_stored(client, topic, "all")
        finally:
            client.close()
    check_stored(stored, acked, seed)


def _loaded(
    client: pulsar.Client,
    topic: str,
    rng: random.Random,
    *,
    batched_rate: float,
    unbatched_rate: float,
) -> list[Publisher]:
    """A batching and a non-batching producer on ``topic``, running, each past
    ``ACKED_BEFORE_STOP`` acknowledged sends; first a subscription that never acknowledges, so
    it holds everything stored."""
    client.subscribe(topic, "all", initial_position=pulsar.InitialPosition.Earliest).close()
    publishers = [
        Publisher(client, topic, "batched", batched=True, rng=rng, rate=batched_rate),
        Publisher(client, topic, "unbatched", batched=False, rng=rng, rate=unbatched_rate),
    ]
    for publisher in publishers:
        publisher.start()
    for publisher in publishers:
        publisher.wait_acked(ACKED_BEFORE_STOP, timeout_s=60)
    return publishers


def _journal_bytes(bookie: BookieProcess) -> int:
    """What the bookie has journalled (its entry logs are written behind, in MiB steps)."""
    return sum(p.stat().st_size for p in bookie.data_dir.glob("journal/*.log"))
