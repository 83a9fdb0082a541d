"""Hypothesis: rack-aware placement spreads ensembles over racks, and stays a valid placement.

Properties, for any bookies-with-racks and ensemble size the writable set can hold:
- the ensemble has E distinct writable, non-excluded bookies (racks never refuse a placement);
- it covers min(E, racks with a candidate) racks, and no rack holds two members more than
  another while that rack still had unused candidates (round-robin);
- a replacement comes from a rack the rest of the ensemble uses least among the candidates'.
"""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from magnetar.ids import BookieId
from magnetar.ledger.placement import PlacementPolicy, choose_ensemble, replace_bookie


@st.composite
def layouts(draw: st.DrawFn) -> tuple[dict[BookieId, str], int, int]:
    count = draw(st.integers(1, 12))
    racks = {BookieId(f"b{i}"): f"rack-{draw(st.integers(0, 4))}" for i in range(count)}
    ensemble_size = draw(st.integers(1, count))
    return racks, ensemble_size, draw(st.integers(0, 2**32))


@settings(max_examples=300)
@given(layouts(), st.sampled_from(PlacementPolicy))
def test_ensembles_spread_over_every_rack_they_can(
    layout: tuple[dict[BookieId, str], int, int], policy: PlacementPolicy
) -> None:
    racks, size, seed = layout
    ensemble = choose_ensemble(
        list(racks), size, policy=policy, racks=racks, rng=random.Random(seed)
    )
    assert len(set(ensemble)) == size
    assert set(ensemble) <= set(racks)
    used = Counter(racks[b] for b in ensemble)
    available = Counter(racks.values())
    assert len(used) == min(size, len(available))
    for rack, count in used.items():
        for other, other_count in used.items():
            if other_count < available[other]:  # the other rack still had a bookie to give
                assert count <= other_count + 1, (rack, other, used, available)


@settings(max_examples=300)
@given(layouts())
def test_a_replacement_comes_from_a_least_used_rack(
    layout: tuple[dict[BookieId, str], int, int],
) -> None:
    racks, size, seed = layout
    rng = random.Random(seed)
    ensemble = choose_ensemble(list(racks), size, racks=racks, rng=rng)
    spare = [b for b in racks if b not in ensemble]
    if not spare:
        return
    position = rng.randrange(size)
    replaced = replace_bookie(ensemble, position, list(racks), racks=racks, rng=rng)
    chosen = replaced[position]
    assert chosen in spare
    assert (
        replaced[:position] + replaced[position + 1 :]
        == ensemble[:position] + ensemble[position + 1 :]
    )
    rest = Counter(racks[b] for i, b in enumerate(ensemble) if i != position)
    assert rest[racks[chosen]] == min(rest[racks[b]] for b in spare)
