"""Keys and tokens for security tests, and waiting on a process's log.

::

    keys = TokenKeys.hmac(tmp_path)            # a fresh HS256 secret in tmp_path/secret.key
    keys.env("STANDALONE")                     # MAGNETAR_STANDALONE_* for token auth with it
    keys.token("admin", expires_in_s=5)        # a signed token for a role
    mark = log_mark(process)
    wait_for_log(process, "authentication_refreshed", since=mark)   # deadline-bound poll
    http_as(web_url, "GET", "/admin/v2/tenants", token)  # (status, decoded body), never raises
    token_client(service_url, token, timeout_s=10)      # an official pulsar.Client with it
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magnetar.authentication.jwt_tokens import (
    SigningKey,
    create_key_pair,
    create_secret_key,
    create_token,
    signing_key,
)
from tests.kit.process import ServerProcess

if TYPE_CHECKING:
    import pulsar


@dataclass(frozen=True)
class TokenKeys:
    signing: SigningKey
    setting: str  # token_secret_key or token_public_key
    reference: str  # file:///...
    algorithm: str

    @classmethod
    def hmac(cls, directory: Path) -> TokenKeys:
        path = directory / "secret.key"
        raw = create_secret_key()
        path.write_bytes(raw)
        return cls(signing_key(raw, "HS256"), "TOKEN_SECRET_KEY", f"file://{path}", "HS256")

    @classmethod
    def pair(cls, directory: Path, algorithm: str = "ES256") -> TokenKeys:
        private, public = create_key_pair(algorithm)
        path = directory / "public.key"
        path.write_bytes(public)
        (directory / "private.key").write_bytes(private)
        return cls(signing_key(private, algorithm), "TOKEN_PUBLIC_KEY", f"file://{path}", algorithm)

    def env(self, role: str, **extra: str) -> dict[str, str]:
        """``MAGNETAR_<ROLE>_*`` variables enabling token authentication with these keys."""
        prefix = f"MAGNETAR_{role}_"
        env = {
            prefix + "AUTHENTICATION_ENABLED": "true",
            prefix + "AUTHENTICATION_PROVIDERS": "token",
            prefix + self.setting: self.reference,
        }
        if self.setting == "TOKEN_PUBLIC_KEY":
            env[prefix + "TOKEN_PUBLIC_ALG"] = self.algorithm
        env.update({prefix + k.upper(): v for k, v in extra.items()})
        return env

    def token(self, role: str, *, expires_in_s: float | None = None) -> str:
        exp = None if expires_in_s is None else int(time.time() + expires_in_s)
        return create_token(self.signing, role, exp)


def log_mark(process: ServerProcess) -> int:
    """Where the process's log ends now (for :func:`wait_for_log`'s ``since``)."""
    return len(process.log_text())


def wait_for_log(
    process: ServerProcess, text: str, *, since: int = 0, timeout_s: float = 30.0
) -> str:
    """The process's log after ``since`` once it contains ``text``; AssertionError if not."""
    deadline = time.monotonic() + timeout_s
    while True:
        log = process.log_text()[since:]
        if text in log:
            return log
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not in the log within {timeout_s}s:\n{log[-3000:]}")
        time.sleep(0.1)


def http_as(
    web_url: str, method: str, path: str, token: str | None = None, body: object = None
) -> tuple[int, Any]:
    """(status, decoded body) of one admin call with an optional Bearer token; HTTP errors are
    returned, not raised."""
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(web_url + path, data, headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw, status = response.read(), response.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode()


def token_client(service_url: str, token: object = None, *, timeout_s: int = 10) -> pulsar.Client:
    """An official ``pulsar.Client`` on ``service_url`` presenting ``token`` (a string or a
    supplier; none when ``None``), logging errors only; close it."""
    import pulsar  # the official client; imported here so the kit loads without it

    return pulsar.Client(
        service_url,
        authentication=None if token is None else pulsar.AuthenticationToken(token),
        operation_timeout_seconds=timeout_s,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )
