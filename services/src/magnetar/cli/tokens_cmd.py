"""``magnetar tokens``: make and inspect JWT tokens and their keys (like ``pulsar tokens``).

``create-secret-key [--output F] [--base64]`` writes a fresh HMAC secret (raw bytes, as Pulsar's
tool writes it; ``--base64`` prints it as base64); ``create-key-pair --output-private-key F
--output-public-key F`` writes an RSA or EC pair (PKCS#8 and X.509 DER); ``create --subject ROLE
(--secret-key K | --private-key K) [--expiry-time 1d]`` prints a token; ``show TOKEN`` prints
its header and claims unverified; ``validate TOKEN (--secret-key K | --public-key K)`` prints
the claims once signature and expiry check out. Keys are references: ``file:///path``,
``data:;base64,...``, ``env:NAME`` or base64. A failure prints ``error: ...`` and exits 1.
Logic: :mod:`magnetar.authentication` (wiring only here).
"""

from __future__ import annotations

import base64
import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from magnetar.authentication import AuthenticationFailed, InvalidKey
from magnetar.authentication.jwt_tokens import (
    HMAC_ALGORITHMS,
    KEY_PAIR_ALGORITHMS,
    create_key_pair,
    create_secret_key,
    create_token,
    public_verification_key,
    secret_verification_key,
    signing_key,
    token_parts,
    verify_token,
)
from magnetar.authentication.keys import read_key
from magnetar.cli.tool_session import fail
from magnetar.client.admin_units import parse_duration_s

tokens = typer.Typer(
    help="Create and inspect JWT tokens and their keys (like pulsar tokens).",
    no_args_is_help=True,
)

AlgorithmOpt = Annotated[
    str,
    typer.Option(
        "--algorithm", "-a", "--signature-algorithm", help="HS256/384/512, RS256..., ES256..."
    ),
]
TokenArg = Annotated[
    str | None,
    typer.Argument(
        help="The token (or give --token-file, or - to read stdin).", show_default=False
    ),
]
TokenFileOpt = Annotated[
    Path | None, typer.Option("--token-file", "-f", help="Read the token from this file.")
]


def _write(path: Path, data: bytes) -> None:
    try:
        path.write_bytes(data)
        path.chmod(0o600)
    except OSError as exc:
        raise fail(f"cannot write {path}: {exc.strerror or exc}") from exc


def _token_text(token: str | None, token_file: Path | None) -> str:
    try:
        if token_file is not None:
            return token_file.read_text().strip()
    except OSError as exc:
        raise fail(f"cannot read {token_file}: {exc.strerror or exc}") from exc
    if token is None or token == "-":
        return sys.stdin.read().strip()
    return token.strip()


@tokens.command("create-secret-key")
def create_secret_key_command(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the key to this file.")
    ] = None,
    base64_output: Annotated[
        bool, typer.Option("--base64", "-b", help="Print or write the key as base64.")
    ] = False,
    algorithm: AlgorithmOpt = "HS256",
) -> None:
    """Create a secret key for HS256 (or HS384/HS512) tokens."""
    try:
        key = create_secret_key(algorithm.upper())
    except InvalidKey as exc:
        raise fail(str(exc)) from exc
    data = base64.b64encode(key) if base64_output else key
    if output is not None:
        _write(output, data)
    elif base64_output:
        typer.echo(data.decode())
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


@tokens.command("create-key-pair")
def create_key_pair_command(
    output_private_key: Annotated[
        Path, typer.Option("--output-private-key", help="File for the private key (signs).")
    ],
    output_public_key: Annotated[
        Path, typer.Option("--output-public-key", help="File for the public key (verifies).")
    ],
    algorithm: AlgorithmOpt = "RS256",
) -> None:
    """Create a private/public key pair for RS256 or ES256 tokens (and their kin)."""
    try:
        private, public = create_key_pair(algorithm.upper())
    except InvalidKey as exc:
        raise fail(str(exc)) from exc
    _write(output_private_key, private)
    _write(output_public_key, public)


@tokens.command("create")
def create_command(
    subject: Annotated[
        str, typer.Option("--subject", "-s", help="The role the token proves.", show_default=False)
    ],
    secret_key: Annotated[
        str | None, typer.Option("--secret-key", help="Sign with this secret (file:///..., ...).")
    ] = None,
    private_key: Annotated[
        str | None, typer.Option("--private-key", help="Sign with this private key.")
    ] = None,
    expiry_time: Annotated[
        str | None,
        typer.Option("--expiry-time", "-e", help="Valid for this long: 30s, 10m, 1h, 2d, 1w, 1y."),
    ] = None,
    algorithm: Annotated[
        str | None,
        typer.Option(
            "--algorithm",
            "-a",
            "--signature-algorithm",
            help="Default HS256 with --secret-key, RS256 with --private-key.",
        ),
    ] = None,
) -> None:
    """Create a token for a role, signed with a secret key or a private key."""
    if (secret_key is None) == (private_key is None):
        raise fail("give --secret-key or --private-key (one of them)")
    alg = (algorithm or ("HS256" if secret_key is not None else "RS256")).upper()
    expires_at = None
    if expiry_time is not None:
        try:
            expires_at = int(time.time()) + parse_duration_s(expiry_time)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--expiry-time") from exc
    try:
        if secret_key is not None and alg not in HMAC_ALGORITHMS:
            raise InvalidKey(f"a secret key signs {HMAC_ALGORITHMS}, not {alg}")
        if private_key is not None and alg not in KEY_PAIR_ALGORITHMS:
            raise InvalidKey(f"a private key signs {KEY_PAIR_ALGORITHMS}, not {alg}")
        key = signing_key(read_key(secret_key or private_key or ""), alg)
    except InvalidKey as exc:
        raise fail(str(exc)) from exc
    typer.echo(create_token(key, subject, expires_at))


@tokens.command("show")
def show_command(token: TokenArg = None, token_file: TokenFileOpt = None) -> None:
    """Print a token's header and claims, NOT verified."""
    try:
        header, claims = token_parts(_token_text(token, token_file))
    except AuthenticationFailed as exc:
        raise fail(str(exc)) from exc
    typer.echo(json.dumps(header, separators=(",", ":")))
    typer.echo("---")
    typer.echo(json.dumps(claims, separators=(",", ":")))


@tokens.command("validate")
def validate_command(
    token: TokenArg = None,
    token_file: TokenFileOpt = None,
    secret_key: Annotated[
        str | None, typer.Option("--secret-key", help="Verify with this secret.")
    ] = None,
    public_key: Annotated[
        str | None, typer.Option("--public-key", help="Verify with this public key.")
    ] = None,
    algorithm: Annotated[
        str, typer.Option("--algorithm", "-a", help="The public key's algorithm.")
    ] = "RS256",
) -> None:
    """Check a token's signature and expiry; print its claims if it is valid."""
    if (secret_key is None) == (public_key is None):
        raise fail("give --secret-key or --public-key (one of them)")
    try:
        if secret_key is not None:
            key = secret_verification_key(read_key(secret_key))
        else:
            key = public_verification_key(read_key(public_key or ""), algorithm.upper())
        claims = verify_token(_token_text(token, token_file), key)
    except (InvalidKey, AuthenticationFailed) as exc:
        raise fail(
            f"invalid token: {exc}" if isinstance(exc, AuthenticationFailed) else str(exc)
        ) from exc
    typer.echo(json.dumps(claims, separators=(",", ":")))
