"""Murmur3 x86 32-bit, the key hash both sides of the protocol agree on.

The broker hashes a Key_Shared entry's sticky key with it (Pulsar's ``Murmur3_32Hash``) and a
producer may route keyed messages to partitions with it (``HashingScheme.Murmur3_32Hash``), so
it lives here, below both. Reference algorithm, seed 0 unless given.

Pure functions; safe from any task or thread.
"""

from __future__ import annotations

_MASK32 = 0xFFFFFFFF
_C1 = 0xCC9E2D51
_C2 = 0x1B873593


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK32


def _fmix32(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK32
    h ^= h >> 16
    return h


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """Murmur3_x86_32 of ``data`` as an unsigned 32-bit int."""
    h = seed & _MASK32
    tail_start = len(data) - (len(data) % 4)
    for i in range(0, tail_start, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _C1) & _MASK32
        k = _rotl32(k, 15)
        k = (k * _C2) & _MASK32
        h ^= k
        h = _rotl32(h, 13)
        h = (h * 5 + 0xE6546B64) & _MASK32
    tail = data[tail_start:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * _C1) & _MASK32
        k = _rotl32(k, 15)
        k = (k * _C2) & _MASK32
        h ^= k
    h ^= len(data)
    return _fmix32(h)
