"""Fault test: ``magnetar standalone`` killed with SIGKILL in the middle of a compaction.

Workload: a keyed topic compacted once, then overwritten (new values, tombstones) and compacted
again; the kill comes at a seeded moment of the second run (seed printed,
``MAGNETAR_FAULT_SEED`` repeats it). Checker: after the restart a read_compacted reader sees the
latest value of every key (the old view plus the topic after its horizon, or the new view);
the next compaction succeeds with the same answer; and the metadata then holds exactly one
compacted ledger of the topic — nothing the killed run created is left behind.
"""

from __future__ import annotations

import time

import pulsar

from magnetar.naming import TopicName
from tests.fault.crash import fault_rng, kill_and_restart
from tests.kit.ledgers import tagged_ledgers
from tests.kit.ports import wait_until
from tests.kit.standalone import StandaloneProcess, admin_call, official_client, topic_name

KEYS = 1500
ROUNDS = 8
QUIET_MS = 1000


def _rest(topic: str) -> str:
    return topic.replace("persistent://", "/admin/v2/persistent/")


def _compact_and_wait(sa: StandaloneProcess, topic: str) -> str:
    admin_call(sa, "PUT", f"{_rest(topic)}/compaction")
    status: dict[str, str] = {}

    def done() -> bool:
        status.update(admin_call(sa, "GET", f"{_rest(topic)}/compaction"))
        return status["status"] != "RUNNING"

    wait_until(done, timeout_s=120)
    return status["status"]


def _read_compacted(client: pulsar.Client, topic: str) -> dict[str, bytes]:
    """Each key's value as a read_compacted reader from the earliest message ends up with."""
    reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    got: dict[str, bytes] = {}
    try:
        while True:
            try:
                msg = reader.read_next(timeout_millis=QUIET_MS)
            except pulsar.Timeout:
                return got
            # Past the horizon the topic is read as it is: later values replace earlier ones
            # and an empty payload deletes its key, as the application applies them.
            if msg.data():
                got[msg.partition_key()] = msg.data()
            else:
                got.pop(msg.partition_key(), None)
    finally:
        reader.close()


def _send_round(client: pulsar.Client, topic: str, round_: int, latest: dict[str, bytes]) -> None:
    # Unbatched in odd rounds, batched in even ones: the run has both to compact.
    producer = client.create_producer(
        topic, batching_enabled=round_ % 2 == 0, batching_max_messages=50, block_if_queue_full=True
    )
    failed: list[pulsar.Result] = []
    for k in range(KEYS):
        key = f"k{k}"
        value = b"" if (k + round_) % 11 == 0 else f"{key}-r{round_}".encode()
        producer.send_async(
            value,
            lambda res, _mid: res == pulsar.Result.Ok or failed.append(res),
            partition_key=key,
        )
        if value:
            latest[key] = value
        else:
            latest.pop(key, None)
    producer.flush()
    producer.close()
    assert not failed, f"sends failed: {failed[:3]}"


def test_kill_9_during_compaction_keeps_a_valid_view_and_no_orphan(
    durable_standalone: StandaloneProcess,
) -> None:
    seed, rng = fault_rng()
    sa = durable_standalone
    topic = topic_name("compaction-kill")
    latest: dict[str, bytes] = {}
    client = official_client(sa)
    try:
        client.subscribe(topic, "holder", initial_position=pulsar.InitialPosition.Earliest).close()
        _send_round(client, topic, 0, latest)
        assert _compact_and_wait(sa, topic) == "SUCCESS", f"seed {seed}"
        for round_ in range(1, ROUNDS):
            _send_round(client, topic, round_, latest)
        admin_call(sa, "PUT", f"{_rest(topic)}/compaction")
        started = time.monotonic()
        time.sleep(rng.uniform(0.0, 0.3))  # the fault's moment, drawn from the seed
        status = admin_call(sa, "GET", f"{_rest(topic)}/compaction")["status"]
        print(f"killed {time.monotonic() - started:.3f}s into the run, status {status}")
    finally:
        client.close()
    kill_and_restart(sa)

    client = official_client(sa)
    try:
        assert _read_compacted(client, topic) == latest, f"seed {seed}"
        assert _compact_and_wait(sa, topic) == "SUCCESS", f"seed {seed}"
        assert _read_compacted(client, topic) == latest, f"seed {seed}"
        stats = admin_call(sa, "GET", f"{_rest(topic)}/internalStats")
    finally:
        client.close()
    current = stats["compactedLedger"]["ledgerId"]
    props = stats["cursors"]["__compaction"]["properties"]
    assert set(props) == {"CompactedTopicLedger"}, f"seed {seed}: {props}"
    sa.stop()
    ml_name = TopicName.parse(topic).managed_ledger_name
    assert tagged_ledgers(sa.data_dir, "compacted-topic", ml_name) == [current], f"seed {seed}"
