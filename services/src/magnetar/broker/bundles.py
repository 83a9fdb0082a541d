"""Namespace bundles: the hash ranges of topic names that brokers own (Pulsar's NamespaceBundle).

A namespace's topics are spread over ``default_number_of_namespace_bundles`` bundles (4, as
broker.conf's ``defaultNumberOfNamespaceBundles``): the 32-bit hash range ``0x00000000`` ..
``0xffffffff`` cut into contiguous ranges at its *boundaries*. A topic belongs to the bundle whose
range holds the unsigned CRC-32 of its fully qualified name, UTF-8 encoded (Pulsar hashes with
Guava's ``Hashing.crc32()``, i.e. ``java.util.zip.CRC32``); each partition of a partitioned topic
is hashed by its own name, so partitions spread over bundles and brokers.

Invariants: boundaries start at 0, end at ``0xffffffff`` and strictly increase; every range is
half-open ``[lower, upper)`` except the last, which also holds ``0xffffffff``; so every hash lies
in exactly one bundle. An even split of ``n`` bundles puts the inner boundaries at multiples of
``2**32 // n``, as Pulsar's ``getBundles(n)`` does. Names print as Pulsar prints them:
``0x00000000_0x40000000`` for a range, ``public/default/0x00000000_0x40000000`` for a bundle.

Pure values and functions: safe from any task or thread. Callers: the ownership and lookup
(:mod:`.ownership`), the broker service (which topics a bundle closes) and the admin API.
"""

from __future__ import annotations

import itertools
import re
import zlib
from dataclasses import dataclass

from magnetar.naming import NamespaceName, TopicName

FULL_LOWER_BOUND = 0x00000000
FULL_UPPER_BOUND = 0xFFFFFFFF
DEFAULT_NUMBER_OF_NAMESPACE_BUNDLES = 4

_RANGE = re.compile(r"0x([0-9a-fA-F]{8})_0x([0-9a-fA-F]{8})")


def topic_hash(topic: TopicName | str) -> int:
    """Pulsar's bundle hash of a topic: unsigned CRC-32 of its full name in UTF-8."""
    return zlib.crc32(str(topic).encode("utf-8")) & 0xFFFFFFFF


def _hex(value: int) -> str:
    return f"0x{value:08x}"


@dataclass(frozen=True, slots=True, order=True)
class BundleRange:
    """One hash range ``[lower, upper)`` (``upper`` included when it is the full upper bound)."""

    lower: int
    upper: int

    def __post_init__(self) -> None:
        if not FULL_LOWER_BOUND <= self.lower < self.upper <= FULL_UPPER_BOUND:
            raise ValueError(f"bad bundle range {self.lower:#x}..{self.upper:#x}")

    @classmethod
    def parse(cls, name: str) -> BundleRange:
        """``0x00000000_0x40000000`` -> the range; ValueError when malformed."""
        match = _RANGE.fullmatch(name)
        if match is None:
            raise ValueError(f"invalid bundle range {name!r}: expected 0xXXXXXXXX_0xXXXXXXXX")
        return cls(int(match.group(1), 16), int(match.group(2), 16))

    @property
    def name(self) -> str:
        return f"{_hex(self.lower)}_{_hex(self.upper)}"

    def contains(self, hash_code: int) -> bool:
        if self.upper == FULL_UPPER_BOUND:
            return self.lower <= hash_code <= self.upper
        return self.lower <= hash_code < self.upper

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class NamespaceBundle:
    """One bundle of one namespace: the unit of ownership."""

    namespace: NamespaceName
    range: BundleRange

    @property
    def name(self) -> str:
        """The range part alone (``0x00000000_0x40000000``), as the admin paths spell it."""
        return self.range.name

    def includes(self, topic: TopicName) -> bool:
        return topic.namespace == self.namespace and self.range.contains(topic_hash(topic))

    def __str__(self) -> str:
        return f"{self.namespace}/{self.range.name}"


@dataclass(frozen=True, slots=True)
class NamespaceBundles:
    """Every bundle of one namespace, by its boundaries (see the module docstring)."""

    namespace: NamespaceName
    boundaries: tuple[int, ...]

    def __post_init__(self) -> None:
        b = self.boundaries
        if len(b) < 2 or b[0] != FULL_LOWER_BOUND or b[-1] != FULL_UPPER_BOUND:
            raise ValueError(f"bundle boundaries must run from 0x00000000 to 0xffffffff: {b}")
        if any(lo >= hi for lo, hi in itertools.pairwise(b)):
            raise ValueError(f"bundle boundaries must strictly increase: {b}")

    @classmethod
    def even(
        cls, namespace: NamespaceName, count: int = DEFAULT_NUMBER_OF_NAMESPACE_BUNDLES
    ) -> NamespaceBundles:
        """``count`` bundles of equal size (the last takes the remainder)."""
        if not 1 <= count <= 1 << 16:
            raise ValueError(f"number of bundles must be in 1..65536, got {count}")
        step = (1 << 32) // count
        inner = tuple(step * i for i in range(1, count))
        return cls(namespace, (FULL_LOWER_BOUND, *inner, FULL_UPPER_BOUND))

    @property
    def bundles(self) -> tuple[NamespaceBundle, ...]:
        b = self.boundaries
        return tuple(
            NamespaceBundle(self.namespace, BundleRange(lo, hi)) for lo, hi in itertools.pairwise(b)
        )

    def find(self, topic: TopicName) -> NamespaceBundle:
        """The bundle that holds ``topic`` (which must be in this namespace)."""
        if topic.namespace != self.namespace:
            raise ValueError(f"topic {topic} is not in namespace {self.namespace}")
        return self.bundle_at(topic_hash(topic))

    def bundle_at(self, hash_code: int) -> NamespaceBundle:
        if not FULL_LOWER_BOUND <= hash_code <= FULL_UPPER_BOUND:
            raise ValueError(f"hash {hash_code} outside the 32-bit range")
        lo, hi = 0, len(self.boundaries) - 1  # find the last boundary <= hash_code
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.boundaries[mid] <= hash_code:
                lo = mid
            else:
                hi = mid
        return NamespaceBundle(
            self.namespace, BundleRange(self.boundaries[lo], self.boundaries[lo + 1])
        )

    def bundle_named(self, name: str) -> NamespaceBundle:
        """The bundle whose range prints as ``name``; KeyError when there is none."""
        wanted = BundleRange.parse(name)
        for bundle in self.bundles:
            if bundle.range == wanted:
                return bundle
        raise KeyError(f"{self.namespace} has no bundle {name}")

    def to_json(self) -> dict[str, object]:
        """Pulsar's BundlesData: ``{"boundaries": ["0x00000000", ...], "numBundles": n}``."""
        return {
            "boundaries": [_hex(b) for b in self.boundaries],
            "numBundles": len(self.boundaries) - 1,
        }
