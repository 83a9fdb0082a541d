"""Protobuf wire bytes written by hand, for tests that need bytes protobuf would not write
(a missing required field, a wrong wire type, a field repeated): the tests of the broker's
wire scans (tests/property/test_hand_decoded_*.py) build their near misses with these, and
compare what a decoder makes of them with :func:`decoded`."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from magnetar.protocol.errors import ProtocolError
from magnetar.protocol.frame import FrameDecoder


def varint(value: int) -> bytes:
    """The base-128 varint of a non-negative ``value``."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number: int, value: int | bytes) -> bytes:
    """Field ``number``: a varint (an int ``value``) or length-delimited (bytes)."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def whole_frame(command: bytes, section: bytes = b"") -> bytes:
    """A whole frame of ``command``'s bytes and the payload section after them (if any)."""
    size = len(command)
    return (
        (4 + size + len(section)).to_bytes(4, "big") + size.to_bytes(4, "big") + command + section
    )


def decoded(
    data: bytes,
    frames: Callable[[FrameDecoder], Iterable[object]],
    normal: Callable[[object], object],
) -> list[object]:
    """Every frame of ``data`` as ``frames`` takes them from a decoder (its scanned reader or
    ``FrameDecoder.frames``), each as ``normal`` puts it (so that a scanned frame and its
    protobuf parse compare equal), or the error that ended the decoding."""
    decoder = FrameDecoder()
    out: list[object] = []
    try:
        decoder.feed(data)
        for frame in frames(decoder):
            out.append(normal(frame))
    except ProtocolError as exc:
        out.append((type(exc), str(exc)))
    return out
