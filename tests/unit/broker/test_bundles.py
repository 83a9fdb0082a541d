"""Namespace bundles: Pulsar's default split, names and topic hashing."""

from __future__ import annotations

import zlib

import pytest

from magnetar.broker.bundles import (
    FULL_UPPER_BOUND,
    BundleRange,
    NamespaceBundles,
    topic_hash,
)
from magnetar.naming import NamespaceName, TopicName

NS = NamespaceName("public", "default")


def test_default_bundles_are_pulsars_four_even_ranges() -> None:
    bundles = NamespaceBundles.even(NS)
    assert bundles.to_json() == {
        "boundaries": ["0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"],
        "numBundles": 4,
    }
    assert [b.name for b in bundles.bundles] == [
        "0x00000000_0x40000000",
        "0x40000000_0x80000000",
        "0x80000000_0xc0000000",
        "0xc0000000_0xffffffff",
    ]
    assert str(bundles.bundles[0]) == "public/default/0x00000000_0x40000000"


def test_topic_hash_is_unsigned_crc32_of_the_full_name() -> None:
    name = "persistent://public/default/my-topic"
    assert topic_hash(TopicName.parse(name)) == zlib.crc32(name.encode()) & 0xFFFFFFFF
    # Known CRC-32 value ("123456789" is the check string of the algorithm).
    assert topic_hash("123456789") == 0xCBF43926


def test_partitions_hash_by_their_own_names() -> None:
    topic = TopicName.parse("persistent://public/default/p")
    hashes = {topic_hash(topic.partition(i)) for i in range(8)}
    assert len(hashes) == 8
    bundles = NamespaceBundles.even(NS)
    assert bundles.find(topic.partition(0)).range.contains(topic_hash(topic.partition(0)))


def test_edges_belong_to_one_bundle_each() -> None:
    bundles = NamespaceBundles.even(NS)
    assert bundles.bundle_at(0).name == "0x00000000_0x40000000"
    assert bundles.bundle_at(0x3FFFFFFF).name == "0x00000000_0x40000000"
    assert bundles.bundle_at(0x40000000).name == "0x40000000_0x80000000"
    assert bundles.bundle_at(FULL_UPPER_BOUND).name == "0xc0000000_0xffffffff"


def test_bundle_named_and_parse() -> None:
    bundles = NamespaceBundles.even(NS)
    assert bundles.bundle_named("0x40000000_0x80000000").range == BundleRange(
        0x40000000, 0x80000000
    )
    assert bundles.bundle_named("0xc0000000_0xffffffff").range.upper == FULL_UPPER_BOUND
    for name in ("0x00000000_0x80000000", "0x10000000_0x40000000", "0x40000000_0x50000000"):
        with pytest.raises(KeyError):  # two bundles; not a boundary below; not one above
            bundles.bundle_named(name)
    with pytest.raises(ValueError, match="invalid bundle range"):
        BundleRange.parse("0x0_0x4")


def test_find_refuses_a_topic_of_another_namespace() -> None:
    with pytest.raises(ValueError, match="not in namespace"):
        NamespaceBundles.even(NS).find(TopicName.parse("persistent://t/other/x"))


@pytest.mark.parametrize("bad", [(0,), (1, FULL_UPPER_BOUND), (0, 5, 5, FULL_UPPER_BOUND)])
def test_bad_boundaries_are_refused(bad: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="boundaries"):
        NamespaceBundles(NS, bad)
