"""TLS and authentication pieces of a PulsarCluster's pods: the cert-manager Certificate, the
Secret volumes and mounts, and the ``tls_*`` / authentication settings of each role.

TLS (``spec.tls``): one certificate for every role, from the user's Secret or from the Secret a
cert-manager ``Certificate`` writes (DNS names of every Service and, through the headless
Services, of every etcd and bookie pod). Brokers and the proxy serve 6651/8443 beside the plain
ports, the bookies serve TLS on their gRPC port, and brokers and autorecovery trust ``ca.crt``
towards the bookies. Every process re-reads its certificate files when they change, so a
renewal (cert-manager rewrites the Secret, the kubelet the mounted files) needs no roll; only a
change of the TLS *configuration* changes the pod templates and so rolls them.

Authentication (``spec.auth``): the brokers and the proxy verify tokens with the signing key's
verification half (``signing-key`` for HS256, ``public-key`` for RS256/ES256) mounted from the
key Secret; the proxy presents its own token (the ``proxy`` key of the tokens Secret) to the
brokers. The Secrets themselves are made by :mod:`magnetar_operator.credentials` (the key and
the tokens are random, so not here). Pure: the settings name files, never secret values.
"""

from __future__ import annotations

from magnetar_operator.manifests.pod import Obj, meta
from magnetar_operator.names import (
    BINARY_TLS_PORT,
    BOOKIE,
    BROKER,
    ETCD,
    PROXY,
    WEB_TLS_PORT,
    child,
)
from magnetar_operator.spec import ClusterSpec

CERT_MANAGER_API = "cert-manager.io/v1"
TLS_DIR = "/etc/magnetar/tls"
# The files of the TLS Secret as mounted (every process reads the same three).
CERT_FILE, KEY_FILE, CA_FILE = f"{TLS_DIR}/tls.crt", f"{TLS_DIR}/tls.key", f"{TLS_DIR}/ca.crt"
KEY_DIR = "/etc/magnetar/token-key"
PROXY_TOKEN_DIR = "/etc/magnetar/proxy-token"
TLS_VOLUME, KEY_VOLUME, PROXY_TOKEN_VOLUME = "tls", "token-key", "proxy-token"
# The roles of the tokens the operator makes (keys of the tokens Secret: operator, proxy).
OPERATOR_ROLE = "magnetar-operator"
PROXY_ROLE = "magnetar-proxy"
SIGNING_KEY, PRIVATE_KEY, PUBLIC_KEY = "signing-key", "private-key", "public-key"
OPERATOR_TOKEN, PROXY_TOKEN = "operator", "proxy"
SECURITY = "security"  # the component label of the Certificate and the generated Secrets


def tls_secret_name(spec: ClusterSpec) -> str:
    """The Secret with ``tls.crt``, ``tls.key``, ``ca.crt``: the user's, or cert-manager's."""
    return spec.tls.secret_name or f"{spec.name}-tls"


def key_secret_name(spec: ClusterSpec) -> str:
    """The Secret with the token signing key: the user's, or the one the operator makes."""
    return spec.auth.token_secret_name or f"{spec.name}-token-key"


def tokens_secret_name(spec: ClusterSpec) -> str:
    """The Secret with the operator's and the proxy's tokens (made by the operator)."""
    return tokens_secret_of(spec.name)


def tokens_secret_of(cluster: str) -> str:
    """:func:`tokens_secret_name` of the PulsarCluster named ``cluster``."""
    return f"{cluster}-tokens"


def super_user_roles(spec: ClusterSpec) -> tuple[str, ...]:
    """The user's super-user roles, then the operator's and the proxy's own."""
    own = (OPERATOR_ROLE, PROXY_ROLE)
    return tuple(r for r in spec.auth.super_user_roles if r not in own) + own


def dns_names(spec: ClusterSpec) -> list[str]:
    """Every name a client may dial: each Service (short to fully qualified) and, for the
    headless ones (etcd, bookies), each pod through a wildcard."""
    names: list[str] = []
    for component in (BROKER, PROXY, BOOKIE, ETCD):
        svc = child(spec, component)
        full = f"{svc}.{spec.namespace}.svc"
        names += [svc, f"{svc}.{spec.namespace}", full, f"{full}.cluster.local"]
        if component in (BOOKIE, ETCD):
            names += [f"*.{full}", f"*.{full}.cluster.local"]
    return names


def certificate(spec: ClusterSpec) -> Obj | None:
    """The cert-manager Certificate when ``spec.tls.issuerRef`` names an issuer."""
    issuer = spec.tls.issuer
    if not spec.tls.enabled or issuer is None:
        return None
    body: Obj = {
        "secretName": tls_secret_name(spec),
        "commonName": f"{child(spec, BROKER)}.{spec.namespace}.svc",
        "dnsNames": dns_names(spec),
        "usages": ["server auth", "client auth", "digital signature", "key encipherment"],
        "privateKey": {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"},
        "issuerRef": {"name": issuer.name, "kind": issuer.kind, "group": issuer.group},
    }
    if spec.tls.duration:
        body["duration"] = spec.tls.duration
    if spec.tls.renew_before:
        body["renewBefore"] = spec.tls.renew_before
    return {
        "apiVersion": CERT_MANAGER_API,
        "kind": "Certificate",
        "metadata": meta(spec, f"{spec.name}-tls", SECURITY),
        "spec": body,
    }


def security_objects(spec: ClusterSpec) -> list[Obj]:
    """The objects applied before any role: the Certificate (when cert-manager issues)."""
    cert = certificate(spec)
    return [] if cert is None else [cert]


# ------------------------------------------------------------------------- volumes and mounts


def _secret_volume(name: str, secret: str, items: list[tuple[str, str]]) -> Obj:
    return {
        "name": name,
        "secret": {
            "secretName": secret,
            "defaultMode": 0o440,
            "items": [{"key": k, "path": p} for k, p in items],
        },
    }


def _mount(name: str, path: str) -> Obj:
    return {"name": name, "mountPath": path, "readOnly": True}


def tls_volumes(spec: ClusterSpec) -> tuple[list[Obj], list[Obj]]:
    """(volumes, mounts) of the TLS Secret; none when TLS is off. The whole directory is
    mounted (no ``subPath``), so the kubelet's updates of a renewed certificate reach the
    files the process re-reads."""
    if not spec.tls.enabled:
        return [], []
    items = [("tls.crt", "tls.crt"), ("tls.key", "tls.key"), ("ca.crt", "ca.crt")]
    return [_secret_volume(TLS_VOLUME, tls_secret_name(spec), items)], [_mount(TLS_VOLUME, TLS_DIR)]


def _verification_key(spec: ClusterSpec) -> str:
    return SIGNING_KEY if spec.auth.symmetric else PUBLIC_KEY


def key_volumes(spec: ClusterSpec) -> tuple[list[Obj], list[Obj]]:
    """(volumes, mounts) of the token verification key (brokers, proxy); none without auth.
    Only the verifying half of a key pair is mounted."""
    if not spec.auth.enabled:
        return [], []
    key = _verification_key(spec)
    volume = _secret_volume(KEY_VOLUME, key_secret_name(spec), [(key, key)])
    return [volume], [_mount(KEY_VOLUME, KEY_DIR)]


def proxy_token_volumes(spec: ClusterSpec) -> tuple[list[Obj], list[Obj]]:
    """(volumes, mounts) of the proxy's own token; none without auth."""
    if not spec.auth.enabled:
        return [], []
    volume = _secret_volume(
        PROXY_TOKEN_VOLUME, tokens_secret_name(spec), [(PROXY_TOKEN, PROXY_TOKEN)]
    )
    return [volume], [_mount(PROXY_TOKEN_VOLUME, PROXY_TOKEN_DIR)]


# ------------------------------------------------------------------------------ the settings


def _tls_files() -> dict[str, str]:
    return {
        "tls_certificate_file_path": CERT_FILE,
        "tls_key_file_path": KEY_FILE,
        "tls_trust_certs_file_path": CA_FILE,
    }


def _token_keys(spec: ClusterSpec) -> dict[str, str]:
    key = f"file://{KEY_DIR}/{_verification_key(spec)}"
    if spec.auth.symmetric:
        return {"token_secret_key": key}
    return {"token_public_key": key, "token_public_alg": spec.auth.algorithm}


def broker_security_settings(spec: ClusterSpec) -> dict[str, str]:
    """The brokers' TLS and authentication settings (snake-case names, no prefix)."""
    settings: dict[str, str] = {}
    if spec.tls.enabled:
        settings |= {
            "broker_service_port_tls": str(BINARY_TLS_PORT),
            "web_service_port_tls": str(WEB_TLS_PORT),
            **_tls_files(),
            "bookkeeper_tls_trust_certs_file_path": CA_FILE,
        }
    if spec.auth.enabled:
        settings |= {
            "authentication_enabled": "true",
            "authentication_providers": "token",
            "authorization_enabled": "true",
            "super_user_roles": ",".join(super_user_roles(spec)),
            "proxy_roles": PROXY_ROLE,
            **_token_keys(spec),
        }
    return settings


def proxy_security_settings(spec: ClusterSpec) -> dict[str, str]:
    """The proxy's: TLS for clients and to the brokers; it authenticates clients itself and
    presents its own token to the brokers."""
    settings: dict[str, str] = {}
    if spec.tls.enabled:
        settings |= {
            "service_port_tls": str(BINARY_TLS_PORT),
            "web_service_port_tls": str(WEB_TLS_PORT),
            **_tls_files(),
            "tls_enabled_with_broker": "true",
            "broker_client_trust_certs_file_path": CA_FILE,
        }
    if spec.auth.enabled:
        settings |= {
            "authentication_enabled": "true",
            "authentication_providers": "token",
            **_token_keys(spec),
            "broker_client_authentication_plugin": "token",
            "broker_client_authentication_parameters": f"file://{PROXY_TOKEN_DIR}/{PROXY_TOKEN}",
        }
    return settings


def bookie_security_settings(spec: ClusterSpec) -> dict[str, str]:
    """The bookies': TLS on the gRPC port (the health and metrics port stays plain HTTP)."""
    if not spec.tls.enabled:
        return {}
    return {
        "tls_certificate_path": CERT_FILE,
        "tls_key_store": KEY_FILE,
        "tls_trust_store": CA_FILE,
    }


def autorecovery_security_settings(spec: ClusterSpec) -> dict[str, str]:
    """Autorecovery's: trust the bookies' certificate."""
    if not spec.tls.enabled:
        return {}
    return {"bookkeeper_tls_trust_certs_file_path": CA_FILE}


def env_of(prefix: str, settings: dict[str, str]) -> dict[str, str]:
    """``{"a_b": v}`` -> ``{"MAGNETAR_<PREFIX>_A_B": v}``."""
    return {f"MAGNETAR_{prefix}_{k.upper()}": v for k, v in settings.items()}
