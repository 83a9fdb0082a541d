"""Fixtures for the integration tier: a real `magnetar standalone` process and official clients.

A module that needs broker settings overrides ``standalone`` with its own ``env`` and
:func:`tests.kit.process.running`; ``client`` then connects to that one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess, official_client


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneProcess]:
    """One standalone process per test module; it must exit cleanly on SIGTERM at the end."""
    with running(StandaloneProcess(data_dir=tmp_path_factory.mktemp("sa") / "data")) as process:
        yield process


@pytest.fixture
def durable_standalone(tmp_path: Path) -> Iterator[StandaloneProcess]:
    """A standalone of the test's own whose journal fsyncs: for kill -9 and restart tests."""
    process = StandaloneProcess(data_dir=tmp_path / "data", journal_sync=True)
    with running(process, clean_exit=False) as started:
        yield started


@pytest.fixture
def client(standalone: StandaloneProcess) -> Iterator[Any]:
    """An official pulsar-client connected to the module's standalone process (pulsar-client is
    a pinned dependency: without it this fails rather than skipping the compatibility tests)."""
    c = official_client(standalone, operation_timeout_s=10)
    try:
        yield c
    finally:
        c.close()
