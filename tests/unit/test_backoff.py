"""The backoff presets and the one retry loop: what is retried, when it gives up, cancellation."""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from magnetar.backoff import (
    BOOKIE_RPC,
    DISPATCH,
    METADATA_CAS,
    METADATA_SESSION,
    METADATA_WATCH,
    RECONNECT,
    REGISTRATION,
    BackoffPolicy,
    retry,
)
from magnetar.errors import MagnetarError, Timeout

FAST = BackoffPolicy(initial=0.001, cap=0.002)


class Flaky:
    """Fails with ``error`` the first ``failures`` calls, then returns how many calls it took."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0

    async def __call__(self) -> int:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return self.calls


class NotRetryable(MagnetarError):
    pass


@pytest.mark.parametrize(
    "policy",
    [METADATA_CAS, METADATA_SESSION, METADATA_WATCH, REGISTRATION, BOOKIE_RPC, DISPATCH, RECONNECT],
)
def test_preset_delays_stay_between_initial_and_cap(policy: BackoffPolicy) -> None:
    backoff = policy.backoff(random.Random(7))
    delays = [backoff.next() for _ in range(40)]
    assert all(policy.initial <= d <= policy.cap for d in delays)
    assert backoff.attempts == 40
    backoff.reset()
    assert backoff.attempts == 0


def test_each_backoff_of_a_policy_starts_afresh() -> None:
    first = METADATA_CAS.backoff()
    first.next()
    assert METADATA_CAS.backoff().attempts == 0


async def test_retries_a_retryable_error_until_success() -> None:
    flaky = Flaky(3, Timeout("slow"))
    seen: list[tuple[Exception, float]] = []
    result = await retry(flaky, FAST, on_retry=lambda exc, delay: seen.append((exc, delay)))
    assert result == 4
    assert [exc for exc, _ in seen] == [flaky.error] * 3
    assert all(FAST.initial <= delay <= FAST.cap for _, delay in seen)


async def test_a_non_retryable_error_propagates_at_once() -> None:
    flaky = Flaky(5, NotRetryable("no"))
    with pytest.raises(NotRetryable):
        await retry(flaky, FAST)
    assert flaky.calls == 1


async def test_an_error_outside_retry_on_propagates_even_if_retryable() -> None:
    flaky = Flaky(5, Timeout("slow"))
    with pytest.raises(Timeout):
        await retry(flaky, FAST, retry_on=KeyError)
    assert flaky.calls == 1


async def test_retry_on_accepts_classes_and_predicates() -> None:
    assert await retry(Flaky(2, KeyError("k")), FAST, retry_on=(KeyError, ValueError)) == 3
    assert await retry(Flaky(2, OSError("o")), FAST, retry_on=lambda e: "o" in str(e)) == 3


async def test_gives_up_after_max_attempts_with_the_last_error() -> None:
    flaky = Flaky(10, Timeout("slow"))
    with pytest.raises(Timeout) as raised:
        await retry(flaky, FAST, max_attempts=4)
    assert raised.value is flaky.error
    assert flaky.calls == 4


async def test_gives_up_before_a_delay_would_pass_the_time_budget() -> None:
    flaky = Flaky(1000, Timeout("slow"))
    started = time.monotonic()
    with pytest.raises(Timeout):
        await retry(flaky, BackoffPolicy(initial=0.02, cap=0.02), give_up_after_s=0.1)
    assert time.monotonic() - started < 0.1
    assert 2 <= flaky.calls <= 5


async def test_exhausted_turns_the_last_error_into_another_chained_to_it() -> None:
    flaky = Flaky(10, Timeout("slow"))
    with pytest.raises(RuntimeError, match="gave up") as raised:
        await retry(
            flaky, FAST, max_attempts=2, exhausted=lambda exc: RuntimeError(f"gave up: {exc}")
        )
    assert raised.value.__cause__ is flaky.error


async def test_cancelling_the_caller_while_it_sleeps_is_not_swallowed() -> None:
    flaky = Flaky(1000, Timeout("slow"))
    sleeping = asyncio.Event()
    caller = asyncio.create_task(
        retry(flaky, BackoffPolicy(initial=30.0, cap=30.0), on_retry=lambda e, d: sleeping.set())
    )
    await asyncio.wait_for(sleeping.wait(), 5)
    await asyncio.sleep(0.01)  # now in the 30 s sleep
    caller.cancel()
    done, _ = await asyncio.wait([caller], timeout=5)  # a swallowed cancel sleeps on
    assert caller in done
    assert caller.cancelled()
    assert flaky.calls == 1


async def test_a_cancelled_operation_is_never_retried() -> None:
    calls = 0

    async def cancelled() -> None:
        nonlocal calls
        calls += 1
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await retry(cancelled, FAST, retry_on=BaseException, max_attempts=3)  # type: ignore[arg-type]
    assert calls == 1
