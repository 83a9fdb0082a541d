"""Topic compaction on a real ``magnetar standalone``, with the official client.

Pulsar's behaviour: ``PUT .../compaction`` starts a compaction, ``GET .../compaction`` reports
it; readers and consumers with ``is_read_compacted`` see the latest value of each key (an empty
payload deletes a key), messages without a key are kept, everyone else sees everything; Shared
and Key_Shared subscriptions may not read compacted; a namespace ``compactionThreshold`` compacts
on its own; the compacted view survives a restart.

The standalone runs with a rollover every 20 entries, no retention (consumed ledgers go) and a
compaction monitor every 0.3 s.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import uuid
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest

from magnetar.client import EARLIEST, Client, ReceiveTimeout
from magnetar.client.errors import NotAllowed
from magnetar.naming import TopicName
from tests.kit.ledgers import tagged_ledgers
from tests.kit.ports import wait_until
from tests.kit.process import MAGNETAR_CLI, running
from tests.kit.standalone import (
    StandaloneProcess,
    admin_call,
    official_client,
    receive_until_quiet,
    topic_name,
)

ENV = {
    "MAGNETAR_STANDALONE_MANAGED_LEDGER_MIN_LEDGER_ROLLOVER_TIME_MINUTES": "0",
    "MAGNETAR_STANDALONE_MANAGED_LEDGER_MAX_ENTRIES_PER_LEDGER": "20",
    "MAGNETAR_STANDALONE_BROKER_SERVICE_COMPACTION_MONITOR_INTERVAL_IN_SECONDS": "0.3",
}
QUIET_MS = 700


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneProcess]:
    sa = StandaloneProcess(data_dir=tmp_path_factory.mktemp("compaction") / "data", env=ENV)
    with running(sa) as process:
        yield process


def _rest(topic: str) -> str:
    return topic.replace("persistent://", "/admin/v2/persistent/")


def compact(standalone: StandaloneProcess, topic: str) -> dict[str, Any]:
    """Trigger a compaction and wait for its end; the final status."""
    admin_call(standalone, "PUT", f"{_rest(topic)}/compaction")
    return wait_status(standalone, topic)


def wait_status(standalone: StandaloneProcess, topic: str) -> dict[str, Any]:
    final: dict[str, Any] = {}

    def done() -> bool:
        final.update(admin_call(standalone, "GET", f"{_rest(topic)}/compaction"))
        return final["status"] in ("SUCCESS", "ERROR")

    wait_until(done, timeout_s=30)
    return final


def produce(client: pulsar.Client, topic: str, items: list[tuple[str | None, bytes]],
            **options: Any) -> None:  # fmt: skip
    producer = client.create_producer(topic, **options)
    for key, value in items:
        if key is None:
            producer.send_async(value, None)
        else:
            producer.send_async(value, None, partition_key=key)
    producer.flush()
    producer.close()


def hold(client: pulsar.Client, topic: str) -> None:
    """A durable subscription at the start: without retention, ledgers nobody has a cursor on
    are trimmed as they roll over, before any compaction could read them (as in Pulsar)."""
    client.subscribe(topic, "holder", initial_position=pulsar.InitialPosition.Earliest).close()


def read_all(client: pulsar.Client, topic: str, *, compacted: bool) -> list[tuple[str, bytes]]:
    """(key, payload) of everything a reader from the earliest message gets."""
    reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=compacted)
    got: list[tuple[str, bytes]] = []
    try:
        while True:
            try:
                msg = reader.read_next(timeout_millis=QUIET_MS)
            except pulsar.Timeout:
                return got
            got.append((msg.partition_key(), msg.data()))
    finally:
        reader.close()


def test_status_is_not_run_before_any_compaction(
    client: pulsar.Client, standalone: StandaloneProcess
) -> None:
    topic = topic_name("never")
    produce(client, topic, [("a", b"1")])
    status = admin_call(standalone, "GET", f"{_rest(topic)}/compaction")
    assert status == {"status": "NOT_RUN", "lastError": ""}


def test_latest_value_per_key_and_tombstones(
    client: pulsar.Client, standalone: StandaloneProcess
) -> None:
    topic = topic_name("keys")
    items: list[tuple[str | None, bytes]] = []
    for round_ in range(5):
        for k in range(10):
            items.append((f"k{k}", f"k{k}-v{round_}".encode()))
    items.append(("k3", b""))  # tombstone: k3 is gone
    items.append((None, b"no-key"))  # kept as it is
    items.append(("k7", b"k7-last"))
    # A durable subscription keeps everything from being trimmed (there is no retention here).
    plain = client.subscribe(topic, "plain", initial_position=pulsar.InitialPosition.Earliest)
    produce(client, topic, items, batching_enabled=False)

    assert compact(standalone, topic) == {"status": "SUCCESS", "lastError": ""}
    stats = admin_call(standalone, "GET", f"{_rest(topic)}/stats")["compaction"]
    assert stats["lastCompactionRemovedEventCount"] == len(items) - 10  # 9 keys + 1 keyless
    assert stats["lastCompactionSucceedTimestamp"] > 0
    assert stats["lastCompactionFailedTimestamp"] == 0

    compacted = read_all(client, topic, compacted=True)
    expected = {f"k{k}": f"k{k}-v4".encode() for k in range(10) if k != 3}
    expected["k7"] = b"k7-last"
    keyed = {k: v for k, v in compacted if k}
    assert keyed == expected
    assert len([k for k, _ in compacted if k]) == len(expected), "a key came twice"
    assert ("", b"no-key") in compacted
    # Without read_compacted, everything that was published.
    assert len(read_all(client, topic, compacted=False)) == len(items)
    assert len(receive_until_quiet(plain, QUIET_MS)) == len(items)
    plain.close()


def test_the_compacted_view_outlives_trimmed_ledgers(
    client: pulsar.Client, standalone: StandaloneProcess
) -> None:
    topic = topic_name("trimmed")
    holder = client.subscribe(topic, "h", initial_position=pulsar.InitialPosition.Earliest)
    items: list[tuple[str | None, bytes]] = [("early", b"e")]
    items += [(f"k{i % 4}", f"v{i}".encode()) for i in range(100)]
    produce(client, topic, items, batching_enabled=False)
    compact(standalone, topic)
    holder.unsubscribe()
    # No subscription and no retention: the compaction cursor was the last to hold the ledgers.
    wait_until(lambda: len(read_all(client, topic, compacted=False)) < 101, timeout_s=30)
    assert sorted(read_all(client, topic, compacted=True)) == [
        ("early", b"e"), ("k0", b"v96"), ("k1", b"v97"), ("k2", b"v98"), ("k3", b"v99"),
    ]  # fmt: skip


def test_batched_producer_keeps_only_the_latest_in_each_batch(
    client: pulsar.Client, standalone: StandaloneProcess
) -> None:
    topic = topic_name("batched")
    hold(client, topic)
    items: list[tuple[str | None, bytes]] = [(f"k{i % 7}", f"v{i}".encode()) for i in range(70)]
    produce(client, topic, items, batching_enabled=True, batching_max_messages=10,
            batching_max_publish_delay_ms=50)  # fmt: skip
    compact(standalone, topic)
    compacted = read_all(client, topic, compacted=True)
    latest = {}
    for key, value in items:
        latest[key] = value
    assert sorted(compacted) == sorted(latest.items())


def test_compaction_goes_on_from_the_previous_view(
    client: pulsar.Client, standalone: StandaloneProcess
) -> None:
    topic = topic_name("twice")
    hold(client, topic)
    produce(client, topic, [(f"k{i}", b"old") for i in range(30)], batching_enabled=False)
    compact(standalone, topic)
    produce(client, topic, [("k0", b"new"), ("k1", b"")], batching_enabled=False)
    compact(standalone, topic)
    compacted = dict(read_all(client, topic, compacted=True))
    assert compacted["k0"] == b"new"
    assert "k1" not in compacted
    assert len(compacted) == 29
    assert compacted["k29"] == b"old"


def test_messages_after_the_horizon_are_read_too(
    client: pulsar.Client, standalone: StandaloneProcess
) -> None:
    topic = topic_name("tail")
    produce(client, topic, [("a", b"1"), ("a", b"2"), ("b", b"1")], batching_enabled=False)
    compact(standalone, topic)
    produce(client, topic, [("a", b"3"), ("a", b"4")], batching_enabled=False)
    assert read_all(client, topic, compacted=True) == [
        ("a", b"2"), ("b", b"1"), ("a", b"3"), ("a", b"4"),
    ]  # fmt: skip


def test_read_compacted_consumer_on_exclusive_subscription(
    client: pulsar.Client, standalone: StandaloneProcess
) -> None:
    topic = topic_name("consumer")
    produce(client, topic, [(f"k{i % 3}", f"v{i}".encode()) for i in range(12)],
            batching_enabled=False)  # fmt: skip
    compact(standalone, topic)
    consumer = client.subscribe(
        topic, "compacted-sub", is_read_compacted=True,
        initial_position=pulsar.InitialPosition.Earliest,
    )  # fmt: skip
    plain = client.subscribe(topic, "plain-sub", initial_position=pulsar.InitialPosition.Earliest)
    try:
        got = receive_until_quiet(consumer, QUIET_MS)
        assert sorted(m.data() for m in got) == [b"v10", b"v11", b"v9"]
        for m in got:
            consumer.acknowledge(m)
        assert len(receive_until_quiet(plain, QUIET_MS)) == 12
    finally:
        consumer.close()  # sends the grouped acks first
        plain.close()
    # Back on the same subscription: what was acknowledged is not read again.
    again = client.subscribe(
        topic, "compacted-sub", is_read_compacted=True,
        initial_position=pulsar.InitialPosition.Earliest,
    )  # fmt: skip
    try:
        assert receive_until_quiet(again, QUIET_MS) == []
    finally:
        again.close()


@pytest.mark.parametrize("sub_type", [pulsar.ConsumerType.Shared, pulsar.ConsumerType.KeyShared])
def test_official_client_refuses_read_compacted_on_shared(
    client: pulsar.Client, sub_type: pulsar.ConsumerType
) -> None:
    with pytest.raises(pulsar.InvalidConfiguration):
        client.subscribe(topic_name("shared"), "s", consumer_type=sub_type, is_read_compacted=True)


@pytest.mark.parametrize("sub_type", ["Shared", "Key_Shared"])
async def test_broker_refuses_read_compacted_on_shared(ours: Client, sub_type: str) -> None:
    """The official client refuses it itself; a client that asks gets Pulsar's NotAllowedError."""
    with pytest.raises(NotAllowed, match="readCompacted only allowed"):
        await ours.subscribe(
            topic_name("shared"), "s", subscription_type=sub_type, read_compacted=True
        )


def test_compaction_of_a_missing_topic_is_404(standalone: StandaloneProcess) -> None:
    topic = topic_name("missing")
    with pytest.raises(urllib.error.HTTPError) as excinfo:
        admin_call(standalone, "PUT", f"{_rest(topic)}/compaction")
    assert excinfo.value.code == 404


def test_namespace_threshold_compacts_automatically(
    client: pulsar.Client, standalone: StandaloneProcess
) -> None:
    ns = f"public/auto-{uuid.uuid4().hex[:8]}"
    admin_call(standalone, "PUT", f"/admin/v2/namespaces/{ns}")
    path = f"/admin/v2/namespaces/{ns}/compactionThreshold"
    assert admin_call(standalone, "GET", path) is None
    topic = f"persistent://{ns}/t"
    # Everything is in before the threshold is set: a run the monitor started while the
    # producer was still sending would stop its horizon short of the end, and what follows
    # it could stay under the threshold for good.
    produce(client, topic, [(f"k{i % 4}", b"y" * 100) for i in range(40)], batching_enabled=False)
    assert admin_call(standalone, "GET", f"{_rest(topic)}/compaction")["status"] == "NOT_RUN"
    admin_call(standalone, "PUT", path, 1000)
    assert admin_call(standalone, "GET", path) == 1000
    # The monitor compacts once more than 1000 bytes follow the (absent) horizon.
    wait_until(
        lambda: admin_call(standalone, "GET", f"{_rest(topic)}/compaction")["status"] == "SUCCESS",
        timeout_s=30,
    )
    assert len(read_all(client, topic, compacted=True)) == 4
    admin_call(standalone, "DELETE", path)
    assert admin_call(standalone, "GET", path) is None
    with pytest.raises(urllib.error.HTTPError) as excinfo:
        admin_call(standalone, "PUT", path, -5)
    assert excinfo.value.code in (400, 412)


def test_publishing_goes_on_during_a_compaction(
    client: pulsar.Client, standalone: StandaloneProcess
) -> None:
    topic = topic_name("busy")
    hold(client, topic)
    produce(client, topic, [(f"k{i % 500}", b"z" * 200) for i in range(5000)],
            batching_enabled=True)  # fmt: skip
    producer = client.create_producer(topic, batching_enabled=False)
    admin_call(standalone, "PUT", f"{_rest(topic)}/compaction")
    with pytest.raises(urllib.error.HTTPError) as excinfo:
        admin_call(standalone, "PUT", f"{_rest(topic)}/compaction")
    assert excinfo.value.code == 409, "a second compaction started while one was running"
    acked_while_running = 0
    sent = 0
    try:
        while True:
            status = admin_call(standalone, "GET", f"{_rest(topic)}/compaction")["status"]
            if status != "RUNNING":
                break
            producer.send(b"during", partition_key="live")  # each send waits for its receipt
            sent += 1
            acked_while_running += 1
    finally:
        producer.close()
    assert status == "SUCCESS"
    assert acked_while_running > 0, "the compaction ended before a send could be timed"
    compacted = dict(read_all(client, topic, compacted=True))
    assert compacted["live"] == b"during"
    assert len(compacted) == 501


def test_restart_keeps_the_compacted_view(tmp_path_factory: pytest.TempPathFactory) -> None:
    data = tmp_path_factory.mktemp("restart") / "data"
    topic = topic_name("restart")
    with running(StandaloneProcess(data_dir=data, env=ENV)) as sa:
        c = official_client(sa)
        try:
            produce(c, topic, [(f"k{i % 5}", f"v{i}".encode()) for i in range(50)],
                    batching_enabled=False)  # fmt: skip
            compact(sa, topic)
            before = read_all(c, topic, compacted=True)
        finally:
            c.close()
    with running(StandaloneProcess(data_dir=data, env=ENV)) as sa:
        c = official_client(sa)
        try:
            assert read_all(c, topic, compacted=True) == before
            assert len(before) == 5
            assert admin_call(sa, "GET", f"{_rest(topic)}/compaction")["status"] == "NOT_RUN"
            # Deleting the topic deletes its compacted ledger too.
            admin_call(sa, "DELETE", f"{_rest(topic)}?force=true")
        finally:
            c.close()
    ml_name = TopicName.parse(topic).managed_ledger_name
    assert tagged_ledgers(data, "compacted-topic", ml_name) == []


async def test_magnetar_client_reads_compacted_batches(
    client: pulsar.Client, ours: Client, standalone: StandaloneProcess
) -> None:
    topic = topic_name("ours")
    hold(client, topic)
    items: list[tuple[str | None, bytes]] = [(f"k{i % 5}", f"v{i}".encode()) for i in range(40)]
    produce(client, topic, items, batching_enabled=True, batching_max_messages=8,
            batching_max_publish_delay_ms=50)  # fmt: skip
    compact(standalone, topic)
    got: dict[str | None, bytes] = {}
    count = 0
    for compacted in (True, False):
        reader = await ours.create_reader(topic, EARLIEST, read_compacted=compacted)
        try:
            while True:
                try:
                    msg = await reader.read_next(timeout_s=QUIET_MS / 1000)
                except ReceiveTimeout:
                    break
                if compacted:
                    assert msg.key not in got, "a key came twice"
                    got[msg.key] = msg.data
                else:
                    count += 1
        finally:
            await reader.close()
    assert got == {f"k{i}": f"v{35 + i}".encode() for i in range(5)}
    assert count == 40


def test_cli_compact_status_and_threshold(
    client: pulsar.Client, standalone: StandaloneProcess
) -> None:
    def cli(*args: str) -> str:
        done = subprocess.run(
            [*MAGNETAR_CLI, "admin", "--admin-url", standalone.web_url, *args],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    topic = topic_name("cli")
    produce(client, topic, [("a", b"1"), ("a", b"2")], batching_enabled=False)
    assert cli("topics", "compaction-status", topic) == "NOT_RUN"
    cli("topics", "compact", topic)
    wait_until(lambda: cli("topics", "compaction-status", topic) == "SUCCESS", timeout_s=30)
    assert json.loads(cli("--json", "topics", "compaction-status", topic)) == {
        "status": "SUCCESS",
        "lastError": "",
    }
    ns = "public/default"
    cli("namespaces", "set-compaction-threshold", ns, "-t", "10M")
    try:
        assert cli("namespaces", "get-compaction-threshold", ns) == str(10 * 1024 * 1024)
    finally:
        cli("namespaces", "remove-compaction-threshold", ns)
    assert cli("namespaces", "get-compaction-threshold", ns) == "(not set)"


def test_unacknowledged_compacted_messages_come_back_compacted(
    client: pulsar.Client, standalone: StandaloneProcess
) -> None:
    topic = topic_name("redeliver")
    hold(client, topic)
    produce(client, topic, [(f"k{i % 3}", f"v{i}".encode()) for i in range(30)],
            batching_enabled=True, batching_max_messages=4)  # fmt: skip
    compact(standalone, topic)
    for _ in range(2):  # the second time: what the first consumer left unacknowledged
        consumer = client.subscribe(
            topic, "unacked", is_read_compacted=True, consumer_type=pulsar.ConsumerType.Failover,
            initial_position=pulsar.InitialPosition.Earliest,
        )  # fmt: skip
        try:
            got = receive_until_quiet(consumer, QUIET_MS)
        finally:
            consumer.close()
        assert sorted(m.data() for m in got) == [b"v27", b"v28", b"v29"]


def test_compacting_a_partitioned_topic_compacts_each_partition(
    client: pulsar.Client, standalone: StandaloneProcess
) -> None:
    topic = topic_name("parts")
    admin_call(standalone, "PUT", f"{_rest(topic)}/partitions", 2)
    for i in range(2):
        hold(client, f"{topic}-partition-{i}")
    produce(client, topic, [(f"k{i % 6}", f"v{i}".encode()) for i in range(60)],
            batching_enabled=False)  # fmt: skip
    admin_call(standalone, "PUT", f"{_rest(topic)}/compaction")
    for i in range(2):
        assert wait_status(standalone, f"{topic}-partition-{i}")["status"] == "SUCCESS"
    with pytest.raises(urllib.error.HTTPError) as excinfo:
        admin_call(standalone, "GET", f"{_rest(topic)}/compaction")
    assert excinfo.value.code == 405  # ask a partition
    assert sorted(read_all(client, topic, compacted=True)) == [
        (f"k{k}", f"v{54 + k}".encode()) for k in range(6)
    ]


def test_seek_to_earliest_reads_the_view_again_after_trimming(
    client: pulsar.Client, standalone: StandaloneProcess
) -> None:
    topic = topic_name("seek")
    holder = client.subscribe(topic, "h", initial_position=pulsar.InitialPosition.Earliest)
    items: list[tuple[str | None, bytes]] = [("early", b"e")]
    items += [(f"k{i % 3}", f"v{i}".encode()) for i in range(60)]
    produce(client, topic, items, batching_enabled=False)
    compact(standalone, topic)
    consumer = client.subscribe(
        topic, "compacted", is_read_compacted=True,
        initial_position=pulsar.InitialPosition.Earliest,
    )  # fmt: skip
    try:
        holder.unsubscribe()
        expected = [b"e", b"v57", b"v58", b"v59"]
        first = receive_until_quiet(consumer, QUIET_MS)
        assert sorted(m.data() for m in first) == expected
        # A cumulative ack also covers what compaction left out (individual acks would leave
        # those unacknowledged, as in Pulsar): everything up to the horizon goes.
        consumer.acknowledge_cumulative(max(first, key=lambda m: m.message_id()))
        wait_until(lambda: len(read_all(client, topic, compacted=False)) < len(items), 30)
        consumer.seek(pulsar.MessageId.earliest)
        assert sorted(m.data() for m in receive_until_quiet(consumer, QUIET_MS)) == expected
    finally:
        consumer.close()
