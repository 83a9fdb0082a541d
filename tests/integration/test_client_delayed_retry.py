"""magnetar.client against a real standalone: delayed delivery and the retry-letter topic.

``deliver_after_ms`` / ``deliver_at_ms`` on Shared and Key_Shared (held until their time),
Exclusive ignores it, a delay over the namespace maximum fails the send with NotAllowedError
(and only that send), and ``reconsume_later`` goes through ``<topic>-<sub>-RETRY`` with
Pulsar's properties, then to the DLQ past ``max_redeliver_count``. Timing asserts are "not
before the time" and "within LATE_S after".
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import pytest

from magnetar.client.client import Client
from magnetar.client.consumer import Consumer
from magnetar.client.dead_letter import DeadLetterPolicy
from magnetar.client.errors import ClientError, InvalidConfiguration
from magnetar.client.multi_topic import MultiTopicConsumer
from tests.kit.interop import RECEIVE_TIMEOUT_S as T
from tests.kit.interop import nothing_more
from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess, admin_call, topic_name

ENV = {"MAGNETAR_STANDALONE_DELAYED_DELIVERY_TICK_TIME_MILLIS": "100"}
LATE_S = 15.0
DELAY_MS = 1500


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneProcess]:
    sa = StandaloneProcess(data_dir=tmp_path_factory.mktemp("retry") / "data", env=ENV)
    with running(sa) as process:
        yield process


def now_ms() -> int:
    return int(time.time() * 1000)


@pytest.mark.parametrize("sub_type", ["Shared", "Key_Shared"])
async def test_deliver_after_and_at_hold_messages(ours: Client, sub_type: str) -> None:
    topic = topic_name("c-delay")
    consumer = await ours.subscribe(topic, "s", subscription_type=sub_type)
    producer = await ours.create_producer(topic)
    sent_at = now_ms()
    await producer.send(b"after", key="k", deliver_after_ms=DELAY_MS)
    await producer.send(b"at", key="k", deliver_at_ms=sent_at + 2 * DELAY_MS)
    await producer.send(b"now", key="k")
    got = []
    for _ in range(3):
        msg = await consumer.receive(LATE_S)
        got.append((msg.data, now_ms()))
        consumer.acknowledge(msg)
    assert [d for d, _ in got] == [b"now", b"after", b"at"]
    assert got[1][1] >= sent_at + DELAY_MS
    assert got[2][1] >= sent_at + 2 * DELAY_MS
    assert got[2][1] <= sent_at + 2 * DELAY_MS + LATE_S * 1000
    await producer.close()
    await consumer.close()


async def test_exclusive_ignores_the_delay(ours: Client) -> None:
    topic = topic_name("c-delay-excl")
    consumer = await ours.subscribe(topic, "s", subscription_type="Exclusive")
    producer = await ours.create_producer(topic)
    await producer.send(b"late", deliver_after_ms=600_000)
    assert (await consumer.receive(T)).data == b"late"
    await producer.close()
    await consumer.close()


async def test_over_the_maximum_fails_only_that_send(
    ours: Client, standalone: StandaloneProcess
) -> None:
    ns = f"public/cmax-{uuid.uuid4().hex[:8]}"
    await asyncio.to_thread(admin_call, standalone, "PUT", f"/admin/v2/namespaces/{ns}")
    policy = {"active": True, "tickTime": 100, "maxDeliveryDelayInMillis": 5000}
    path = f"/admin/v2/namespaces/{ns}/delayedDelivery"
    await asyncio.to_thread(admin_call, standalone, "POST", path, policy)
    topic = f"persistent://{ns}/t"
    consumer = await ours.subscribe(topic, "s", subscription_type="Shared")
    producer = await ours.create_producer(topic, batching_enabled=False)
    with pytest.raises(ClientError, match="Exceeds max allowed delivery delay"):
        await producer.send(b"too-late", deliver_after_ms=60_000)
    await producer.send(b"fine", deliver_after_ms=100)
    assert (await consumer.receive(LATE_S)).data == b"fine"
    await producer.close()
    await consumer.close()


async def test_reconsume_later_goes_through_the_retry_topic_then_the_dlq(ours: Client) -> None:
    topic = topic_name("c-retry")
    consumer = await ours.subscribe(
        topic, "s", subscription_type="Shared", enable_retry=True,
        dead_letter_policy=DeadLetterPolicy(max_redeliver_count=2),
    )  # fmt: skip
    assert isinstance(consumer, MultiTopicConsumer)
    assert consumer.topics == sorted([topic, f"{topic}-s-RETRY"])
    dlq = await ours.subscribe(f"{topic}-s-DLQ", "check", initial_position="Earliest")
    producer = await ours.create_producer(topic)
    first_id = await producer.send(b"job", key="k1", properties={"app": "x"})

    msg = await consumer.receive(T)
    assert msg.data == b"job"
    seen = [msg]
    for _ in range(2):  # two retries, each held for the delay
        asked_at = now_ms()
        await consumer.reconsume_later(msg, DELAY_MS / 1000)
        msg = await consumer.receive(LATE_S)
        assert now_ms() >= asked_at + DELAY_MS, "a retry arrived before its delay"
        seen.append(msg)
    assert [m.topic for m in seen] == [topic, f"{topic}-s-RETRY", f"{topic}-s-RETRY"]
    retried = seen[2]
    assert retried.data == b"job"
    assert retried.key == "k1"
    assert retried.properties["app"] == "x"
    assert retried.properties["RECONSUMETIMES"] == "2"
    assert retried.properties["DELAY_TIME"] == str(DELAY_MS)
    assert retried.properties["REAL_TOPIC"] == topic
    origin = f"{first_id.ledger_id}:{first_id.entry_id}:{first_id.partition}:"
    assert retried.properties["ORIGIN_MESSAGE_ID"].startswith(origin)

    await consumer.reconsume_later(retried, 0.1)  # the third: past max_redeliver_count
    dead = await dlq.receive(T)
    assert dead.data == b"job"
    assert dead.properties["RECONSUMETIMES"] == "3"
    assert dead.properties["REAL_TOPIC"] == topic
    await nothing_more(consumer, 1.0)  # every copy was acknowledged
    await producer.close()
    await consumer.close()
    await dlq.close()


async def test_reconsume_later_needs_enable_retry(ours: Client) -> None:
    topic = topic_name("c-noretry")
    consumer = await ours.subscribe(topic, "s", subscription_type="Shared")
    assert isinstance(consumer, Consumer)
    producer = await ours.create_producer(topic)
    await producer.send(b"x")
    msg = await consumer.receive(T)
    with pytest.raises(InvalidConfiguration, match="enable_retry"):
        await consumer.reconsume_later(msg, 1)
    await producer.close()
    await consumer.close()


async def test_an_inactive_policy_delivers_at_once(
    ours: Client, standalone: StandaloneProcess
) -> None:
    ns = f"public/coff-{uuid.uuid4().hex[:8]}"
    await asyncio.to_thread(admin_call, standalone, "PUT", f"/admin/v2/namespaces/{ns}")
    policy = {"active": False, "tickTime": 1000, "maxDeliveryDelayInMillis": 0}
    path = f"/admin/v2/namespaces/{ns}/delayedDelivery"
    await asyncio.to_thread(admin_call, standalone, "POST", path, policy)
    topic = f"persistent://{ns}/t"
    consumer = await ours.subscribe(topic, "s", subscription_type="Shared")
    producer = await ours.create_producer(topic)
    await producer.send(b"late", deliver_after_ms=600_000)
    assert (await consumer.receive(T)).data == b"late"
    await producer.close()
    await consumer.close()


async def test_a_restart_mid_delay_still_delivers_on_time(
    durable_standalone: StandaloneProcess,
) -> None:
    sa = durable_standalone
    topic = topic_name("c-delay-restart")
    delay_ms = 10_000  # longer than a restart takes, mostly: then it is held anew
    async with Client(sa.service_url, operation_timeout_s=10) as client:
        consumer = await client.subscribe(topic, "s", subscription_type="Shared",
                                          ack_grouping_time_s=0)  # fmt: skip
        producer = await client.create_producer(topic)
        sent_at = now_ms()
        await producer.send(b"held", deliver_after_ms=delay_ms)
        await producer.send(b"free")
        msg = await consumer.receive(T)
        assert msg.data == b"free"
        consumer.acknowledge(msg)
        await sa.akill()
        await sa.astart()
        async with asyncio.timeout(30 + delay_ms / 1000):
            msg = await consumer.receive()
            while msg.data == b"free":  # its ack may not have been persisted: at-least-once
                consumer.acknowledge(msg)
                msg = await consumer.receive()
        assert msg.data == b"held"
        assert now_ms() >= sent_at + delay_ms, "delivered before its time after the restart"
        consumer.acknowledge(msg)
        await producer.close()
        await consumer.close()
