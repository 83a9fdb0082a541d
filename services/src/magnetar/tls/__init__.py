"""TLS for Magnetar's listeners: server contexts that reload their certificates
(:mod:`.contexts`), HTTPS for the uvicorn web services with the client certificate on each
request (:mod:`.https`), and the PEM files gRPC and etcd credentials take.

Below every service (the broker, the proxy and the bookie use it); docs/security.md, "TLS".
"""

from magnetar.tls.contexts import (
    LoadedServerPem,
    PemFiles,
    PemServerTls,
    ServerTls,
    TlsConfigError,
    TlsServerConfig,
    listen_options,
    parse_protocols,
    peer_certificate_of,
    read_pem_files,
    server_context,
)

__all__ = [
    "LoadedServerPem",
    "PemFiles",
    "PemServerTls",
    "ServerTls",
    "TlsConfigError",
    "TlsServerConfig",
    "listen_options",
    "parse_protocols",
    "peer_certificate_of",
    "read_pem_files",
    "server_context",
]
