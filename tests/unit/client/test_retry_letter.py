"""The retry-letter rules: topic names, Pulsar's properties, retry or dead letter, and order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from magnetar.client.dead_letter import DeadLetterPolicy
from magnetar.client.errors import InvalidConfiguration
from magnetar.client.message import Message
from magnetar.client.retry_letter import RetryLetterRouter, retry_policy, retry_properties
from magnetar.protocol.message_id import MessageId

TOPIC = "persistent://public/default/jobs"


def message(properties: Mapping[str, str] | None = None, topic: str = TOPIC) -> Message:
    return Message(topic, MessageId(7, 3), b"job", "k", dict(properties or {}), 1, None, 0, "p", 0)


def test_default_topics_use_the_partitioned_topic_name() -> None:
    policy = retry_policy(None, f"{TOPIC}-partition-2", "sub")
    assert policy.retry_letter_topic == f"{TOPIC}-sub-RETRY"
    assert policy.dead_letter_topic == f"{TOPIC}-sub-DLQ"
    assert policy.max_redeliver_count == 16  # Pulsar's default with retry and no policy
    own = retry_policy(DeadLetterPolicy(3, "dlq", "retry"), TOPIC, "sub")
    assert own == DeadLetterPolicy(3, "dlq", "retry")


def test_first_retry_sets_origin_and_later_ones_keep_it() -> None:
    first = retry_properties(message({"app": "x"}), 1500)
    assert first == {
        "app": "x",
        "RECONSUMETIMES": "1",
        "DELAY_TIME": "1500",
        "REAL_TOPIC": TOPIC,
        "ORIGIN_MESSAGE_ID": "7:3:-1:-1",
    }
    again = retry_properties(message(first, topic=f"{TOPIC}-sub-RETRY"), 200)
    assert again["RECONSUMETIMES"] == "2"
    assert again["DELAY_TIME"] == "200"
    assert again["REAL_TOPIC"] == TOPIC
    assert again["ORIGIN_MESSAGE_ID"] == "7:3:-1:-1"


class Recorder:
    def __init__(self, topic: str, sent: list[tuple[str, dict[str, Any]]]) -> None:
        self.topic, self.sent, self.closed = topic, sent, False

    async def send(self, data: bytes, **options: Any) -> None:
        self.sent.append((self.topic, options))

    async def close(self) -> None:
        self.closed = True


async def test_past_the_limit_the_copy_goes_to_the_dead_letter_topic_without_delay() -> None:
    sent: list[tuple[str, dict[str, Any]]] = []
    producers: list[Recorder] = []

    async def create(topic: str) -> Recorder:
        producers.append(Recorder(topic, sent))
        return producers[-1]

    router = RetryLetterRouter(retry_policy(DeadLetterPolicy(2), TOPIC, "s"), create)
    assert await router.publish(message({"RECONSUMETIMES": "1"}), 2.5) == f"{TOPIC}-s-RETRY"
    assert await router.publish(message({"RECONSUMETIMES": "2"}), 2.5) == f"{TOPIC}-s-DLQ"
    assert sent[0][1]["deliver_after_ms"] == 2500
    assert sent[0][1]["key"] == "k"
    assert "deliver_after_ms" not in sent[1][1]
    assert sent[1][1]["properties"]["RECONSUMETIMES"] == "3"
    with pytest.raises(InvalidConfiguration, match="negative"):
        await router.publish(message(), -1)
    await router.close()
    assert all(p.closed for p in producers)
