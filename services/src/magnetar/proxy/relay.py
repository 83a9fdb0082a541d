"""The byte relay between a client and a broker once both handshakes are done.

After CONNECTED, the proxy moves bytes, not frames: each chunk one socket hands it is written
to the other socket as it is, by the asyncio protocols of the two transports
(:class:`RelayEnd`), with no task, no coroutine and no decoding per chunk.

Flow control (bounded memory): each transport's write buffer has the high-water mark
``buffer_bytes`` (low-water a quarter of it). When a side's buffer passes the mark, asyncio
calls its protocol's ``pause_writing``, which stops reading from the *other* side; the TCP
window then pushes back on the sender. So a direction holds at most ``buffer_bytes`` plus one
read chunk. A side that stays paused longer than ``write_stall_timeout_s`` (a client that does
not read) gets the relay dropped, both sockets aborted.

Closing: when either side ends (EOF, reset, a broker killed), the other side is closed after
the bytes already buffered for it are written (at most ``CLOSE_GRACE_S``, then aborted), so a
client sees the broker's last frames and then the end of its connection, and reconnects (a
new lookup through the proxy). :meth:`Relay.close` ends both that way (the broker left the
registry: receipts it already sent still reach the client); :meth:`Relay.abort` drops both at
once (a stalled peer).

Concurrency: asyncio protocol callbacks on the proxy's loop; nothing here awaits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from magnetar.proxy.stats import ProxyStats
from magnetar.telemetry import get_logger

log = get_logger(__name__)

CLOSE_GRACE_S = 5.0


def set_limits(transport: asyncio.BaseTransport, buffer_bytes: int) -> None:
    if isinstance(transport, asyncio.WriteTransport):
        transport.set_write_buffer_limits(high=buffer_bytes, low=buffer_bytes // 4)


def close_gracefully(transport: asyncio.BaseTransport) -> None:
    """Close after the buffered bytes are written, or abort after :data:`CLOSE_GRACE_S`."""
    if transport.is_closing():
        return
    transport.close()
    if isinstance(transport, asyncio.WriteTransport) and transport.get_write_buffer_size():
        asyncio.get_running_loop().call_later(CLOSE_GRACE_S, transport.abort)


class Relay:
    """The two transports of one relayed connection and what they share: counters, the stall
    timer, and the one-time close."""

    def __init__(
        self,
        client: asyncio.Transport,
        broker: asyncio.Transport,
        broker_id: str,
        stats: ProxyStats,
        stall_timeout_s: float,
        on_closed: Callable[[Relay], None],
    ) -> None:
        self.client = client
        self.broker = broker
        self.broker_id = broker_id
        self._stats = stats
        self._stall_timeout_s = stall_timeout_s
        self._on_closed = on_closed
        self._stalls: dict[int, asyncio.TimerHandle] = {}
        self.closed = False

    def stalled(self, side: asyncio.Transport) -> None:
        """``side``'s write buffer passed its mark: stop reading the other side; drop the relay
        if ``side`` takes nothing for the stall timeout."""
        self._other(side).pause_reading()
        if id(side) not in self._stalls:
            loop = asyncio.get_running_loop()
            self._stalls[id(side)] = loop.call_later(self._stall_timeout_s, self._stall_expired)

    def drained(self, side: asyncio.Transport) -> None:
        timer = self._stalls.pop(id(side), None)
        if timer is not None:
            timer.cancel()
        if not self.closed:
            self._other(side).resume_reading()

    def _stall_expired(self) -> None:
        self._stats.dropped_slow += 1
        log.info("proxy_relay_stalled", broker=self.broker_id)
        self.abort()

    def _other(self, side: asyncio.Transport) -> asyncio.Transport:
        return self.broker if side is self.client else self.client

    def side_closed(self, side: asyncio.Transport) -> None:
        """One side ended: close the other once its buffered bytes are out."""
        close_gracefully(self._other(side))
        self._finish()

    def close(self) -> None:
        """End both sides, each after the bytes already buffered for it are out."""
        close_gracefully(self.client)
        close_gracefully(self.broker)
        self._finish()

    def abort(self) -> None:
        self.client.abort()
        self.broker.abort()
        self._finish()

    def _finish(self) -> None:
        if self.closed:
            return
        self.closed = True
        for timer in self._stalls.values():
            timer.cancel()
        self._stalls.clear()
        self._on_closed(self)


class RelayEnd(asyncio.Protocol):
    """The protocol of one transport of a relay once relaying: write what arrives to the peer."""

    def __init__(self, relay: Relay, transport: asyncio.Transport, *, from_client: bool) -> None:
        self._relay = relay
        self._transport = transport
        self._peer = relay.broker if from_client else relay.client
        self._from_client = from_client
        self._stats = relay._stats

    def data_received(self, data: bytes) -> None:
        self._peer.write(data)
        if self._from_client:
            self._stats.bytes_from_clients += len(data)
        else:
            self._stats.bytes_to_clients += len(data)

    def eof_received(self) -> bool | None:
        return None  # close our transport; connection_lost follows

    def pause_writing(self) -> None:
        self._relay.stalled(self._transport)

    def resume_writing(self) -> None:
        self._relay.drained(self._transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self._relay.side_closed(self._transport)
