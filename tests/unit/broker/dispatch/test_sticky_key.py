"""The Key_Shared slot derived from Murmur3_32 (vectors: tests/unit/protocol/test_hashing.py)."""

from __future__ import annotations

from magnetar.broker.dispatch.sticky_key import (
    NONE_KEY,
    RANGE_SIZE,
    make_hash,
    sticky_key_hash,
)


def test_make_hash_masks_to_a_non_negative_java_int() -> None:
    # 0x9E15BEA3 has the top bit set: Java's makeHash clears it.
    assert make_hash(NONE_KEY) == 0x9E15BEA3 & 0x7FFFFFFF
    assert make_hash(b"hello") == 0x248BFA47


def test_slot_is_hash_mod_65536_and_no_key_means_none_key() -> None:
    assert RANGE_SIZE == 65536
    assert sticky_key_hash(b"hello") == 0x248BFA47 % 65536 == 0xFA47
    assert sticky_key_hash(None) == sticky_key_hash(NONE_KEY) == 0xBEA3
    assert sticky_key_hash(b"") == 0
