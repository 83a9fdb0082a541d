"""``broker-stats topics`` and ``broker-stats monitoring-metrics`` on a real standalone.

An official client publishes to one topic and leaves a consumer on it; the REST answers (through
``AdminClient`` and the command line) must show that topic under its namespace and bundle with
Pulsar's shapes, and the namespace metrics must count its producer, subscription, consumer and
backlog. The binary LOOKUP answer of the standalone (loopback advertised address) carries the
proxy-through flag, as Pulsar's standalone does.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from magnetar.broker.bundles import NamespaceBundles
from magnetar.cli.main import app
from magnetar.client.admin import AdminClient
from magnetar.naming import TopicName
from tests.kit.standalone import StandaloneProcess, official_client, topic_name

MESSAGES = 5


async def test_topics_and_metrics_show_a_loaded_topic(standalone: StandaloneProcess) -> None:
    topic = topic_name("bstats")
    bundle = NamespaceBundles.even(TopicName.parse(topic).namespace).find(TopicName.parse(topic))
    client = official_client(standalone)
    try:
        consumer = client.subscribe(topic, "sub", receiver_queue_size=1)
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(MESSAGES):
            producer.send(b"m%d" % i)
        async with AdminClient(standalone.web_url, timeout_s=10) as admin:
            tree = await admin.get_broker_topics_stats()
            stats = tree["public/default"][bundle.name]["persistent"][topic]
            assert stats["msgInCounter"] == MESSAGES
            assert [p["producerName"] for p in stats["publishers"]] == [producer.producer_name()]
            assert list(stats["subscriptions"]) == ["sub"]

            metrics = await admin.get_broker_metrics()
            [ns] = [m for m in metrics if m["dimensions"] == {"namespace": "public/default"}]
            assert ns["metrics"]["brk_no_of_producers"] >= 1
            assert ns["metrics"]["brk_no_of_subscriptions"] >= 1
            assert ns["metrics"]["brk_no_of_consumers"] >= 1
            assert ns["metrics"]["brk_msg_backlog"] >= MESSAGES - 1  # one may be dispatched
            assert ns["metrics"]["brk_storage_size"] > 0
        consumer.close()
    finally:
        client.close()


def test_cli_verbs_print_pulsar_shapes(standalone: StandaloneProcess) -> None:
    topic = topic_name("bstats-cli")
    bundle = NamespaceBundles.even(TopicName.parse(topic).namespace).find(TopicName.parse(topic))
    client = official_client(standalone)
    try:
        client.create_producer(topic).send(b"m")
        runner = CliRunner()
        base = ["admin", "--admin-url", standalone.web_url, "broker-stats"]
        topics_out = runner.invoke(app, [*base, "topics"])
        assert topics_out.exit_code == 0, topics_out.stderr
        assert topic in json.loads(topics_out.stdout)["public/default"][bundle.name]["persistent"]
        metrics_out = runner.invoke(app, [*base, "monitoring-metrics"])
        assert metrics_out.exit_code == 0, metrics_out.stderr
        assert {"namespace": "public/default"} in [
            m["dimensions"] for m in json.loads(metrics_out.stdout)
        ]
    finally:
        client.close()
