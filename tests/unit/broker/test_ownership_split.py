"""Splitting an owned bundle, and lookups on a broker whose cached boundaries are stale.

Two brokers over one in-memory metadata server (the fixtures of ``test_ownership``)."""

from __future__ import annotations

import pytest

from magnetar.broker.bundles import NamespaceBundle, NamespaceBundles, topic_hash
from magnetar.broker.ownership import LookupResult
from magnetar.naming import TopicName
from tests.unit.broker.test_ownership import TOPIC, Broker, pair

__all__ = ["pair"]  # the fixture, used by name


def topic_in(bundle: NamespaceBundle, above: int | None = None) -> TopicName:
    """A topic of ``bundle`` (with ``above``: whose hash is at least that)."""
    for i in range(100_000):
        topic = TopicName.parse(f"persistent://public/default/s{i}")
        h = topic_hash(topic)
        if bundle.range.contains(h) and (above is None or h >= above):
            return topic
    raise AssertionError(f"no topic in {bundle}")


async def test_the_owner_splits_and_keeps_both_halves(pair: tuple[Broker, Broker]) -> None:
    a, b = pair
    await b.ownership.bundles(TOPIC.namespace)  # b caches the boundaries before the split
    await a.ownership.lookup(TOPIC, True)
    bundle = a.ownership.owned[0]
    boundary = bundle.range.lower + (bundle.range.upper - bundle.range.lower) // 2
    assert await b.ownership.split(bundle, boundary, False) is None  # not b's: redirect
    low, high = await a.ownership.split(bundle, boundary, False) or pytest.fail("not split")
    assert sorted(a.ownership.owned, key=str) == [low, high]
    assert a.topics.closed == []  # a split without unload keeps the topics loaded
    a.ownership.check_owned(TOPIC)
    stored = await b.ownership.bundles(TOPIC.namespace)
    assert stored.count == 5
    assert stored.find(TOPIC) in (low, high)
    assert await b.ownership.owner(bundle) is None  # the old owner key is gone
    me = LookupResult.connect(a.registry.data)
    assert await b.ownership.owner(low) == me
    assert await b.ownership.owner(high) == me
    # b's lookups of topics of both halves reach a; b never acquires the stale whole bundle.
    for half in (low, high):
        assert await b.ownership.lookup(topic_in(half), True) == me
    assert b.ownership.owned == []


async def test_split_with_unload_releases_the_halves(pair: tuple[Broker, Broker]) -> None:
    a, b = pair
    await a.ownership.lookup(TOPIC, True)
    bundle = a.ownership.owned[0]
    halves = await a.ownership.split(bundle, bundle.range.lower + 0x1000, True)
    assert halves is not None
    assert a.ownership.owned == []
    assert sorted(a.topics.closed, key=str) == sorted(halves, key=str)
    for half in halves:
        assert await b.ownership.owner(half) is None
    assert await b.ownership.lookup(topic_in(halves[1]), True) == LookupResult.connect(
        b.registry.data
    )


async def test_a_stale_bundle_acquired_is_given_up_and_the_lookup_redone(
    pair: tuple[Broker, Broker],
) -> None:
    a, b = pair
    whole = NamespaceBundles.even(TOPIC.namespace).find(TOPIC)
    await b.ownership.bundles(TOPIC.namespace)  # b's cache: four bundles
    await b.ownership.bundle_factory.bundles(TOPIC.namespace)
    await a.ownership.lookup(TOPIC, True)
    boundary = whole.range.lower + 0x100
    halves = await a.ownership.split(whole, boundary, True)  # both halves unowned now
    assert halves is not None
    assert (await b.ownership.bundle_factory.bundles(TOPIC.namespace)).count == 4  # still stale
    topic = topic_in(halves[1])
    assert await b.ownership.lookup(topic, True) == LookupResult.connect(b.registry.data)
    assert b.ownership.owned == [halves[1]]  # the half, never the whole bundle
    assert await a.ownership.owner(whole) is None


async def test_a_boundary_outside_the_bundle_is_refused(pair: tuple[Broker, Broker]) -> None:
    a, _ = pair
    await a.ownership.lookup(TOPIC, True)
    bundle = a.ownership.owned[0]
    with pytest.raises(ValueError, match="not inside"):
        await a.ownership.split(bundle, bundle.range.upper, False)
    assert a.ownership.owned == [bundle]
