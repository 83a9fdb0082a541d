"""Open a metadata store from a URL; the only place that maps URLs to backends.

Accepted forms::

    memory://NAME                    in-process server shared per NAME (tests)
    rocksdb:///absolute/path         embedded RocksDB (standalone)
    etcd://host:port[,host:port...]  an etcd 3.4+ cluster (TLS when the caller passes ``tls``)

Backends are imported lazily so that a process using one never loads the others' libraries. An
etcd that does not answer at open is a :class:`StoreUnavailable` naming the URL (processes
print it and exit, see :mod:`magnetar.cli.server_process`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from magnetar.metadata.errors import StoreUnavailable
from magnetar.metadata.store import MetadataStore
from magnetar.tls import PemFiles

ACCEPTED_FORMS = "memory://NAME, rocksdb:///absolute/path, etcd://host:port[,host:port...]"


def _bad(url: str, why: str) -> ValueError:
    return ValueError(f"bad metadata store URL {url!r}: {why}; accepted forms: {ACCEPTED_FORMS}")


def parse_etcd_endpoints(url: str, rest: str) -> list[str]:
    """``host:port,host:port`` -> endpoints; every port must be a number in 1..65535."""
    endpoints = []
    for part in rest.rstrip("/").split(","):
        host, sep, port = part.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise _bad(url, f"etcd endpoint {part!r} is not host:port")
        endpoints.append(f"{host}:{int(port)}")
    return endpoints


async def open_store(
    url: str, *, session_timeout_s: float = 10.0, tls: PemFiles | None = None
) -> MetadataStore:
    """Open (and start the session of) the store that ``url`` names. ``tls`` (etcd only): the
    CA of etcd's certificate and, for ``--client-cert-auth``, the client's certificate."""
    if not isinstance(url, str):
        raise TypeError(f"metadata store URL must be str, got {type(url).__name__}")
    if session_timeout_s <= 0:
        raise ValueError(f"session_timeout_s must be > 0, got {session_timeout_s}")
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise _bad(url, "no scheme")
    if scheme == "memory":
        if not rest or "/" in rest:
            raise _bad(url, "memory needs a plain name")
        from magnetar.metadata.memory import MemoryMetadataStore

        return await MemoryMetadataStore.open(rest, session_timeout_s=session_timeout_s)
    if scheme == "rocksdb":
        parts = urlsplit(url)
        if parts.netloc or not parts.path.startswith("/") or parts.path == "/":
            raise _bad(url, "rocksdb needs an absolute path (three slashes)")
        from magnetar.metadata.rocksdb import RocksMetadataStore

        return await RocksMetadataStore.open(parts.path, session_timeout_s=session_timeout_s)
    if scheme == "etcd":
        if not rest:
            raise _bad(url, "etcd needs at least one host:port")
        endpoints = parse_etcd_endpoints(url, rest)
        from magnetar.metadata.etcd import EtcdMetadataStore

        try:
            return await EtcdMetadataStore.open(
                endpoints, session_timeout_s=session_timeout_s, tls=tls
            )
        except StoreUnavailable as exc:
            raise StoreUnavailable(
                f"cannot reach the metadata store at {url} ({exc}); start etcd there, "
                "or give the URL of a running one (an etcd serving TLS needs the "
                "metadata_store_tls_* settings: its CA, and a client certificate if it asks)"
            ) from exc
    raise _bad(url, f"unknown scheme {scheme!r}")
