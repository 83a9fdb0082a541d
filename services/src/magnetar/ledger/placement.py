"""Ensemble placement (BookKeeper's ``EnsemblePlacementPolicy``), sans-I/O.

Chooses E distinct bookies for a new ledger from the writable set, and a replacement for one
position on an ensemble change (never a current member nor a bookie known to have failed).
``RANDOM`` shuffles; ``LEAST_LOADED`` prefers bookies carrying the fewest ledgers by this client
(ties broken at random so that equal bookies share the load). Pure functions of their arguments
and the given ``random.Random``: tested without a loop.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Collection, Mapping

from magnetar.ids import BookieId
from magnetar.ledger.errors import NotEnoughBookies
from magnetar.ledger.metadata import Ensemble


class PlacementPolicy(enum.Enum):
    RANDOM = "random"
    LEAST_LOADED = "least_loaded"


def _ranked(
    candidates: list[BookieId],
    policy: PlacementPolicy,
    load: Mapping[BookieId, int],
    rng: random.Random,
) -> list[BookieId]:
    shuffled = sorted(candidates)  # deterministic base order for a seeded rng
    rng.shuffle(shuffled)
    if policy is PlacementPolicy.LEAST_LOADED:
        shuffled.sort(key=lambda b: load.get(b, 0))  # stable: shuffle breaks ties
    return shuffled


def choose_ensemble(
    writable: Collection[BookieId],
    ensemble_size: int,
    *,
    policy: PlacementPolicy = PlacementPolicy.RANDOM,
    load: Mapping[BookieId, int] | None = None,
    exclude: Collection[BookieId] = (),
    rng: random.Random | None = None,
) -> Ensemble:
    """E distinct bookies of ``writable`` minus ``exclude``, else :class:`NotEnoughBookies`."""
    candidates = [b for b in set(writable) if b not in exclude]
    if len(candidates) < ensemble_size:
        raise NotEnoughBookies(ensemble_size, len(candidates))
    ranked = _ranked(candidates, policy, load or {}, rng or random.Random())
    return tuple(ranked[:ensemble_size])


def replace_bookie(
    ensemble: Ensemble,
    position: int,
    writable: Collection[BookieId],
    *,
    failed: Collection[BookieId] = (),
    policy: PlacementPolicy = PlacementPolicy.RANDOM,
    load: Mapping[BookieId, int] | None = None,
    rng: random.Random | None = None,
) -> Ensemble:
    """``ensemble`` with the bookie at ``position`` swapped for a writable non-member."""
    excluded = set(ensemble) | set(failed)
    (chosen,) = choose_ensemble(writable, 1, policy=policy, load=load, exclude=excluded, rng=rng)
    return (*ensemble[:position], chosen, *ensemble[position + 1 :])
