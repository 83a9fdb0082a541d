"""Bad input on the binary protocol port of a real ``magnetar standalone``.

Raw sockets send what no client should: garbage, a frame over the size limit, a SEND whose
checksum is wrong, a command type that does not exist, an invalid topic name. The broker answers
with the right error (or closes that one connection) and keeps serving everybody else: an
official client works before, during and after.
"""

from __future__ import annotations

import socket
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.protocol import client_commands, commands
from magnetar.protocol.frame import Frame, FrameDecoder, encode_command, encode_payload_command
from magnetar.wire import pulsar_api_pb2 as pb
from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess, official_client

T = pb.BaseCommand
TIMEOUT_S = 5.0


class RawClient:
    """A blocking socket speaking frames through our codec; every read has a timeout."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
        self.decoder = FrameDecoder()
        self.frames: list[Frame] = []

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def next_frame(self) -> Frame:
        while not self.frames:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed by the broker")
            self.decoder.feed(data)
            self.frames.extend(self.decoder.frames())
        return self.frames.pop(0)

    def is_closed_by_peer(self) -> bool:
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def connect(self) -> None:
        self.send(encode_command(commands.connect(client_version="raw-test")))
        assert self.next_frame().type == T.CONNECTED

    def open_producer(self, topic: str, name: str, producer_id: int = 1) -> None:
        """:meth:`connect`, then a producer ``name`` on ``topic``, ready once this returns."""
        self.connect()
        request = client_commands.producer(topic, producer_id, 1, producer_name=name)
        self.send(encode_command(request))
        while (frame := self.next_frame()).type != T.PRODUCER_SUCCESS:
            assert frame.type != T.ERROR, frame.command

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw(standalone: StandaloneProcess) -> Iterator[RawClient]:
    client = RawClient(standalone.broker_port)
    try:
        yield client
    finally:
        client.close()


def official_round_trip(standalone: StandaloneProcess) -> None:
    client = official_client(standalone, operation_timeout_s=10)
    try:
        topic = f"persistent://public/default/healthy-{uuid.uuid4().hex[:8]}"
        consumer = client.subscribe(topic, "sub")
        client.create_producer(topic).send(b"still-serving")
        assert consumer.receive(timeout_millis=5000).data() == b"still-serving"
    finally:
        client.close()


def test_garbage_before_connect_closes_only_that_connection(
    raw: RawClient, standalone: StandaloneProcess
) -> None:
    raw.send(struct.pack(">II", 12, 8) + b"\xff" * 8)
    assert raw.is_closed_by_peer()
    official_round_trip(standalone)


def test_oversized_frame_closes_the_connection(
    raw: RawClient, standalone: StandaloneProcess
) -> None:
    raw.connect()
    raw.send(struct.pack(">I", 64 * 1024 * 1024) + b"\x00" * 1024)
    assert raw.is_closed_by_peer()
    official_round_trip(standalone)


def test_bad_checksum_gets_send_error_and_the_connection_goes_on(raw: RawClient) -> None:
    raw.connect()
    topic = f"persistent://public/default/checksum-{uuid.uuid4().hex[:8]}"
    raw.send(encode_command(commands.producer(topic, producer_id=1, request_id=1)))
    assert raw.next_frame().type == T.PRODUCER_SUCCESS
    metadata = pb.MessageMetadata(producer_name="raw", sequence_id=0, publish_time=1)
    frame = bytearray(encode_payload_command(commands.send(1, 0), metadata, b"payload"))
    frame[-1] ^= 0xFF  # corrupt the payload: the CRC32-C no longer matches
    raw.send(bytes(frame))
    reply = raw.next_frame()
    assert reply.type == T.SEND_ERROR
    assert reply.command.send_error.error == pb.ChecksumError
    # A good SEND afterwards is stored and acknowledged.
    raw.send(encode_payload_command(commands.send(1, 1), metadata, b"payload"))
    receipt = raw.next_frame()
    assert receipt.type == T.SEND_RECEIPT
    assert receipt.command.send_receipt.sequence_id == 1


def test_unknown_command_gets_an_error(raw: RawClient) -> None:
    raw.connect()
    body = b"\x08\xe7\x07"  # BaseCommand{type = 999}: no such command
    raw.send(struct.pack(">II", 4 + len(body), len(body)) + body)
    assert raw.next_frame().type == T.ERROR
    raw.send(encode_command(commands.ping()))
    assert raw.next_frame().type == T.PONG


def test_invalid_topic_name_fails_lookup_and_producer(raw: RawClient) -> None:
    raw.connect()
    raw.send(encode_command(commands.lookup("persistent://bad//name", request_id=7)))
    reply = raw.next_frame().command.lookup_topic_response
    assert reply.response == pb.CommandLookupTopicResponse.Failed
    assert reply.error == pb.InvalidTopicName
    raw.send(encode_command(commands.producer("bogus://x/y/z", producer_id=1, request_id=8)))
    error = raw.next_frame().command.error
    assert (error.request_id, error.error) == (8, pb.InvalidTopicName)


def test_command_before_connect_closes(raw: RawClient) -> None:
    raw.send(encode_command(commands.ping()))
    assert raw.is_closed_by_peer()


_METADATA = pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1)
_ACK = pb.BaseCommand(
    type=T.ACK,
    ack=pb.CommandAck(
        consumer_id=1,
        ack_type=pb.CommandAck.Individual,
        message_id=[pb.MessageIdData(ledger_id=1, entry_id=0)],
    ),
)


@pytest.mark.parametrize(
    "frame",
    [
        encode_payload_command(commands.send(1, 0), _METADATA, b"x"),
        encode_command(_ACK),
    ],
    ids=["send", "ack"],
)
def test_a_wire_read_frame_before_connect_closes(raw: RawClient, frame: bytes) -> None:
    """The SEND and the ACK the broker's reader scans from the wire (not through the command
    handler) are refused before CONNECT too. Checked against a reader without that check: the
    ACK then stays unanswered on an open connection (the test fails); the SEND still closes it,
    as a SEND for a producer never created, so that case guards the outcome, not the check."""
    raw.send(frame)
    assert raw.is_closed_by_peer()


def test_official_client_errors_on_invalid_topic(standalone: StandaloneProcess) -> None:
    client = official_client(standalone, operation_timeout_s=5)
    try:
        with pytest.raises(pulsar.InvalidTopicName):
            client.create_producer("persistent://public/default/")
    finally:
        client.close()
    official_round_trip(standalone)


def test_silent_client_gets_pinged_then_dropped(tmp_path: Path) -> None:
    sa = StandaloneProcess(
        data_dir=tmp_path / "data", env={"MAGNETAR_STANDALONE_KEEP_ALIVE_INTERVAL_S": "0.5"}
    )
    with running(sa) as process:  # asserts a clean exit at the end
        silent = RawClient(process.broker_port)
        silent.connect()
        assert silent.next_frame().type == T.PING  # the broker checks on an idle client
        assert silent.is_closed_by_peer()  # and drops it when no PONG (nothing) comes back
        silent.close()
        answering = RawClient(process.broker_port)
        answering.connect()
        for _ in range(3):  # a client answering PINGs stays connected
            assert answering.next_frame().type == T.PING
            answering.send(encode_command(commands.pong()))
        answering.close()


def test_a_key_that_is_not_utf8_does_not_stop_the_subscription(
    raw: RawClient, standalone: StandaloneProcess
) -> None:
    """A SEND whose partition key is not UTF-8 (no client writes one: the field is a string)
    is stored, and the subscription's dispatch goes past it: the consumer gets it and the
    message after it. The dispatcher used to fail on it at every retry, for good."""
    topic = f"persistent://public/default/bad-key-{uuid.uuid4().hex[:8]}"
    client = official_client(standalone, operation_timeout_s=10)
    try:
        consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
        raw.connect()
        raw.send(encode_command(commands.producer(topic, producer_id=1, request_id=1)))
        assert raw.next_frame().type == T.PRODUCER_SUCCESS
        meta = pb.MessageMetadata(producer_name="raw", sequence_id=0, publish_time=1)
        meta.partition_key = "KK"
        bad = meta.SerializeToString().replace(b"KK", b"\xff\xfe")
        section = struct.pack(">I", len(bad)) + bad + b"first"
        command = encode_command(commands.send(1, 0))[8:]  # the BaseCommand's bytes
        raw.send(struct.pack(">II", 4 + len(command) + len(section), len(command)))
        raw.send(command + section)
        assert raw.next_frame().type == T.SEND_RECEIPT
        meta.sequence_id = 1
        raw.send(encode_payload_command(commands.send(1, 1), meta, b"second"))
        assert raw.next_frame().type == T.SEND_RECEIPT
        got = [consumer.receive(timeout_millis=5000).data() for _ in range(2)]
        assert got == [b"first", b"second"]
    finally:
        client.close()
