"""Constructors for the commands a client sends (CONNECT, PRODUCER, SUBSCRIBE, SEND, ACK ...).

Used by Magnetar's own asyncio client and by tests; re-exported by
:mod:`magnetar.protocol.commands`, so callers write ``commands.subscribe(...)`` for either side.

Optional arguments left at None go straight to the protobuf constructors, which leave a field
given None unset. Pure functions; safe from any task or thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from magnetar.protocol.envelope import key_values, wrap
from magnetar.protocol.message_id import MessageId
from magnetar.protocol.version import MAX_PROTOCOL_VERSION, client_feature_flags
from magnetar.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand


def _id_proto(message_id: MessageId | pb.MessageIdData) -> pb.MessageIdData:
    return message_id if isinstance(message_id, pb.MessageIdData) else message_id.to_proto()


def connect(
    *,
    client_version: str,
    protocol_version: int = MAX_PROTOCOL_VERSION,
    auth_method_name: str | None = None,
    auth_data: bytes | None = None,
    feature_flags: pb.FeatureFlags | None = None,
    proxy_to_broker_url: str | None = None,
) -> pb.BaseCommand:
    body = pb.CommandConnect(
        client_version=client_version,
        protocol_version=protocol_version,
        auth_method_name=auth_method_name,
        auth_data=auth_data,
        proxy_to_broker_url=proxy_to_broker_url,
        feature_flags=feature_flags or client_feature_flags(),
    )
    return wrap(T.CONNECT, body)


def partitioned_metadata(topic: str, request_id: int) -> pb.BaseCommand:
    body = pb.CommandPartitionedTopicMetadata(topic=topic, request_id=request_id)
    return wrap(T.PARTITIONED_METADATA, body)


def lookup(
    topic: str,
    request_id: int,
    *,
    authoritative: bool = False,
    advertised_listener_name: str | None = None,
) -> pb.BaseCommand:
    body = pb.CommandLookupTopic(
        topic=topic,
        request_id=request_id,
        authoritative=authoritative,
        advertised_listener_name=advertised_listener_name,
    )
    return wrap(T.LOOKUP, body)


def producer(
    topic: str,
    producer_id: int,
    request_id: int,
    *,
    producer_name: str | None = None,
    access_mode: pb.ProducerAccessMode.ValueType = pb.Shared,
    epoch: int = 0,
    schema: pb.Schema | None = None,
    metadata: Mapping[str, str] | None = None,
    topic_epoch: int | None = None,
) -> pb.BaseCommand:
    body = pb.CommandProducer(
        topic=topic,
        producer_id=producer_id,
        request_id=request_id,
        producer_name=producer_name,
        user_provided_producer_name=producer_name is not None,
        producer_access_mode=access_mode,
        epoch=epoch,
        schema=schema,
        metadata=key_values(metadata),
        topic_epoch=topic_epoch,
    )
    return wrap(T.PRODUCER, body)


def send(
    producer_id: int,
    sequence_id: int,
    *,
    num_messages: int | None = None,
    highest_sequence_id: int | None = None,
    is_chunk: bool = False,
) -> pb.BaseCommand:
    """SEND command; frame it with :func:`magnetar.protocol.frame.encode_payload_command`."""
    body = pb.CommandSend(
        producer_id=producer_id,
        sequence_id=sequence_id,
        num_messages=num_messages,
        highest_sequence_id=highest_sequence_id,
    )
    if is_chunk:
        body.is_chunk = True
    return wrap(T.SEND, body)


def subscribe(
    topic: str,
    subscription: str,
    consumer_id: int,
    request_id: int,
    *,
    sub_type: pb.CommandSubscribe.SubType.ValueType = pb.CommandSubscribe.Exclusive,
    consumer_name: str | None = None,
    initial_position: pb.CommandSubscribe.InitialPosition.ValueType = (pb.CommandSubscribe.Latest),
    durable: bool = True,
    start_message_id: MessageId | None = None,
    read_compacted: bool = False,
    priority_level: int | None = None,
    key_shared_meta: pb.KeySharedMeta | None = None,
    metadata: Mapping[str, str] | None = None,
    subscription_properties: Mapping[str, str] | None = None,
    schema: pb.Schema | None = None,
) -> pb.BaseCommand:
    body = pb.CommandSubscribe(
        topic=topic,
        subscription=subscription,
        sub_type=sub_type,
        consumer_id=consumer_id,
        request_id=request_id,
        consumer_name=consumer_name,
        priority_level=priority_level,
        initial_position=initial_position,
        durable=durable,
        read_compacted=read_compacted,
        key_shared_meta=key_shared_meta,
        metadata=key_values(metadata),
        subscription_properties=key_values(subscription_properties),
        schema=schema,
    )
    if start_message_id is not None:
        body.start_message_id.CopyFrom(start_message_id.to_proto())
    return wrap(T.SUBSCRIBE, body)


def flow(consumer_id: int, message_permits: int) -> pb.BaseCommand:
    body = pb.CommandFlow(consumer_id=consumer_id, message_permits=message_permits)
    return wrap(T.FLOW, body)


def ack(
    consumer_id: int,
    message_ids: Iterable[MessageId | pb.MessageIdData],
    *,
    ack_type: pb.CommandAck.AckType.ValueType = pb.CommandAck.Individual,
    request_id: int | None = None,
    validation_error: pb.CommandAck.ValidationError.ValueType | None = None,
) -> pb.BaseCommand:
    """ACK; pass MessageIdData to carry an ack_set (``MessageId.to_proto(ack_set=...)``)."""
    body = pb.CommandAck(
        consumer_id=consumer_id,
        ack_type=ack_type,
        message_id=[_id_proto(m) for m in message_ids],
        validation_error=validation_error,
        request_id=request_id,
    )
    return wrap(T.ACK, body)


def unsubscribe(consumer_id: int, request_id: int, *, force: bool = False) -> pb.BaseCommand:
    body = pb.CommandUnsubscribe(consumer_id=consumer_id, request_id=request_id)
    if force:
        body.force = True
    return wrap(T.UNSUBSCRIBE, body)


def redeliver_unacknowledged_messages(
    consumer_id: int, message_ids: Iterable[MessageId] = ()
) -> pb.BaseCommand:
    """No ids: redeliver everything unacked (Exclusive and Failover)."""
    body = pb.CommandRedeliverUnacknowledgedMessages(
        consumer_id=consumer_id, message_ids=[m.to_proto() for m in message_ids]
    )
    return wrap(T.REDELIVER_UNACKNOWLEDGED_MESSAGES, body)


def seek(
    consumer_id: int,
    request_id: int,
    *,
    message_id: MessageId | None = None,
    publish_time_ms: int | None = None,
) -> pb.BaseCommand:
    if (message_id is None) == (publish_time_ms is None):
        raise ValueError("seek needs exactly one of message_id and publish_time_ms")
    body = pb.CommandSeek(
        consumer_id=consumer_id, request_id=request_id, message_publish_time=publish_time_ms
    )
    if message_id is not None:
        body.message_id.CopyFrom(message_id.to_proto())
    return wrap(T.SEEK, body)


def get_last_message_id(consumer_id: int, request_id: int) -> pb.BaseCommand:
    body = pb.CommandGetLastMessageId(consumer_id=consumer_id, request_id=request_id)
    return wrap(T.GET_LAST_MESSAGE_ID, body)


def get_topics_of_namespace(
    request_id: int,
    namespace: str,
    *,
    mode: pb.CommandGetTopicsOfNamespace.Mode.ValueType = pb.CommandGetTopicsOfNamespace.PERSISTENT,
) -> pb.BaseCommand:
    body = pb.CommandGetTopicsOfNamespace(request_id=request_id, namespace=namespace, mode=mode)
    return wrap(T.GET_TOPICS_OF_NAMESPACE, body)


def get_schema(
    request_id: int, topic: str, *, schema_version: bytes | None = None
) -> pb.BaseCommand:
    body = pb.CommandGetSchema(request_id=request_id, topic=topic, schema_version=schema_version)
    return wrap(T.GET_SCHEMA, body)


def consumer_stats(request_id: int, consumer_id: int) -> pb.BaseCommand:
    body = pb.CommandConsumerStats(request_id=request_id, consumer_id=consumer_id)
    return wrap(T.CONSUMER_STATS, body)
