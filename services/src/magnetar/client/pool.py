"""The client's connections, one per (logical, physical) broker address, shared by every handle.

:meth:`ConnectionPool.get` returns the open connection for an address or opens one; concurrent
callers for the same address wait for the same attempt (one lock per address), so a burst of
producers never opens duplicate connections. A closed connection is replaced on the next get.

Concurrency: one event loop; the dict and locks are only touched from coroutines on it.
"""

from __future__ import annotations

import asyncio

from magnetar.client.connection import CLIENT_VERSION, Connection
from magnetar.client.errors import ClientClosed
from magnetar.client.settings import Authentication, TlsOptions


class ConnectionPool:
    """Open connections keyed by (logical address, physical address)."""

    def __init__(
        self,
        *,
        connection_timeout_s: float = 10.0,
        operation_timeout_s: float = 30.0,
        keepalive_interval_s: float = 30.0,
        auth: Authentication | None = None,
        tls: TlsOptions | None = None,
        client_version: str = CLIENT_VERSION,
    ) -> None:
        self._connection_timeout_s = connection_timeout_s
        self._operation_timeout_s = operation_timeout_s
        self._keepalive_interval_s = keepalive_interval_s
        self._auth = auth
        self._tls = tls
        self._client_version = client_version
        self._connections: dict[tuple[str, str], Connection] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._closed = False

    async def get(self, logical_address: str, physical_address: str | None = None) -> Connection:
        """The open connection to ``logical_address`` (through ``physical_address``)."""
        physical = physical_address or logical_address
        key = (logical_address, physical)
        conn = self._connections.get(key)
        if conn is not None and conn.is_open:
            return conn
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if self._closed:
                raise ClientClosed("the client is closed")
            conn = self._connections.get(key)
            if conn is not None and conn.is_open:
                return conn
            conn = await Connection.open(
                logical_address,
                physical,
                connection_timeout_s=self._connection_timeout_s,
                operation_timeout_s=self._operation_timeout_s,
                keepalive_interval_s=self._keepalive_interval_s,
                auth=self._auth,
                tls=self._tls,
                # Through a proxy (physical != logical) the proxy needs the real broker.
                proxy_to_broker_url=logical_address if physical != logical_address else None,
                client_version=self._client_version,
            )
            self._connections[key] = conn
            return conn

    @property
    def connections(self) -> list[Connection]:
        return [c for c in self._connections.values() if c.is_open]

    async def close(self) -> None:
        self._closed = True
        connections, self._connections = self._connections, {}
        await asyncio.gather(*(c.close() for c in connections.values()), return_exceptions=True)
