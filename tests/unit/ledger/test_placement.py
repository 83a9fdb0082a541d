"""Ensemble placement: distinct members, exclusions, least-loaded preference, NotEnoughBookies."""

from __future__ import annotations

import random

import pytest

from magnetar.ids import BookieId
from magnetar.ledger.errors import NotEnoughBookies
from magnetar.ledger.placement import PlacementPolicy, choose_ensemble, replace_bookie

B = [BookieId(f"b{i}") for i in range(6)]


def test_choose_ensemble_picks_distinct_writable_bookies() -> None:
    for seed in range(50):
        ensemble = choose_ensemble(B[:4], 3, rng=random.Random(seed))
        assert len(ensemble) == 3
        assert len(set(ensemble)) == 3
        assert set(ensemble) <= set(B[:4])


def test_random_placement_uses_every_bookie_over_many_ledgers() -> None:
    rng = random.Random(7)
    seen = {b for _ in range(100) for b in choose_ensemble(B, 2, rng=rng)}
    assert seen == set(B)


def test_not_enough_bookies_names_the_shortfall() -> None:
    with pytest.raises(NotEnoughBookies) as info:
        choose_ensemble(B[:2], 3)
    assert (info.value.needed, info.value.available) == (3, 2)
    assert info.value.retryable


def test_exclusions_are_never_chosen() -> None:
    for seed in range(20):
        ensemble = choose_ensemble(B, 3, exclude={B[0], B[1]}, rng=random.Random(seed))
        assert not {B[0], B[1]} & set(ensemble)


def test_least_loaded_prefers_idle_bookies() -> None:
    load = {B[0]: 5, B[1]: 0, B[2]: 3, B[3]: 0, B[4]: 1, B[5]: 9}
    ensemble = choose_ensemble(
        B, 3, policy=PlacementPolicy.LEAST_LOADED, load=load, rng=random.Random(1)
    )
    assert set(ensemble) == {B[1], B[3], B[4]}


def test_replacement_keeps_other_positions_and_avoids_members_and_failed() -> None:
    ensemble = (B[0], B[1], B[2])
    for seed in range(20):
        new = replace_bookie(ensemble, 1, B, failed={B[3]}, rng=random.Random(seed))
        assert new[0] == B[0]
        assert new[2] == B[2]
        assert new[1] not in {B[0], B[1], B[2], B[3]}


def test_replacement_without_spare_bookie_fails() -> None:
    with pytest.raises(NotEnoughBookies):
        replace_bookie((B[0], B[1], B[2]), 0, B[:3])


RACKS = {B[0]: "r1", B[1]: "r1", B[2]: "r2", B[3]: "r2", B[4]: "r3", B[5]: "r3"}


def test_rack_aware_ensembles_take_one_bookie_per_rack() -> None:
    for seed in range(50):
        ensemble = choose_ensemble(B, 3, racks=RACKS, rng=random.Random(seed))
        assert sorted(RACKS[b] for b in ensemble) == ["r1", "r2", "r3"]


def test_rack_aware_placement_still_forms_an_ensemble_with_too_few_racks() -> None:
    one_rack = dict.fromkeys(B, "only")
    assert len(choose_ensemble(B, 4, racks=one_rack, rng=random.Random(1))) == 4
    for seed in range(20):
        ensemble = choose_ensemble(B, 4, racks=RACKS, rng=random.Random(seed))
        assert len({RACKS[b] for b in ensemble}) == 3


def test_rack_aware_replacement_prefers_the_rack_the_ensemble_lacks() -> None:
    ensemble = (B[0], B[2], B[4])  # r1, r2, r3
    for seed in range(20):
        replaced = replace_bookie(
            ensemble, 2, B, failed={B[4]}, racks=RACKS, rng=random.Random(seed)
        )
        assert replaced[2] == B[5]  # the other r3 bookie, not one of r1/r2
