"""Server-side TLS: the SSLContext a listener serves with, rebuilt when its files change.

A listener (the broker's binary and HTTPS ports, the proxy's) is given one
:class:`ServerTls`. Its :meth:`ServerTls.listening_context` is the context the socket server
is created with; that context's SNI callback, which OpenSSL runs on every ClientHello (with or
without a server name), swaps in :meth:`ServerTls.current`, so each new handshake gets the
newest certificate while connections already established keep theirs. ``current`` looks at
the files at most once per ``refresh_interval_s`` (Pulsar's ``tlsCertRefreshCheckDurationSec``;
0 looks at every handshake): when the bytes of the certificate, key or trust file differ from
those loaded, a new context is built from them; a set of files that does not load (a rotation
caught half-written: a new certificate with the old key) keeps the old context, is logged,
and is tried again at the next check.

The files are small and read only at a check, on the loop that accepts (a few KiB every
refresh interval), which is why no executor is used.

Client-side contexts for our own client live with it (:mod:`magnetar.client.settings`); gRPC
and etcd take PEM bytes, read by :func:`read_pem_files`.

Concurrency: one :class:`ServerTls` belongs to one event loop (its SNI callback runs there).
"""

from __future__ import annotations

import hashlib
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from magnetar.errors import MagnetarError
from magnetar.telemetry import get_logger

log = get_logger(__name__)

_VERSIONS = {
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}


class TlsConfigError(MagnetarError):
    """A TLS setting names a file that cannot be read or loaded, or a value that is wrong."""

    retryable = False


def parse_protocols(text: str) -> tuple[str, ...]:
    """``TLSv1.3,TLSv1.2`` (Pulsar's ``tlsProtocols``) -> the names; ValueError names a bad one."""
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    for name in names:
        if name not in _VERSIONS:
            raise ValueError(f"TLS protocol {name!r} is not one of {', '.join(_VERSIONS)}")
    return names


@dataclass(frozen=True, slots=True)
class TlsServerConfig:
    """Pulsar's server TLS settings (broker.conf names in the settings objects).

    ``require_client_cert``: ``tlsRequireTrustedClientCertOnConnect``, a client without a
    certificate the trust file vouches for fails the handshake. Without it a client may still
    present one (verified against the trust file when there is one). ``allow_insecure_connection``
    (``tlsAllowInsecureConnection``): client certificates are not asked for nor verified."""

    cert_file: Path
    key_file: Path
    trust_certs_file: Path | None = None
    require_client_cert: bool = False
    allow_insecure_connection: bool = False
    refresh_interval_s: float = 300.0
    protocols: tuple[str, ...] = ()
    ciphers: str = ""

    def files(self) -> tuple[Path, ...]:
        trust = () if self.trust_certs_file is None else (self.trust_certs_file,)
        return (self.cert_file, self.key_file, *trust)


def server_context(config: TlsServerConfig) -> ssl.SSLContext:
    """A server context from ``config``'s files; TlsConfigError says which file is wrong."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.load_cert_chain(config.cert_file, config.key_file)
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(
            f"cannot load the TLS certificate {config.cert_file} with the key "
            f"{config.key_file}: {exc}; check both files exist, are PEM and belong together"
        ) from exc
    if config.trust_certs_file is not None:
        try:
            ctx.load_verify_locations(cafile=config.trust_certs_file)
        except (OSError, ssl.SSLError) as exc:
            raise TlsConfigError(
                f"cannot load the TLS trust certificates {config.trust_certs_file}: {exc}"
            ) from exc
    if config.allow_insecure_connection:
        ctx.verify_mode = ssl.CERT_NONE
    elif config.require_client_cert:
        if config.trust_certs_file is None:
            raise TlsConfigError(
                "requiring trusted client certificates needs a trust certificates file "
                "(tls_trust_certs_file_path)"
            )
        ctx.verify_mode = ssl.CERT_REQUIRED
    elif config.trust_certs_file is not None:
        ctx.verify_mode = ssl.CERT_OPTIONAL
    if config.protocols:
        chosen = sorted(_VERSIONS[name] for name in config.protocols)
        ctx.minimum_version, ctx.maximum_version = chosen[0], chosen[-1]
    if config.ciphers:
        try:
            ctx.set_ciphers(config.ciphers)
        except ssl.SSLError as exc:
            raise TlsConfigError(f"no usable cipher in tls_ciphers {config.ciphers!r}") from exc
    return ctx


def _digest(files: tuple[Path, ...]) -> bytes:
    digest = hashlib.sha256()
    for path in files:
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"\0missing\0")
        digest.update(b"\0")
    return digest.digest()


class ServerTls:
    """One listener's TLS: the listening context and the newest context (module docstring)."""

    def __init__(self, config: TlsServerConfig, *, clock: Any = time.monotonic) -> None:
        self.config = config
        self._clock = clock
        self._digest = _digest(config.files())
        self._current = server_context(config)  # TlsConfigError at start-up: refuse to start
        self._checked = clock()
        self._listening = server_context(config)
        self._listening.sni_callback = self._on_client_hello
        self.reloads = 0

    def listening_context(self) -> ssl.SSLContext:
        """The context to create the server with; every handshake moves to :meth:`current`."""
        return self._listening

    def current(self) -> ssl.SSLContext:
        """The newest context, rebuilt first when a check is due and the files changed."""
        now = self._clock()
        if now - self._checked >= self.config.refresh_interval_s:
            self._checked = now
            self._check()
        return self._current

    def _check(self) -> None:
        digest = _digest(self.config.files())
        if digest == self._digest:
            return
        try:
            fresh = server_context(self.config)
        except TlsConfigError as exc:
            log.warning("tls_reload_failed", cert=str(self.config.cert_file), error=str(exc))
            return
        self._current, self._digest = fresh, digest
        self.reloads += 1
        log.info("tls_reloaded", cert=str(self.config.cert_file), reloads=self.reloads)

    def _on_client_hello(
        self, sslobj: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, _: ssl.SSLContext
    ) -> None:
        sslobj.context = self.current()


def listen_options(tls: ServerTls | None, handshake_timeout_s: float) -> dict[str, Any]:
    """The TLS keyword arguments of ``asyncio.start_server`` / ``loop.create_server`` for a
    listener (none without ``tls``: asyncio refuses a handshake timeout without ``ssl``)."""
    if tls is None:
        return {}
    return {"ssl": tls.listening_context(), "ssl_handshake_timeout": handshake_timeout_s}


def peer_certificate_of(transport_info: Any) -> dict[str, Any] | None:
    """``getpeercert()`` of a connection, from its transport's ``get_extra_info``: None without
    TLS or without a (verified) client certificate."""
    cert = transport_info("peercert")
    return cert if cert else None


@dataclass(frozen=True, slots=True)
class PemFiles:
    """PEM bytes for gRPC and etcd credentials (they take bytes, not paths)."""

    trust_certs: bytes | None = None
    cert_chain: bytes | None = None
    private_key: bytes | None = None


def read_pem_files(
    trust_certs_file: str | None, cert_file: str | None = None, key_file: str | None = None
) -> PemFiles:
    """Read the PEM files a TLS client or server names; TlsConfigError names a missing one."""

    def read(path: str | None, what: str) -> bytes | None:
        if not path:
            return None
        try:
            return Path(path).read_bytes()
        except OSError as exc:
            raise TlsConfigError(f"cannot read the {what} {path}: {exc.strerror}") from exc

    if bool(cert_file) != bool(key_file):
        raise TlsConfigError("a TLS client certificate needs its key file, and the key its cert")
    return PemFiles(
        read(trust_certs_file, "TLS trust certificates file"),
        read(cert_file, "TLS certificate file"),
        read(key_file, "TLS key file"),
    )


@dataclass(frozen=True, slots=True)
class LoadedServerPem:
    """A server's PEM files as read at one moment, with their digest (to see a change)."""

    cert_chain: bytes
    private_key: bytes
    trust_certs: bytes | None
    digest: bytes


@dataclass(frozen=True, slots=True)
class PemServerTls:
    """A gRPC server's TLS (the bookie's): files, client authentication, refresh interval."""

    cert_file: str
    key_file: str
    trust_certs_file: str = ""
    require_client_auth: bool = False
    refresh_interval_s: float = 300.0

    def load(self) -> LoadedServerPem:
        """Read the files; TlsConfigError names one that is missing or the setting lacking."""
        if not self.cert_file or not self.key_file:
            raise TlsConfigError("a TLS server needs its certificate file and its key file")
        if self.require_client_auth and not self.trust_certs_file:
            raise TlsConfigError(
                "client authentication needs a trust certificates file (the CA of the clients)"
            )
        pem = read_pem_files(self.trust_certs_file or None, self.cert_file, self.key_file)
        assert pem.cert_chain is not None
        assert pem.private_key is not None
        digest = hashlib.sha256(
            pem.cert_chain + b"\0" + pem.private_key + b"\0" + (pem.trust_certs or b"")
        ).digest()
        return LoadedServerPem(pem.cert_chain, pem.private_key, pem.trust_certs, digest)
