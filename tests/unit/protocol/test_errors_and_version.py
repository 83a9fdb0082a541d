"""The ServerError table, and protocol version negotiation."""

from __future__ import annotations

import pytest

from magnetar.errors import MagnetarError, Timeout
from magnetar.protocol import commands
from magnetar.protocol.errors import (
    ChecksumMismatch,
    FrameTooLarge,
    MalformedCommand,
    ProtocolError,
    register_server_error,
    server_error_for,
)
from magnetar.protocol.version import (
    MAX_PROTOCOL_VERSION,
    PeerFeatures,
    negotiate_protocol_version,
    server_feature_flags,
)
from magnetar.wire import pulsar_api_pb2 as pb


class _DomainError(MagnetarError):
    pass


class _DomainChild(_DomainError):
    pass


def test_server_error_table() -> None:
    assert server_error_for(ChecksumMismatch(commands.ping(), 1, 2)) == pb.ChecksumError
    assert server_error_for(FrameTooLarge(10, 5)) == pb.NotAllowedError
    assert server_error_for(Timeout()) == pb.ServiceNotReady
    assert server_error_for(MalformedCommand("x")) == pb.UnknownError
    assert server_error_for(RuntimeError()) == pb.UnknownError


def test_register_extends_table_through_mro() -> None:
    register_server_error(_DomainError, pb.TopicNotFound)
    register_server_error(_DomainError, pb.TopicNotFound)  # idempotent
    assert server_error_for(_DomainChild()) == pb.TopicNotFound
    with pytest.raises(ValueError, match="already mapped"):
        register_server_error(_DomainError, pb.ProducerBusy)


def test_protocol_errors_are_magnetar_errors() -> None:
    assert issubclass(ProtocolError, MagnetarError)
    assert not ProtocolError.retryable


@pytest.mark.parametrize(("client", "expected"), [(19, 19), (20, 20), (21, 21), (99, 21), (-5, 0)])
def test_negotiation(client: int, expected: int) -> None:
    assert negotiate_protocol_version(client) == expected
    assert MAX_PROTOCOL_VERSION == 21


def test_negotiation_with_lower_server_max() -> None:
    assert negotiate_protocol_version(21, server_max=20) == 20


def test_peer_features_from_cpp_connect() -> None:
    connect = commands.connect(client_version="Pulsar-CPP-v3.7.0", protocol_version=20)
    peer = PeerFeatures.from_connect(connect.connect)
    assert peer.protocol_version == 20
    assert peer.is_cpp_client
    assert peer.wants_broker_entry_metadata
    assert peer.wants_checksum_on_message
    old = PeerFeatures.from_connect(pb.CommandConnect(client_version="x", protocol_version=10))
    assert not old.wants_broker_entry_metadata
    assert not old.wants_checksum_on_message
    assert not old.is_cpp_client


def test_server_feature_flags_only_what_is_asked() -> None:
    assert server_feature_flags().ListFields() == []
    flags = server_feature_flags(supports_get_partitioned_metadata_without_auto_creation=True)
    assert flags.supports_get_partitioned_metadata_without_auto_creation
