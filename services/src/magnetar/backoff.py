"""The one capped, jittered exponential backoff, its named presets and the one retry loop.

:class:`Backoff` is pure (it sleeps nowhere): ``delay = backoff.next()`` after each failure,
``backoff.reset()`` after a success. A :class:`BackoffPolicy` is the frozen shape of one kind of
retry; the module-level presets below are the only shapes the code base uses, each named for
what it retries, so that two loops retrying the same thing wait the same way. :func:`retry` is
the loop most callers want: call, and on a retryable error sleep the next delay and call again,
until success, a non-retryable error, the attempt cap or the time budget.

Invariants: :func:`retry` never catches ``CancelledError`` (it catches ``Exception`` only), so
cancelling the caller cancels the sleep or the call in progress and propagates; a given-up
retry raises the last error itself (or what ``exhausted`` makes of it, chained to it).

Callers: any task on any loop; the helpers keep no state between calls.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import NoReturn, TypeVar

from magnetar.errors import MagnetarError

R = TypeVar("R")

RetryOn = type[Exception] | tuple[type[Exception], ...] | Callable[[Exception], bool]


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


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """The shape of one kind of retry: first delay, cap and growth of a :class:`Backoff`."""

    initial: float
    cap: float
    multiplier: float = 2.0

    def backoff(self, rng: random.Random | None = None) -> Backoff:
        """A fresh :class:`Backoff` of this shape (one per retrying operation or loop)."""
        return Backoff(self.initial, self.cap, self.multiplier, rng or random.Random())


# Compare-and-set conflicts on one metadata key: the winner is done within a round trip, so
# retry at once-ish and never wait long (MetadataStore ``update()`` and its users).
METADATA_CAS = BackoffPolicy(initial=0.002, cap=0.2)
# A metadata session step (lease grant, leader campaign, the leader's watch) failed because the
# store is unreachable or the session expired: come back quickly, an owner is at stake.
METADATA_SESSION = BackoffPolicy(initial=0.05, cap=1.0)
# A long-lived metadata watch broke: re-list and re-watch without hammering a sick store.
METADATA_WATCH = BackoffPolicy(initial=0.1, cap=5.0)
# A bookie writing its registration (its ephemeral availability key) failed.
REGISTRATION = BackoffPolicy(initial=0.1, cap=5.0)
# A call or stream to a bookie failed as unavailable (restart, network): reads, the add
# stream, ensemble changes. grpc's own channel reconnect backoff runs underneath.
BOOKIE_RPC = BackoffPolicy(initial=0.05, cap=1.0)
# A subscription's dispatch step (read, plan, send) failed, most often a read the ledger layer
# already retried with BOOKIE_RPC and gave up on: the step is retried above those retries, so
# it may wait longer between attempts.
DISPATCH = BackoffPolicy(initial=0.05, cap=2.0)
# A client producer or consumer reattaching to a broker: the C++ client's shape, from 100 ms,
# doubling, capped at 5 s (brokers restart fast).
RECONNECT = BackoffPolicy(initial=0.1, cap=5.0)


def is_retryable(error: BaseException) -> bool:
    """Whether ``error`` says the same call may succeed later (its ``retryable`` attribute)."""
    return isinstance(error, MagnetarError) and error.retryable


async def retry(
    operation: Callable[[], Awaitable[R]],
    policy: BackoffPolicy,
    *,
    retry_on: RetryOn = is_retryable,
    max_attempts: int | None = None,
    give_up_after_s: float | None = None,
    on_retry: Callable[[Exception, float], None] | None = None,
    exhausted: Callable[[Exception], Exception] | None = None,
) -> R:
    """``await operation()`` until it succeeds, sleeping ``policy``'s backoff between attempts.

    An error is retried when ``retry_on`` matches it (exception classes, or a predicate; by
    default the error's ``retryable`` attribute); any other error propagates at once. The loop
    gives up, raising the last error (or ``exhausted(error) from error``), after
    ``max_attempts`` calls, or when the next delay would end ``give_up_after_s`` or later after
    the first call started (a running call is never interrupted: wrap it in its own deadline).
    ``on_retry(error, delay)`` runs before each sleep, to log.
    """
    matches = _matcher(retry_on)
    backoff = policy.backoff()
    give_up_at = None if give_up_after_s is None else time.monotonic() + give_up_after_s
    while True:
        try:
            return await operation()
        except Exception as exc:
            if not matches(exc):
                raise
            if max_attempts is not None and backoff.attempts + 1 >= max_attempts:
                _give_up(exc, exhausted)
            delay = backoff.next()
            if give_up_at is not None and time.monotonic() + delay >= give_up_at:
                _give_up(exc, exhausted)
            if on_retry is not None:
                on_retry(exc, delay)
        await asyncio.sleep(delay)


def _matcher(retry_on: RetryOn) -> Callable[[Exception], bool]:
    if isinstance(retry_on, type | tuple):
        classes = retry_on
        return lambda exc: isinstance(exc, classes)
    return retry_on


def _give_up(error: Exception, exhausted: Callable[[Exception], Exception] | None) -> NoReturn:
    if exhausted is None:
        raise error
    raise exhausted(error) from error
