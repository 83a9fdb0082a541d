"""Fixtures for the integration tier: a real `magnetar standalone` process and its clients.

A module that needs broker settings overrides ``standalone`` with its own ``env`` and
:func:`tests.kit.process.running`; ``client`` (the official pulsar-client) and ``ours``
(``magnetar.client``) then connect to that one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pulsar
import pytest

from magnetar.client.client import Client
from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess, official_client


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneProcess]:
    """One standalone process per test module; it must exit cleanly on SIGTERM at the end."""
    with running(StandaloneProcess(data_dir=tmp_path_factory.mktemp("sa") / "data")) as process:
        yield process


@pytest.fixture
def client(standalone: StandaloneProcess) -> Iterator[pulsar.Client]:
    """An official pulsar-client connected to the module's standalone process (pulsar-client is
    a pinned dependency: without it this fails rather than skipping the compatibility tests)."""
    c = official_client(standalone, operation_timeout_s=10)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
async def ours(standalone: StandaloneProcess) -> AsyncIterator[Client]:
    """A ``magnetar.client`` Client connected to the module's standalone process."""
    async with Client(standalone.service_url, operation_timeout_s=10) as c:
        yield c


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """The test session's one SparkSession (local[2], UI off, few shuffle partitions), with the
    audit's data sources registered; every Spark test shares it, so the JVM starts once."""
    from magnetar.audit.spark import session

    spark_session = session("local[2]", conf={"spark.sql.shuffle.partitions": "2"})
    try:
        yield spark_session
    finally:
        spark_session.stop()
