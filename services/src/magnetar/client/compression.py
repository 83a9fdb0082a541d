"""The client's view of the payload codecs (:mod:`magnetar.protocol.compression`): the same
functions, raising the client's errors (InvalidConfiguration for an unknown codec name,
DecompressionError for a payload that does not decompress)."""

from __future__ import annotations

from magnetar.client.errors import DecompressionError, InvalidConfiguration
from magnetar.protocol import compression as codecs
from magnetar.protocol.compression import CompressionType as CompressionType
from magnetar.protocol.compression import compress as compress
from magnetar.protocol.errors import DecompressionError as PayloadError
from magnetar.wire import pulsar_api_pb2 as pb


def compression_type(value: CompressionType | int | str | None) -> CompressionType:
    """Accept a CompressionType, a pb value or a name (``"lz4"``, ``"ZSTD"``)."""
    try:
        return codecs.compression_type(value)
    except ValueError as exc:
        raise InvalidConfiguration(str(exc)) from exc


def decompress(codec: pb.CompressionType.ValueType, data: bytes, uncompressed_size: int) -> bytes:
    """``data`` decompressed; raises DecompressionError unless it yields ``uncompressed_size``."""
    try:
        return codecs.decompress(codec, data, uncompressed_size)
    except PayloadError as exc:
        raise DecompressionError(str(exc)) from exc
