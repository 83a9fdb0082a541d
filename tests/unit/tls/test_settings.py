"""The TLS client settings of the bookie and etcd clients: off without a trust file, a clear
error for a certificate given without one, the PEM bytes read when on."""

from __future__ import annotations

from pathlib import Path

import pytest

from magnetar.tls import TlsConfigError
from magnetar.tls.settings import BookkeeperClientTlsSettings, MetadataStoreTlsSettings
from tests.kit.tls import TestPki


def test_client_tls_is_off_without_a_trust_file() -> None:
    assert BookkeeperClientTlsSettings().bookkeeper_tls() is None
    assert MetadataStoreTlsSettings().metadata_store_tls() is None


def test_a_certificate_without_a_trust_file_names_the_missing_setting() -> None:
    with pytest.raises(TlsConfigError, match="bookkeeper_tls_trust_certs_file_path"):
        BookkeeperClientTlsSettings(
            bookkeeper_tls_certificate_file_path="client.pem"
        ).bookkeeper_tls()
    with pytest.raises(TlsConfigError, match="metadata_store_tls_trust_certs_file_path"):
        MetadataStoreTlsSettings(
            metadata_store_tls_certificate_file_path="client.pem"
        ).metadata_store_tls()


def test_client_tls_reads_the_named_files(tmp_path: Path) -> None:
    pki = TestPki.create(tmp_path)
    cert = pki.issue("client")
    pem = MetadataStoreTlsSettings(
        metadata_store_tls_trust_certs_file_path=str(pki.ca_file),
        metadata_store_tls_certificate_file_path=str(cert.cert_file),
        metadata_store_tls_key_file_path=str(cert.key_file),
    ).metadata_store_tls()
    assert pem is not None
    assert pem.trust_certs == pki.ca_file.read_bytes()
    assert pem.cert_chain == cert.cert_file.read_bytes()
    assert pem.private_key == cert.key_file.read_bytes()
    only_trust = BookkeeperClientTlsSettings(
        bookkeeper_tls_trust_certs_file_path=str(pki.ca_file)
    ).bookkeeper_tls()
    assert only_trust is not None
    assert only_trust.cert_chain is None
