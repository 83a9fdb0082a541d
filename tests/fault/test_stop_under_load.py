"""Fault test: ``magnetar standalone`` stopped cleanly (SIGTERM) while producers run flat out,
restarted on the same dirs, with its journal and its ledger storage in dirs of their own.

Workload: two official-client producers on one topic, one batching and one not
(:class:`tests.fault.workload.Publisher`, seeded; seed printed, ``MAGNETAR_FAULT_SEED``
repeats a run), still sending when the SIGTERM comes and through the restart (the client
resends what was pending). Fault: SIGTERM under that load; the stop must exit 0, and its time
is printed (not asserted: the machine is shared). Checker (:mod:`tests.fault.checker`): every
message acknowledged before the stop, during it or after the restart is stored, first
occurrences in send order (a send whose receipt the stop cut off may be stored twice:
at-least-once). And the layout: the journal's segments and the entry logs are where
``--journal-dir`` and ``--ledger-dir`` said, nothing of them under the data dir.
"""

from __future__ import annotations

import time
from pathlib import Path

import pulsar

from tests.fault.checker import check_holds, check_in_order, read_stored
from tests.fault.crash import fault_rng
from tests.fault.workload import Publisher
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
            # Created first and never acknowledging, so it holds everything stored.
            client.subscribe(topic, "all", initial_position=pulsar.InitialPosition.Earliest).close()
            publishers = [
                Publisher(client, topic, "batched", batched=True, rng=rng, rate=4000.0),
                Publisher(client, topic, "unbatched", batched=False, rng=rng, rate=1500.0),
            ]
            for publisher in publishers:
                publisher.start()
            for publisher in publishers:
                publisher.wait_acked(ACKED_BEFORE_STOP, timeout_s=60)

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
    for name, indexes in acked.items():
        got = stored.get(name, [])
        check_holds(got, indexes, name, seed)
        check_in_order(got, name, seed)
