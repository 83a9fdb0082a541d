"""What ``magnetar perf`` measures and prints: per-second progress lines and a final summary.

:class:`PerfMeter` is fed by the load loops (``record(n_bytes, latency_us)``) and asked for a
:class:`Snapshot` once per interval (the live line) and once at the end (the summary). Latencies
are microseconds in a :class:`~magnetar.tools.histogram.Histogram`: each latency is recorded
once, in the interval histogram, which is merged into the total one and reset at each interval
snapshot (half the per-message cost of recording in both). Rates use the interval's true
elapsed time.

Sans-I/O: the caller passes the clock readings; formatting returns strings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from magnetar.tools.histogram import Histogram, Summary

MB = 1024 * 1024


@dataclass(frozen=True)
class Snapshot:
    """Counts and latency over one interval (or the whole run)."""

    label: str
    elapsed_s: float
    messages: int
    bytes: int
    errors: int
    latency_us: Summary

    @property
    def msg_rate(self) -> float:
        return self.messages / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def mb_rate(self) -> float:
        return self.bytes / MB / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def progress_line(self, total_messages: int) -> str:
        lat = self.latency_us
        return (
            f"{self.label}: {self.msg_rate:>10,.0f} msg/s {self.mb_rate:>8.2f} MB/s"
            f" | latency ms p50 {lat.p50 / 1000:.2f} p99 {lat.p99 / 1000:.2f}"
            f" max {lat.max / 1000:.2f} | total {total_messages:,}"
            + (f" | errors {self.errors}" if self.errors else "")
        )

    def summary_text(self) -> str:
        lat = self.latency_us
        ms = {k: v / 1000 for k, v in lat.as_dict().items() if k not in ("count",)}
        return "\n".join(
            [
                f"{self.label} summary: {self.messages:,} messages, {self.bytes / MB:,.2f} MB"
                f" in {self.elapsed_s:.2f} s, {self.errors} errors",
                f"  throughput: {self.msg_rate:,.0f} msg/s, {self.mb_rate:.2f} MB/s",
                "  latency ms: "
                + "  ".join(
                    f"{name} {ms[name]:.3f}"
                    for name in ("mean", "p50", "p95", "p99", "p99.9", "max")
                ),
            ]
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "elapsed_s": round(self.elapsed_s, 3),
            "messages": self.messages,
            "bytes": self.bytes,
            "errors": self.errors,
            "msg_per_s": round(self.msg_rate, 1),
            "mb_per_s": round(self.mb_rate, 3),
            "latency_ms": {
                k: v / 1000 for k, v in self.latency_us.as_dict().items() if k != "count"
            },
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), sort_keys=True)


class PerfMeter:
    """Accumulates messages, bytes, errors and latencies; snapshots per interval and in total."""

    def __init__(self, label: str, start: float) -> None:
        self.label = label
        self._start = start
        self._interval_start = start
        self._interval = Histogram()
        self._total = Histogram()
        self._messages = self._bytes = self._errors = 0
        # The totals when the current interval began.
        self._mark = (0, 0, 0)

    @property
    def messages(self) -> int:
        return self._messages

    def record(self, n_bytes: int, latency_us: int | None) -> None:
        self._messages += 1
        self._bytes += n_bytes
        if latency_us is not None:
            self._interval.record(latency_us if latency_us > 0 else 0)

    def record_error(self) -> None:
        self._errors += 1

    def interval(self, now: float) -> Snapshot:
        messages, n_bytes, errors = self._mark
        snap = Snapshot(
            self.label,
            now - self._interval_start,
            self._messages - messages,
            self._bytes - n_bytes,
            self._errors - errors,
            self._interval.summary(),
        )
        self._total.merge(self._interval)
        self._interval.reset()
        self._interval_start = now
        self._mark = (self._messages, self._bytes, self._errors)
        return snap

    def total(self, now: float) -> Snapshot:
        latency = Histogram(self._total.sub_bits)
        latency.merge(self._total)
        latency.merge(self._interval)
        return Snapshot(
            self.label,
            now - self._start,
            self._messages,
            self._bytes,
            self._errors,
            latency.summary(),
        )
