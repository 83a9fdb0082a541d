"""Batch-index acks survive SIGKILL: only a batch's unacked messages come back after a restart.

A batch of 10 is produced; a consumer with batch-index acks acknowledges 4 of its messages one by
one (the broker records the batch's remaining indexes with the cursor); the standalone process
is killed with SIGKILL and restarted on the same data dir (journal fsync on); a new consumer of
the subscription receives exactly the 6 others.
"""

from __future__ import annotations

from tests.kit.standalone import StandaloneProcess, official_client, receive_until_quiet, topic_name

RECEIVE_MS = 10_000
ACKED = (1, 3, 4, 8)


def test_partly_acked_batch_survives_kill_9(durable_standalone: StandaloneProcess) -> None:
    topic = topic_name("batch-index-durable")
    client = official_client(durable_standalone)
    try:
        consumer = client.subscribe(topic, "sub", batch_index_ack_enabled=True)
        producer = client.create_producer(
            topic,
            batching_enabled=True,
            batching_max_messages=10,
            batching_max_publish_delay_ms=1000,
        )
        for i in range(10):
            producer.send_async(f"m{i}".encode(), None)
        producer.flush()
        msgs = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(10)]
        assert len({(m.message_id().ledger_id(), m.message_id().entry_id()) for m in msgs}) == 1
        for i in ACKED:
            consumer.acknowledge(msgs[i])
        consumer.close()  # flushes the grouped acks; answered once they are persisted
    finally:
        client.close()

    durable_standalone.kill()
    durable_standalone.start()

    client = official_client(durable_standalone)
    try:
        consumer = client.subscribe(topic, "sub", batch_index_ack_enabled=True)
        again = [m.data() for m in receive_until_quiet(consumer, 1000)]
        assert again == [f"m{i}".encode() for i in range(10) if i not in ACKED]
        consumer.close()
    finally:
        client.close()
