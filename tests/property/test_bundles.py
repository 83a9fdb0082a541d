"""Property tests of namespace bundles: every hash lies in exactly one contiguous range."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from magnetar.broker.bundles import FULL_LOWER_BOUND, FULL_UPPER_BOUND, NamespaceBundles
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


@given(counts)
def test_names_round_trip(count: int) -> None:
    bundles = NamespaceBundles.even(NS, count)
    for bundle in bundles.bundles:
        assert bundles.bundle_named(bundle.name) == bundle
