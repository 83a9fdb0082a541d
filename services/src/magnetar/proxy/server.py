"""The proxy's binary listener (port 6650): accepts clients, one ProxyConnection each.

``ProxyServer.start()`` binds (with a :class:`~magnetar.tls.ServerTls`, the TLS port: TLS ends
here, and clients' frames and relayed bytes are plain past the handshake); ``close()`` stops
accepting, closes every client connection (and so every relay) and waits, bounded, until they
are gone. The relays to a broker whose registration disappears are dropped here
(:meth:`ProxyServer.broker_gone`, a listener of the discovery), as is the shared request link to
it, so clients reconnect and look up again.

Concurrency: on the proxy's loop.
"""

from __future__ import annotations

import asyncio

from magnetar.open_connections import OpenConnections
from magnetar.proxy.broker_link import BrokerLinks
from magnetar.proxy.connection import ProxyConnection, ProxyContext
from magnetar.telemetry import get_logger
from magnetar.tls import ServerTls, listen_options

log = get_logger(__name__)


class ProxyServer:
    def __init__(
        self,
        ctx: ProxyContext,
        links: BrokerLinks,
        host: str,
        port: int,
        tls: ServerTls | None = None,
    ) -> None:
        self._ctx = ctx
        self._links = links
        self.host = host
        self.port = port
        self.tls = tls
        self._server: asyncio.Server | None = None
        self._connections: OpenConnections[ProxyConnection] = OpenConnections()

    async def start(self) -> int:
        """Listen; returns the bound port (useful with port 0)."""
        loop = asyncio.get_running_loop()
        # With TLS, terminated here: the connection sees plain frames, the relay plain bytes.
        self._server = await loop.create_server(
            self._new_connection,
            self.host,
            self.port,
            **listen_options(self.tls, self._ctx.limits.handshake_timeout_s),
        )
        self.port = int(self._server.sockets[0].getsockname()[1])
        log.info("proxy_listening", host=self.host, port=self.port, tls=self.tls is not None)
        return self.port

    def _new_connection(self) -> ProxyConnection:
        cnx = ProxyConnection(self._ctx, self._connections.discard)
        self._connections.add(cnx)
        return cnx

    def broker_gone(self, broker_id: str) -> None:
        """A broker left the registry: drop the relays to it and the link to it."""
        dropped = self._ctx.drop_relays_to(broker_id)
        self._links.drop(broker_id)
        log.info("proxy_relays_dropped", broker=broker_id, relays=dropped)

    async def close(self, timeout_s: float = 10.0) -> None:
        if self._server is None:
            return
        server, self._server = self._server, None
        await self._connections.close(server, timeout_s)
        log.info("proxy_listener_stopped")
