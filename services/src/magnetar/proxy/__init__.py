"""The proxy: one front door for clients of a multi-broker cluster (Pulsar's proxy).

Clients point the official client at the proxy (``pulsar://proxy:6650``, admin tools at
``http://proxy:8080``) and never learn a broker address they could not reach anyway. The
proxy answers CONNECT, LOOKUP and PARTITIONED_METADATA itself (lookups through the brokers,
answered with ``proxy_through_service_url``), then relays each client connection that names a
broker in ``proxy_to_broker_url`` to that broker as raw bytes; HTTP admin and lookup calls are
forwarded to the brokers. Stateless: it reads the broker registry from the metadata store.

* :mod:`.settings` — ``ProxySettings`` (``MAGNETAR_PROXY_*``) and the relay's limits.
* :mod:`.discovery` — the registered brokers, kept by a watch; who left.
* :mod:`.broker_link` — the proxy's own shared request connections to brokers.
* :mod:`.lookup` — LOOKUP through the brokers (redirects followed), and forwarded requests.
* :mod:`.connection` — one client connection: lookup mode, relay set-up.
* :mod:`.handshake` — the first frame, the CONNECT sent to a broker, the broker's CONNECTED.
* :mod:`.relay` — the byte relay with flow control.
* :mod:`.server` — the binary listener.
* :mod:`.http_forward` (httpx), :mod:`.web_app` (ASGI), :mod:`.web_service` (uvicorn) — HTTP.
* :mod:`.stats`, :mod:`.metrics` — counters and their metrics.
* :mod:`.process` — the process: start-up, ready line, ordered shutdown.

The proxy imports no broker code (an import contract): it reads the registry's JSON and
speaks the protocol.
"""

from magnetar.proxy.process import READY_LINE, serve_proxy
from magnetar.proxy.settings import ProxySettings

__all__ = ["READY_LINE", "ProxySettings", "serve_proxy"]
