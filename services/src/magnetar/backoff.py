"""The one capped, jittered exponential backoff used for every retry.

Use :class:`Backoff` as a per-operation object: ``delay = backoff.next()`` after each failure,
``backoff.reset()`` after a success. Pure: it sleeps nowhere; callers ``await asyncio.sleep``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Full-jitter exponential backoff: delay_n is uniform in [initial, min(cap, initial*2**n)]."""

    initial: float = 0.1
    cap: float = 10.0
    multiplier: float = 2.0
    rng: random.Random = field(default_factory=random.Random)
    _attempt: int = 0

    def next(self) -> float:
        upper = min(self.cap, self.initial * self.multiplier**self._attempt)
        self._attempt += 1
        return self.rng.uniform(self.initial, max(self.initial, upper))

    def reset(self) -> None:
        self._attempt = 0

    @property
    def attempts(self) -> int:
        return self._attempt
