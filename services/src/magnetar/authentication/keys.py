"""Key references, as Pulsar's broker.conf and ``pulsar tokens`` take them.

A reference is one of ``file:///path/to/key`` (the file's bytes), ``data:;base64,<base64>``
(``data:,<text>`` without the ``;base64`` marker), ``env:NAME`` (base64 in an environment
variable), or else the key itself in base64. :func:`read_key` returns the bytes; what they mean
(a secret, a DER or PEM key) is for :mod:`magnetar.authentication.jwt_tokens` to decide.

Called once per process at start (settings) or per command (``magnetar tokens``); the file read
is blocking, so never call it from the event loop while serving.
"""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from magnetar.authentication.errors import InvalidKey


def read_key(reference: str) -> bytes:
    """The key bytes ``reference`` names; :class:`InvalidKey` says why not."""
    ref = reference.strip()
    if not ref:
        raise InvalidKey("empty key reference: give file:///path, data:;base64,... or base64")
    if ref.startswith("data:"):
        return _data_url(ref)
    if ref.startswith("env:"):
        name = ref.removeprefix("env:")
        value = os.environ.get(name)
        if value is None:
            raise InvalidKey(f"key reference env:{name}: the variable is not set")
        return _base64(value, f"env:{name}")
    if ref.startswith("file:"):
        path = Path(unquote(urlparse(ref).path))
        try:
            return path.read_bytes()
        except OSError as exc:
            raise InvalidKey(f"cannot read key file {path}: {exc.strerror or exc}") from exc
    return _base64(ref, "the key")


def _data_url(ref: str) -> bytes:
    header, sep, payload = ref.partition(",")
    if not sep:
        raise InvalidKey("data: key reference without a ',' (use data:;base64,<base64>)")
    if ";" in header:
        encoding = header.split(";")[-1]
        if encoding != "base64":
            raise InvalidKey(f"data: key reference: encoding {encoding!r} is not supported")
        return _base64(payload, "the data: key reference")
    return unquote(payload).encode()


def _base64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidKey(
            f"{what} is not base64 (give file:///path, data:;base64,... or env:NAME)"
        ) from exc
