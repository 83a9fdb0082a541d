"""TLS settings shared by the processes' settings objects (pydantic-settings mixins).

Each process's settings class (broker, standalone, proxy, bookie, autorecovery) inherits the
mixins it needs, so a setting has one name everywhere under that process's env prefix
(``MAGNETAR_BROKER_TLS_CERTIFICATE_FILE_PATH``, ``MAGNETAR_PROXY_TLS_CERTIFICATE_FILE_PATH``).
Names are Pulsar's broker.conf / proxy.conf ones in snake case (``tlsCertificateFilePath`` ->
``tls_certificate_file_path``, ``bookkeeperTLSTrustCertsFilePath`` ->
``bookkeeper_tls_trust_certs_file_path``); the metadata store's are Magnetar's own (Pulsar
puts them in a separate metadata store configuration file).

The methods turn the settings into values (:class:`~magnetar.tls.contexts.TlsServerConfig`,
:class:`~magnetar.tls.contexts.PemFiles`); a file that cannot be read is a
:class:`~magnetar.tls.contexts.TlsConfigError` naming it, which the command line prints.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings

from magnetar.tls.contexts import (
    PemFiles,
    TlsConfigError,
    TlsServerConfig,
    parse_protocols,
    read_pem_files,
)


class ServerTlsSettings(BaseSettings):
    """The certificate a TLS port serves and how it treats client certificates."""

    tls_certificate_file_path: str = ""
    tls_key_file_path: str = ""
    tls_trust_certs_file_path: str = ""
    tls_allow_insecure_connection: bool = False
    tls_require_trusted_client_cert_on_connect: bool = False
    # How often the files are looked at for a rotated certificate (0: at every handshake).
    tls_cert_refresh_check_duration_sec: float = Field(default=300.0, ge=0)
    # "TLSv1.3,TLSv1.2": the versions allowed (empty: Python's defaults); OpenSSL cipher list.
    tls_protocols: str = ""
    tls_ciphers: str = ""

    @field_validator("tls_protocols")
    @classmethod
    def _protocols_parse(cls, value: str) -> str:
        parse_protocols(value)  # ValueError names the protocol that is wrong
        return value

    def server_tls_config(self, port_setting: str) -> TlsServerConfig:
        """The TLS config of a port; TlsConfigError when the certificate or key is not set
        (``port_setting`` names the port setting that asked for TLS)."""
        if not self.tls_certificate_file_path or not self.tls_key_file_path:
            raise TlsConfigError(
                f"{port_setting} is set, so tls_certificate_file_path and tls_key_file_path "
                "must name the PEM certificate and key the port serves"
            )
        return TlsServerConfig(
            cert_file=Path(self.tls_certificate_file_path),
            key_file=Path(self.tls_key_file_path),
            trust_certs_file=(
                Path(self.tls_trust_certs_file_path) if self.tls_trust_certs_file_path else None
            ),
            require_client_cert=self.tls_require_trusted_client_cert_on_connect,
            allow_insecure_connection=self.tls_allow_insecure_connection,
            refresh_interval_s=self.tls_cert_refresh_check_duration_sec,
            protocols=parse_protocols(self.tls_protocols),
            ciphers=self.tls_ciphers,
        )


class BookkeeperClientTlsSettings(BaseSettings):
    """TLS from a BookKeeper client (broker, autorecovery) to the bookies' gRPC port: on when
    the trust file is set; the certificate and key are the client's own (mutual TLS)."""

    bookkeeper_tls_trust_certs_file_path: str = ""
    bookkeeper_tls_certificate_file_path: str = ""
    bookkeeper_tls_key_file_path: str = ""

    def bookkeeper_tls(self) -> PemFiles | None:
        return _client_pem(
            "bookkeeper_tls",
            "the CA of the bookies' certificates",
            self.bookkeeper_tls_trust_certs_file_path,
            self.bookkeeper_tls_certificate_file_path,
            self.bookkeeper_tls_key_file_path,
        )


class MetadataStoreTlsSettings(BaseSettings):
    """TLS to etcd (``etcd://`` metadata URLs): on when the trust file is set; the certificate
    and key are the client's own, for an etcd started with ``--client-cert-auth``."""

    metadata_store_tls_trust_certs_file_path: str = ""
    metadata_store_tls_certificate_file_path: str = ""
    metadata_store_tls_key_file_path: str = ""

    def metadata_store_tls(self) -> PemFiles | None:
        return _client_pem(
            "metadata_store_tls",
            "the CA of etcd's certificate",
            self.metadata_store_tls_trust_certs_file_path,
            self.metadata_store_tls_certificate_file_path,
            self.metadata_store_tls_key_file_path,
        )


def _client_pem(prefix: str, trust_is: str, trust: str, cert: str, key: str) -> PemFiles | None:
    """A TLS client's PEM files, on when the trust file is set (None: off); TlsConfigError
    names the ``<prefix>_*`` setting that is missing or the file that cannot be read."""
    if not trust:
        if cert:
            raise TlsConfigError(
                f"{prefix}_certificate_file_path needs {prefix}_trust_certs_file_path ({trust_is})"
            )
        return None
    return read_pem_files(trust, cert, key)
