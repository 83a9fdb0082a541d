"""The sticky-key hash of Key_Shared: Murmur3 x86 32-bit (seed 0) of the key, into 0..65535.

Pulsar routes a Key_Shared entry by its *sticky key* (``Commands.peekStickyKey``): the
``ordering_key`` if the metadata has one, else the ``partition_key`` bytes (base64-decoded when
``partition_key_b64_encoded``), else the bytes ``b"NONE_KEY"``. The broker hashes it with
``Murmur3_32Hash.getInstance().makeHash(key)`` — Murmur3_x86_32 with seed 0, masked with
``Integer.MAX_VALUE`` to a non-negative int — and takes it modulo the hash range size 65536
(``StickyKeyConsumerSelector.DEFAULT_RANGE_SIZE = 2 << 15``). Masking the top bit does not change
the low 16 bits, so the slot is the low 16 bits of the raw Murmur3 value.

Pure functions; safe from any task. Murmur3 itself is :mod:`magnetar.protocol.hashing`.
"""

from __future__ import annotations

import functools

from magnetar.protocol.hashing import murmur3_32

RANGE_SIZE = 1 << 16
"""Number of hash slots; IntRange bounds are inclusive within ``0..RANGE_SIZE - 1``."""

NONE_KEY = b"NONE_KEY"
"""The sticky key Pulsar uses for an entry with neither ordering key nor partition key."""


def make_hash(key: bytes) -> int:
    """Pulsar's ``Murmur3_32Hash.makeHash``: Murmur3_32 (seed 0) masked to a non-negative int."""
    return murmur3_32(key) & 0x7FFFFFFF


@functools.lru_cache(maxsize=8192)
def sticky_key_hash(key: bytes | None) -> int:
    """The Key_Shared slot (``0..65535``) of a sticky key; ``None`` means no key (``NONE_KEY``).

    Memoised (bounded): a Key_Shared dispatch asks for every entry's slot more than once (plan,
    send) and keys repeat, while Murmur3 in Python costs microseconds per key.
    """
    return make_hash(NONE_KEY if key is None else key) % RANGE_SIZE
