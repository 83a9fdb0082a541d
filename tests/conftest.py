"""Fixtures shared by every test tier."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit.etcd import EtcdServer, etcd_binary


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
