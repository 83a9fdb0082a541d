"""Forward one HTTP request to a broker and stream its answer back: the proxy's httpx adapter.

The one module of the proxy that imports httpx. :class:`HttpForwarder` sends the request to a
registered broker picked at random; a ``307``/``308`` whose ``Location`` is another registered
broker's web service (a topic-scoped admin call or a lookup on a broker that does not own the
topic: Pulsar's redirect to the owner) is followed inside the proxy, at most
:data:`MAX_REDIRECTS` hops, so the client never learns a broker address. A broker that refuses
the TCP connection is skipped for another (the request was not sent). Any other answer —
status, headers and body — goes back as the broker gave it; the body streams (chunks as they
come, never buffered whole).

Invariants: a request body is bounded by the caller (it is buffered, to be replayed on a
redirect); each broker call has the forwarder's timeout to start answering; hop-by-hop headers
are not forwarded either way. Errors raised: :class:`~.errors.NoBrokerAvailable`,
:class:`~.errors.BrokerUnreachable`, :class:`~.errors.BrokerRequestTimeout`.

Concurrency: one forwarder per proxy, used by many request tasks of its loop at once (httpx
pools connections); :meth:`HttpForwarder.close` at shutdown.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from magnetar.proxy.discovery import BrokerDiscovery, RegisteredBroker
from magnetar.proxy.errors import (
    BrokerRequestTimeout,
    BrokerUnreachable,
    BrokerWithoutTls,
    NoBrokerAvailable,
)

MAX_REDIRECTS = 10
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
Headers = Sequence[tuple[str, str]]


@dataclass
class ForwardedResponse:
    """A broker's answer, its body still to be read from :meth:`body` (then :meth:`close`)."""

    status: int
    headers: list[tuple[str, str]]
    _response: httpx.Response

    async def body(self) -> AsyncIterator[bytes]:
        async for chunk in self._response.aiter_raw():
            yield chunk

    async def close(self) -> None:
        await self._response.aclose()


class HttpForwarder:
    """Requests to brokers, redirects followed inside (module docstring)."""

    def __init__(
        self,
        discovery: BrokerDiscovery,
        timeout_s: float,
        broker_tls: ssl.SSLContext | None = None,
    ) -> None:
        """``broker_tls``: forward to the brokers' ``https://`` URLs, verified with it."""
        self._discovery = discovery
        self._timeout_s = timeout_s
        self._broker_tls = broker_tls
        # httpx logs every request at INFO: the proxy's own log lines say what matters.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_s),
            follow_redirects=False,
            trust_env=False,
            verify=broker_tls if broker_tls is not None else True,
        )

    def _base(self, broker: RegisteredBroker) -> str:
        if self._broker_tls is None:
            return broker.web_service_url
        if not broker.web_service_url_tls:
            raise BrokerWithoutTls(broker.broker_id)
        return broker.web_service_url_tls

    async def close(self) -> None:
        await self._client.aclose()

    async def forward(
        self, method: str, target: str, headers: Headers, body: bytes, client: str
    ) -> ForwardedResponse:
        """Send ``method target`` (path and query) with ``headers`` and ``body``."""
        sent = [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]
        sent.append(("x-forwarded-for", client))
        base = await self._first_broker(method, target, sent, body)
        for _ in range(MAX_REDIRECTS + 1):
            url, response = base
            if response.status_code not in (307, 308):
                return _answer(response)
            location = response.headers.get("location", "")
            next_base = self._registered_base(location)
            if next_base is None:
                return _answer(response)  # not one of ours: the client may follow it
            await response.aclose()
            base = (location, await self._send(method, location, sent, body))
        raise BrokerUnreachable(url, f"more than {MAX_REDIRECTS} redirects")

    async def _first_broker(
        self, method: str, target: str, headers: Headers, body: bytes
    ) -> tuple[str, httpx.Response]:
        tried: set[str] = set()
        last: BrokerUnreachable | None = None
        while True:
            candidates = [b for b in self._discovery.brokers if b.broker_id not in tried]
            if not candidates:
                if last is not None:
                    raise last
                raise NoBrokerAvailable()
            broker = self._discovery.any_broker()
            if broker.broker_id in tried:
                broker = candidates[0]
            tried.add(broker.broker_id)
            url = self._base(broker).rstrip("/") + target
            try:
                return url, await self._send(method, url, headers, body)
            except BrokerUnreachable as exc:
                last = exc

    def _registered_base(self, location: str) -> str | None:
        parts = urlsplit(location)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return None
        broker = self._discovery.by_web_address(parts.netloc)
        return None if broker is None else self._base(broker)

    async def _send(self, method: str, url: str, headers: Headers, body: bytes) -> httpx.Response:
        request = self._client.build_request(method, url, headers=list(headers), content=body)
        try:
            return await self._client.send(request, stream=True)
        except httpx.TimeoutException:
            what = f"{method} {urlsplit(url).path}"
            raise BrokerRequestTimeout(url, what, self._timeout_s) from None
        except httpx.TransportError as exc:
            raise BrokerUnreachable(url, str(exc) or type(exc).__name__) from exc


def _answer(response: httpx.Response) -> ForwardedResponse:
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in HOP_BY_HOP]
    # aiter_raw passes the body as the broker encoded it, so its length still holds.
    length = response.headers.get("content-length")
    if length is not None:
        headers.append(("content-length", length))
    return ForwardedResponse(response.status_code, headers, response)
