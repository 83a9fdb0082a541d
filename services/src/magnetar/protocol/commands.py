"""Constructors for the commands a broker sends and those a client sends.

Each returns a ready :class:`BaseCommand` with its type and body set, so the frame encoder
accepts it. Message ids are given as :class:`~magnetar.protocol.message_id.MessageId` (signed
values); the constructors write the uint64 wire form.

Traps these constructors encode (see docs/reference pulsar-binary-protocol.md):

* PARTITIONED_METADATA_RESPONSE and LOOKUP_RESPONSE always set ``response`` explicitly; errors
  for those requests (and GET_SCHEMA) travel inside the response, never as ERROR.
* A broker-initiated CLOSE_PRODUCER / CLOSE_CONSUMER uses request id -1 (2^64-1 on the wire).
* C++-based clients close the connection on any command outside :data:`CPP_CLIENT_ACCEPTS`
  (REACHED_END_OF_TOPIC, GET_OR_CREATE_SCHEMA_RESPONSE ...).

Pure functions; safe from any task or thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TypeAlias

from google.protobuf.message import Message

from magnetar.protocol.message_id import MessageId
from magnetar.protocol.version import MAX_PROTOCOL_VERSION, client_feature_flags
from magnetar.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand
ServerErrorCode: TypeAlias = pb.ServerError.ValueType

# request_id the broker uses for commands it starts itself (-1 as uint64).
BROKER_REQUEST_ID = (1 << 64) - 1

# What a C++ client (and so the Python client) accepts once connected; anything else makes it
# close the connection. Before CONNECTED it accepts CONNECTED only.
CPP_CLIENT_ACCEPTS = frozenset(
    {
        T.MESSAGE,
        T.SEND_RECEIPT,
        T.SEND_ERROR,
        T.SUCCESS,
        T.ERROR,
        T.PARTITIONED_METADATA_RESPONSE,
        T.LOOKUP_RESPONSE,
        T.PRODUCER_SUCCESS,
        T.CONSUMER_STATS_RESPONSE,
        T.TOPIC_MIGRATED,
        T.CLOSE_PRODUCER,
        T.CLOSE_CONSUMER,
        T.PING,
        T.PONG,
        T.AUTH_CHALLENGE,
        T.ACTIVE_CONSUMER_CHANGE,
        T.GET_LAST_MESSAGE_ID_RESPONSE,
        T.GET_TOPICS_OF_NAMESPACE_RESPONSE,
        T.GET_SCHEMA_RESPONSE,
        T.ACK_RESPONSE,
    }
)


def wrap(type_: pb.BaseCommand.Type.ValueType, body: Message) -> pb.BaseCommand:
    """A BaseCommand of ``type_`` holding ``body`` (which must be that type's message)."""
    command = pb.BaseCommand(type=type_)
    field = pb.BaseCommand.DESCRIPTOR.fields_by_number[type_]
    getattr(command, field.name).CopyFrom(body)
    return command


def _key_values(values: Mapping[str, str] | None) -> list[pb.KeyValue]:
    return [pb.KeyValue(key=k, value=v) for k, v in (values or {}).items()]


def _id_proto(message_id: MessageId | pb.MessageIdData) -> pb.MessageIdData:
    return message_id if isinstance(message_id, pb.MessageIdData) else message_id.to_proto()


# ================================================================== broker -> client


def connected(
    *,
    server_version: str,
    protocol_version: int,
    max_message_size: int | None = None,
    feature_flags: pb.FeatureFlags | None = None,
) -> pb.BaseCommand:
    body = pb.CommandConnected(server_version=server_version, protocol_version=protocol_version)
    if max_message_size is not None:
        body.max_message_size = max_message_size
    if feature_flags is not None:
        body.feature_flags.CopyFrom(feature_flags)
    return wrap(T.CONNECTED, body)


def success(request_id: int, *, schema: pb.Schema | None = None) -> pb.BaseCommand:
    body = pb.CommandSuccess(request_id=request_id)
    if schema is not None:
        body.schema.CopyFrom(schema)
    return wrap(T.SUCCESS, body)


def error(request_id: int, code: ServerErrorCode, message: str) -> pb.BaseCommand:
    return wrap(T.ERROR, pb.CommandError(request_id=request_id, error=code, message=message))


def producer_success(
    request_id: int,
    producer_name: str,
    *,
    last_sequence_id: int = -1,
    schema_version: bytes | None = None,
    topic_epoch: int | None = None,
    producer_ready: bool = True,
) -> pb.BaseCommand:
    body = pb.CommandProducerSuccess(
        request_id=request_id,
        producer_name=producer_name,
        last_sequence_id=last_sequence_id,
        producer_ready=producer_ready,
    )
    if schema_version is not None:
        body.schema_version = schema_version
    if topic_epoch is not None:
        body.topic_epoch = topic_epoch
    return wrap(T.PRODUCER_SUCCESS, body)


def send_receipt(
    producer_id: int,
    sequence_id: int,
    message_id: MessageId,
    *,
    highest_sequence_id: int | None = None,
) -> pb.BaseCommand:
    body = pb.CommandSendReceipt(
        producer_id=producer_id, sequence_id=sequence_id, message_id=message_id.to_proto()
    )
    if highest_sequence_id is not None:
        body.highest_sequence_id = highest_sequence_id
    return wrap(T.SEND_RECEIPT, body)


def send_error(
    producer_id: int, sequence_id: int, code: ServerErrorCode, message: str
) -> pb.BaseCommand:
    """SEND_ERROR. The C++ client survives only ChecksumError; others make it reconnect."""
    body = pb.CommandSendError(
        producer_id=producer_id, sequence_id=sequence_id, error=code, message=message
    )
    return wrap(T.SEND_ERROR, body)


def lookup_response(
    request_id: int,
    *,
    broker_service_url: str,
    broker_service_url_tls: str | None = None,
    redirect: bool = False,
    authoritative: bool = True,
    proxy_through_service_url: bool = False,
) -> pb.BaseCommand:
    """LOOKUP_RESPONSE Connect (or Redirect): where the client must go for the topic."""
    lookup = pb.CommandLookupTopicResponse
    body = lookup(
        request_id=request_id,
        response=lookup.Redirect if redirect else lookup.Connect,
        broker_service_url=broker_service_url,
        authoritative=authoritative,
        proxy_through_service_url=proxy_through_service_url,
    )
    if broker_service_url_tls is not None:
        body.broker_service_url_tls = broker_service_url_tls
    return wrap(T.LOOKUP_RESPONSE, body)


def lookup_failed(request_id: int, code: ServerErrorCode, message: str) -> pb.BaseCommand:
    body = pb.CommandLookupTopicResponse(
        request_id=request_id,
        response=pb.CommandLookupTopicResponse.Failed,
        error=code,
        message=message,
    )
    return wrap(T.LOOKUP_RESPONSE, body)


def partitioned_metadata_response(request_id: int, partitions: int) -> pb.BaseCommand:
    """partitions=0 means a non-partitioned topic. response=Success is set explicitly."""
    body = pb.CommandPartitionedTopicMetadataResponse(
        request_id=request_id,
        partitions=partitions,
        response=pb.CommandPartitionedTopicMetadataResponse.Success,
    )
    return wrap(T.PARTITIONED_METADATA_RESPONSE, body)


def partitioned_metadata_failed(
    request_id: int, code: ServerErrorCode, message: str
) -> pb.BaseCommand:
    body = pb.CommandPartitionedTopicMetadataResponse(
        request_id=request_id,
        response=pb.CommandPartitionedTopicMetadataResponse.Failed,
        error=code,
        message=message,
    )
    return wrap(T.PARTITIONED_METADATA_RESPONSE, body)


def message(
    consumer_id: int,
    message_id: MessageId,
    *,
    redelivery_count: int = 0,
    ack_set: Sequence[int] = (),
    consumer_epoch: int | None = None,
) -> pb.BaseCommand:
    """MESSAGE command; frame it with :func:`magnetar.protocol.frame.encode_message`."""
    body = pb.CommandMessage(consumer_id=consumer_id, message_id=message_id.to_proto())
    if redelivery_count > 0:
        body.redelivery_count = redelivery_count
    body.ack_set.extend(ack_set)
    if consumer_epoch is not None:
        body.consumer_epoch = consumer_epoch
    return wrap(T.MESSAGE, body)


def active_consumer_change(consumer_id: int, is_active: bool) -> pb.BaseCommand:
    """Failover subscriptions only, and only to peers >= v12."""
    body = pb.CommandActiveConsumerChange(consumer_id=consumer_id, is_active=is_active)
    return wrap(T.ACTIVE_CONSUMER_CHANGE, body)


def get_last_message_id_response(
    request_id: int,
    last_message_id: MessageId,
    *,
    mark_delete_position: MessageId | None = None,
) -> pb.BaseCommand:
    body = pb.CommandGetLastMessageIdResponse(
        request_id=request_id, last_message_id=last_message_id.to_proto()
    )
    if mark_delete_position is not None:
        body.consumer_mark_delete_position.CopyFrom(mark_delete_position.to_proto())
    return wrap(T.GET_LAST_MESSAGE_ID_RESPONSE, body)


def get_topics_of_namespace_response(
    request_id: int,
    topics: Iterable[str],
    *,
    filtered: bool = False,
    topics_hash: str | None = None,
    changed: bool = True,
) -> pb.BaseCommand:
    body = pb.CommandGetTopicsOfNamespaceResponse(
        request_id=request_id, topics=list(topics), filtered=filtered, changed=changed
    )
    if topics_hash is not None:
        body.topics_hash = topics_hash
    return wrap(T.GET_TOPICS_OF_NAMESPACE_RESPONSE, body)


def get_schema_response(
    request_id: int, schema: pb.Schema, schema_version: bytes
) -> pb.BaseCommand:
    body = pb.CommandGetSchemaResponse(
        request_id=request_id, schema=schema, schema_version=schema_version
    )
    return wrap(T.GET_SCHEMA_RESPONSE, body)


def get_schema_error(
    request_id: int,
    code: ServerErrorCode = pb.TopicNotFound,
    message: str = "Topic not found or no-schema",
) -> pb.BaseCommand:
    """GET_SCHEMA_RESPONSE carrying an error. The defaults are the Java broker's "no schema"."""
    body = pb.CommandGetSchemaResponse(
        request_id=request_id, error_code=code, error_message=message
    )
    return wrap(T.GET_SCHEMA_RESPONSE, body)


def consumer_stats_response(
    request_id: int,
    *,
    consumer_name: str = "",
    msg_rate_out: float = 0.0,
    msg_throughput_out: float = 0.0,
    msg_rate_redeliver: float = 0.0,
    available_permits: int = 0,
    unacked_messages: int = 0,
    blocked_consumer_on_unacked_msgs: bool = False,
    address: str = "",
    connected_since: str = "",
    type_: str = "",
    msg_rate_expired: float = 0.0,
    msg_backlog: int = 0,
    message_ack_rate: float = 0.0,
) -> pb.BaseCommand:
    body = pb.CommandConsumerStatsResponse(
        request_id=request_id,
        consumer_name=consumer_name,
        msg_rate_out=msg_rate_out,
        msg_throughput_out=msg_throughput_out,
        msg_rate_redeliver=msg_rate_redeliver,
        available_permits=available_permits,
        unacked_messages=unacked_messages,
        blocked_consumer_on_unacked_msgs=blocked_consumer_on_unacked_msgs,
        address=address,
        connected_since=connected_since,
        type=type_,
        msg_rate_expired=msg_rate_expired,
        msg_backlog=msg_backlog,
        message_ack_rate=message_ack_rate,
    )
    return wrap(T.CONSUMER_STATS_RESPONSE, body)


def consumer_stats_error(request_id: int, code: ServerErrorCode, message: str) -> pb.BaseCommand:
    body = pb.CommandConsumerStatsResponse(
        request_id=request_id, error_code=code, error_message=message
    )
    return wrap(T.CONSUMER_STATS_RESPONSE, body)


def close_producer(
    producer_id: int,
    request_id: int = BROKER_REQUEST_ID,
    *,
    assigned_broker_service_url: str | None = None,
    assigned_broker_service_url_tls: str | None = None,
) -> pb.BaseCommand:
    """CLOSE_PRODUCER; from a broker (default request id) it makes the client reconnect."""
    body = pb.CommandCloseProducer(producer_id=producer_id, request_id=request_id)
    if assigned_broker_service_url is not None:
        body.assigned_broker_service_url = assigned_broker_service_url
    if assigned_broker_service_url_tls is not None:
        body.assigned_broker_service_url_tls = assigned_broker_service_url_tls
    return wrap(T.CLOSE_PRODUCER, body)


def close_consumer(
    consumer_id: int,
    request_id: int = BROKER_REQUEST_ID,
    *,
    assigned_broker_service_url: str | None = None,
    assigned_broker_service_url_tls: str | None = None,
) -> pb.BaseCommand:
    """CLOSE_CONSUMER; from a broker (default request id) it makes the client resubscribe."""
    body = pb.CommandCloseConsumer(consumer_id=consumer_id, request_id=request_id)
    if assigned_broker_service_url is not None:
        body.assigned_broker_service_url = assigned_broker_service_url
    if assigned_broker_service_url_tls is not None:
        body.assigned_broker_service_url_tls = assigned_broker_service_url_tls
    return wrap(T.CLOSE_CONSUMER, body)


def ping() -> pb.BaseCommand:
    return wrap(T.PING, pb.CommandPing())


def pong() -> pb.BaseCommand:
    return wrap(T.PONG, pb.CommandPong())


def ack_response(
    consumer_id: int,
    request_id: int,
    *,
    code: ServerErrorCode | None = None,
    message: str | None = None,
) -> pb.BaseCommand:
    """ACK_RESPONSE, owed only when the ACK carried a request_id."""
    body = pb.CommandAckResponse(consumer_id=consumer_id, request_id=request_id)
    if code is not None:
        body.error = code
    if message is not None:
        body.message = message
    return wrap(T.ACK_RESPONSE, body)


def reached_end_of_topic(consumer_id: int) -> pb.BaseCommand:
    """For Java clients only: C++-based clients close the connection on it."""
    return wrap(T.REACHED_END_OF_TOPIC, pb.CommandReachedEndOfTopic(consumer_id=consumer_id))


# ================================================================== client -> broker


def connect(
    *,
    client_version: str,
    protocol_version: int = MAX_PROTOCOL_VERSION,
    auth_method_name: str | None = None,
    auth_data: bytes | None = None,
    feature_flags: pb.FeatureFlags | None = None,
    proxy_to_broker_url: str | None = None,
) -> pb.BaseCommand:
    body = pb.CommandConnect(client_version=client_version, protocol_version=protocol_version)
    if auth_method_name is not None:
        body.auth_method_name = auth_method_name
    if auth_data is not None:
        body.auth_data = auth_data
    if proxy_to_broker_url is not None:
        body.proxy_to_broker_url = proxy_to_broker_url
    body.feature_flags.CopyFrom(feature_flags or client_feature_flags())
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
    body = pb.CommandLookupTopic(topic=topic, request_id=request_id, authoritative=authoritative)
    if advertised_listener_name is not None:
        body.advertised_listener_name = advertised_listener_name
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
        producer_access_mode=access_mode,
        epoch=epoch,
        metadata=_key_values(metadata),
    )
    if producer_name is not None:
        body.producer_name = producer_name
        body.user_provided_producer_name = True
    else:
        body.user_provided_producer_name = False
    if schema is not None:
        body.schema.CopyFrom(schema)
    if topic_epoch is not None:
        body.topic_epoch = topic_epoch
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
    body = pb.CommandSend(producer_id=producer_id, sequence_id=sequence_id)
    if num_messages is not None:
        body.num_messages = num_messages
    if highest_sequence_id is not None:
        body.highest_sequence_id = highest_sequence_id
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
        initial_position=initial_position,
        durable=durable,
        read_compacted=read_compacted,
        metadata=_key_values(metadata),
        subscription_properties=_key_values(subscription_properties),
    )
    if consumer_name is not None:
        body.consumer_name = consumer_name
    if start_message_id is not None:
        body.start_message_id.CopyFrom(start_message_id.to_proto())
    if priority_level is not None:
        body.priority_level = priority_level
    if key_shared_meta is not None:
        body.key_shared_meta.CopyFrom(key_shared_meta)
    if schema is not None:
        body.schema.CopyFrom(schema)
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
    )
    if request_id is not None:
        body.request_id = request_id
    if validation_error is not None:
        body.validation_error = validation_error
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
    body = pb.CommandSeek(consumer_id=consumer_id, request_id=request_id)
    if message_id is not None:
        body.message_id.CopyFrom(message_id.to_proto())
    if publish_time_ms is not None:
        body.message_publish_time = publish_time_ms
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
    body = pb.CommandGetSchema(request_id=request_id, topic=topic)
    if schema_version is not None:
        body.schema_version = schema_version
    return wrap(T.GET_SCHEMA, body)


def consumer_stats(request_id: int, consumer_id: int) -> pb.BaseCommand:
    body = pb.CommandConsumerStats(request_id=request_id, consumer_id=consumer_id)
    return wrap(T.CONSUMER_STATS, body)
