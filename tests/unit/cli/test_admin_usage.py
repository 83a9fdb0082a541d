"""Bad option values of ``magnetar admin`` are usage errors (exit 2) before any HTTP call.

The admin URL points at a closed port: a command that got as far as calling the server would
fail with exit 1 ("cannot reach"), so exit 2 proves the value was refused locally.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from magnetar.cli.main import app
from tests.kit.ports import free_port


@pytest.mark.parametrize(
    ("args", "option", "reason"),
    [
        (
            ["set-retention", "public/default", "-t", "2 days", "-s", "1G"],
            "--time/--size",
            "2 days",
        ),
        (["set-retention", "public/default", "-t", "2d", "-s", "lots"], "--time/--size", "lots"),
        (["set-message-ttl", "public/default", "--ttl", "10 minutes"], "--ttl", "10 minutes"),
    ],
)
def test_bad_namespace_values_are_usage_errors(args: list[str], option: str, reason: str) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = CliRunner().invoke(app, ["admin", "--admin-url", url, "namespaces", *args])
    assert result.exit_code == 2, result.output
    assert option in result.stderr
    assert reason in result.stderr
