"""Fault tests: ``magnetar standalone`` killed with SIGKILL, restarted on the same data dir.

Each test is a seeded workload (:mod:`tests.fault.workload`: message count, payload sizes, keys,
batching), a fault (:mod:`tests.fault.crash`: kill -9 at a seeded moment; seed printed,
``MAGNETAR_FAULT_SEED`` repeats a run) and a checker (:mod:`tests.fault.checker`): every
acknowledged message comes back in order and once, and acknowledgement state (cumulative acks,
batch-index acks, deduplication's last sequence ids) survives. The journal fsyncs
(``journal_sync=True``), as in production.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from tests.fault.checker import (
    check_all_in_order_once,
    check_prefix_holding,
    read_exactly,
    read_until_quiet,
)
from tests.fault.crash import fault_rng, kill_and_restart
from tests.fault.workload import Sending, Workload, send_all
from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess, admin_call, official_client, topic_name

MESSAGES = 10_000
UNDER_LOAD_ACKED = (15_000, 30_000)  # the kill comes after this many acknowledged sends


def test_acknowledged_messages_and_acks_survive_kill_9(
    durable_standalone: StandaloneProcess,
) -> None:
    seed, rng = fault_rng()
    workload = Workload.draw(rng, messages=MESSAGES, per_batch=(50, 200), pending=5000)
    acked_upto = rng.randint(MESSAGES // 4, 3 * MESSAGES // 4)  # cumulative ack of 0..this-1
    topic = topic_name("durable")
    client = official_client(durable_standalone)
    try:
        # Created before producing, so the subscriptions' cursors exist on disk.
        acking = client.subscribe(topic, "acked", initial_position=pulsar.InitialPosition.Earliest)
        client.subscribe(topic, "all", initial_position=pulsar.InitialPosition.Earliest).close()
        results = send_all(workload, client, topic)
        assert len(results) == MESSAGES, f"seed {seed}"
        assert all(r == pulsar.Result.Ok for r in results), f"seed {seed}"
        last = None
        for _ in range(acked_upto):
            last = acking.receive(timeout_millis=10_000)
        assert last is not None
        acking.acknowledge_cumulative(last)
        acking.close()  # flushes the ack grouping; the close is answered after the acks
    finally:
        client.close()

    kill_and_restart(durable_standalone)

    client = official_client(durable_standalone)
    try:
        everything = client.subscribe(topic, "all", receiver_queue_size=2000)
        check_all_in_order_once(read_exactly(everything, MESSAGES), MESSAGES, seed)
        rest = client.subscribe(topic, "acked")
        first = read_exactly(rest, 1, ack=False)[0]
        # Cumulative acks inside a batch stop at the previous entry: at most one batch again.
        assert acked_upto - workload.per_batch <= first <= acked_upto, f"seed {seed}"
    finally:
        client.close()


def test_kill_9_under_load_keeps_every_acknowledged_message(
    durable_standalone: StandaloneProcess,
) -> None:
    """SIGKILL while sends are in flight: what comes back is a prefix of what was sent, in
    order and once, and it holds every message that was acknowledged before the kill."""
    seed, rng = fault_rng()
    workload = Workload.draw(rng, messages=0, per_batch=(20, 100), pending=2000)
    kill_after = rng.randint(*UNDER_LOAD_ACKED)
    topic = topic_name("under-load")
    client = official_client(durable_standalone, operation_timeout_s=5)
    try:
        client.subscribe(topic, "all", initial_position=pulsar.InitialPosition.Earliest).close()
        sending = Sending(workload, client, topic)
        sending.run(until_acked=kill_after)
        durable_standalone.kill()  # sends still in flight
        acked_before_kill = sending.acked()
    finally:
        client.close()
    assert sending.sent > len(acked_before_kill), f"seed {seed}: no send was in flight"

    durable_standalone.start()
    client = official_client(durable_standalone)
    try:
        everything = client.subscribe(topic, "all", receiver_queue_size=2000)
        check_prefix_holding(read_until_quiet(everything, 2000), acked_before_kill, seed)
    finally:
        client.close()


def test_partly_acked_batch_survives_kill_9(durable_standalone: StandaloneProcess) -> None:
    """Batch-index acks: after the crash only the batch's unacknowledged messages come back."""
    seed, rng = fault_rng()
    size = rng.randint(5, 20)
    workload = Workload.draw(rng, messages=size, per_batch=(size, size), pending=size)
    acked = set(rng.sample(range(size), rng.randint(1, size - 1)))
    topic = topic_name("batch-index-durable")
    client = official_client(durable_standalone)
    try:
        consumer = client.subscribe(topic, "sub", batch_index_ack_enabled=True)
        producer = client.create_producer(
            topic,
            batching_enabled=True,
            batching_max_messages=size,
            batching_max_publish_delay_ms=1000,
        )
        for i in range(size):
            producer.send_async(workload.payload(i), None)
        producer.flush()
        msgs = [consumer.receive(timeout_millis=10_000) for _ in range(size)]
        entries = {(m.message_id().ledger_id(), m.message_id().entry_id()) for m in msgs}
        assert len(entries) == 1, f"seed {seed}: the {size} messages were not one batch"
        for i in sorted(acked):
            consumer.acknowledge(msgs[i])
        consumer.close()  # flushes the grouped acks; answered once they are persisted
    finally:
        client.close()

    kill_and_restart(durable_standalone)

    client = official_client(durable_standalone)
    try:
        consumer = client.subscribe(topic, "sub", batch_index_ack_enabled=True)
        again = read_until_quiet(consumer, 1000)
        assert again == [i for i in range(size) if i not in acked], f"seed {seed}"
        consumer.close()
    finally:
        client.close()


@pytest.fixture
def dedup_standalone(tmp_path: Path) -> Iterator[StandaloneProcess]:
    sa = StandaloneProcess(
        data_dir=tmp_path / "data",
        journal_sync=True,
        # A snapshot every 3 entries: the restart uses both the snapshot and a replay.
        env={"MAGNETAR_STANDALONE_BROKER_DEDUPLICATION_ENTRIES_INTERVAL": "3"},
    )
    with running(sa, clean_exit=False) as process:
        yield process


def test_dedup_state_survives_kill_9(dedup_standalone: StandaloneProcess) -> None:
    seed, rng = fault_rng()
    count = rng.randint(4, 24)  # sequence ids 1..count; 0 would mean "not given" to the client
    workload = Workload.draw(rng, messages=count + 1, per_batch=(1, 1), pending=1)
    ns = f"public/dedup-{seed}"
    admin_call(dedup_standalone, "PUT", f"/admin/v2/namespaces/{ns}")
    admin_call(dedup_standalone, "POST", f"/admin/v2/namespaces/{ns}/deduplication", True)
    topic = f"persistent://{ns}/t"
    sequence_ids = range(1, count + 1)
    client = official_client(dedup_standalone, operation_timeout_s=10)
    try:
        # A subscription keeps the entries (without one, closed ledgers are trimmed).
        client.subscribe(topic, "keep").close()
        producer = client.create_producer(topic, producer_name="durable", batching_enabled=False)
        for i in sequence_ids:
            producer.send(workload.payload(i), sequence_id=i)
    finally:
        client.close()

    kill_and_restart(dedup_standalone)

    client = official_client(dedup_standalone, operation_timeout_s=10)
    try:
        producer = client.create_producer(topic, producer_name="durable", batching_enabled=False)
        assert producer.last_sequence_id() == count, f"seed {seed}"
        again = [producer.send(workload.payload(i), sequence_id=i) for i in sequence_ids]
        assert [(m.ledger_id(), m.entry_id()) for m in again] == [(-1, -1)] * count, f"seed {seed}"
        producer.close()
        keep = client.subscribe(topic, "keep", initial_position=pulsar.InitialPosition.Earliest)
        assert read_until_quiet(keep, 500) == list(sequence_ids), f"seed {seed}"
        keep.close()
    finally:
        client.close()
