"""Ensemble placement (BookKeeper's ``EnsemblePlacementPolicy``), sans-I/O.

Chooses E distinct bookies for a new ledger from the writable set, and a replacement for one
position on an ensemble change (never a current member nor a bookie known to have failed).
``RANDOM`` shuffles; ``LEAST_LOADED`` prefers bookies carrying the fewest ledgers by this client
(ties broken at random so that equal bookies share the load).

Rack awareness (BookKeeper's ``RackawareEnsemblePlacementPolicy``, best effort): given each
bookie's rack, an ensemble takes bookies from as many racks as it can, round-robin over the
racks in ranked order, so its racks differ in member count by at most one where the racks have
the bookies; a replacement comes from the rack least used by the rest of the ensemble. With too
few racks the ensemble still forms (racks are a preference, never a reason to refuse). Bookies
without a rack share the default rack "". Pure functions of their arguments and the given
``random.Random``: tested without a loop.
"""

from __future__ import annotations

import enum
import random
from collections import Counter
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


def _spread_over_racks(
    ranked: list[BookieId], count: int, racks: Mapping[BookieId, str]
) -> list[BookieId]:
    """``count`` of ``ranked``, taken round-robin over racks (racks in order of their best)."""
    by_rack: dict[str, list[BookieId]] = {}
    for bookie in ranked:
        by_rack.setdefault(racks.get(bookie, ""), []).append(bookie)
    queues = list(by_rack.values())
    chosen: list[BookieId] = []
    while len(chosen) < count:
        for queue in queues:
            if queue and len(chosen) < count:
                chosen.append(queue.pop(0))
    return chosen


def choose_ensemble(
    writable: Collection[BookieId],
    ensemble_size: int,
    *,
    policy: PlacementPolicy = PlacementPolicy.RANDOM,
    load: Mapping[BookieId, int] | None = None,
    exclude: Collection[BookieId] = (),
    rng: random.Random | None = None,
    racks: Mapping[BookieId, str] | None = None,
) -> Ensemble:
    """E distinct bookies of ``writable`` minus ``exclude``, else :class:`NotEnoughBookies`;
    spread over ``racks`` when given."""
    candidates = [b for b in set(writable) if b not in exclude]
    if len(candidates) < ensemble_size:
        raise NotEnoughBookies(ensemble_size, len(candidates))
    ranked = _ranked(candidates, policy, load or {}, rng or random.Random())
    if racks:
        return tuple(_spread_over_racks(ranked, ensemble_size, racks))
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
    racks: Mapping[BookieId, str] | None = None,
) -> Ensemble:
    """``ensemble`` with the bookie at ``position`` swapped for a writable non-member (from
    the rack the rest of the ensemble uses least, when ``racks`` is given)."""
    excluded = set(ensemble) | set(failed)
    candidates = [b for b in set(writable) if b not in excluded]
    if not candidates:
        raise NotEnoughBookies(1, 0)
    ranked = _ranked(candidates, policy, load or {}, rng or random.Random())
    if racks:
        rest = Counter(racks.get(b, "") for i, b in enumerate(ensemble) if i != position)
        ranked.sort(key=lambda b: rest[racks.get(b, "")])  # stable: keeps the rank within
    return (*ensemble[:position], ranked[0], *ensemble[position + 1 :])
