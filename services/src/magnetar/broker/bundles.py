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

Splitting a bundle inserts one boundary strictly inside its range, so the ranges stay contiguous
and every hash still lies in exactly one bundle; the two halves replace the bundle.
:func:`split_boundary` computes where with Pulsar's algorithms: ``range_equally_divide`` (the
default: the middle of the range) and ``topic_count_equally_divide`` (between the middle two
topic hashes, so each half holds about half the topics). Boundaries are stored as Pulsar's
BundlesData (:meth:`NamespaceBundles.to_json`, :meth:`NamespaceBundles.from_json`) by
:mod:`.bundle_factory`.

Pure values and functions: safe from any task or thread. Callers: the ownership and lookup
(:mod:`.ownership`), the bundle factory and splitter, the broker service (which topics a bundle
closes) and the admin API.
"""

from __future__ import annotations

import bisect
import itertools
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from magnetar.naming import NamespaceName, TopicName

FULL_LOWER_BOUND = 0x00000000
FULL_UPPER_BOUND = 0xFFFFFFFF
DEFAULT_NUMBER_OF_NAMESPACE_BUNDLES = 4
MAX_NUMBER_OF_BUNDLES = 1 << 16
RANGE_EQUALLY_DIVIDE = "range_equally_divide"
TOPIC_COUNT_EQUALLY_DIVIDE = "topic_count_equally_divide"
SPLIT_ALGORITHMS = (RANGE_EQUALLY_DIVIDE, TOPIC_COUNT_EQUALLY_DIVIDE)

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

    @property
    def splittable(self) -> bool:
        """A range of one hash value cannot be cut in two."""
        return self.upper - self.lower >= 2

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


def bundle_holding(bundles: Iterable[NamespaceBundle], topic: TopicName) -> NamespaceBundle | None:
    """The bundle among ``bundles`` that holds ``topic``, if any (the topic hashed once)."""
    hash_code = topic_hash(topic)
    for bundle in bundles:
        if bundle.namespace == topic.namespace and bundle.range.contains(hash_code):
            return bundle
    return None


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
        if not 1 <= count <= MAX_NUMBER_OF_BUNDLES:
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
        b = self.boundaries  # strictly increasing: a bundle is a pair of neighbours
        i = bisect.bisect_left(b, wanted.lower)
        if i + 1 < len(b) and b[i] == wanted.lower and b[i + 1] == wanted.upper:
            return NamespaceBundle(self.namespace, wanted)
        raise KeyError(f"{self.namespace} has no bundle {name}")

    def to_json(self) -> dict[str, object]:
        """Pulsar's BundlesData: ``{"boundaries": ["0x00000000", ...], "numBundles": n}``."""
        return {
            "boundaries": [_hex(b) for b in self.boundaries],
            "numBundles": len(self.boundaries) - 1,
        }

    @property
    def count(self) -> int:
        return len(self.boundaries) - 1

    def split(self, bundle: BundleRange, boundary: int) -> NamespaceBundles:
        """These bundles with ``bundle`` cut in two at ``boundary`` (strictly inside it).

        KeyError when ``bundle`` is not one of these bundles (it was split meanwhile);
        ValueError when ``boundary`` is not strictly inside it."""
        index = self._index_of(bundle)
        if not bundle.lower < boundary < bundle.upper:
            raise ValueError(f"split boundary {boundary:#x} is not inside {bundle}")
        b = self.boundaries
        return NamespaceBundles(self.namespace, (*b[: index + 1], boundary, *b[index + 1 :]))

    def _index_of(self, bundle: BundleRange) -> int:
        b = self.boundaries
        lo, hi = 0, len(b) - 1
        while lo < hi:  # the first boundary >= bundle.lower
            mid = (lo + hi) // 2
            if b[mid] < bundle.lower:
                lo = mid + 1
            else:
                hi = mid
        if lo >= len(b) - 1 or b[lo] != bundle.lower or b[lo + 1] != bundle.upper:
            raise KeyError(f"{self.namespace} has no bundle {bundle}")
        return lo

    def has(self, bundle: NamespaceBundle) -> bool:
        """``bundle`` is one of these bundles (not a split-away or merged range)."""
        if bundle.namespace != self.namespace:
            return False
        try:
            self._index_of(bundle.range)
        except KeyError:
            return False
        return True

    @classmethod
    def from_json(
        cls, namespace: NamespaceName, value: object, default_count: int
    ) -> NamespaceBundles:
        """Pulsar's BundlesData: ``boundaries`` as hex strings, or only ``numBundles`` (even
        bundles), or neither (``default_count`` even bundles). ValueError when malformed."""
        if not isinstance(value, dict):
            raise ValueError(f"bundles must be a JSON object, got {value!r:.100}")
        boundaries, count = value.get("boundaries"), value.get("numBundles")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
            raise ValueError(f"numBundles must be an integer, got {count!r:.100}")
        if boundaries is None:
            return cls.even(namespace, default_count if count is None else count)
        if not isinstance(boundaries, list) or not all(isinstance(x, str) for x in boundaries):
            raise ValueError("boundaries must be a list of hex strings like 0x40000000")
        try:
            parsed = tuple(int(x, 16) for x in boundaries)
        except ValueError:
            raise ValueError(f"boundaries must be hex strings: {boundaries!r:.200}") from None
        bundles = cls(namespace, parsed)
        if count is not None and count != bundles.count:
            raise ValueError(f"numBundles {count} does not match {bundles.count} boundaries")
        return bundles


def split_boundary(bundle: BundleRange, algorithm: str, topic_hashes: Iterable[int] = ()) -> int:
    """Where ``algorithm`` cuts ``bundle`` (see the module docstring).

    ``topic_count_equally_divide`` needs at least two distinct hashes inside the range (else
    ValueError, as a bundle of one topic cannot be divided by topics); an unknown algorithm or
    a range of one hash is a ValueError too."""
    if not bundle.splittable:
        raise ValueError(f"bundle {bundle} covers one hash and cannot be split")
    if algorithm == RANGE_EQUALLY_DIVIDE:
        return bundle.lower + (bundle.upper - bundle.lower) // 2
    if algorithm == TOPIC_COUNT_EQUALLY_DIVIDE:
        hashes = sorted({h for h in topic_hashes if bundle.contains(h)})
        if len(hashes) < 2:
            raise ValueError(f"bundle {bundle} has fewer than two topics to divide")
        mid = len(hashes) // 2
        # Halfway between the middle two hashes; below the upper bound, which the last
        # range holds itself.
        return min((hashes[mid - 1] + hashes[mid] + 1) // 2, bundle.upper - 1)
    raise ValueError(f"unknown split algorithm {algorithm!r}: expected one of {SPLIT_ALGORITHMS}")
