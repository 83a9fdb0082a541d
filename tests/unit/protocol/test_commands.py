"""Every command constructor produces a frame our decoder reads back, and encodes the traps."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from magnetar.protocol import commands
from magnetar.protocol.frame import FrameDecoder, encode_command, encode_payload_command
from magnetar.protocol.message_id import EARLIEST, MessageId
from magnetar.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand
SCHEMA = pb.Schema(name="s", schema_data=b"{}", type=pb.Schema.Json)

SIMPLE: list[tuple[int, Callable[[], pb.BaseCommand]]] = [
    (T.CONNECTED, lambda: commands.connected(server_version="m", protocol_version=20)),
    (T.SUCCESS, lambda: commands.success(1, schema=SCHEMA)),
    (T.ERROR, lambda: commands.error(1, pb.TopicNotFound, "no")),
    (T.PRODUCER_SUCCESS, lambda: commands.producer_success(1, "p", schema_version=b"\0" * 8)),
    (T.SEND_RECEIPT, lambda: commands.send_receipt(1, 2, MessageId(3, 4))),
    (T.SEND_ERROR, lambda: commands.send_error(1, 2, pb.ChecksumError, "bad")),
    (T.LOOKUP_RESPONSE, lambda: commands.lookup_response(1, broker_service_url="pulsar://h:1")),
    (T.LOOKUP_RESPONSE, lambda: commands.lookup_failed(1, pb.ServiceNotReady, "later")),
    (T.PARTITIONED_METADATA_RESPONSE, lambda: commands.partitioned_metadata_response(1, 0)),
    (
        T.PARTITIONED_METADATA_RESPONSE,
        lambda: commands.partitioned_metadata_failed(1, pb.TopicNotFound, "no"),
    ),
    (T.ACTIVE_CONSUMER_CHANGE, lambda: commands.active_consumer_change(1, True)),
    (
        T.GET_LAST_MESSAGE_ID_RESPONSE,
        lambda: commands.get_last_message_id_response(
            1, MessageId(1, 2), mark_delete_position=MessageId(1, 1)
        ),
    ),
    (
        T.GET_TOPICS_OF_NAMESPACE_RESPONSE,
        lambda: commands.get_topics_of_namespace_response(1, ["persistent://a/b/c"]),
    ),
    (T.GET_SCHEMA_RESPONSE, lambda: commands.get_schema_response(1, SCHEMA, b"\0" * 8)),
    (T.GET_SCHEMA_RESPONSE, lambda: commands.get_schema_error(1)),
    (T.CONSUMER_STATS_RESPONSE, lambda: commands.consumer_stats_response(1, msg_backlog=5)),
    (
        T.CONSUMER_STATS_RESPONSE,
        lambda: commands.consumer_stats_error(1, pb.ConsumerNotFound, "x"),
    ),
    (T.CLOSE_PRODUCER, lambda: commands.close_producer(1)),
    (T.CLOSE_CONSUMER, lambda: commands.close_consumer(1, 7)),
    (T.PING, commands.ping),
    (T.PONG, commands.pong),
    (T.ACK_RESPONSE, lambda: commands.ack_response(1, 2, code=pb.UnknownError, message="m")),
    (T.REACHED_END_OF_TOPIC, lambda: commands.reached_end_of_topic(1)),
    (T.CONNECT, lambda: commands.connect(client_version="Magnetar-Python-0.1")),
    (T.PARTITIONED_METADATA, lambda: commands.partitioned_metadata("persistent://a/b/c", 1)),
    (T.LOOKUP, lambda: commands.lookup("persistent://a/b/c", 1, advertised_listener_name="")),
    (T.PRODUCER, lambda: commands.producer("t", 1, 2, metadata={"k": "v"}, schema=SCHEMA)),
    (
        T.SUBSCRIBE,
        lambda: commands.subscribe(
            "t",
            "s",
            1,
            2,
            sub_type=pb.CommandSubscribe.Key_Shared,
            durable=False,
            start_message_id=EARLIEST,
            key_shared_meta=pb.KeySharedMeta(
                key_shared_mode=pb.STICKY, hash_ranges=[pb.IntRange(start=0, end=100)]
            ),
        ),
    ),
    (T.FLOW, lambda: commands.flow(1, 1000)),
    (
        T.ACK,
        lambda: commands.ack(
            1, [MessageId(1, 2), MessageId(1, 3, 0).to_proto(ack_set=[6])], request_id=5
        ),
    ),
    (T.UNSUBSCRIBE, lambda: commands.unsubscribe(1, 2, force=True)),
    (
        T.REDELIVER_UNACKNOWLEDGED_MESSAGES,
        lambda: commands.redeliver_unacknowledged_messages(1, [MessageId(1, 2)]),
    ),
    (T.SEEK, lambda: commands.seek(1, 2, publish_time_ms=1000)),
    (T.SEEK, lambda: commands.seek(1, 2, message_id=MessageId(1, 2))),
    (T.GET_LAST_MESSAGE_ID, lambda: commands.get_last_message_id(1, 2)),
    (T.GET_TOPICS_OF_NAMESPACE, lambda: commands.get_topics_of_namespace(1, "public/default")),
    (T.GET_SCHEMA, lambda: commands.get_schema(1, "t", schema_version=b"\0" * 8)),
    (T.CONSUMER_STATS, lambda: commands.consumer_stats(1, 2)),
]


@pytest.mark.parametrize(("type_", "build"), SIMPLE)
def test_simple_commands_round_trip(type_: int, build: Callable[[], pb.BaseCommand]) -> None:
    command = build()
    assert command.type == type_
    decoder = FrameDecoder()
    decoder.feed(encode_command(command))
    (frame,) = decoder.frames()
    assert frame.command == command
    assert frame.payload is None


def test_payload_commands_round_trip() -> None:
    meta = pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=2)
    for command in (commands.send(1, 1, num_messages=3), commands.message(1, MessageId(1, 2))):
        decoder = FrameDecoder()
        decoder.feed(encode_payload_command(command, meta, b"x"))
        (frame,) = decoder.frames()
        assert frame.command == command


def test_partitioned_metadata_response_sets_success_explicitly() -> None:
    body = commands.partitioned_metadata_response(1, 0).partition_metadata_response
    assert body.HasField("response")
    assert body.HasField("partitions")


def test_lookup_response_connect_is_authoritative() -> None:
    body = commands.lookup_response(1, broker_service_url="pulsar://h:1").lookup_topic_response
    assert body.response == pb.CommandLookupTopicResponse.Connect
    assert body.authoritative
    redirect = commands.lookup_response(1, broker_service_url="u", redirect=True)
    assert redirect.lookup_topic_response.response == pb.CommandLookupTopicResponse.Redirect


def test_broker_initiated_close_uses_request_id_minus_one() -> None:
    assert commands.close_producer(1).close_producer.request_id == 2**64 - 1
    assert commands.close_consumer(1).close_consumer.request_id == 2**64 - 1


def test_get_schema_error_defaults_match_java_no_schema_answer() -> None:
    body = commands.get_schema_error(1).get_schema_response
    assert body.error_code == pb.TopicNotFound
    assert not body.HasField("schema")


def test_message_omits_zero_redelivery_count() -> None:
    assert not commands.message(1, MessageId(1, 2)).message.HasField("redelivery_count")
    assert commands.message(1, MessageId(1, 2), redelivery_count=2).message.redelivery_count == 2


def test_producer_name_flags() -> None:
    assert not commands.producer("t", 1, 2).producer.user_provided_producer_name
    named = commands.producer("t", 1, 2, producer_name="n").producer
    assert named.user_provided_producer_name
    assert named.producer_name == "n"


def test_seek_needs_exactly_one_target() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        commands.seek(1, 2)


def test_cpp_client_acceptance_set() -> None:
    assert T.REACHED_END_OF_TOPIC not in commands.CPP_CLIENT_ACCEPTS
    assert T.GET_OR_CREATE_SCHEMA_RESPONSE not in commands.CPP_CLIENT_ACCEPTS
    assert T.MESSAGE in commands.CPP_CLIENT_ACCEPTS
    assert len(commands.CPP_CLIENT_ACCEPTS) == 20


def test_every_type_value_has_a_body_field() -> None:
    for value in pb.BaseCommand.Type.values():
        field = pb.BaseCommand.DESCRIPTOR.fields_by_number[value]
        assert field.message_type is not None


def test_optional_arguments_left_at_none_leave_their_fields_unset() -> None:
    # The constructors hand None straight to protobuf, which must then leave the field unset.
    close = commands.close_producer(1).close_producer
    assert not close.HasField("assigned_broker_service_url")
    assert not close.HasField("assigned_broker_service_url_tls")
    connect = commands.connect(client_version="c").connect
    assert not connect.HasField("auth_method_name")
    assert not connect.HasField("auth_data")
    assert not commands.success(1).success.HasField("schema")
    assert not commands.send(1, 2).send.HasField("num_messages")
    ack = commands.ack(1, [MessageId(1, 2)]).ack
    assert not ack.HasField("request_id")
    assert not ack.HasField("validation_error")
    response = commands.ack_response(1, 2).ack_response
    assert not response.HasField("error")
    assert not response.HasField("message")
    given = commands.close_consumer(1, assigned_broker_service_url="pulsar://h:1").close_consumer
    assert given.assigned_broker_service_url == "pulsar://h:1"
