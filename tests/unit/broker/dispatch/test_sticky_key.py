"""Murmur3_32 (seed 0) against reference vectors, and the Key_Shared slot derived from it."""

from __future__ import annotations

import pytest

from magnetar.broker.dispatch.sticky_key import (
    NONE_KEY,
    RANGE_SIZE,
    make_hash,
    murmur3_32,
    sticky_key_hash,
)

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
    (NONE_KEY, 0x9E15BEA3),
]


@pytest.mark.parametrize(("data", "expected"), VECTORS)
def test_murmur3_32_matches_reference_vectors(data: bytes, expected: int) -> None:
    assert murmur3_32(data) == expected


def test_seed_changes_the_hash() -> None:
    assert murmur3_32(b"", seed=1) == 0x514E28B7
    assert murmur3_32(b"hello", seed=1) != murmur3_32(b"hello")


def test_make_hash_masks_to_a_non_negative_java_int() -> None:
    # 0x9E15BEA3 has the top bit set: Java's makeHash clears it.
    assert make_hash(NONE_KEY) == 0x9E15BEA3 & 0x7FFFFFFF
    assert make_hash(b"hello") == 0x248BFA47


def test_slot_is_hash_mod_65536_and_no_key_means_none_key() -> None:
    assert RANGE_SIZE == 65536
    assert sticky_key_hash(b"hello") == 0x248BFA47 % 65536 == 0xFA47
    assert sticky_key_hash(None) == sticky_key_hash(NONE_KEY) == 0xBEA3
    assert sticky_key_hash(b"") == 0
