"""Fixtures shared by every test tier: a real etcd, and a crashable standalone process."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.kit.compiled import compiled_modules
from tests.kit.etcd import EtcdServer, etcd_binary
from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess

# Hypothesis: modest example counts so the suite stays quick on a 2-core CI machine; no
# per-example deadline, because examples that touch disks or sockets vary in time.
settings.register_profile(
    "default",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("MAGNETAR_HYPOTHESIS_PROFILE", "default"))

# The Spark test files share one SparkSession (tests/integration/conftest.py, session scope).
# `make test` spreads whole files over pytest-xdist workers; these files go to one worker
# together, so the suite starts one Spark JVM, not one per worker.
SPARK_TEST_FILES = "tests/integration/test_audit_"


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile``, with every Spark test file in one scope (so on one worker)."""
    if config.getoption("dist") != "loadfile":
        return None  # xdist's own choice
    from xdist.scheduler import LoadFileScheduling

    class SparkTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(SPARK_TEST_FILES):
                return SPARK_TEST_FILES
            return str(super()._split_scope(nodeid))

    return SparkTogether(config, log)


def pytest_report_header(config: pytest.Config) -> str:
    """Say whether the mypyc-compiled modules run compiled (setup.py; docs/architecture.md)."""
    modules = compiled_modules()
    return f"magnetar: {len(modules.compiled)} modules compiled, {len(modules.pure)} pure Python"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Refuse to test an edited module through its stale compiled extension."""
    stale = compiled_modules().stale
    if stale:
        pytest.exit(
            f"compiled extension older than its source: {', '.join(stale)}; run `make setup` "
            "to rebuild (or MAGNETAR_PURE_PYTHON=1 make setup for pure Python)",
            returncode=4,
        )


@pytest.fixture(scope="session")
def etcd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdServer]:
    """One real etcd for the whole session; tests isolate themselves by key prefix or ids."""
    if etcd_binary() is None:
        pytest.fail("etcd is not installed: run `make setup` (installs Debian's etcd-server)")
    base: Path = tmp_path_factory.mktemp("etcd")
    server = EtcdServer(data_dir=base / "data")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def durable_standalone(tmp_path: Path) -> Iterator[StandaloneProcess]:
    """A standalone of the test's own whose journal fsyncs: for kill -9 and restart tests
    (integration and fault tiers). It may be killed, so its exit code is not checked."""
    process = StandaloneProcess(data_dir=tmp_path / "data", journal_sync=True)
    with running(process, clean_exit=False) as started:
        yield started
