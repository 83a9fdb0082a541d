"""Protocol version negotiation and feature flags, decided once per connection at CONNECT.

The broker answers CONNECTED with ``min(client's version, our maximum)``, as the Java broker
does; the result bounds which commands and fields either side may use for the connection's
life. The C++ client (Python client 3.x) sends 20, older ones 19, Java clients 21.

Thresholds below are those the clients act on: a broker must not send a command or field that
the negotiated version predates.

Pure values and functions; safe from any task or thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from magnetar.wire import pulsar_api_pb2 as pb

# The newest version our proto describes.
MAX_PROTOCOL_VERSION = 21

# First version with ...
V_KEEP_ALIVE = 1
V_REDELIVER = 2
V_CHECKSUM = 6  # CRC32-C on SEND (clients add it only if the broker says >= 6)
V_LOOKUP = 7
V_CONSUMER_STATS = 8
V_END_OF_TOPIC = 9
V_CHECKSUM_ON_MESSAGE = 11  # older consumers mishandle a checksum in MESSAGE
V_LAST_MESSAGE_ID = 12  # also ACTIVE_CONSUMER_CHANGE, GET_TOPICS_OF_NAMESPACE, multi-id ACK
V_AUTH_CHALLENGE = 14
V_GET_OR_CREATE_SCHEMA = 15
V_ACK_RECEIPT = 17
V_BROKER_ENTRY_METADATA = 18
V_TOPIC_MIGRATED = 20


def negotiate_protocol_version(client_version: int, server_max: int = MAX_PROTOCOL_VERSION) -> int:
    """The version to put in CONNECTED: the lower of the two, never negative."""
    return max(0, min(client_version, server_max))


@dataclass(frozen=True)
class PeerFeatures:
    """What a connected client can handle, from its CONNECT and the negotiated version."""

    protocol_version: int
    client_version: str
    supports_auth_refresh: bool = False
    supports_broker_entry_metadata: bool = False
    supports_partial_producer: bool = False
    supports_topic_watchers: bool = False

    @classmethod
    def from_connect(
        cls, connect: pb.CommandConnect, server_max: int = MAX_PROTOCOL_VERSION
    ) -> PeerFeatures:
        flags = connect.feature_flags
        return cls(
            protocol_version=negotiate_protocol_version(connect.protocol_version, server_max),
            client_version=connect.client_version,
            supports_auth_refresh=flags.supports_auth_refresh,
            supports_broker_entry_metadata=flags.supports_broker_entry_metadata,
            supports_partial_producer=flags.supports_partial_producer,
            supports_topic_watchers=flags.supports_topic_watchers,
        )

    def at_least(self, version: int) -> bool:
        return self.protocol_version >= version

    @property
    def wants_broker_entry_metadata(self) -> bool:
        """Whether MESSAGE may carry the 0x0e02 block to this peer."""
        return self.supports_broker_entry_metadata and self.at_least(V_BROKER_ENTRY_METADATA)

    @property
    def wants_checksum_on_message(self) -> bool:
        return self.at_least(V_CHECKSUM_ON_MESSAGE)

    @property
    def is_cpp_client(self) -> bool:
        """C++-based clients (incl. Python) drop the connection on commands they don't know."""
        return self.client_version.startswith("Pulsar-CPP")


def server_feature_flags(
    *,
    supports_topic_watchers: bool = False,
    supports_get_partitioned_metadata_without_auto_creation: bool = False,
) -> pb.FeatureFlags:
    """The FeatureFlags a broker puts in CONNECTED; only what it actually implements."""
    flags = pb.FeatureFlags()
    if supports_topic_watchers:
        flags.supports_topic_watchers = True
    if supports_get_partitioned_metadata_without_auto_creation:
        flags.supports_get_partitioned_metadata_without_auto_creation = True
    return flags


def client_feature_flags() -> pb.FeatureFlags:
    """The FeatureFlags our own client puts in CONNECT."""
    return pb.FeatureFlags(supports_auth_refresh=True, supports_broker_entry_metadata=True)
