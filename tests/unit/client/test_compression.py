"""Compression codecs: round trips, the official clients' raw formats, and bad input."""

from __future__ import annotations

import zlib

import cramjam
import pytest

from magnetar.client.compression import CompressionType, compress, compression_type, decompress
from magnetar.client.errors import DecompressionError, InvalidConfiguration

DATA = b"pulsar " * 500 + bytes(range(256))


@pytest.mark.parametrize("codec", list(CompressionType))
@pytest.mark.parametrize("data", [b"", b"x", DATA])
def test_round_trip(codec: CompressionType, data: bytes) -> None:
    assert decompress(codec, compress(codec, data), len(data)) == data


def test_formats_are_the_raw_ones_the_official_clients_use() -> None:
    # LZ4: a raw block without size prefix; SNAPPY: raw, no framing; ZLIB: with zlib header.
    lz4 = compress(CompressionType.LZ4, DATA)
    assert bytes(cramjam.lz4.decompress_block(lz4, output_len=len(DATA))) == DATA
    assert bytes(cramjam.snappy.decompress_raw(compress(CompressionType.SNAPPY, DATA))) == DATA
    assert zlib.decompress(compress(CompressionType.ZLIB, DATA)) == DATA
    assert compress(CompressionType.NONE, DATA) is DATA
    assert len(lz4) < len(DATA)


@pytest.mark.parametrize("codec", [c for c in CompressionType if c is not CompressionType.NONE])
def test_garbage_or_wrong_size_raises_decompression_error(codec: CompressionType) -> None:
    with pytest.raises(DecompressionError):
        decompress(codec, b"\xff\x00garbage-not-compressed\x13" * 3, 1000)
    with pytest.raises(DecompressionError):
        decompress(codec, compress(codec, DATA), len(DATA) + 1)


def test_compression_type_accepts_names_values_and_none() -> None:
    assert compression_type("lz4") is CompressionType.LZ4
    assert compression_type("ZSTD") is CompressionType.ZSTD
    assert compression_type(4) is CompressionType.SNAPPY
    assert compression_type(None) is CompressionType.NONE
    with pytest.raises(InvalidConfiguration):
        compression_type("brotli")
    with pytest.raises(DecompressionError):
        decompress(99, b"", 0)  # type: ignore[arg-type]
