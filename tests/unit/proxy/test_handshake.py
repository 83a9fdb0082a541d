"""The proxy's pure pieces: the first-frame reader, the CONNECT it sends a broker, the
registry JSON it reads, and its settings' limits."""

from __future__ import annotations

import json
import struct

import pytest

from magnetar.protocol import commands
from magnetar.protocol.errors import ProtocolError
from magnetar.protocol.frame import encode_command
from magnetar.proxy.broker_link import PROXY_VERSION
from magnetar.proxy.discovery import RegisteredBroker, address_of
from magnetar.proxy.handshake import FirstFrame, broker_connect
from magnetar.proxy.settings import ProxySettings
from magnetar.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand


def test_first_frame_waits_for_the_whole_frame_and_keeps_what_follows() -> None:
    frame = encode_command(commands.connect(client_version="c"))
    extra = encode_command(commands.ping())
    reader = FirstFrame(64 * 1024)
    data = frame + extra
    for i in range(len(frame) - 1):
        assert reader.feed(data[i : i + 1]) is None
    found = reader.feed(data[len(frame) - 1 :])
    assert found is not None
    parsed, raw, rest = found
    assert parsed.type == T.CONNECT
    assert raw == frame
    assert rest == extra


@pytest.mark.parametrize("total", [0, 3, 64 * 1024 + 1, 2**32 - 1])
def test_first_frame_refuses_an_impossible_size_before_buffering(total: int) -> None:
    with pytest.raises(ProtocolError):
        FirstFrame(64 * 1024).feed(struct.pack(">I", total))


def test_first_frame_refuses_garbage() -> None:
    with pytest.raises(ProtocolError):
        FirstFrame(1024).feed(struct.pack(">II", 12, 8) + b"\xff" * 8)


def test_the_connect_sent_to_a_broker_is_the_clients_without_the_proxy_target() -> None:
    client = commands.connect(
        client_version="Pulsar-CPP-v3.7.0",
        protocol_version=20,
        auth_method_name="token",
        auth_data=b"secret-token",
        proxy_to_broker_url="127.0.0.1:6651",
    ).connect
    sent = broker_connect(client)
    assert sent.type == T.CONNECT
    connect = sent.connect
    assert not connect.HasField("proxy_to_broker_url")
    assert connect.client_version == "Pulsar-CPP-v3.7.0"
    assert connect.protocol_version == 20
    assert (connect.auth_method_name, connect.auth_data) == ("token", b"secret-token")
    assert (connect.original_auth_method, connect.original_auth_data) == ("token", "secret-token")
    assert connect.proxy_version == PROXY_VERSION
    assert connect.feature_flags == client.feature_flags


def test_a_connect_without_auth_stays_without() -> None:
    client = commands.connect(client_version="c", proxy_to_broker_url="h:1").connect
    connect = broker_connect(client).connect
    assert not connect.HasField("auth_data")
    assert not connect.HasField("original_auth_data")
    assert not connect.HasField("original_auth_method")


def test_a_registration_is_read_for_its_urls_only() -> None:
    raw = json.dumps(
        {
            "pulsarServiceUrl": "pulsar://10.0.0.7:6650",
            "webServiceUrl": "http://10.0.0.7:8080",
            "numBundles": 3,
            "cpu": {"usage": 1.0, "limit": 200.0},
        }
    ).encode()
    broker = RegisteredBroker.from_json("10.0.0.7:6650", raw)
    assert broker.web_address == "10.0.0.7:8080"
    assert address_of(broker.pulsar_service_url) == "10.0.0.7:6650"
    assert address_of("http://h:1/") == "h:1"
    with pytest.raises(KeyError):
        RegisteredBroker.from_json("x", b'{"webServiceUrl": "http://h:1"}')


def test_a_named_listener_names_the_same_broker() -> None:
    raw = json.dumps(
        {
            "pulsarServiceUrl": "pulsar://10.0.0.7:6650",
            "webServiceUrl": "http://10.0.0.7:8080",
            "advertisedListeners": {
                "external": {"brokerServiceUrl": "pulsar://lb.example:16650"},
                "http-only": {"brokerHttpUrl": "http://lb.example:18080"},
            },
        }
    ).encode()
    broker = RegisteredBroker.from_json("10.0.0.7:6650", raw)
    assert broker.answers_at("10.0.0.7:6650")
    assert broker.answers_at("lb.example:16650")
    assert not broker.answers_at("lb.example:18080")
    assert broker.service_address == "10.0.0.7:6650"  # what the proxy dials


def test_settings_give_the_relay_its_limits() -> None:
    settings = ProxySettings(relay_buffer_bytes=128 * 1024, handshake_timeout_s=2.5)
    limits = settings.relay_limits()
    assert limits.buffer_bytes == 128 * 1024
    assert limits.handshake_timeout_s == 2.5
    assert limits.max_frame_size == settings.max_message_size + 10 * 1024
