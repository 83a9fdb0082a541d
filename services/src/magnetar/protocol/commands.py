"""Constructors for the commands a broker sends; those a client sends are re-exported here.

Each returns a ready :class:`BaseCommand` with its type and body set, so the frame encoder
accepts it. Message ids are given as :class:`~magnetar.protocol.message_id.MessageId` (signed
values); the constructors write the uint64 wire form.

Protocol traps these constructors encode (learned from the C++ client and the Java broker):

* PARTITIONED_METADATA_RESPONSE and LOOKUP_RESPONSE always set ``response`` explicitly; errors
  for those requests (and GET_SCHEMA) travel inside the response, never as ERROR.
* A broker-initiated CLOSE_PRODUCER / CLOSE_CONSUMER uses request id -1 (2^64-1 on the wire).
* C++-based clients close the connection on any command outside :data:`CPP_CLIENT_ACCEPTS`
  (REACHED_END_OF_TOPIC, GET_OR_CREATE_SCHEMA_RESPONSE ...).

Optional arguments left at None are passed straight to the protobuf constructors, which leave
a field given None unset (so no ``if x is not None`` per field).

Pure functions; safe from any task or thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeAlias

from magnetar.protocol.client_commands import (
    ack,
    connect,
    consumer_stats,
    flow,
    get_last_message_id,
    get_schema,
    get_topics_of_namespace,
    lookup,
    partitioned_metadata,
    producer,
    redeliver_unacknowledged_messages,
    seek,
    send,
    subscribe,
    unsubscribe,
)
from magnetar.protocol.envelope import wrap
from magnetar.protocol.message_id import MessageId
from magnetar.wire import pulsar_api_pb2 as pb

__all__ = [
    "BROKER_REQUEST_ID",
    "CPP_CLIENT_ACCEPTS",
    "ack",
    "ack_response",
    "active_consumer_change",
    "close_consumer",
    "close_producer",
    "connect",
    "connected",
    "consumer_stats",
    "consumer_stats_error",
    "consumer_stats_response",
    "error",
    "flow",
    "get_last_message_id",
    "get_last_message_id_response",
    "get_or_create_schema_error",
    "get_or_create_schema_response",
    "get_schema",
    "get_schema_error",
    "get_schema_response",
    "get_topics_of_namespace",
    "get_topics_of_namespace_response",
    "lookup",
    "lookup_failed",
    "lookup_response",
    "message",
    "partitioned_metadata",
    "partitioned_metadata_failed",
    "partitioned_metadata_response",
    "ping",
    "pong",
    "producer",
    "producer_success",
    "reached_end_of_topic",
    "redeliver_unacknowledged_messages",
    "seek",
    "send",
    "send_error",
    "send_receipt",
    "subscribe",
    "success",
    "unsubscribe",
    "wrap",
]

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


# ================================================================== broker -> client


def connected(
    *,
    server_version: str,
    protocol_version: int,
    max_message_size: int | None = None,
    feature_flags: pb.FeatureFlags | None = None,
) -> pb.BaseCommand:
    body = pb.CommandConnected(
        server_version=server_version,
        protocol_version=protocol_version,
        max_message_size=max_message_size,
        feature_flags=feature_flags,
    )
    return wrap(T.CONNECTED, body)


def auth_challenge(
    *, server_version: str, protocol_version: int, method: str, data: bytes
) -> pb.BaseCommand:
    """AUTH_CHALLENGE: ask the client for (fresh) credentials of ``method``."""
    body = pb.CommandAuthChallenge(
        server_version=server_version,
        protocol_version=protocol_version,
        challenge=pb.AuthData(auth_method_name=method, auth_data=data),
    )
    return wrap(T.AUTH_CHALLENGE, body)


def success(request_id: int, *, schema: pb.Schema | None = None) -> pb.BaseCommand:
    return wrap(T.SUCCESS, pb.CommandSuccess(request_id=request_id, schema=schema))


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
        schema_version=schema_version,
        topic_epoch=topic_epoch,
    )
    return wrap(T.PRODUCER_SUCCESS, body)


def send_receipt(
    producer_id: int,
    sequence_id: int,
    message_id: MessageId,
    *,
    highest_sequence_id: int | None = None,
) -> pb.BaseCommand:
    body = pb.CommandSendReceipt(
        producer_id=producer_id,
        sequence_id=sequence_id,
        message_id=message_id.to_proto(),
        highest_sequence_id=highest_sequence_id,
    )
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
        broker_service_url_tls=broker_service_url_tls,
        authoritative=authoritative,
        proxy_through_service_url=proxy_through_service_url,
    )
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
    body = pb.CommandMessage(
        consumer_id=consumer_id,
        message_id=message_id.to_proto(),
        ack_set=ack_set,
        consumer_epoch=consumer_epoch,
    )
    if redelivery_count > 0:
        body.redelivery_count = redelivery_count
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
        request_id=request_id,
        topics=topics,
        filtered=filtered,
        topics_hash=topics_hash,
        changed=changed,
    )
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


def get_or_create_schema_response(request_id: int, schema_version: bytes) -> pb.BaseCommand:
    body = pb.CommandGetOrCreateSchemaResponse(request_id=request_id, schema_version=schema_version)
    return wrap(T.GET_OR_CREATE_SCHEMA_RESPONSE, body)


def get_or_create_schema_error(
    request_id: int, code: ServerErrorCode, message: str
) -> pb.BaseCommand:
    """GET_OR_CREATE_SCHEMA_RESPONSE carrying an error (only Java clients send the request)."""
    body = pb.CommandGetOrCreateSchemaResponse(
        request_id=request_id, error_code=code, error_message=message
    )
    return wrap(T.GET_OR_CREATE_SCHEMA_RESPONSE, body)


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
    body = pb.CommandCloseProducer(
        producer_id=producer_id,
        request_id=request_id,
        assigned_broker_service_url=assigned_broker_service_url,
        assigned_broker_service_url_tls=assigned_broker_service_url_tls,
    )
    return wrap(T.CLOSE_PRODUCER, body)


def close_consumer(
    consumer_id: int,
    request_id: int = BROKER_REQUEST_ID,
    *,
    assigned_broker_service_url: str | None = None,
    assigned_broker_service_url_tls: str | None = None,
) -> pb.BaseCommand:
    """CLOSE_CONSUMER; from a broker (default request id) it makes the client resubscribe."""
    body = pb.CommandCloseConsumer(
        consumer_id=consumer_id,
        request_id=request_id,
        assigned_broker_service_url=assigned_broker_service_url,
        assigned_broker_service_url_tls=assigned_broker_service_url_tls,
    )
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
    body = pb.CommandAckResponse(
        consumer_id=consumer_id, request_id=request_id, error=code, message=message
    )
    return wrap(T.ACK_RESPONSE, body)


def reached_end_of_topic(consumer_id: int) -> pb.BaseCommand:
    """For Java clients only: C++-based clients close the connection on it."""
    return wrap(T.REACHED_END_OF_TOPIC, pb.CommandReachedEndOfTopic(consumer_id=consumer_id))
