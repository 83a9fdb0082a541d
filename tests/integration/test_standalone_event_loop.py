"""``event_loop = "uvloop"``: the standalone runs its asyncio code on uvloop's loop, and the
official client publishes, consumes and acknowledges through it as on asyncio's (an unknown
loop is refused by the settings: tests/unit/cli/test_event_loop.py)."""

from __future__ import annotations

from pathlib import Path

from tests.kit.standalone import StandaloneProcess, official_client, topic_name

MESSAGES = 200


def test_the_official_client_round_trip_on_uvloop(tmp_path: Path) -> None:
    process = StandaloneProcess(
        data_dir=tmp_path / "data", env={"MAGNETAR_STANDALONE_EVENT_LOOP": "uvloop"}
    )
    process.start()
    try:
        assert "event_loop=uvloop" in process.log_text()
        client = official_client(process)
        try:
            topic = topic_name("uvloop")
            consumer = client.subscribe(topic, "s")
            producer = client.create_producer(topic, batching_enabled=False)
            for i in range(MESSAGES):
                producer.send_async(f"m{i}".encode(), None)
            producer.flush()
            got = []
            for _ in range(MESSAGES):
                msg = consumer.receive(timeout_millis=10_000)
                consumer.acknowledge(msg)
                got.append(msg.data())
            assert got == [f"m{i}".encode() for i in range(MESSAGES)]
        finally:
            client.close()
    finally:
        assert process.stop() == 0
