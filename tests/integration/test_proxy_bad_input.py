"""Bad input on the proxy's binary port (etcd, 1 bookie, 1 broker, 1 proxy; raw sockets).

What no client should send, and what the proxy does about it: garbage and oversized frames
close the connection; a client that never completes CONNECT is dropped after the handshake
timeout (1 s here); a CONNECT asking to be relayed to an address that is not a registered
broker gets ``ERROR(NotAllowedError)`` and no relay; a producer on a lookup connection gets
``ERROR(NotAllowedError)``; an invalid topic fails its lookup inside LOOKUP_RESPONSE. A relay
whose client stops reading is dropped after the write-stall timeout, and the proxy keeps no
more than its buffer for it. The official client works through the proxy afterwards.
"""

from __future__ import annotations

import json
import socket
import struct
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from magnetar.protocol import commands
from magnetar.protocol.frame import Frame, FrameDecoder, encode_command
from magnetar.wire import pulsar_api_pb2 as pb
from tests.kit.cluster import Cluster, http
from tests.kit.etcd import EtcdServer
from tests.kit.process import running
from tests.kit.proxy import ProxyProcess
from tests.kit.scrape import scrape, value

pytestmark = pytest.mark.etcd

T = pb.BaseCommand
TIMEOUT_S = 5.0
HANDSHAKE_TIMEOUT_S = 1.0
STALL_TIMEOUT_S = 2.0
KEEP_ALIVE_S = 2.0


class RawClient:
    """A blocking socket speaking frames through our codec; every read has a timeout."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
        self.decoder = FrameDecoder(max_frame_size=32 * 1024 * 1024)
        self.frames: list[Frame] = []

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def next_frame(self, *, pings: bool = False) -> Frame:
        """The next frame; the proxy's keep-alive PINGs are answered and skipped unless
        ``pings``."""
        while True:
            while not self.frames:
                data = self.sock.recv(65536)
                if not data:
                    raise ConnectionError("closed by the proxy")
                self.decoder.feed(data)
                self.frames.extend(self.decoder.frames())
            frame = self.frames.pop(0)
            if frame.type != T.PING or pings:
                return frame
            self.send(encode_command(commands.pong()))

    def closed_within(self, seconds: float) -> bool:
        """Whether the proxy closes the connection within ``seconds`` (bytes are discarded)."""
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                self.sock.settimeout(max(0.01, deadline - time.monotonic()))
                if not self.sock.recv(65536):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
        return False

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base: Path = tmp_path_factory.mktemp("proxy-bad")
    env = {
        "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ENSEMBLE_SIZE": "1",
        "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_WRITE_QUORUM": "1",
        "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ACK_QUORUM": "1",
    }
    proxy_env = {
        "MAGNETAR_PROXY_HANDSHAKE_TIMEOUT_S": str(HANDSHAKE_TIMEOUT_S),
        "MAGNETAR_PROXY_RELAY_BUFFER_BYTES": str(64 * 1024),
        "MAGNETAR_PROXY_RELAY_WRITE_STALL_TIMEOUT_S": str(STALL_TIMEOUT_S),
        "MAGNETAR_PROXY_KEEP_ALIVE_INTERVAL_S": str(KEEP_ALIVE_S),
    }
    cluster = Cluster(
        base,
        bookie_count=1,
        broker_count=1,
        journal_sync=False,
        broker_env=env,
        proxy=True,
        proxy_env=proxy_env,
    )
    with cluster.running() as running:
        yield running


@pytest.fixture
def raw(cluster: Cluster) -> Iterator[RawClient]:
    client = RawClient(cluster.the_proxy.service_port)
    try:
        yield client
    finally:
        client.close()


def connect(proxy_to: str | None = None) -> bytes:
    return encode_command(commands.connect(client_version="raw-test", proxy_to_broker_url=proxy_to))


def official_round_trip(cluster: Cluster) -> None:
    client = cluster.proxy_client(operation_timeout_s=10)
    try:
        topic = f"persistent://public/default/ok-{uuid.uuid4().hex[:8]}"
        consumer = client.subscribe(topic, "s")
        client.create_producer(topic).send(b"still-works")
        assert consumer.receive(10_000).data() == b"still-works"
    finally:
        client.close()


def test_garbage_closes_only_that_connection(cluster: Cluster, raw: RawClient) -> None:
    raw.send(struct.pack(">I", 12) + b"\xff" * 12)
    assert raw.closed_within(TIMEOUT_S)
    official_round_trip(cluster)


def test_oversized_first_frame_closes_before_it_is_buffered(raw: RawClient) -> None:
    raw.send(struct.pack(">II", 512 * 1024 * 1024, 100))
    assert raw.closed_within(TIMEOUT_S)


def test_command_before_connect_closes(raw: RawClient) -> None:
    raw.send(encode_command(commands.lookup("persistent://public/default/x", 1)))
    assert raw.closed_within(TIMEOUT_S)


def test_no_handshake_is_dropped_after_the_timeout(raw: RawClient) -> None:
    assert not raw.closed_within(HANDSHAKE_TIMEOUT_S / 4)
    assert raw.closed_within(HANDSHAKE_TIMEOUT_S + TIMEOUT_S)


def test_half_a_connect_is_dropped_after_the_timeout(raw: RawClient) -> None:
    frame = connect()
    raw.send(frame[: len(frame) // 2])  # a slow client that never sends the rest
    assert raw.closed_within(HANDSHAKE_TIMEOUT_S + TIMEOUT_S)


@pytest.mark.parametrize("kind", ["etcd", "closed-port", "not-an-address"])
def test_relay_to_an_address_that_is_no_broker_is_refused(
    cluster: Cluster, raw: RawClient, kind: str
) -> None:
    target = {
        "etcd": cluster.etcd.url.split("://", 1)[-1],
        "closed-port": "127.0.0.1:1",
        "not-an-address": "nowhere",
    }[kind]
    raw.send(connect(proxy_to=target))
    frame = raw.next_frame()
    assert frame.type == T.ERROR
    assert frame.command.error.error == pb.NotAllowedError
    assert "not a registered broker" in frame.command.error.message
    assert raw.closed_within(TIMEOUT_S)


def test_relay_to_a_registered_broker_passes_its_connected(
    cluster: Cluster, raw: RawClient
) -> None:
    raw.send(connect(proxy_to=cluster.brokers[0].broker_id))
    frame = raw.next_frame()
    assert frame.type == T.CONNECTED
    assert frame.command.connected.server_version.startswith("Magnetar-")
    raw.send(encode_command(commands.ping()))
    assert raw.next_frame().type == T.PONG


def test_lookup_connection_serves_lookups_only(raw: RawClient) -> None:
    raw.send(connect())
    assert raw.next_frame().type == T.CONNECTED
    raw.send(encode_command(commands.lookup("bogus://public/default/name", 7)))
    answer = raw.next_frame()
    assert answer.type == T.LOOKUP_RESPONSE
    assert answer.command.lookup_topic_response.request_id == 7
    assert answer.command.lookup_topic_response.response == pb.CommandLookupTopicResponse.Failed
    raw.send(encode_command(commands.producer("persistent://public/default/p", 1, 8)))
    refused = raw.next_frame()
    assert refused.type == T.ERROR
    assert refused.command.error.request_id == 8
    assert refused.command.error.error == pb.NotAllowedError
    raw.send(encode_command(commands.ping()))
    assert raw.next_frame().type == T.PONG


def test_a_silent_lookup_connection_is_pinged_then_dropped(raw: RawClient) -> None:
    raw.send(connect())
    assert raw.next_frame().type == T.CONNECTED
    assert raw.next_frame(pings=True).type == T.PING  # after an idle interval
    assert raw.closed_within(KEEP_ALIVE_S * 2 + TIMEOUT_S)  # unanswered: dropped


def test_lookup_through_the_proxy_names_the_broker_and_proxies_through(
    cluster: Cluster, raw: RawClient
) -> None:
    raw.send(connect())
    assert raw.next_frame().type == T.CONNECTED
    raw.send(encode_command(commands.lookup("persistent://public/default/lk", 3)))
    answer = raw.next_frame().command.lookup_topic_response
    assert answer.response == pb.CommandLookupTopicResponse.Connect
    assert answer.proxy_through_service_url
    assert answer.authoritative
    assert answer.broker_service_url == cluster.brokers[0].service_url


def test_a_client_that_stops_reading_is_dropped(cluster: Cluster, raw: RawClient) -> None:
    topic = f"persistent://public/default/slow-{uuid.uuid4().hex[:8]}"
    client = cluster.proxy_client()
    try:
        client.subscribe(topic, "slow").close()
        producer = client.create_producer(topic, batching_enabled=False)
        payload = b"x" * (512 * 1024)
        for _ in range(40):  # 20 MiB: more than the socket buffers hold
            producer.send(payload)
    finally:
        client.close()
    raw.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    raw.send(connect(proxy_to=cluster.brokers[0].broker_id))
    assert raw.next_frame().type == T.CONNECTED
    raw.send(encode_command(commands.subscribe(topic, "slow", 1, 1)))
    assert raw.next_frame().type == T.SUCCESS
    raw.send(encode_command(commands.flow(1, 1000)))
    before = value(scrape(cluster.the_proxy.web_url), "pulsar_proxy_dropped_slow_connections_total")
    # Never read again: the proxy's buffer fills, it stops reading the broker, and drops us.
    deadline = time.monotonic() + STALL_TIMEOUT_S + 20

    def dropped() -> float:
        return value(
            scrape(cluster.the_proxy.web_url), "pulsar_proxy_dropped_slow_connections_total"
        )

    while dropped() == before:
        assert time.monotonic() < deadline, "the slow client was not dropped"
        time.sleep(0.2)
    official_round_trip(cluster)


def test_a_proxy_without_brokers_says_so(tmp_path: Path) -> None:
    """etcd and a proxy, no broker: health 503, lookups and admin calls fail with the reason."""
    etcd = EtcdServer(data_dir=tmp_path / "etcd")
    etcd.start()
    try:
        proxy = ProxyProcess(tmp_path / "proxy", etcd.url)
        with running(proxy):
            status, body = http(proxy, "GET", "/status.html")
            assert status == 503, body
            assert "no broker is registered" in body
            status, body = http(proxy, "GET", "/admin/v2/tenants")
            assert status == 503, body
            assert "no broker is registered" in json.loads(body)["reason"]
            raw = RawClient(proxy.service_port)
            try:
                raw.send(connect())
                assert raw.next_frame().type == T.CONNECTED
                raw.send(encode_command(commands.lookup("persistent://public/default/t", 1)))
                answer = raw.next_frame().command.lookup_topic_response
                assert answer.response == pb.CommandLookupTopicResponse.Failed
                assert answer.error == pb.ServiceNotReady
                raw.send(encode_command(commands.partitioned_metadata("public/default/t", 2)))
                meta = raw.next_frame().command.partition_metadata_response
                assert meta.response == pb.CommandPartitionedTopicMetadataResponse.Failed
                assert meta.error == pb.ServiceNotReady
            finally:
                raw.close()
    finally:
        etcd.stop()
