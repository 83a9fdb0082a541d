"""Payload compression codecs, byte-compatible with the official clients (the one cramjam adapter).

Used by the client (producers compress, consumers decompress) and by the broker's admin views
that show a stored message (peek, examine, get-message-by-id), as Pulsar's broker does.

* LZ4: a raw LZ4 *block* without a size prefix (the size travels in
  ``MessageMetadata.uncompressed_size``), as the C++ and Java clients write it.
* ZLIB: zlib format (RFC 1950, with header), as C++ ``compress()`` and Java's Deflater.
* ZSTD: a zstd frame.  SNAPPY: raw snappy (no framing format).

A producer compresses the whole payload (a whole batch at once) and, when the codec is not
NONE, sets ``compression`` and ``uncompressed_size`` in the metadata (C++ client behaviour).
Pure functions; safe from any task or thread (CPU-bound: call from the loop for normal sizes).
"""

from __future__ import annotations

import enum
import zlib

import cramjam

from magnetar.protocol.errors import DecompressionError
from magnetar.wire import pulsar_api_pb2 as pb


class CompressionType(enum.IntEnum):
    """The codecs, valued as ``pb.CompressionType``."""

    NONE = pb.NONE
    LZ4 = pb.LZ4
    ZLIB = pb.ZLIB
    ZSTD = pb.ZSTD
    SNAPPY = pb.SNAPPY


def compression_type(value: CompressionType | int | str | None) -> CompressionType:
    """Accept a CompressionType, a pb value or a name (``"lz4"``, ``"ZSTD"``); ValueError
    names an unknown one."""
    if value is None:
        return CompressionType.NONE
    try:
        if isinstance(value, str):
            return CompressionType[value.upper()]
        return CompressionType(int(value))
    except (KeyError, ValueError) as exc:
        raise ValueError(f"unknown compression type {value!r}") from exc


def compress(codec: pb.CompressionType.ValueType | CompressionType, data: bytes) -> bytes:
    """``data`` compressed with ``codec`` (unchanged for NONE)."""
    kind = CompressionType(int(codec))
    if kind is CompressionType.NONE:
        return data
    if kind is CompressionType.LZ4:
        return bytes(cramjam.lz4.compress_block(data, store_size=False))
    if kind is CompressionType.ZLIB:
        return zlib.compress(data)
    if kind is CompressionType.ZSTD:
        return bytes(cramjam.zstd.compress(data))
    return bytes(cramjam.snappy.compress_raw(data))


def decompress(codec: pb.CompressionType.ValueType, data: bytes, uncompressed_size: int) -> bytes:
    """``data`` decompressed; raises DecompressionError unless it yields ``uncompressed_size``."""
    try:
        kind = CompressionType(int(codec))
    except ValueError as exc:
        raise DecompressionError(f"unknown compression type {codec}") from exc
    if kind is CompressionType.NONE:
        return data
    if uncompressed_size < 0:
        raise DecompressionError(f"negative uncompressed size {uncompressed_size}")
    try:
        if kind is CompressionType.LZ4:
            # decompress_block pads to output_len; decompressing into a buffer one byte
            # larger reports the real length, so a wrong uncompressed_size is caught.
            buffer = bytearray(uncompressed_size + 1)
            written = int(cramjam.lz4.decompress_block_into(data, buffer))
            out = bytes(buffer[:written])
        elif kind is CompressionType.ZLIB:
            out = zlib.decompress(data)
        elif kind is CompressionType.ZSTD:
            out = bytes(cramjam.zstd.decompress(data))
        else:
            out = bytes(cramjam.snappy.decompress_raw(data))
    except (cramjam.DecompressionError, zlib.error, ValueError) as exc:
        raise DecompressionError(f"{kind.name} payload does not decompress: {exc}") from exc
    if len(out) != uncompressed_size:
        raise DecompressionError(
            f"{kind.name} payload decompressed to {len(out)} bytes, expected {uncompressed_size}"
        )
    return out
