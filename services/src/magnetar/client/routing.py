"""Which partition a message goes to: the official clients' routers and key hashes, sans-I/O.

Key hashes (C++ client, which the Python client wraps); partition = ``hash % N`` with every
hash masked to 31 bits (``& 0x7fffffff``):

* ``BoostHash`` (our default): the C++ ``ProducerConfiguration`` default, which the official
  Python client cannot change (it exposes no hashing option), so it is what Python producers
  use. It is ``boost::hash<std::string>`` — for Boost >= 1.81 on 64-bit, the ``mulx`` range
  hash of ``boost/container_hash/detail/hash_range.hpp`` with seed 0. Verified key by key
  against pulsar-client 3.13 in tests/integration/test_client_producer.py.
* ``Murmur3_32`` (``HashingScheme.Murmur3_32Hash``): MurmurHash3 x86 32-bit, seed 0,
  over the key's UTF-8 bytes.
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
from magnetar.protocol.hashing import murmur3_32

_M32 = 0xFFFFFFFF


class RoutingMode(enum.StrEnum):
    ROUND_ROBIN = "RoundRobinPartition"
    SINGLE_PARTITION = "SinglePartition"
    CUSTOM = "CustomPartition"


class HashingScheme(enum.StrEnum):
    BOOST = "BoostHash"
    MURMUR3_32 = "Murmur3_32Hash"
    JAVA_STRING = "JavaStringHash"


_M64 = (1 << 64) - 1
_Q = 0x9E3779B97F4A7C15
_K = 0xDF442D22CE4859B9  # _Q * _Q mod 2**64


def _mulx(x: int, y: int) -> int:
    product = x * y
    return (product & _M64) ^ (product >> 64)


def boost_hash(data: bytes, seed: int = 0) -> int:
    """``boost::hash<std::string>`` of Boost >= 1.81 with a 64-bit size_t."""
    n = len(data)
    w = _mulx((seed + _Q) & _M64, _K)
    h = w ^ n
    p = 0
    while n >= 8:
        w = (w + _Q) & _M64
        h ^= _mulx((int.from_bytes(data[p : p + 8], "little") + w) & _M64, _K)
        p += 8
        n -= 8
    v = 0
    if n >= 4:
        low = int.from_bytes(data[p : p + 4], "little")
        high = int.from_bytes(data[p + n - 4 : p + n], "little")
        v = (high << ((n - 4) * 8)) | low
    elif n >= 1:
        x1 = (n - 1) & 2
        x2 = n >> 1
        v = (data[p + x1] << (x1 * 8)) | (data[p + x2] << (x2 * 8)) | data[p]
    w = (w + _Q) & _M64
    h ^= _mulx((v + w) & _M64, _K)
    return _mulx((h + w) & _M64, _K)


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
    if scheme is HashingScheme.BOOST:
        return boost_hash(data) & 0x7FFFFFFF
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
        hashing_scheme: HashingScheme | str = HashingScheme.BOOST,
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
