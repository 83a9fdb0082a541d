"""The token signing key and the operator's and proxy's tokens of a PulsarCluster with
``spec.auth.enabled``: made once, kept, and read back.

:func:`ensure_credentials` (the I/O shell, through :class:`~magnetar_operator.kube.Kube`):

1. the key Secret: the user's (``spec.auth.tokenSecretName``; missing or without its key is a
   :class:`CredentialsError`) or ``<cluster>-token-key``, generated with
   :mod:`magnetar.authentication.jwt_tokens` only when it does not exist yet (created, never
   patched, so a reconcile never replaces a key the tokens in use were signed with);
2. the tokens Secret ``<cluster>-tokens`` (keys ``operator`` and ``proxy``, roles
   ``magnetar-operator`` and ``magnetar-proxy``), minted again only when the signing key
   changed (its fingerprint, a truncated SHA-256, is an annotation of the Secret).

It returns the operator's token for its admin calls (:func:`operator_token` reads it back for
the Tenant/Namespace/Topic handlers). Key and token values never reach a log line, an Event,
a status or an exception message. The pure builders of the two Secrets are below it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from typing import Any

from magnetar.authentication.errors import InvalidKey
from magnetar.authentication.jwt_tokens import (
    create_key_pair,
    create_secret_key,
    create_token,
    signing_key,
)
from magnetar_operator import annotations as ann
from magnetar_operator.kube import Kube
from magnetar_operator.manifests.pod import Obj, meta
from magnetar_operator.manifests.security import (
    OPERATOR_ROLE,
    OPERATOR_TOKEN,
    PRIVATE_KEY,
    PROXY_ROLE,
    PROXY_TOKEN,
    PUBLIC_KEY,
    SECURITY,
    SIGNING_KEY,
    key_secret_name,
    tokens_secret_name,
    tokens_secret_of,
)
from magnetar_operator.spec import ClusterSpec

KEY_FINGERPRINT = f"{ann.GROUP}/signing-key-fingerprint"


class CredentialsError(Exception):
    """The key Secret cannot be used; ``reason`` is a condition reason, the message names the
    Secret and what to do (never a value)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


# ----------------------------------------------------------------------------- pure builders


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _secret(spec: ClusterSpec, name: str, data: Mapping[str, bytes], **annotations: str) -> Obj:
    metadata = meta(spec, name, SECURITY)
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": "Opaque",
        "data": {k: _b64(v) for k, v in sorted(data.items())},
    }


def new_key_data(spec: ClusterSpec) -> dict[str, bytes]:
    """A fresh signing key in the layout the pods mount: ``signing-key`` (HS256) or
    ``private-key`` and ``public-key`` (DER)."""
    if spec.auth.symmetric:
        return {SIGNING_KEY: create_secret_key(spec.auth.algorithm)}
    private, public = create_key_pair(spec.auth.algorithm)
    return {PRIVATE_KEY: private, PUBLIC_KEY: public}


def key_secret(spec: ClusterSpec, data: Mapping[str, bytes]) -> Obj:
    return _secret(spec, key_secret_name(spec), data)


def fingerprint(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:16]


def tokens_secret(spec: ClusterSpec, raw_key: bytes) -> Obj:
    """The operator's and the proxy's tokens (no expiry), signed with ``raw_key``."""
    key = signing_key(raw_key, spec.auth.algorithm)
    tokens = {
        OPERATOR_TOKEN: create_token(key, OPERATOR_ROLE).encode(),
        PROXY_TOKEN: create_token(key, PROXY_ROLE).encode(),
    }
    return _secret(
        spec, tokens_secret_name(spec), tokens, **{KEY_FINGERPRINT: fingerprint(raw_key)}
    )


def secret_value(secret: Mapping[str, Any] | None, key: str) -> bytes | None:
    """A Secret's decoded ``data[key]`` (``stringData`` too, as a mock may keep it)."""
    if secret is None:
        return None
    encoded = (secret.get("data") or {}).get(key)
    if encoded is not None:
        try:
            return base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            return None
    plain = (secret.get("stringData") or {}).get(key)
    return None if plain is None else str(plain).encode()


# ------------------------------------------------------------------------------- the I/O shell


async def _signing_material(kube: Kube, spec: ClusterSpec, adopt: Any, write: bool) -> bytes | None:
    """The key that signs the tokens (None: not generated yet and ``write`` is off)."""
    name = key_secret_name(spec)
    secret = await kube.get("v1", "Secret", spec.namespace, name)
    where = f"Secret {spec.namespace}/{name}"
    if secret is None:
        if spec.auth.token_secret_name:
            raise CredentialsError(
                "TokenKeySecretNotFound",
                f"{where} (spec.auth.tokenSecretName) not found: create it, or remove "
                "tokenSecretName to let the operator generate a key",
            )
        if not write:
            return None
        obj = key_secret(spec, new_key_data(spec))
        adopt(obj)
        secret = await kube.create_if_missing(obj)  # a concurrent creator's key wins
    wanted = SIGNING_KEY if spec.auth.symmetric else PRIVATE_KEY
    raw = secret_value(secret, wanted)
    if not raw:
        raise CredentialsError(
            "TokenKeyInvalid",
            f"{where} has no readable '{wanted}' entry (spec.auth.algorithm "
            f"{spec.auth.algorithm}); put the key there, base64-encoded as Secrets are",
        )
    return raw


async def ensure_credentials(
    kube: Kube, spec: ClusterSpec, adopt: Any, *, write: bool = True
) -> str | None:
    """The operator's token (None without auth), making the Secrets first if needed; with
    ``write`` False (a paused cluster) nothing is written and the token is the one already
    made, if any. Raises :class:`CredentialsError` for an unusable user key Secret."""
    if not spec.auth.enabled:
        return None
    raw = await _signing_material(kube, spec, adopt, write)
    if raw is None:
        return None
    name = tokens_secret_name(spec)
    current = await kube.get("v1", "Secret", spec.namespace, name)
    annotations = ((current or {}).get("metadata") or {}).get("annotations") or {}
    token = secret_value(current, OPERATOR_TOKEN)
    fresh = annotations.get(KEY_FINGERPRINT) == fingerprint(raw)
    if token and fresh and secret_value(current, PROXY_TOKEN):
        return token.decode()
    if not write:  # paused: the current token, if any; nothing written
        return token.decode() if token else None
    try:
        obj = tokens_secret(spec, raw)
    except InvalidKey as exc:  # a key of the wrong kind for the algorithm (no key bytes in it)
        raise CredentialsError(
            "TokenKeyInvalid",
            f"Secret {spec.namespace}/{key_secret_name(spec)}: {exc}",
        ) from None
    adopt(obj)
    await kube.apply(obj)
    made = secret_value(obj, OPERATOR_TOKEN)
    assert made is not None
    return made.decode()


async def operator_token(kube: Kube, namespace: str, cluster: Mapping[str, Any]) -> str | None:
    """The operator's token for the PulsarCluster ``cluster`` (None when auth is off or the
    token is not made yet)."""
    auth = (cluster.get("spec") or {}).get("auth") or {}
    if not auth.get("enabled"):
        return None
    name = tokens_secret_of(str(cluster["metadata"]["name"]))
    token = secret_value(await kube.get("v1", "Secret", namespace, name), OPERATOR_TOKEN)
    return None if token is None else token.decode()
