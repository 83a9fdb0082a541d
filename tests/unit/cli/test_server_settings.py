"""A server command with missing or invalid settings says which, and exits 2 (no traceback)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from magnetar.cli.main import app


@pytest.mark.parametrize("command", ["autorecovery", "bookie"])
def test_a_missing_metadata_url_is_named(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("MAGNETAR_AUTORECOVERY_METADATA_URL", "MAGNETAR_BOOKIE_METADATA_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MAGNETAR_BOOKIE_DATA_DIR", "/nonexistent-for-this-test")
    result = CliRunner().invoke(app, [command])
    assert result.exit_code == 2, result.output
    assert "metadata_url: Field required" in result.output
    assert "Traceback" not in result.output


def test_an_invalid_value_is_named() -> None:
    result = CliRunner().invoke(
        app, ["autorecovery", "--metadata", "memory://x", "--audit-period", "-1"]
    )
    assert result.exit_code == 2, result.output
    assert "audit_period" in result.output
