"""Opening a client for a tool run: fail fast and clearly when the broker is not there.

The client retries a first attach for its whole operation timeout (right for applications
riding out a broker restart). A command-line tool should instead say at once that nothing
listens at the service URL: :func:`open_client` asks the broker for the topic's partition
count once, without retries, and raises the client's error (``ConnectionFailed``,
``TopicNotFound`` ...) for :func:`magnetar.tools.errors.explain` to put into words.

Concurrency: call from the one event loop of the tool's run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from magnetar.client import Client, TlsOptions

DEFAULT_SERVICE_URL = "pulsar://127.0.0.1:6650"


@asynccontextmanager
async def open_client(
    service_url: str,
    probe_topic: str,
    *,
    operation_timeout_s: float = 30.0,
    tls: TlsOptions | None = None,
) -> AsyncIterator[Client]:
    """A client whose broker answered one request about ``probe_topic``; closed on exit.
    ``tls``: the trust file and options of a ``pulsar+ssl://`` URL."""
    client = Client(
        service_url,
        operation_timeout_s=operation_timeout_s,
        connection_timeout_s=min(5.0, operation_timeout_s),
        tls=tls,
    )
    try:
        await client.lookup.partitions(probe_topic)
        yield client
    finally:
        await client.close()
