"""Property tests of namespace bundles: every hash lies in exactly one contiguous range, also
after any sequence of splits, and stored boundaries read back unchanged."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from magnetar.broker.bundles import (
    FULL_LOWER_BOUND,
    FULL_UPPER_BOUND,
    RANGE_EQUALLY_DIVIDE,
    SPLIT_ALGORITHMS,
    TOPIC_COUNT_EQUALLY_DIVIDE,
    NamespaceBundles,
    bundle_holding,
    split_boundary,
)
from magnetar.naming import NamespaceName, TopicName

NS = NamespaceName("public", "default")
counts = st.integers(min_value=1, max_value=1024)
hashes = st.integers(min_value=FULL_LOWER_BOUND, max_value=FULL_UPPER_BOUND)


@given(counts)
def test_ranges_are_contiguous_and_cover_everything(count: int) -> None:
    bundles = NamespaceBundles.even(NS, count).bundles
    assert len(bundles) == count
    assert bundles[0].range.lower == FULL_LOWER_BOUND
    assert bundles[-1].range.upper == FULL_UPPER_BOUND
    for left, right in itertools.pairwise(bundles):
        assert left.range.upper == right.range.lower


@given(counts, hashes)
def test_every_hash_is_in_exactly_one_bundle(count: int, hash_code: int) -> None:
    bundles = NamespaceBundles.even(NS, count)
    holders = [b for b in bundles.bundles if b.range.contains(hash_code)]
    assert holders == [bundles.bundle_at(hash_code)]


@given(counts, st.text(min_size=1, max_size=40).filter(lambda s: s.strip() == s))
def test_a_topic_is_found_in_the_bundle_that_includes_it(count: int, local: str) -> None:
    topic = TopicName(domain="persistent", tenant="public", namespace_local="default",
                      local_name=local)  # fmt: skip
    bundles = NamespaceBundles.even(NS, count)
    found = bundles.find(topic)
    assert found.includes(topic)
    assert sum(b.includes(topic) for b in bundles.bundles) == 1
    assert bundle_holding(bundles.bundles, topic) == found
    others = [b for b in bundles.bundles if b != found]
    assert bundle_holding(others, topic) is None
    other_ns = NamespaceBundles.even(NamespaceName("public", "other"), count)
    assert bundle_holding(other_ns.bundles, topic) is None


@given(counts)
def test_names_round_trip(count: int) -> None:
    bundles = NamespaceBundles.even(NS, count)
    for bundle in bundles.bundles:
        assert bundles.bundle_named(bundle.name) == bundle


@st.composite
def split_bundles(draw: st.DrawFn) -> tuple[NamespaceBundles, list[int]]:
    """Even bundles, then a sequence of splits of random bundles with random algorithms."""
    bundles = NamespaceBundles.even(NS, draw(st.integers(min_value=1, max_value=16)))
    topic_hashes = draw(st.lists(hashes, max_size=40))
    for _ in range(draw(st.integers(min_value=0, max_value=12))):
        splittable = [b for b in bundles.bundles if b.range.splittable]
        if not splittable:
            break
        target = draw(st.sampled_from(splittable)).range
        algorithm = draw(st.sampled_from(SPLIT_ALGORITHMS))
        try:
            boundary = split_boundary(target, algorithm, topic_hashes)
        except ValueError:  # topic_count_equally_divide with fewer than two topics
            boundary = split_boundary(target, RANGE_EQUALLY_DIVIDE)
        bundles = bundles.split(target, boundary)
    return bundles, topic_hashes


@given(split_bundles(), hashes)
def test_splits_keep_ranges_contiguous_and_every_hash_in_one_bundle(
    drawn: tuple[NamespaceBundles, list[int]], hash_code: int
) -> None:
    bundles, _ = drawn
    ranges = [b.range for b in bundles.bundles]
    assert ranges[0].lower == FULL_LOWER_BOUND
    assert ranges[-1].upper == FULL_UPPER_BOUND
    for left, right in itertools.pairwise(ranges):
        assert left.upper == right.lower
    assert sum(r.contains(hash_code) for r in ranges) == 1
    assert bundles.bundle_at(hash_code).range.contains(hash_code)


@given(split_bundles())
def test_stored_boundaries_round_trip(drawn: tuple[NamespaceBundles, list[int]]) -> None:
    bundles, _ = drawn
    assert NamespaceBundles.from_json(NS, bundles.to_json(), 4) == bundles


@given(st.lists(hashes, min_size=2, max_size=60, unique=True))
def test_topic_count_split_puts_half_the_topics_on_each_side(topic_hashes: list[int]) -> None:
    whole = NamespaceBundles.even(NS, 1).bundles[0].range
    boundary = split_boundary(whole, TOPIC_COUNT_EQUALLY_DIVIDE, topic_hashes)
    assert whole.lower < boundary < whole.upper
    below = sum(h < boundary for h in topic_hashes)
    # Exactly half (rounded down) below, unless the top hash is 0xffffffff and forces one over.
    assert below in (len(topic_hashes) // 2, len(topic_hashes) // 2 + 1)
