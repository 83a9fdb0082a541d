"""Binary-protocol lookups: the broker serving a topic, partition counts, namespace topics, schemas.

:meth:`LookupService.lookup` sends LOOKUP to the service URL's connection and follows
``Redirect`` answers to the broker they name, carrying the ``authoritative`` flag from each
answer, for at most ``max_redirects`` hops (the C++ client's ``maxLookupRedirects``, 20).
A ``Connect`` answer with ``proxy_through_service_url`` keeps the broker as the *logical*
address but connects through the address the lookup went to (proxy / single-broker setups).

Every request has the client's operation timeout. Concurrency: coroutines on the client's loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from magnetar.client.errors import InvalidConfiguration, ServerErrorResponse, TooManyRedirects
from magnetar.client.pool import ConnectionPool
from magnetar.naming import full_topic_name
from magnetar.protocol import commands
from magnetar.wire import pulsar_api_pb2 as pb

DEFAULT_MAX_REDIRECTS = 20

_MODES = {
    "persistent": pb.CommandGetTopicsOfNamespace.PERSISTENT,
    "non_persistent": pb.CommandGetTopicsOfNamespace.NON_PERSISTENT,
    "all": pb.CommandGetTopicsOfNamespace.ALL,
}


def service_address(url: str) -> str:
    """``host:port`` from ``pulsar://host:port`` or ``pulsar+ssl://host:port`` (or a bare one)."""
    address = url.partition("://")[2] if "://" in url else url
    address = address.rstrip("/")
    if "," in address:
        address = address.split(",")[0]
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise InvalidConfiguration(f"invalid service URL {url!r}")
    return address


@dataclass(frozen=True)
class LookupResult:
    """Where to attach for a topic: the broker's address and the address to connect through."""

    logical_address: str
    physical_address: str


class LookupService:
    """Lookups over the binary protocol, starting at the service URL's broker."""

    def __init__(
        self,
        pool: ConnectionPool,
        service_url: str,
        *,
        use_tls: bool = False,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
        listener_name: str | None = None,
    ) -> None:
        self._pool = pool
        self._service_address = service_address(service_url)
        self._use_tls = use_tls
        self._max_redirects = max_redirects
        self._listener_name = listener_name

    @property
    def service_address(self) -> str:
        return self._service_address

    async def lookup(self, topic: str) -> LookupResult:
        """The broker that serves ``topic``, following redirects (bounded)."""
        topic = full_topic_name(topic)
        address = self._service_address
        authoritative = False
        for _ in range(self._max_redirects + 1):
            conn = await self._pool.get(address)
            request = commands.lookup(
                topic,
                conn.new_request_id(),
                authoritative=authoritative,
                advertised_listener_name=self._listener_name,
            )
            response = (await conn.request(request)).lookup_topic_response
            url = (
                response.broker_service_url_tls
                if self._use_tls and response.broker_service_url_tls
                else response.broker_service_url
            )
            broker = service_address(url) if url else address
            if response.response == pb.CommandLookupTopicResponse.Connect:
                physical = address if response.proxy_through_service_url else broker
                return LookupResult(logical_address=broker, physical_address=physical)
            if response.response != pb.CommandLookupTopicResponse.Redirect:
                raise ServerErrorResponse(pb.UnknownError, f"lookup of {topic}: bad answer")
            address = broker
            authoritative = response.authoritative
        raise TooManyRedirects(
            f"lookup of {topic} redirected more than {self._max_redirects} times"
        )

    async def partitions(self, topic: str) -> int:
        """The partition count of ``topic``; 0 when it is not partitioned."""
        conn = await self._pool.get(self._service_address)
        request = commands.partitioned_metadata(full_topic_name(topic), conn.new_request_id())
        response = await conn.request(request)
        return int(response.partition_metadata_response.partitions)

    async def topics_of_namespace(
        self, namespace: str, mode: Literal["persistent", "non_persistent", "all"]
    ) -> list[str]:
        conn = await self._pool.get(self._service_address)
        request = commands.get_topics_of_namespace(
            conn.new_request_id(), namespace, mode=_MODES[mode]
        )
        response = await conn.request(request)
        return list(response.get_topics_of_namespace_response.topics)

    async def schema(self, topic: str) -> pb.Schema | None:
        """The topic's latest schema, or None if it has none."""
        conn = await self._pool.get(self._service_address)
        request = commands.get_schema(conn.new_request_id(), full_topic_name(topic))
        try:
            response = await conn.request(request)
        except ServerErrorResponse as exc:
            if exc.code == pb.TopicNotFound:
                return None
            raise
        body = response.get_schema_response
        return body.schema if body.HasField("schema") else None
