"""The proxy's lookups: find a topic's owner through the brokers, as Pulsar's proxy does.

:class:`ProxyLookup` sends the client's LOOKUP to a registered broker picked at random and
follows its Redirects (at most :data:`MAX_REDIRECTS` hops, passing each answer's
``authoritative`` on, as the client would); the final Connect names the owner, and the proxy
answers its client ``Connect`` with that broker's URL, ``authoritative=true`` and
``proxy_through_service_url=true``: the client keeps the broker as the logical address and
reaches it through the proxy, naming it in ``CONNECT.proxy_to_broker_url``. The answer always
carries a ``brokerServiceUrlTls`` (the broker's, or :func:`tls_name`), which a client on the
proxy's TLS port takes as that logical address. A Failed answer
goes back as the broker gave it. Errors travel inside LOOKUP_RESPONSE (the C++ client ignores
ERROR for a lookup), and inside PARTITIONED_METADATA_RESPONSE / GET_SCHEMA_RESPONSE for those.

A broker that does not accept the proxy's connection (killed, its registration not yet
expired) is skipped for another registered one.

The other requests of a lookup connection (PARTITIONED_METADATA, GET_TOPICS_OF_NAMESPACE,
GET_SCHEMA) need no owner: any broker answers them from the metadata store, so they go to a
random registered broker as they are.

Concurrency: coroutines run by the client connections' request tasks, on the proxy's loop.
"""

from __future__ import annotations

from magnetar.errors import MagnetarError
from magnetar.protocol import commands
from magnetar.protocol.errors import server_error_for
from magnetar.protocol.frame import command_body
from magnetar.proxy.broker_link import BrokerLinks
from magnetar.proxy.discovery import BrokerDiscovery, address_of
from magnetar.proxy.errors import BrokerRequestTimeout, BrokerUnreachable, TooManyLookupRedirects
from magnetar.proxy.stats import ProxyStats
from magnetar.telemetry import get_logger
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)

T = pb.BaseCommand
MAX_REDIRECTS = 10
LookupResponse = pb.CommandLookupTopicResponse


class ProxyLookup:
    """Lookups and metadata requests through the brokers (module docstring)."""

    def __init__(self, discovery: BrokerDiscovery, links: BrokerLinks, stats: ProxyStats) -> None:
        self._discovery = discovery
        self._links = links
        self._stats = stats

    async def lookup(self, request: pb.CommandLookupTopic) -> pb.BaseCommand:
        """LOOKUP_RESPONSE for the client's ``request`` (Connect through the proxy, or Failed)."""
        client_id = request.request_id
        try:
            answer = await self._find_owner(request)
        except MagnetarError as exc:
            self._stats.lookups_failed += 1
            log.info("proxy_lookup_failed", topic=request.topic, error=str(exc))
            return commands.lookup_failed(client_id, server_error_for(exc), str(exc))
        if answer.response == LookupResponse.Failed:
            self._stats.lookups_failed += 1
            return commands.lookup_failed(client_id, answer.error, answer.message)
        self._stats.lookups_served += 1
        url = answer.broker_service_url
        return commands.lookup_response(
            client_id,
            broker_service_url=url,
            broker_service_url_tls=answer.broker_service_url_tls or tls_name(url),
            authoritative=True,
            proxy_through_service_url=True,
        )

    async def _find_owner(self, request: pb.CommandLookupTopic) -> LookupResponse:
        address = await self._first_answering()
        authoritative = False
        for _ in range(MAX_REDIRECTS + 1):
            reply = await self._links.request(address, _lookup(request, authoritative))
            if reply.type != T.LOOKUP_RESPONSE:
                return _failed_answer(reply)
            answer = reply.lookup_topic_response
            if answer.response != LookupResponse.Redirect:
                return answer
            address = address_of(answer.broker_service_url)
            authoritative = answer.authoritative
        raise TooManyLookupRedirects(request.topic, MAX_REDIRECTS)

    async def _first_answering(self) -> str:
        """A registered broker whose link is open (a random one first, then the others): a
        broker killed a moment ago stays registered until its lease runs out."""
        first = address_of(self._discovery.any_broker().pulsar_service_url)
        others = [address_of(b.pulsar_service_url) for b in self._discovery.brokers]
        last: MagnetarError | None = None
        for address in [first, *(a for a in others if a != first)]:
            try:
                await self._links.get(address)
                return address
            except (BrokerUnreachable, BrokerRequestTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def forward(self, command: pb.BaseCommand) -> pb.BaseCommand:
        """Send ``command`` (PARTITIONED_METADATA, GET_TOPICS_OF_NAMESPACE, GET_SCHEMA) to a
        broker; its answer with the client's request id, or the error in the answer's shape."""
        body = command_body(command)
        client_id: int = body.request_id  # type: ignore[attr-defined]
        try:
            reply = await self._links.request(await self._first_answering(), command)
        except MagnetarError as exc:
            return _error_reply(command.type, client_id, exc)
        command_body(reply).request_id = client_id  # type: ignore[attr-defined]
        return reply


def tls_name(url: str) -> str:
    """The ``pulsar+ssl://`` name a TLS client is given for a broker without a TLS port: the
    client only passes it back as ``proxy_to_broker_url`` (it dials the proxy), and the proxy
    knows the broker by that ``host:port``; so TLS to the proxy works with plain brokers."""
    return "pulsar+ssl://" + address_of(url)


def _lookup(request: pb.CommandLookupTopic, authoritative: bool) -> pb.BaseCommand:
    """The client's LOOKUP as the proxy asks it of a broker (the link numbers it)."""
    return commands.lookup(
        request.topic,
        0,
        authoritative=authoritative,
        advertised_listener_name=request.advertised_listener_name or None,
    )


def _failed_answer(reply: pb.BaseCommand) -> LookupResponse:
    """A broker answered a LOOKUP with something else (an ERROR): a Failed lookup."""
    error = reply.error if reply.type == T.ERROR else None
    return LookupResponse(
        request_id=0,
        response=LookupResponse.Failed,
        error=error.error if error is not None else pb.ServiceNotReady,
        message=error.message if error is not None else f"unexpected {T.Type.Name(reply.type)}",
    )


def _error_reply(kind: int, request_id: int, exc: MagnetarError) -> pb.BaseCommand:
    code, message = server_error_for(exc), str(exc)
    if kind == T.PARTITIONED_METADATA:
        return commands.partitioned_metadata_failed(request_id, code, message)
    if kind == T.GET_SCHEMA:
        return commands.get_schema_error(request_id, code, message)
    return commands.error(request_id, code, message)
