"""Named advertised listeners (Pulsar's ``advertisedListeners``, PIP-61): one broker, several
addresses, chosen per client by listener name.

A broker reached from inside a Kubernetes cluster by its pod IP and from outside by a load
balancer's address advertises both: ``internal:pulsar://10.0.0.5:6650,internal:http://10.0.0.5:8080,
external:pulsar://lb.example:6650``. A client that sets ``listener_name`` (binary LOOKUP's
``advertised_listener_name``; HTTP lookup's ``listenerName`` query parameter or
``X-Pulsar-ListenerName`` header) is answered with that listener's URLs; a name the owning broker
does not have is refused with Pulsar's error (ServiceNotReady naming the listener) instead of the
default address; without a name the broker's default addresses answer, as before.

The setting's format: comma-separated ``name:url`` with schemes ``pulsar``, ``pulsar+ssl``,
``http``, ``https``; each name needs a ``pulsar://`` or ``pulsar+ssl://`` URL and at most one URL
per scheme. The listeners travel in the broker's registration (``advertisedListeners``, Pulsar's
LocalBrokerData field), so any broker can answer for the owner. Pure values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from magnetar.broker.errors import ServiceNotReady

_FIELDS = {
    "pulsar": "brokerServiceUrl",
    "pulsar+ssl": "brokerServiceUrlTls",
    "http": "brokerHttpUrl",
    "https": "brokerHttpsUrl",
}


class UnknownListener(ServiceNotReady):
    """A lookup asked for a listener name the owning broker does not advertise."""

    def __init__(self, name: str, broker: str) -> None:
        super().__init__(f"the broker {broker} does not have the listener {name!r}")
        self.name = name


@dataclass(frozen=True, slots=True)
class AdvertisedListener:
    """One listener's URLs (Pulsar's AdvertisedListener JSON field names in ``to_json``)."""

    broker_service_url: str | None = None
    broker_service_url_tls: str | None = None
    broker_http_url: str | None = None
    broker_https_url: str | None = None

    def to_json(self) -> dict[str, str]:
        values = (
            self.broker_service_url,
            self.broker_service_url_tls,
            self.broker_http_url,
            self.broker_https_url,
        )
        return {f: v for f, v in zip(_FIELDS.values(), values, strict=True) if v is not None}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> AdvertisedListener:
        get = doc.get
        return cls(
            get("brokerServiceUrl"),
            get("brokerServiceUrlTls"),
            get("brokerHttpUrl"),
            get("brokerHttpsUrl"),
        )


def parse_advertised_listeners(text: str) -> dict[str, AdvertisedListener]:
    """The listeners of an ``advertised_listeners`` setting; ValueError says what is wrong."""
    urls: dict[str, dict[str, str]] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, url = item.partition(":")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"advertised listener {item!r} is not name:scheme://host:port")
        parts = urlsplit(url.strip())
        if parts.scheme not in _FIELDS or not parts.hostname or parts.port is None:
            raise ValueError(
                f"advertised listener {name!r}: {url!r} is not pulsar://, pulsar+ssl://, "
                "http:// or https:// with a host and a port"
            )
        mine = urls.setdefault(name, {})
        if parts.scheme in mine:
            raise ValueError(f"advertised listener {name!r} has two {parts.scheme}:// URLs")
        mine[parts.scheme] = url.strip()
    listeners = {}
    for name, mine in urls.items():
        if "pulsar" not in mine and "pulsar+ssl" not in mine:
            raise ValueError(f"advertised listener {name!r} has no pulsar:// or pulsar+ssl:// URL")
        listeners[name] = AdvertisedListener(
            mine.get("pulsar"), mine.get("pulsar+ssl"), mine.get("http"), mine.get("https")
        )
    return listeners
