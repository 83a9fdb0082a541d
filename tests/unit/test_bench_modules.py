"""Every benchmark module imports: no test runs the benchmarks, and mypy checks only the
packages, so a bench broken by a change elsewhere (a helper moved, renamed) is caught here."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
MODULES = sorted(p.stem for p in BENCH.glob("*.py") if p.stem != "__init__")


def test_the_benchmarks_are_found() -> None:
    assert "broker_official_client" in MODULES
    assert "side_by_side" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_a_benchmark_module_imports(name: str) -> None:
    module = importlib.import_module(f"tests.bench.{name}")
    if '__name__ == "__main__"' in (BENCH / f"{name}.py").read_text():  # a runnable one
        assert callable(getattr(module, "main", None)), f"tests.bench.{name} has no main()"


def test_every_per_message_case_runs_both_sides() -> None:
    # Its cases run only when the bench is run by hand; one call of each side catches a case
    # that the code under it has broken (a compiled class that can no longer be subclassed,
    # say), which importing the module does not.
    from tests.bench import per_message_costs as bench

    cases = (
        bench.value_cases()
        + bench.encoding_cases()
        + bench.byte_cases()
        + bench.metrics_cases()
        + bench.checksum_cases()
    )
    assert len(cases) > 10
    for case in cases:
        case.ours()
        case.other()
