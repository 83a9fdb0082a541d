"""Producer deduplication with the official client: resent sequence ids are stored once, a
reconnecting producer resumes from PRODUCER_SUCCESS's last sequence id, and the admin API switches
it on and off for live topics. That the state survives kill -9 is a fault test
(tests/fault/test_broker_kill.py)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from magnetar.protocol import client_commands
from magnetar.protocol.frame import encode_payload_command
from magnetar.wire import pulsar_api_pb2 as pb
from tests.integration.test_broker_bad_input import RawClient
from tests.kit.ports import wait_until
from tests.kit.standalone import StandaloneProcess, read_from_start

T = pb.BaseCommand


def _namespace(web_url: str, dedup: bool | None) -> str:
    ns = f"public/dedup-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=web_url, timeout=10) as http:
        http.put(f"/admin/v2/namespaces/{ns}").raise_for_status()
        if dedup is not None:
            _set_dedup(web_url, ns, dedup)
    return ns


def _set_dedup(web_url: str, ns: str, enabled: bool) -> None:
    with httpx.Client(base_url=web_url, timeout=10) as http:
        http.post(f"/admin/v2/namespaces/{ns}/deduplication", json=enabled).raise_for_status()


def _stats(web_url: str, topic: str) -> dict[str, Any]:
    path = topic.replace("persistent://", "/admin/v2/persistent/") + "/stats"
    with httpx.Client(base_url=web_url, timeout=10) as http:
        response = http.get(path)
        response.raise_for_status()
        doc: dict[str, Any] = response.json()
        return doc


def _send_ids(producer: Any, ids: range) -> list[Any]:
    # The Python client treats sequence_id=0 as "not given" and numbers the message itself.
    return [producer.send(f"m{i}".encode(), sequence_id=i) for i in ids]


def test_resent_sequence_ids_are_stored_once(client: Any, standalone: StandaloneProcess) -> None:
    topic = f"persistent://{_namespace(standalone.web_url, True)}/t"
    producer = client.create_producer(topic, producer_name="p1", batching_enabled=False)
    first = _send_ids(producer, range(10))
    again = _send_ids(producer, range(5, 10))
    assert all(m.ledger_id() >= 0 for m in first)
    assert all((m.ledger_id(), m.entry_id()) == (-1, -1) for m in again)
    producer.close()
    assert read_from_start(client, topic) == [f"m{i}".encode() for i in range(10)]
    assert _stats(standalone.web_url, topic)["deduplicationStatus"] == "Enabled"


def test_reconnecting_producer_resumes_after_its_last_sequence_id(
    client: Any, standalone: StandaloneProcess
) -> None:
    topic = f"persistent://{_namespace(standalone.web_url, True)}/t"
    producer = client.create_producer(topic, producer_name="p2", batching_enabled=False)
    _send_ids(producer, range(4))
    producer.close()
    producer = client.create_producer(topic, producer_name="p2", batching_enabled=False)
    assert producer.last_sequence_id() == 3
    producer.send(b"next")  # the client numbers it 4
    _send_ids(producer, range(3, 5))  # both duplicates now
    producer.close()
    assert read_from_start(client, topic) == [b"m0", b"m1", b"m2", b"m3", b"next"]


def test_admin_switch_applies_to_a_live_topic(client: Any, standalone: StandaloneProcess) -> None:
    ns = _namespace(standalone.web_url, None)
    topic = f"persistent://{ns}/t"
    producer = client.create_producer(topic, producer_name="p3", batching_enabled=False)
    _send_ids(producer, range(2))
    _send_ids(producer, range(2))  # deduplication off: stored twice
    assert _stats(standalone.web_url, topic)["deduplicationStatus"] == "Disabled"
    _set_dedup(standalone.web_url, ns, True)
    wait_until(lambda: _stats(standalone.web_url, topic)["deduplicationStatus"] == "Enabled")
    _send_ids(producer, range(2, 4))
    _send_ids(producer, range(2, 4))  # now a duplicate
    _set_dedup(standalone.web_url, ns, False)
    wait_until(lambda: _stats(standalone.web_url, topic)["deduplicationStatus"] == "Disabled")
    internal = topic.replace("persistent://", "/admin/v2/persistent/") + "/internalStats"
    with httpx.Client(base_url=standalone.web_url, timeout=10) as http:
        assert "pulsar.dedup" not in http.get(internal).json().get("cursors", {})
    producer.close()
    assert read_from_start(client, topic) == [b"m0", b"m1", b"m0", b"m1", b"m2", b"m3"]


def test_a_run_of_sends_in_one_read_keeps_order_and_duplicates(
    client: Any, standalone: StandaloneProcess
) -> None:
    """SENDs that arrive in one socket read are handed to the managed ledger as one run (one
    slot step, one dispatch pass): a resent sequence id inside the run is still a duplicate,
    every SEND is answered in order, and the stored entries keep the frame order."""
    topic = f"persistent://{_namespace(standalone.web_url, True)}/t"
    raw = RawClient(standalone.broker_port)
    try:
        raw.open_producer(topic, "run")
        sequence_ids = [1, 2, 3, 2, 4, 5]  # the second 2: its original is still in flight
        raw.send(
            b"".join(
                encode_payload_command(
                    client_commands.send(1, seq),
                    pb.MessageMetadata(producer_name="run", sequence_id=seq, publish_time=1),
                    f"m{seq}".encode(),
                )
                for seq in sequence_ids
            )
        )
        receipts = [raw.next_frame() for _ in sequence_ids]
    finally:
        raw.close()
    assert [r.type for r in receipts] == [T.SEND_RECEIPT] * len(sequence_ids)
    assert [r.command.send_receipt.sequence_id for r in receipts] == sequence_ids
    ids = [
        (r.command.send_receipt.message_id.ledger_id, r.command.send_receipt.message_id.entry_id)
        for r in receipts
    ]
    assert ids[3] == ((1 << 64) - 1, (1 << 64) - 1)  # (-1, -1) as the uint64 fields carry it
    stored = [ids[i] for i in (0, 1, 2, 4, 5)]
    assert stored == sorted(stored)
    assert len(set(stored)) == 5
    assert read_from_start(client, topic) == [f"m{seq}".encode() for seq in (1, 2, 3, 4, 5)]
