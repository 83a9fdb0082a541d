"""Server TLS contexts: built from the settings' files, with clear errors for bad ones, and
reloaded when the files change (not before a check is due; a broken rotation keeps the
context that works)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from magnetar.tls import ServerTls, TlsConfigError, TlsServerConfig, parse_protocols
from tests.kit.tls import TestPki


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def pki(tmp_path: Path) -> TestPki:
    return TestPki.create(tmp_path)


def _config(pki: TestPki, **kw: object) -> TlsServerConfig:
    cert = pki.issue("server")
    return TlsServerConfig(cert.cert_file, cert.key_file, pki.ca_file, **kw)  # type: ignore[arg-type]


def test_reload_waits_for_the_check_interval_then_takes_the_new_files(pki: TestPki) -> None:
    clock = Clock()
    config = _config(pki, refresh_interval_s=60)
    tls = ServerTls(config, clock=clock)
    first = tls.current()
    pki.reissue(pki.issue("server"))  # new files under the same names
    clock.now = 59
    assert tls.current() is first
    clock.now = 60
    assert tls.current() is not first
    assert tls.reloads == 1
    clock.now = 200  # unchanged files: no new context
    second = tls.current()
    assert tls.current() is second
    assert tls.reloads == 1


def test_a_half_written_rotation_keeps_the_working_context(pki: TestPki, tmp_path: Path) -> None:
    clock = Clock()
    config = _config(pki, refresh_interval_s=0)
    tls = ServerTls(config, clock=clock)
    first = tls.current()
    other = TestPki.create(tmp_path / "other").issue("stranger")
    config.key_file.write_bytes(other.key_file.read_bytes())  # a key of another certificate
    assert tls.current() is first
    assert tls.reloads == 0
    pki.reissue(pki.issue("server"))  # the rotation completes
    assert tls.current() is not first


def test_client_certificates_modes(pki: TestPki) -> None:
    assert ServerTls(_config(pki)).current().verify_mode == ssl.CERT_OPTIONAL
    required = ServerTls(_config(pki, require_client_cert=True)).current()
    assert required.verify_mode == ssl.CERT_REQUIRED
    insecure = ServerTls(_config(pki, allow_insecure_connection=True)).current()
    assert insecure.verify_mode == ssl.CERT_NONE


def test_bad_files_are_named(pki: TestPki, tmp_path: Path) -> None:
    cert = pki.issue("server")
    with pytest.raises(TlsConfigError, match=r"nowhere\.pem"):
        ServerTls(TlsServerConfig(tmp_path / "nowhere.pem", cert.key_file))
    with pytest.raises(TlsConfigError, match="trust certificates file"):
        ServerTls(TlsServerConfig(cert.cert_file, cert.key_file, require_client_cert=True))
    with pytest.raises(TlsConfigError, match="tls_ciphers"):
        ServerTls(TlsServerConfig(cert.cert_file, cert.key_file, ciphers="NO-SUCH-CIPHER"))


def test_protocols() -> None:
    assert parse_protocols("TLSv1.3, TLSv1.2") == ("TLSv1.3", "TLSv1.2")
    assert parse_protocols("") == ()
    with pytest.raises(ValueError, match="SSLv3"):
        parse_protocols("SSLv3")


def test_protocol_bounds(pki: TestPki) -> None:
    ctx = ServerTls(_config(pki, protocols=("TLSv1.3",))).current()
    assert ctx.minimum_version == ctx.maximum_version == ssl.TLSVersion.TLSv1_3
