"""A process's own token from its *_client_authentication_* settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from magnetar.authentication.client_token import client_token
from magnetar.authentication.settings import BookkeeperClientAuthenticationSettings

SETTING = "bookkeeper_client_authentication"


def test_no_plugin_no_token() -> None:
    assert client_token("", "token:x", SETTING) is None


def test_token_forms(tmp_path: Path) -> None:
    path = tmp_path / "t"
    path.write_text("from-file\n")
    assert client_token("token", "token:abc", SETTING) == "abc"
    assert client_token("token", f"file://{path}", SETTING) == "from-file"
    java = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
    assert client_token(java, "plain", SETTING) == "plain"


def test_bad_values_name_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="bookkeeper_client_authentication_plugin 'sasl'"):
        client_token("sasl", "x", SETTING)
    with pytest.raises(ValueError, match="_parameters: no token"):
        client_token("token", "token:", SETTING)
    with pytest.raises(ValueError, match="_parameters: cannot read"):
        client_token("token", f"file://{tmp_path / 'missing'}", SETTING)


def test_settings_refuse_an_unreadable_token_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read"):
        BookkeeperClientAuthenticationSettings(
            bookkeeper_client_authentication_plugin="token",
            bookkeeper_client_authentication_parameters=f"file://{tmp_path / 'missing'}",  # type: ignore[arg-type]
        )
