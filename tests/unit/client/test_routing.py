"""Partition routing: the C++ client's hashes and routers, without a broker."""

from __future__ import annotations

import random

import pytest

from magnetar.client.errors import InvalidConfiguration
from magnetar.client.routing import (
    HashingScheme,
    MessageRouter,
    RoutingMode,
    boost_hash,
    java_string_hash,
    key_partition,
)
from magnetar.protocol.hashing import murmur3_32

# Partitions (of 8) that pulsar-client 3.13 (C++ 4.x, default BoostHash) chose for these keys,
# recorded from a run against magnetar standalone; the integration test re-checks them live.
OFFICIAL_PYTHON_CLIENT_PARTITIONS = {
    "é": 1,
    "ünïcode-ключ": 7,
    "a": 4,
    "ab": 6,
    "abc": 5,
    "abcd": 2,
    "abcdefgh": 6,
    "abcdefghijk": 4,
    "x" * 30: 1,
}


def test_boost_hash_matches_the_official_python_client() -> None:
    for key, partition in OFFICIAL_PYTHON_CLIENT_PARTITIONS.items():
        assert key_partition(key, 8, HashingScheme.BOOST) == partition, key
    assert boost_hash(b"") != boost_hash(b"\x00")


def test_java_string_hash_is_string_hashcode_for_ascii_and_signed_bytes_beyond() -> None:
    assert java_string_hash(b"hello") == 99162322  # "hello".hashCode()
    assert java_string_hash(b"") == 0
    # C++ reads bytes as signed char: 0xC3 counts as -61, not 195.
    assert java_string_hash("é".encode()) == ((31 * -61 + -87) & 0xFFFFFFFF) & 0x7FFFFFFF


def test_key_partition_is_masked_hash_modulo_n() -> None:
    for key in ["a", "key-1", "ünïcode", "x" * 100]:
        h = murmur3_32(key.encode()) & 0x7FFFFFFF
        assert key_partition(key, 8, HashingScheme.MURMUR3_32) == h % 8
        assert key_partition(key, 8, HashingScheme.JAVA_STRING) == (
            java_string_hash(key.encode()) % 8
        )


def test_keyed_messages_route_by_hash_in_every_mode() -> None:
    for mode in (RoutingMode.ROUND_ROBIN, RoutingMode.SINGLE_PARTITION):
        router = MessageRouter(8, mode=mode, rng=random.Random(1))
        assert router.choose("k", 10) == key_partition("k", 8, HashingScheme.BOOST)
        murmur = MessageRouter(8, mode=mode, hashing_scheme="Murmur3_32Hash")
        assert murmur.choose("k", 10) == key_partition("k", 8, HashingScheme.MURMUR3_32)


def test_round_robin_without_batching_rotates_per_message() -> None:
    router = MessageRouter(4, batching_enabled=False, rng=random.Random(7))
    picks = [router.choose(None, 10) for _ in range(8)]
    assert picks[:4] == picks[4:]
    assert sorted(picks[:4]) == [0, 1, 2, 3]


def test_round_robin_with_batching_sticks_for_a_batch_window() -> None:
    now = [0.0]
    router = MessageRouter(
        4,
        batching_max_messages=3,
        batching_max_bytes=1000,
        batching_max_publish_delay_ms=10,
        rng=random.Random(3),
        clock=lambda: now[0],
    )
    now[0] = 20.0  # first message after the delay: switch
    first = [router.choose(None, 10) for _ in range(3)]
    assert len(set(first)) == 1
    fourth = router.choose(None, 10)  # count limit reached: next partition
    assert fourth == (first[0] + 1) % 4
    assert router.choose(None, 995) == (fourth + 1) % 4  # byte limit
    now[0] = 40.0
    assert router.choose(None, 1) == (fourth + 2) % 4  # delay elapsed


def test_single_partition_and_custom_router() -> None:
    router = MessageRouter(5, mode="SinglePartition", rng=random.Random(2))
    assert len({router.choose(None, 1) for _ in range(20)}) == 1
    custom = MessageRouter(5, custom=lambda key, n: len(key or "") % n)
    assert custom.mode is RoutingMode.CUSTOM
    assert custom.choose("abc", 1) == 3
    with pytest.raises(InvalidConfiguration):
        MessageRouter(5, custom=lambda key, n: 9).choose(None, 1)
    with pytest.raises(InvalidConfiguration):
        MessageRouter(0)
    with pytest.raises(InvalidConfiguration):
        MessageRouter(2, mode="CustomPartition")
