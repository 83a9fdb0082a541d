"""A clean stop (SIGTERM) of a standalone while a producer sends flat out.

The stop lets each connection finish (:meth:`magnetar.broker.connection.ServerCnx.finish`):
every SEND the broker took is answered before the connection closes, so the official client
resends only what was never stored. Without deduplication, then, every message is stored
exactly once and in order. A stop that dropped the receipts of stored entries (closing the
connection while their adds were in flight) makes the client resend them: stored twice — and
a chunk stored twice makes the C++ consumer drop its whole message
(``test_broker_chunking.py``'s restart test).
"""

from __future__ import annotations

import itertools
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest

from magnetar.protocol import client_commands
from magnetar.protocol.frame import encode_command
from tests.kit.process import running
from tests.kit.standalone import (
    StandaloneProcess,
    admin_call,
    official_client,
    read_from_start,
    topic_name,
)

ACKED_BEFORE_STOP = 500
ACKED_AFTER_RESTART = 200  # more, once restarted
PAD = b"." * 1024


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneProcess]:
    """One standalone for the module; the tests that stop it start it again. Journal fsync on:
    each add waits for an fsync, so adds are in flight when a stop or an unload comes."""
    data = tmp_path_factory.mktemp("graceful") / "data"
    with running(StandaloneProcess(data_dir=data, journal_sync=True)) as process:
        yield process


class Sender:
    """One producer sending ``i`` (padded) for i = 0, 1, ... from a thread until stopped."""

    def __init__(self, producer: Any) -> None:
        self.producer = producer
        self.sent = 0
        self.results: list[Any] = []
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @classmethod
    def flat_out(cls, client: Any, topic: str) -> Sender:
        """Unbatched sends, up to 500 in flight, none timing out across a stop."""
        producer = client.create_producer(
            topic,
            batching_enabled=False,
            max_pending_messages=500,
            block_if_queue_full=True,
            send_timeout_millis=60_000,
        )
        return cls(producer)

    def _run(self) -> None:
        for i in itertools.count():
            if self._stopping.is_set():
                return
            self.producer.send_async(b"%d" % i + PAD, self._done)  # blocks while the queue is full
            self.sent = i + 1

    def _done(self, result: Any, _message_id: Any) -> None:
        with self._lock:
            self.results.append(result)
            self._lock.notify_all()

    def answered(self) -> int:
        with self._lock:
            return len(self.results)

    def wait_answered(self, count: int, timeout_s: float = 60) -> None:
        with self._lock:
            assert self._lock.wait_for(lambda: len(self.results) >= count, timeout_s), (
                f"{len(self.results)} of {count} sends answered"
            )

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(30)
        self.producer.flush()
        self.wait_answered(self.sent)


def test_a_clean_stop_answers_every_send_it_stored(standalone: StandaloneProcess) -> None:
    sa = standalone
    topic = topic_name("graceful-stop")
    client = official_client(sa, operation_timeout_s=30)
    try:
        client.subscribe(topic, "s").close()  # keeps everything stored from here
        sender = Sender.flat_out(client, topic)
        sender.wait_answered(ACKED_BEFORE_STOP)
        assert sa.stop() == 0, sa.log_text()[-3000:]
        sent_at_stop, answered_at_stop = sender.sent, sender.answered()
        assert sent_at_stop > answered_at_stop, "no send in flight at the stop: nothing tested"
        sa.start()
        sender.wait_answered(sent_at_stop + ACKED_AFTER_RESTART)
        sender.stop()
        assert set(sender.results) == {pulsar.Result.Ok}, Counter(sender.results)
        stored = [int(p[: -len(PAD)]) for p in read_from_start(client, topic, wait_ms=2000)]
    finally:
        client.close()
        if not sa.running:  # the module's other tests need it
            sa.start()
    twice = sorted(i for i, count in Counter(stored).items() if count > 1)
    assert stored == list(range(sender.sent)), (
        f"{len(stored)} stored for {sender.sent} sent; stored twice: {twice[:20]}"
    )


def test_an_unload_answers_every_send_it_stored(standalone: StandaloneProcess) -> None:
    """The topic's close (an unload, and a cluster broker's stop hands its bundles over so)
    answers the publishes in flight before it tells the producer to reconnect."""
    sa = standalone
    topic = topic_name("unload")
    client = official_client(sa, operation_timeout_s=30)
    try:
        client.subscribe(topic, "s").close()
        sender = Sender.flat_out(client, topic)
        for round_ in range(1, 4):
            sender.wait_answered(round_ * ACKED_BEFORE_STOP)
            admin_call(sa, "PUT", f"/admin/v2/{topic.replace('://', '/')}/unload")
        sender.wait_answered(sender.sent + ACKED_AFTER_RESTART)
        sender.stop()
        assert set(sender.results) == {pulsar.Result.Ok}, Counter(sender.results)
        stored = [int(p[: -len(PAD)]) for p in read_from_start(client, topic, wait_ms=2000)]
    finally:
        client.close()
    twice = sorted(i for i, count in Counter(stored).items() if count > 1)
    assert stored == list(range(sender.sent)), (
        f"{len(stored)} stored for {sender.sent} sent; stored twice: {twice[:20]}"
    )


def test_a_client_that_ignores_the_half_close_does_not_hold_the_stop(
    standalone: StandaloneProcess,
) -> None:
    """The finish is bounded: a connection whose client never closes its side is closed by the
    broker, and the stop ends cleanly."""
    sa = standalone
    try:
        with socket.create_connection(("127.0.0.1", sa.broker_port), timeout=10) as sock:
            sock.sendall(encode_command(client_commands.connect(client_version="ignores-fin")))
            assert sock.recv(65536), "no CONNECTED"
            assert sa.stop() == 0, sa.log_text()[-3000:]  # the socket stays open meanwhile
            assert sock.recv(65536) == b""  # the broker's FIN
        assert "in_time=False" in sa.log_text(since_start=True)
    finally:
        if not sa.running:  # the module's other tests need it
            sa.start()
