"""Security settings: broker.conf names, comma lists from the environment, early errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from magnetar.broker.settings import BrokerSettings
from magnetar.standalone import StandaloneSettings


def test_comma_lists_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    key = tmp_path / "secret.key"
    key.write_bytes(bytes(32))
    monkeypatch.setenv("MAGNETAR_STANDALONE_AUTHENTICATION_ENABLED", "true")
    monkeypatch.setenv("MAGNETAR_STANDALONE_AUTHENTICATION_PROVIDERS", "token, tls")
    monkeypatch.setenv("MAGNETAR_STANDALONE_SUPER_USER_ROLES", "admin,ops")
    monkeypatch.setenv("MAGNETAR_STANDALONE_TOKEN_SECRET_KEY", f"file://{key}")
    settings = StandaloneSettings()
    assert settings.super_user_roles == ("admin", "ops")
    config = settings.broker_config().security
    assert config.authentication_enabled
    assert config.super_user_roles == frozenset({"admin", "ops"})
    assert config.authentication.providers == ("token", "tls")
    assert str(key) not in repr(settings)  # SecretStr: references never show in a repr


def test_bad_security_settings_name_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="authorization_enabled needs authentication"):
        BrokerSettings(authorization_enabled=True)
    with pytest.raises(ValidationError, match="token_secret_key: cannot read key file"):
        BrokerSettings(
            authentication_enabled=True,
            authentication_providers="token",
            token_secret_key=f"file://{tmp_path}/missing.key",
        )
    with pytest.raises(ValidationError, match="unknown authentication provider"):
        BrokerSettings(authentication_enabled=True, authentication_providers="kerberos")


def test_security_is_off_by_default() -> None:
    config = BrokerSettings().broker_config().security
    assert not config.authentication_enabled
    assert not config.authorization_enabled
