"""Input parsing and output formatting of magnetar produce/consume (no broker)."""

from __future__ import annotations

import base64
import json

import pytest

from magnetar.client import errors as client_errors
from magnetar.client.message import Message
from magnetar.protocol.message_id import MessageId
from magnetar.tools.consume import ConsumeRequest
from magnetar.tools.errors import BadInput, ConsumeTimeout, explain
from magnetar.tools.messages import (
    HEADER,
    format_message,
    format_message_id,
    hexdump,
    parse_properties,
    split_lines,
)
from magnetar.tools.produce import ProduceRequest, collect_payloads
from magnetar.wire import pulsar_api_pb2 as pb


def _message(data: bytes = b"hello", key: str | None = "k") -> Message:
    return Message(
        topic="persistent://public/default/t",
        message_id=MessageId(7, 3, batch_index=1),
        data=data,
        key=key,
        properties={"b": "2", "a": "1"},
        publish_time_ms=1_700_000_000_000,
        event_time_ms=None,
        redelivery_count=2,
        producer_name="p",
        sequence_id=9,
    )


def test_parse_properties() -> None:
    assert parse_properties(["a=1", "b=x=y", "a=3", "e="]) == {"a": "3", "b": "x=y", "e": ""}


@pytest.mark.parametrize("bad", ["novalue", "=v", ""])
def test_parse_properties_rejects(bad: str) -> None:
    with pytest.raises(BadInput, match="key=value"):
        parse_properties([bad])


@pytest.mark.parametrize(
    ("data", "lines"),
    [
        (b"", []),
        (b"a\nb\n", [b"a", b"b"]),
        (b"a\nb", [b"a", b"b"]),
        (b"a\r\n\r\nb\r\n", [b"a", b"", b"b"]),
        (b"\n", [b""]),
    ],
)
def test_split_lines(data: bytes, lines: list[bytes]) -> None:
    assert split_lines(data) == lines


def test_collect_payloads() -> None:
    assert collect_payloads(["x", "é"], None, whole_file=False) == [b"x", "é".encode()]
    assert collect_payloads([], b"1\n2\n", whole_file=False) == [b"1", b"2"]
    assert collect_payloads([], b"1\n2\n", whole_file=True) == [b"1\n2\n"]
    assert collect_payloads([], None, whole_file=False) == []
    with pytest.raises(BadInput):
        collect_payloads(["x"], b"y", whole_file=False)


def test_request_validation() -> None:
    with pytest.raises(BadInput, match="num-produce"):
        ProduceRequest("t", [b"x"], repeat=0)
    with pytest.raises(BadInput, match="compression"):
        ProduceRequest("t", [b"x"], compression="gzip")
    with pytest.raises(BadInput, match="rate"):
        ProduceRequest("t", [b"x"], rate=0)
    with pytest.raises(BadInput, match="subscription type"):
        ConsumeRequest("t", "s", subscription_type="bogus")
    with pytest.raises(BadInput, match="position"):
        ConsumeRequest("t", "s", position="middle")
    ConsumeRequest("t", "s", subscription_type="key_shared", position="earliest")


def test_message_id_text_follows_the_java_client() -> None:
    assert format_message_id(MessageId(1, 2)) == "1:2:-1"
    assert format_message_id(MessageId(1, 2, batch_index=0, partition=3)) == "1:2:3:0"


def test_text_output_is_pulsar_clients_block() -> None:
    text = format_message(_message(), "text")
    assert text == f"{HEADER}\nkey:[k], properties:[a=1, b=2], content:hello"
    assert "key:[null]" in format_message(_message(key=None), "text")
    assert format_message(_message(b"\xff"), "text").endswith("content:\ufffd")


def test_hex_output() -> None:
    text = format_message(_message(b"AB\x00"), "hex")
    assert text.splitlines()[0] == HEADER
    assert text.splitlines()[2].startswith("00000000  41 42 00")
    assert text.endswith("|AB.|")
    assert len(hexdump(bytes(40)).splitlines()) == 3


def test_json_output() -> None:
    doc = json.loads(format_message(_message("é".encode()), "json"))
    assert doc == {
        "topic": "persistent://public/default/t",
        "message_id": "7:3:-1:1",
        "key": "k",
        "properties": {"a": "1", "b": "2"},
        "publish_time": 1_700_000_000_000,
        "event_time": None,
        "redelivery_count": 2,
        "producer_name": "p",
        "sequence_id": 9,
        "encoding": "utf-8",
        "data": "é",
    }
    binary = json.loads(format_message(_message(b"\xff\x00"), "json"))
    assert binary["encoding"] == "base64"
    assert base64.b64decode(binary["data"]) == b"\xff\x00"
    forced = json.loads(format_message(_message(b"hi"), "json", force_base64=True))
    assert (forced["encoding"], forced["data"]) == ("base64", "aGk=")


def test_unknown_output_format() -> None:
    with pytest.raises(BadInput):
        format_message(_message(), "xml")  # type: ignore[arg-type]


def test_explain_names_the_problem_and_the_fix() -> None:
    url = "pulsar://127.0.0.1:1"
    text = explain(client_errors.ConnectionFailed("refused"), service_url=url)
    assert url in text
    assert "--service-url" in text
    missing = client_errors.server_error(pb.TopicNotFound, "topic persistent://x/y/z not found")
    text = explain(missing, service_url=url, topic="persistent://x/y/z")
    assert "tenant 'x'" in text
    assert "namespace 'x/y'" in text
    busy = client_errors.server_error(pb.ConsumerBusy, "exclusive consumer already connected")
    assert "-t shared" in explain(busy, service_url=url)
    assert "received 1 of 3" in explain(ConsumeTimeout(1, 3, 2.0), service_url=url)
