"""A process's own token towards another service (Pulsar's client authentication settings).

Pulsar names the pair ``<x>ClientAuthenticationPlugin`` / ``<x>ClientAuthenticationParameters``
(broker.conf's ``bookkeeperClientAuthenticationPlugin``, say). The plugin is ``token`` (or the
Java client's ``org.apache.pulsar.client.impl.auth.AuthenticationToken``); the parameters are
``token:<jwt>``, ``file:///path`` of a file holding the token, or the token itself.
:func:`client_token` reads it once at start (a blocking file read). The token never appears
in an error message.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

TOKEN_PLUGINS = frozenset({"token", "org.apache.pulsar.client.impl.auth.AuthenticationToken"})


def client_token(plugin: str, parameters: str, setting: str) -> str | None:
    """The token the settings name (None without a plugin). ``setting`` is the settings' name
    prefix (``bookkeeper_client_authentication``) a ValueError names."""
    name = plugin.strip()
    if not name:
        return None
    if name not in TOKEN_PLUGINS:
        raise ValueError(f"{setting}_plugin {name!r} is not supported: use token")
    params = parameters.strip()
    if params.startswith("token:"):
        token = params.removeprefix("token:")
    elif params.startswith("file:"):
        path = Path(unquote(urlparse(params).path))
        try:
            token = path.read_text()
        except OSError as exc:
            raise ValueError(
                f"{setting}_parameters: cannot read {path}: {exc.strerror or exc}"
            ) from exc
    else:
        token = params
    token = token.strip()
    if not token:
        raise ValueError(f"{setting}_parameters: no token (give token:<jwt> or file:///path)")
    return token
