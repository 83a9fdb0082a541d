"""Fixtures for the integration tier: a real `magnetar standalone` process and its clients.

A module that needs broker settings overrides ``standalone`` with its own ``env`` and
:func:`tests.kit.process.running`; ``client`` (the official pulsar-client) and ``ours``
(``magnetar.client``) then connect to that one.

Security tests share ``keys`` (a module's HS256 token keys), ``pki`` (a module's throwaway CA)
and ``store`` (a metadata store on the session's etcd); a module needing others overrides them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pulsar
import pytest

from magnetar.client.client import Client
from magnetar.metadata import MetadataStore
from magnetar.metadata.factory import open_store
from tests.kit.etcd import EtcdServer
from tests.kit.process import running
from tests.kit.security import TokenKeys
from tests.kit.standalone import StandaloneProcess, official_client
from tests.kit.tls import TestPki


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


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> TokenKeys:
    """The module's HS256 token keys (a fresh secret per module)."""
    return TokenKeys.hmac(tmp_path_factory.mktemp("keys"))


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> TestPki:
    """The module's throwaway certificate authority."""
    return TestPki.create(tmp_path_factory.mktemp("pki"))


@pytest.fixture
async def store(etcd_server: EtcdServer) -> AsyncIterator[MetadataStore]:
    """A metadata store on the session's etcd (2 s session timeout), closed after the test."""
    s = await open_store(etcd_server.url, session_timeout_s=2)
    yield s
    await s.close()


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
