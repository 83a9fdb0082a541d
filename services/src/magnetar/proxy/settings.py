"""The proxy's settings object (pydantic-settings, env prefix ``MAGNETAR_PROXY_``).

Built once by ``magnetar proxy`` from its flags over the environment, then passed down; no
module reads the environment itself. Names follow Pulsar's proxy.conf where a Pulsar operator
would look (``servicePort`` -> ``service_port``, ``webServicePort`` -> ``web_service_port``,
``advertisedAddress`` -> ``advertised_address``, ``maxConcurrentLookupRequests`` ->
``max_concurrent_lookup_requests``); the relay's limits are Magnetar's own (docs/proxy.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from magnetar.authentication.settings import AuthenticationSettings
from magnetar.protocol.frame import DEFAULT_MAX_MESSAGE_SIZE, FRAME_SIZE_PADDING
from magnetar.proxy.credentials import BrokerCredential, broker_credential
from magnetar.tls.settings import MetadataStoreTlsSettings, ServerTlsSettings


@dataclass(frozen=True, slots=True)
class RelayLimits:
    """The bounds of one client connection (see :mod:`magnetar.proxy.connection`)."""

    handshake_timeout_s: float
    connect_timeout_s: float
    buffer_bytes: int
    write_stall_timeout_s: float
    max_frame_size: int
    operation_timeout_s: float
    max_pending_requests: int
    keep_alive_interval_s: float


class ProxySettings(ServerTlsSettings, MetadataStoreTlsSettings, AuthenticationSettings):
    model_config = SettingsConfigDict(env_prefix="MAGNETAR_PROXY_", frozen=True)

    metadata_url: str = "etcd://127.0.0.1:2379"
    service_port: int = Field(default=6650, ge=0, le=65535)
    web_service_port: int = Field(default=8080, ge=0, le=65535)
    bind_address: str = "127.0.0.1"
    advertised_address: str = "127.0.0.1"
    session_timeout_s: float = Field(default=10.0, gt=0)
    # A client must send a complete CONNECT within this; the broker must answer the proxy's
    # CONNECT within it too (the broker side of a relay).
    handshake_timeout_s: float = Field(default=10.0, gt=0)
    # TCP connect to a broker (brokerProxyConnectTimeoutMs in Pulsar).
    broker_connect_timeout_s: float = Field(default=10.0, gt=0)
    # Lookups and the other requests the proxy forwards on a lookup connection.
    operation_timeout_s: float = Field(default=30.0, gt=0)
    max_concurrent_lookup_requests: int = Field(default=50_000, ge=1)
    # keepAliveIntervalSeconds: a lookup connection idle this long gets a PING, and is closed
    # when it stays silent another interval (relays carry the broker's own keep-alive).
    keep_alive_interval_s: float = Field(default=30.0, gt=0)
    # Bytes one direction of a relay buffers before it stops reading its source.
    relay_buffer_bytes: int = Field(default=1024 * 1024, ge=64 * 1024)
    # A peer that takes none of its buffered bytes for this long is dropped (a slow client).
    relay_write_stall_timeout_s: float = Field(default=60.0, gt=0)
    # The largest frame a lookup connection accepts (the relay never looks at frames).
    max_message_size: int = Field(default=DEFAULT_MAX_MESSAGE_SIZE, gt=1024)
    # How long the HTTP forwarder waits for a broker's answer to start (bodies stream).
    http_request_timeout_s: float = Field(default=60.0, gt=0)
    # Request bodies are buffered (a 307 from a broker must be replayed): at most this much.
    http_max_request_body_bytes: int = Field(default=5 * 1024 * 1024, ge=1024)
    shutdown_step_timeout_s: float = Field(default=10.0, gt=0)
    log_level: str = "info"
    log_json: bool = False
    # TLS for clients (proxy.conf's servicePortTls, webServicePortTls; tlsEnabledInProxy, the
    # older switch, serves servicePortTls's default 6651). The certificate and client trust
    # come from ServerTlsSettings (tls_certificate_file_path, ...).
    service_port_tls: int | None = Field(default=None, ge=0, le=65535)
    web_service_port_tls: int | None = Field(default=None, ge=0, le=65535)
    tls_enabled_in_proxy: bool = False
    # TLS to the brokers (tlsEnabledWithBroker, brokerClientTrustCertsFilePath, ...): relays and
    # lookups dial the brokers' pulsar+ssl:// addresses; the certificate is the proxy's own.
    tls_enabled_with_broker: bool = False
    broker_client_trust_certs_file_path: str = ""
    broker_client_certificate_file_path: str = ""
    broker_client_key_file_path: str = ""
    tls_hostname_verification_enabled: bool = False

    @property
    def effective_service_port_tls(self) -> int | None:
        if self.service_port_tls is None and self.tls_enabled_in_proxy:
            return 6651
        return self.service_port_tls

    # Security (proxy.conf names; docs/security.md). With authentication_enabled the proxy
    # authenticates clients itself and tells brokers their role as original_principal.
    # (authentication_enabled, the providers and token keys: AuthenticationSettings)
    broker_client_authentication_plugin: str = ""
    broker_client_authentication_parameters: SecretStr = SecretStr("")
    forward_authorization_credentials: bool = False

    @model_validator(mode="after")
    def _security_loads(self) -> ProxySettings:
        """A bad broker credential stops the start (the keys: the mixin's check)."""
        self.broker_credential()  # ValueError names the setting
        return self

    def broker_credential(self) -> BrokerCredential | None:
        return broker_credential(
            self.broker_client_authentication_plugin,
            self.broker_client_authentication_parameters.get_secret_value(),
        )

    def relay_limits(self) -> RelayLimits:
        return RelayLimits(
            handshake_timeout_s=self.handshake_timeout_s,
            connect_timeout_s=self.broker_connect_timeout_s,
            buffer_bytes=self.relay_buffer_bytes,
            write_stall_timeout_s=self.relay_write_stall_timeout_s,
            max_frame_size=self.max_message_size + FRAME_SIZE_PADDING,
            operation_timeout_s=self.operation_timeout_s,
            max_pending_requests=self.max_concurrent_lookup_requests,
            keep_alive_interval_s=self.keep_alive_interval_s,
        )
