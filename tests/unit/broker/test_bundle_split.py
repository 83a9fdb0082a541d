"""The automatic split's decision (pure) and the stored bundle table's split (memory store)."""

from __future__ import annotations

import uuid

import pytest

from magnetar.broker.bundle_factory import NamespaceBundleFactory
from magnetar.broker.bundle_split import (
    MEGABYTE,
    BundleSplitConfig,
    BundleStats,
    bundles_to_split,
)
from magnetar.broker.bundles import (
    RANGE_EQUALLY_DIVIDE,
    TOPIC_COUNT_EQUALLY_DIVIDE,
    BundleRange,
    NamespaceBundle,
    NamespaceBundles,
    split_boundary,
)
from magnetar.broker.errors import StaleBundle
from magnetar.metadata.memory import MemoryMetadataStore
from magnetar.naming import NamespaceName

NS = NamespaceName("public", "default")
BUNDLES = NamespaceBundles.even(NS).bundles
CONFIG = BundleSplitConfig()


def stats(bundle: NamespaceBundle = BUNDLES[0], **load: float) -> BundleStats:
    return BundleStats(bundle, **{"topics": 2, **load})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "load",
    [
        {"topics": 1001},
        {"sessions": 1001},
        {"msg_rate": 30_001.0},
        {"throughput": 101.0 * MEGABYTE},
    ],
)
def test_a_bundle_over_any_threshold_is_split(load: dict[str, float]) -> None:
    assert bundles_to_split([stats(**load)], {NS: 4}, CONFIG) == [BUNDLES[0]]


def test_a_bundle_at_the_thresholds_is_not_split() -> None:
    at = stats(topics=1000, sessions=1000, msg_rate=30_000.0, throughput=100.0 * MEGABYTE)
    assert bundles_to_split([at], {NS: 4}, CONFIG) == []


def test_disabled_or_single_topic_bundles_are_never_split() -> None:
    busy = stats(sessions=5000)
    off = BundleSplitConfig(enabled=False)
    assert bundles_to_split([busy], {NS: 4}, off) == []
    assert bundles_to_split([stats(topics=1, sessions=5000)], {NS: 4}, CONFIG) == []


def test_a_threshold_of_zero_is_off() -> None:
    config = BundleSplitConfig(max_topics=0, max_sessions=0, max_msg_rate=0, max_bandwidth_mbytes=0)
    assert bundles_to_split([stats(topics=10**6, sessions=10**6)], {NS: 4}, config) == []


def test_the_namespace_maximum_caps_splits_busiest_first() -> None:
    config = BundleSplitConfig(max_topics=5, maximum_bundles=6)
    load = [stats(BUNDLES[0], topics=6), stats(BUNDLES[1], topics=50), stats(BUNDLES[2], topics=9)]
    assert bundles_to_split(load, {NS: 4}, config) == [BUNDLES[1], BUNDLES[2]]
    assert bundles_to_split(load, {NS: 6}, config) == []
    assert bundles_to_split(load, {}, config) == []  # unknown count: treated as full


def test_split_boundaries() -> None:
    whole = BundleRange(0, 0xFFFFFFFF)
    assert split_boundary(whole, RANGE_EQUALLY_DIVIDE) == 0x7FFFFFFF
    assert split_boundary(BundleRange(0, 0x40000000), RANGE_EQUALLY_DIVIDE) == 0x20000000
    assert split_boundary(whole, TOPIC_COUNT_EQUALLY_DIVIDE, [10, 20, 30, 40]) == 25
    with pytest.raises(ValueError, match="fewer than two"):
        split_boundary(whole, TOPIC_COUNT_EQUALLY_DIVIDE, [10])
    with pytest.raises(ValueError, match="unknown split algorithm"):
        split_boundary(whole, "hot_topic", [])
    with pytest.raises(ValueError, match="one hash"):
        split_boundary(BundleRange(5, 6), RANGE_EQUALLY_DIVIDE)


def test_bundles_data_is_read_as_pulsar_writes_it() -> None:
    assert NamespaceBundles.from_json(NS, {"numBundles": 8}, 4) == NamespaceBundles.even(NS, 8)
    assert NamespaceBundles.from_json(NS, {}, 4) == NamespaceBundles.even(NS, 4)
    doc = {"boundaries": ["0x00000000", "0x10000000", "0xffffffff"], "numBundles": 2}
    assert NamespaceBundles.from_json(NS, doc, 4).boundaries == (0, 0x10000000, 0xFFFFFFFF)
    with pytest.raises(ValueError, match="does not match"):
        NamespaceBundles.from_json(NS, {**doc, "numBundles": 3}, 4)
    with pytest.raises(ValueError):
        NamespaceBundles.from_json(NS, {"boundaries": ["0x10", "0xffffffff"]}, 4)


async def test_the_factory_stores_splits_and_refuses_a_stale_bundle() -> None:
    name = uuid.uuid4().hex
    store = await MemoryMetadataStore.open(name)
    other_store = await MemoryMetadataStore.open(name)
    try:
        factory, other = NamespaceBundleFactory(store, 4), NamespaceBundleFactory(other_store, 4)
        assert await other.bundles(NS) == NamespaceBundles.even(NS)  # cached from now on
        low, high = await factory.split(BUNDLES[0], 0x20000000)
        assert (low.name, high.name) == ("0x00000000_0x20000000", "0x20000000_0x40000000")
        assert (await other.bundles(NS)).count == 4  # the cache is only a hint
        fresh = await other.bundles(NS, fresh=True)
        assert fresh.count == 5
        assert fresh.has(low)
        assert fresh.has(high)
        assert not await other.bundle_of(BUNDLES[0])
        with pytest.raises(StaleBundle):
            await other.split(BUNDLES[0], 0x10000000)  # split away by the first one
        await factory.create(NamespaceBundles.even(NS, 2))  # a re-created namesake
        assert (await other.bundles(NS, fresh=True)).count == 2
        await factory.delete(NS)
        assert (await other.bundles(NS, fresh=True)) == NamespaceBundles.even(NS)
    finally:
        await store.close()
        await other_store.close()
