"""The perf histogram reports every percentile within its stated relative error, never below."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magnetar.tools.histogram import Histogram, bucket_index, bucket_upper


def exact_percentile(values: list[int], p: float) -> int:
    ordered = sorted(values)
    rank = max(1, math.ceil(len(ordered) * p / 100))
    return ordered[rank - 1]


@given(st.integers(min_value=0, max_value=10**12))
def test_bucket_upper_bounds_its_bucket(value: int) -> None:
    index = bucket_index(value)
    assert bucket_upper(index) >= value
    assert bucket_index(bucket_upper(index)) == index
    assert bucket_upper(index) - value <= max(0, value) / 64


def test_buckets_are_contiguous_and_monotonic() -> None:
    previous = -1
    for value in range(70_000):
        index = bucket_index(value)
        assert index in (previous, previous + 1)
        previous = index


@given(
    st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=300),
    st.sampled_from([50.0, 90.0, 95.0, 99.0, 99.9, 100.0]),
)
def test_percentile_within_relative_error_and_never_under(values: list[int], p: float) -> None:
    hist = Histogram()
    hist.record_many(values)
    exact = exact_percentile(values, p)
    got = hist.percentile(p)
    assert exact <= got <= exact + exact / 64
    assert hist.max == max(values)
    assert hist.count == len(values)


def test_merge_equals_recording_everything_in_one() -> None:
    a, b, both = Histogram(), Histogram(), Histogram()
    a.record_many(range(0, 5000, 7))
    b.record_many(range(3, 90_000, 13))
    both.record_many([*range(0, 5000, 7), *range(3, 90_000, 13)])
    a.merge(b)
    assert a.summary() == both.summary()


def test_empty_histogram_and_bad_input() -> None:
    hist = Histogram()
    assert hist.percentile(99) == 0
    assert hist.summary().count == 0
    with pytest.raises(ValueError, match=">= 0"):
        hist.record(-1)
    with pytest.raises(ValueError, match="percentile"):
        hist.percentile(0)
