"""A log-linear latency histogram (the HdrHistogram idea, small enough to read).

Values are non-negative integers (the perf tools record microseconds). Values below
``2**SUB_BITS`` are counted exactly; above that, each power-of-two range is split into
``2**(SUB_BITS-1)`` equal sub-buckets, so any recorded value is reported within a relative error
of ``2**-(SUB_BITS-1)`` (under 1.6 % with the default 7 bits). Memory is bounded by the bucket
count (a few thousand for values up to hours in microseconds), never by the number of samples.

Percentiles return the highest value that falls in the bucket holding the requested rank
(HdrHistogram's ``highestEquivalentValue``), so they never under-report a latency; ``max`` is exact.

Not thread-safe: callers serialise access (``perf_official`` records under one lock);
:meth:`merge` combines histograms recorded separately.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

SUB_BITS = 7


def bucket_index(value: int, sub_bits: int = SUB_BITS) -> int:
    """The bucket a value is counted in; monotonic in ``value``."""
    if value < 0:
        raise ValueError(f"histogram values must be >= 0, got {value}")
    if value < (1 << sub_bits):
        return value
    shift = value.bit_length() - sub_bits
    # top ``sub_bits`` bits of the value; the leading bit is always 1, so the offset is
    # (value >> shift) - 2**(sub_bits-1), in [0, 2**(sub_bits-1)).
    half = 1 << (sub_bits - 1)
    return (1 << sub_bits) + (shift - 1) * half + ((value >> shift) - half)


def bucket_upper(index: int, sub_bits: int = SUB_BITS) -> int:
    """The highest value counted in bucket ``index`` (the inverse of :func:`bucket_index`)."""
    if index < (1 << sub_bits):
        return index
    half = 1 << (sub_bits - 1)
    rest = index - (1 << sub_bits)
    shift = rest // half + 1
    top = rest % half + half
    return ((top + 1) << shift) - 1


@dataclass(frozen=True)
class Summary:
    """What the perf tools print: count, mean, chosen percentiles and the exact max."""

    count: int
    mean: float
    p50: int
    p95: int
    p99: int
    p999: int
    max: int

    def as_dict(self) -> dict[str, float]:
        return {
            "count": self.count,
            "mean": round(self.mean, 3),
            "p50": self.p50,
            "p95": self.p95,
            "p99": self.p99,
            "p99.9": self.p999,
            "max": self.max,
        }


class Histogram:
    """Counts values into log-linear buckets; answers percentiles, mean and max."""

    def __init__(self, sub_bits: int = SUB_BITS) -> None:
        if not 2 <= sub_bits <= 16:
            raise ValueError(f"sub_bits must be in [2, 16], got {sub_bits}")
        self.sub_bits = sub_bits
        self._counts: dict[int, int] = {}
        self.count = 0
        self.total = 0
        self.max = 0

    def record(self, value: int, count: int = 1) -> None:
        index = bucket_index(value, self.sub_bits)
        self._counts[index] = self._counts.get(index, 0) + count
        self.count += count
        self.total += value * count
        if value > self.max:
            self.max = value

    def record_many(self, values: Iterable[int]) -> None:
        for value in values:
            self.record(value)

    def merge(self, other: Histogram) -> None:
        if other.sub_bits != self.sub_bits:
            raise ValueError("cannot merge histograms of different precision")
        for index, n in other._counts.items():
            self._counts[index] = self._counts.get(index, 0) + n
        self.count += other.count
        self.total += other.total
        self.max = max(self.max, other.max)

    def reset(self) -> None:
        self._counts.clear()
        self.count = self.total = self.max = 0

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0

    def percentile(self, p: float) -> int:
        """The value at percentile ``p`` (0..100]; 0 for an empty histogram."""
        if not 0.0 < p <= 100.0:
            raise ValueError(f"percentile must be in (0, 100], got {p}")
        if self.count == 0:
            return 0
        rank = max(1, -(-self.count * p // 100))  # ceil(count * p / 100), at least 1
        seen = 0
        for index in sorted(self._counts):
            seen += self._counts[index]
            if seen >= rank:
                return min(bucket_upper(index, self.sub_bits), self.max)
        return self.max

    def summary(self) -> Summary:
        return Summary(
            count=self.count,
            mean=self.mean,
            p50=self.percentile(50),
            p95=self.percentile(95),
            p99=self.percentile(99),
            p999=self.percentile(99.9),
            max=self.max,
        )
