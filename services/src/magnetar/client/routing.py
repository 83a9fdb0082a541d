"""Which partition a message goes to: the official clients' routers and key hashes, sans-I/O.

Key hashes (C++ client, which the Python client wraps):

* ``Murmur3_32`` (the default, ``HashingScheme.Murmur3_32Hash``): MurmurHash3 x86 32-bit, seed 0,
  over the key's UTF-8 bytes; partition = ``(hash & 0x7fffffff) % N``.
* ``JavaStringHash``: ``h = 31*h + byte`` over the UTF-8 bytes read as *signed* chars (C++
  ``char``), in uint32 arithmetic, then ``& 0x7fffffff``; partition = that ``% N``.

Routing modes:

* ``RoundRobin`` (default): keyed messages go by key hash. Unkeyed ones, without batching,
  go round robin per message; with batching they stick to one partition until the batch
  window fills (max messages, max bytes or max publish delay since the last switch), exactly
  like C++ ``RoundRobinMessageRouter``, so batches are not split across partitions.
* ``SinglePartition``: keyed messages by key hash, the rest to one partition picked at random
  when the producer is created.
* ``Custom``: a user function ``(key, num_partitions) -> partition``.

Values and pure functions (the router keeps counters; one producer, one task).
"""

from __future__ import annotations

import enum
import random
import time
from collections.abc import Callable

from magnetar.client.errors import InvalidConfiguration

_M32 = 0xFFFFFFFF
_C1 = 0xCC9E2D51
_C2 = 0x1B873593


class RoutingMode(enum.StrEnum):
    ROUND_ROBIN = "RoundRobinPartition"
    SINGLE_PARTITION = "SinglePartition"
    CUSTOM = "CustomPartition"


class HashingScheme(enum.StrEnum):
    MURMUR3_32 = "Murmur3_32Hash"
    JAVA_STRING = "JavaStringHash"


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86 32-bit of ``data`` as an unsigned 32-bit int."""
    h = seed & _M32
    n = len(data)
    blocks = n // 4
    for i in range(blocks):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * _C1) & _M32
        k = _rotl(k, 15)
        k = (k * _C2) & _M32
        h ^= k
        h = _rotl(h, 13)
        h = (h * 5 + 0xE6546B64) & _M32
    tail = data[4 * blocks :]
    k = 0
    if len(tail) == 3:
        k ^= tail[2] << 16
    if len(tail) >= 2:
        k ^= tail[1] << 8
    if len(tail) >= 1:
        k ^= tail[0]
        k = (k * _C1) & _M32
        k = _rotl(k, 15)
        k = (k * _C2) & _M32
        h ^= k
    h ^= n & _M32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h


def java_string_hash(data: bytes) -> int:
    """The C++ client's JavaStringHash (signed chars, uint32 wrap), masked to 31 bits."""
    h = 0
    for byte in data:
        signed = byte - 256 if byte > 127 else byte
        h = (31 * h + signed) & _M32
    return h & 0x7FFFFFFF


def key_hash(key: str, scheme: HashingScheme) -> int:
    """The non-negative 31-bit hash a router takes modulo the partition count."""
    data = key.encode()
    if scheme is HashingScheme.JAVA_STRING:
        return java_string_hash(data)
    return murmur3_32(data) & 0x7FFFFFFF


def key_partition(key: str, num_partitions: int, scheme: HashingScheme) -> int:
    return key_hash(key, scheme) % num_partitions


class MessageRouter:
    """Chooses a partition per message; ``clock`` (ms) is injectable for tests."""

    def __init__(
        self,
        num_partitions: int,
        *,
        mode: RoutingMode | str = RoutingMode.ROUND_ROBIN,
        hashing_scheme: HashingScheme | str = HashingScheme.MURMUR3_32,
        batching_enabled: bool = True,
        batching_max_messages: int = 1000,
        batching_max_bytes: int = 128 * 1024,
        batching_max_publish_delay_ms: int = 10,
        custom: Callable[[str | None, int], int] | None = None,
        rng: random.Random | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if num_partitions < 1:
            raise InvalidConfiguration("a router needs at least one partition")
        try:
            self.mode = RoutingMode(mode)
            self.hashing_scheme = HashingScheme(hashing_scheme)
        except ValueError as exc:
            raise InvalidConfiguration(str(exc)) from exc
        if custom is not None:
            self.mode = RoutingMode.CUSTOM
        elif self.mode is RoutingMode.CUSTOM:
            raise InvalidConfiguration("CustomPartition routing needs a message_router")
        self.num_partitions = num_partitions
        self._custom = custom
        self._batching = batching_enabled
        self._max_messages = batching_max_messages
        self._max_bytes = batching_max_bytes
        self._max_delay_ms = batching_max_publish_delay_ms
        self._clock = clock or (lambda: time.monotonic() * 1000.0)
        rng = rng or random.Random()
        self._cursor = rng.randrange(1 << 31)
        self._single = rng.randrange(num_partitions)
        self._last_change_ms = self._clock()
        self._count = 0
        self._bytes = 0

    def choose(self, key: str | None, size: int) -> int:
        """The partition for a message with ``key`` and payload ``size`` bytes."""
        n = self.num_partitions
        if self.mode is RoutingMode.CUSTOM:
            assert self._custom is not None
            partition = self._custom(key, n)
            if not 0 <= partition < n:
                raise InvalidConfiguration(
                    f"message_router returned {partition} for {n} partitions"
                )
            return partition
        if n == 1:
            return 0
        if key is not None:
            return key_partition(key, n, self.hashing_scheme)
        if self.mode is RoutingMode.SINGLE_PARTITION:
            return self._single
        if not self._batching:
            partition = self._cursor % n
            self._cursor += 1
            return partition
        now = self._clock()
        if (
            self._count >= self._max_messages
            or size >= self._max_bytes - self._bytes
            or now - self._last_change_ms >= self._max_delay_ms
        ):
            self._cursor += 1
            self._last_change_ms = now
            self._bytes = size
            self._count = 1
            return self._cursor % n
        self._count += 1
        self._bytes += size
        return self._cursor % n
