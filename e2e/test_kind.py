"""The whole e2e run on a kind cluster: ``pytest e2e`` where Docker, kind and kubectl exist.

Not collected by the default ``pytest`` run (pyproject's testpaths is ``tests``); skipped with
the reason where a tool or the Docker daemon is missing (as in CI here).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("run.py")


def _missing() -> str | None:
    for tool in ("docker", "kind", "kubectl"):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH"
    probe = subprocess.run(
        ["docker", "info", "--format", "{{.ServerVersion}}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    if probe.returncode != 0:
        return f"the Docker daemon does not answer: {probe.stderr.strip()[:200]}"
    return None


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_end_to_end_on_kind() -> None:
    reason = _missing()
    if reason:
        pytest.skip(f"e2e needs Docker, kind and kubectl: {reason}")
    result = subprocess.run([sys.executable, str(SCRIPT)], check=False, timeout=3500)
    assert result.returncode == 0, "e2e/run.py failed: its output above names the step"
