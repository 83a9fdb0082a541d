"""Murmur3_32 (the key hash of Key_Shared and of producers' Murmur3 routing) against reference
vectors."""

from __future__ import annotations

import pytest

from magnetar.protocol.hashing import murmur3_32

# Murmur3_x86_32, seed 0 (SMHasher reference; also what mmh3.hash(data, 0, signed=False) gives).
VECTORS = [
    (b"", 0x00000000),
    (b"a", 0x3C2569B2),
    (b"ab", 0x9BBFD75F),
    (b"abc", 0xB3DD93FA),
    (b"abcd", 0x43ED676A),
    (b"hello", 0x248BFA47),
    (b"The quick brown fox jumps over the lazy dog", 0x2E4FF723),
    ("été".encode(), 0x3393660F),
    (b"NONE_KEY", 0x9E15BEA3),
]


@pytest.mark.parametrize(("data", "expected"), VECTORS)
def test_murmur3_32_matches_reference_vectors(data: bytes, expected: int) -> None:
    assert murmur3_32(data) == expected


def test_seed_changes_the_hash() -> None:
    assert murmur3_32(b"", seed=1) == 0x514E28B7
    assert murmur3_32(b"hello", seed=1) != murmur3_32(b"hello")


def test_every_tail_length_hashes_differently() -> None:
    assert len({murmur3_32(b"abcd"[:n]) for n in range(5)}) == 5
