"""Fixtures for the integration tier: a real `magnetar standalone` process and official clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kit.standalone import StandaloneProcess


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneProcess]:
    """One standalone process per test module; it must exit cleanly on SIGTERM at the end."""
    process = StandaloneProcess(data_dir=Path(tmp_path_factory.mktemp("sa")) / "data")
    process.start()
    try:
        yield process
    finally:
        assert process.stop() == 0, process.log_text()[-4000:]


@pytest.fixture
def durable_standalone(tmp_path: Path) -> Iterator[StandaloneProcess]:
    """A standalone of the test's own whose journal fsyncs: for kill -9 and restart tests."""
    process = StandaloneProcess(data_dir=tmp_path / "data", journal_sync=True)
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def client(standalone: StandaloneProcess) -> Iterator[Any]:
    """An official pulsar-client connected to the module's standalone process."""
    pulsar = pytest.importorskip("pulsar")
    c = pulsar.Client(
        standalone.service_url,
        operation_timeout_seconds=10,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn),
    )
    try:
        yield c
    finally:
        c.close()
