"""A broker or a bookie pointed at a metadata store that is not there fails fast and says so.

Each command is started as a real process against ``etcd://127.0.0.1:<closed port>``: it must
exit within a few seconds with a non-zero code and one line naming the URL and what to do,
rather than hang, retry forever or end in a traceback.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.kit.ports import free_port
from tests.kit.process import MAGNETAR_CLI

FAIL_WITHIN_S = 15.0  # process start-up included, on a busy machine; it takes about 1 s


def run(args: list[str]) -> tuple[int, str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [*MAGNETAR_CLI, *args],
        capture_output=True,
        timeout=FAIL_WITHIN_S * 2,
        env=os.environ.copy(),
    )
    return done.returncode, done.stderr.decode(errors="replace"), time.monotonic() - started


@pytest.fixture
def unreachable() -> str:
    return f"etcd://127.0.0.1:{free_port()}"  # nobody listens there


def assert_failed_fast(code: int, stderr: str, took: float, url: str) -> None:
    assert code != 0
    assert took < FAIL_WITHIN_S, f"took {took:.1f}s"
    assert f"magnetar: cannot reach the metadata store at {url}" in stderr, stderr
    assert "start etcd there, or give the URL of a running one" in stderr
    assert "Traceback" not in stderr, stderr


def test_a_broker_without_its_metadata_store_fails_fast(unreachable: str) -> None:
    args = ["broker", "--metadata", unreachable, "--broker-port", str(free_port())]
    assert_failed_fast(*run([*args, "--web-port", str(free_port())]), unreachable)


def test_a_bookie_without_its_metadata_store_fails_fast(unreachable: str, tmp_path: Path) -> None:
    args = ["bookie", "--metadata", unreachable, "--data-dir", str(tmp_path / "bookie")]
    args += ["--port", str(free_port()), "--http-server-port", str(free_port())]
    assert_failed_fast(*run(args), unreachable)
