"""Errors of the Pulsar binary protocol layer, and THE table from errors to ``ServerError`` codes.

Two kinds of protocol error come out of the frame decoder:

* fatal ones (``fatal = True``): the byte stream has lost its framing (a frame larger than the
  limit, a length field that contradicts itself). Nothing after them can be trusted; the
  connection must be closed.
* frame-local ones (``fatal = False``): the frame was delimited correctly but its content is
  bad (checksum mismatch, protobuf that does not parse, an unknown command type). The decoder
  has already skipped the frame and can go on; the broker decides whether to answer (e.g.
  ``SEND_ERROR(ChecksumError)``) or to close.

The mapping from Magnetar errors to Pulsar ``ServerError`` codes lives here and nowhere else
(STYLE.md: exactly one table). Packages above this one (broker, managed ledger) add their own
classes with :func:`register_server_error` at import time of their errors module; lookups walk
the exception's MRO, so a subclass inherits its parent's code unless it registers its own.
The table is filled at import time only and then read; no locking is needed.
"""

from __future__ import annotations

from typing import ClassVar

from magnetar.errors import MagnetarError, Timeout, Unavailable
from magnetar.wire import pulsar_api_pb2 as pb


class ProtocolError(MagnetarError):
    """Base class of errors in Pulsar binary protocol data."""

    fatal: ClassVar[bool] = False


class FrameTooLarge(ProtocolError):
    """A frame announced more bytes than the configured limit; the frame was not buffered."""

    fatal = True

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the limit of {limit} bytes")
        self.size = size
        self.limit = limit


class MalformedFrame(ProtocolError):
    """The sizes inside a frame do not add up (command or metadata longer than the frame)."""

    def __init__(self, reason: str, command: pb.BaseCommand | None = None) -> None:
        super().__init__(f"malformed frame: {reason}")
        self.reason = reason
        self.command = command


class BrokenStream(MalformedFrame):
    """The stream's framing cannot be recovered (e.g. a frame too short to hold its sizes)."""

    fatal = True


class TruncatedFrame(ProtocolError):
    """The stream ended in the middle of a frame."""

    fatal = True

    def __init__(self, buffered: int) -> None:
        super().__init__(f"stream ended with {buffered} bytes of an incomplete frame")
        self.buffered = buffered


class MalformedCommand(ProtocolError):
    """The BaseCommand does not parse, lacks a required field, or lacks its type's body."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"malformed command: {reason}")
        self.reason = reason


class UnknownCommand(ProtocolError):
    """The BaseCommand's type is not one this protocol definition knows."""

    def __init__(self, type_number: int | None) -> None:
        super().__init__(f"unknown command type {type_number}")
        self.type_number = type_number


class ChecksumMismatch(ProtocolError):
    """The CRC32-C of a payload command did not match; ``command`` is the command it came with.

    For a SEND the broker answers ``SEND_ERROR(ChecksumError)`` for ``command.send`` — the only
    SEND_ERROR code the C++ client survives without reconnecting.
    """

    def __init__(self, command: pb.BaseCommand, expected: int, actual: int) -> None:
        super().__init__(f"checksum mismatch: frame says {expected:#010x}, computed {actual:#010x}")
        self.command = command
        self.expected = expected
        self.actual = actual


class MalformedMetadata(ProtocolError):
    """The MessageMetadata of a payload command does not parse or lacks required fields."""

    def __init__(self, command: pb.BaseCommand, reason: str) -> None:
        super().__init__(f"malformed message metadata: {reason}")
        self.command = command
        self.reason = reason


class MalformedBatch(ProtocolError):
    """A batch payload does not hold the announced number of well-formed single messages."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"malformed batch: {reason}")
        self.reason = reason


class DecompressionError(ProtocolError):
    """A payload does not decompress with its codec, or not to its announced size."""


class UnsupportedProtocolVersion(ProtocolError):
    """The peer's protocol version is too old for what was asked."""

    def __init__(self, version: int, needed: int, feature: str) -> None:
        super().__init__(f"{feature} needs protocol version {needed}, peer has {version}")
        self.version = version
        self.needed = needed
        self.feature = feature


class InvalidMessageId(ProtocolError):
    """A message id whose ledger or entry id is outside the signed 64-bit range."""


# ------------------------------------------------------------------ the ServerError table

_SERVER_ERROR_CODES: dict[type[BaseException], pb.ServerError.ValueType] = {
    ChecksumMismatch: pb.ChecksumError,
    UnsupportedProtocolVersion: pb.UnsupportedVersionError,
    FrameTooLarge: pb.NotAllowedError,
    MalformedBatch: pb.NotAllowedError,
    Timeout: pb.ServiceNotReady,
    Unavailable: pb.ServiceNotReady,
}


def register_server_error(error: type[BaseException], code: pb.ServerError.ValueType) -> None:
    """Map ``error`` (and its subclasses without their own entry) to ``code``.

    Call it from the errors module of the package that defines ``error``, at import time.
    Registering the same class twice with different codes is a programming error.
    """
    existing = _SERVER_ERROR_CODES.get(error)
    if existing is not None and existing != code:
        raise ValueError(f"{error.__name__} is already mapped to ServerError {existing}")
    _SERVER_ERROR_CODES[error] = code


def server_error_for(error: BaseException) -> pb.ServerError.ValueType:
    """The ServerError code to send for ``error``; UnknownError when nothing matches."""
    for cls in type(error).__mro__:
        code = _SERVER_ERROR_CODES.get(cls)
        if code is not None:
            return code
    return pb.UnknownError
