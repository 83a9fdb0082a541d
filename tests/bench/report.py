"""What every benchmark report records besides its numbers: the machine it ran on, the
settings of the run, and percentiles of a latency sample. Not a test; shared by the scripts in
``tests/bench``, each of which prints :func:`header` before its first number."""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path


def machine() -> dict[str, str | int]:
    """CPU model, core count, Python and kernel versions: the label a published number needs."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count() or 0,
        "python": platform.python_version(),
        "kernel": platform.release(),
    }


def header(settings: Mapping[str, object]) -> str:
    """Two lines, ``machine: ...`` and ``settings: k=v ...``: the label every run prints first,
    so that a figure copied from its output keeps the machine and settings it was measured on."""
    pairs = " ".join(f"{key}={value}" for key, value in settings.items())
    return f"machine: {machine()}\nsettings: {pairs}"


def bench_json(summary: Mapping[str, object], path: Path | None) -> None:
    """The last line of a run, ``BENCH_JSON {...}`` (what scripts collect), and the same
    summary indented in ``path`` when one was given."""
    print("BENCH_JSON " + json.dumps(summary), flush=True)
    if path is not None:
        path.write_text(json.dumps(summary, indent=2))


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of an ascending sample by the nearest-rank rule; 0 if empty."""
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]
