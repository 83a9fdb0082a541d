"""Magnetar's asyncio Pulsar client: pure Python, speaks the Pulsar binary protocol.

Works against Magnetar and Apache Pulsar alike; Magnetar's own tools build on it. The public
names are re-exported here, and this ``__all__`` is the package's only one::

    from magnetar.client import EARLIEST, Client, ReceiveTimeout

    async with Client("pulsar://127.0.0.1:6650") as client:
        producer = await client.create_producer("my-topic")
        await producer.send(b"hello")
        reader = await client.create_reader("my-topic", EARLIEST)

The modules below hold the implementation (docs/client.md has the map); import from them only
for what is not listed here. The typed admin HTTP client stays in :mod:`magnetar.client.admin`,
so that a process using only the binary protocol does not load the HTTP stack.
"""

from magnetar.client.client import Client
from magnetar.client.compression import CompressionType
from magnetar.client.consumer import Consumer
from magnetar.client.dead_letter import DeadLetterPolicy
from magnetar.client.errors import (
    AuthenticationError,
    AuthorizationError,
    ChecksumError,
    ClientClosed,
    ClientError,
    ConnectionFailed,
    ConnectionLost,
    ConsumerBusy,
    ConsumerNotFound,
    DecompressionError,
    IncompatibleSchema,
    InvalidConfiguration,
    InvalidTopicNameResponse,
    MessageTooBig,
    MetadataError,
    NotAllowed,
    OperationTimeout,
    PersistenceError,
    ProducerBlockedQuotaExceeded,
    ProducerBusy,
    ProducerClosed,
    ProducerFenced,
    ProducerQueueIsFull,
    ReceiveTimeout,
    SendTimeout,
    ServerErrorResponse,
    ServiceNotReady,
    SubscriptionNotFound,
    TlsVerificationFailed,
    TooManyRedirects,
    TooManyRequests,
    TopicNotFound,
    TopicTerminated,
    UnsupportedVersion,
)
from magnetar.client.message import Message
from magnetar.client.multi_topic import MultiTopicConsumer
from magnetar.client.partitioned_producer import PartitionedProducer
from magnetar.client.producer import Producer
from magnetar.client.producer_options import ProducerAccessMode
from magnetar.client.reader import Reader
from magnetar.client.receiver import InitialPosition, SubscriptionType
from magnetar.client.routing import HashingScheme, RoutingMode
from magnetar.client.schema import (
    BytesSchema,
    JsonSchema,
    KeyValueSchema,
    RawSchema,
    SchemaInfo,
    StringSchema,
)
from magnetar.client.settings import Authentication, AuthenticationToken, TlsOptions
from magnetar.naming import InvalidTopicName
from magnetar.protocol.message_id import EARLIEST, LATEST, MessageId

__all__ = [
    "EARLIEST",
    "LATEST",
    "Authentication",
    "AuthenticationError",
    "AuthenticationToken",
    "AuthorizationError",
    "BytesSchema",
    "ChecksumError",
    "Client",
    "ClientClosed",
    "ClientError",
    "CompressionType",
    "ConnectionFailed",
    "ConnectionLost",
    "Consumer",
    "ConsumerBusy",
    "ConsumerNotFound",
    "DeadLetterPolicy",
    "DecompressionError",
    "HashingScheme",
    "IncompatibleSchema",
    "InitialPosition",
    "InvalidConfiguration",
    "InvalidTopicName",
    "InvalidTopicNameResponse",
    "JsonSchema",
    "KeyValueSchema",
    "Message",
    "MessageId",
    "MessageTooBig",
    "MetadataError",
    "MultiTopicConsumer",
    "NotAllowed",
    "OperationTimeout",
    "PartitionedProducer",
    "PersistenceError",
    "Producer",
    "ProducerAccessMode",
    "ProducerBlockedQuotaExceeded",
    "ProducerBusy",
    "ProducerClosed",
    "ProducerFenced",
    "ProducerQueueIsFull",
    "RawSchema",
    "Reader",
    "ReceiveTimeout",
    "RoutingMode",
    "SchemaInfo",
    "SendTimeout",
    "ServerErrorResponse",
    "ServiceNotReady",
    "StringSchema",
    "SubscriptionNotFound",
    "SubscriptionType",
    "TlsOptions",
    "TlsVerificationFailed",
    "TooManyRedirects",
    "TooManyRequests",
    "TopicNotFound",
    "TopicTerminated",
    "UnsupportedVersion",
]
