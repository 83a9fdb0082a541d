"""A throwaway certificate authority for TLS tests, generated at test time (no key is ever
checked in).

::

    pki = TestPki.create(tmp_path / "pki")          # a CA: pki.ca_file is its PEM certificate
    server = pki.issue("broker")                   # CN=broker, SAN 127.0.0.1 + localhost
    client = pki.issue("alice", client=True)       # a client certificate, CN=alice (the role)
    server.cert_file, server.key_file, server.serial
    pki.issue("broker", dns=("broker.invalid",), ips=())   # a name no client dials
    pki.reissue(server)                            # a new certificate over the same files
    TlsEtcdServer(data_dir=..., pki=pki)           # a real etcd on TLS with --client-cert-auth

Keys are EC P-256 (fast to generate). :func:`served_serial` reads the serial a TLS port
serves now, with a fresh handshake.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.kit.etcd import EtcdServer


@dataclass(frozen=True)
class IssuedCert:
    name: str
    cert_file: Path
    key_file: Path
    serial: int
    client: bool
    dns: tuple[str, ...]
    ips: tuple[str, ...]


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write(path: Path, data: bytes) -> None:
    """Replace ``path`` in one rename (a reader sees the old file or the new one)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@dataclass
class TestPki:
    directory: Path
    ca_file: Path
    _ca_key: ec.EllipticCurvePrivateKey
    _ca_cert: x509.Certificate

    __test__ = False  # not a pytest class

    @classmethod
    def create(cls, directory: Path, ca_name: str = "magnetar-test-ca") -> TestPki:
        directory.mkdir(parents=True, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(ca_name))
            .issuer_name(_name(ca_name))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
            )
            .sign(key, hashes.SHA256())
        )
        ca_file = directory / f"{ca_name}.pem"
        _write(ca_file, cert.public_bytes(serialization.Encoding.PEM))
        return cls(directory, ca_file, key, cert)

    def issue(
        self,
        name: str,
        *,
        client: bool = False,
        dns: tuple[str, ...] = ("localhost",),
        ips: tuple[str, ...] = ("127.0.0.1",),
    ) -> IssuedCert:
        """A certificate with CN ``name`` signed by this CA, in ``<name>.pem``/``<name>.key``."""
        issued = IssuedCert(
            name,
            self.directory / f"{name}.pem",
            self.directory / f"{name}.key",
            0,
            client,
            dns,
            ips,
        )
        return self.reissue(issued)

    def reissue(self, old: IssuedCert) -> IssuedCert:
        """A new key and certificate (new serial) for ``old``'s name, over its files: the key
        is written first, as a rotation that a reader may catch half-way would be."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        serial = x509.random_serial_number()
        sans: list[x509.GeneralName] = [x509.DNSName(d) for d in old.dns]
        sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in old.ips]
        # A server's certificate may also serve it as a client (a proxy towards brokers).
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
        if not old.client:
            usages.insert(0, ExtendedKeyUsageOID.SERVER_AUTH)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(old.name))
            .issuer_name(self._ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(serial)
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._ca_key.public_key()),
                critical=False,
            )
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._ca_key, hashes.SHA256())
        _write(old.key_file, _key_pem(key))
        _write(old.cert_file, cert.public_bytes(serialization.Encoding.PEM))
        return IssuedCert(
            old.name, old.cert_file, old.key_file, serial, old.client, old.dns, old.ips
        )


def client_context(
    pki: TestPki, cert: IssuedCert | None = None, *, check_hostname: bool = True
) -> ssl.SSLContext:
    """A client context trusting ``pki`` (presenting ``cert`` when given)."""
    ctx = ssl.create_default_context(cafile=str(pki.ca_file))
    ctx.check_hostname = check_hostname
    if cert is not None:
        ctx.load_cert_chain(cert.cert_file, cert.key_file)
    return ctx


def served_serial(port: int, pki: TestPki, host: str = "127.0.0.1") -> int:
    """The serial of the certificate ``host:port`` serves to a new handshake."""
    ctx = client_context(pki, check_hostname=False)
    with (
        socket.create_connection((host, port), timeout=10) as raw,
        ctx.wrap_socket(raw, server_hostname=host) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def tls_server_args(
    pki: TestPki,
    server: IssuedCert,
    *,
    port: int,
    web_port: int | None = None,
    require_client_cert: bool = False,
) -> list[str]:
    """``magnetar standalone|broker`` options serving ``server`` on TLS ``port`` (and HTTPS on
    ``web_port``), trusting ``pki`` for client certificates."""
    args = [
        "--broker-service-port-tls", str(port),
        "--tls-certificate-file-path", str(server.cert_file),
        "--tls-key-file-path", str(server.key_file),
        "--tls-trust-certs-file-path", str(pki.ca_file),
    ]  # fmt: skip
    if web_port is not None:
        args += ["--web-service-port-tls", str(web_port)]
    if require_client_cert:
        args.append("--tls-require-trusted-client-cert-on-connect")
    return args


def bookie_tls_args(pki: TestPki, server: IssuedCert) -> list[str]:
    """``magnetar bookie`` options serving ``server`` over TLS and requiring a client
    certificate ``pki`` issued."""
    return [
        "--tls-certificate-path", str(server.cert_file),
        "--tls-key-store", str(server.key_file),
        "--tls-trust-store", str(pki.ca_file),
        "--tls-client-authentication",
    ]  # fmt: skip


@dataclass
class TlsEtcdServer(EtcdServer):
    """A real etcd serving its clients over TLS only, with ``--client-cert-auth`` (every client
    must present a certificate ``pki`` issued). ``pki`` must be given."""

    pki: TestPki | None = None
    _server: IssuedCert | None = None
    _probe: IssuedCert | None = None

    def _certs(self) -> tuple[TestPki, IssuedCert, IssuedCert]:
        assert self.pki is not None, "TlsEtcdServer needs its pki"
        if self._server is None or self._probe is None:
            self._server = self.pki.issue("etcd")
            self._probe = self.pki.issue("etcd-probe", client=True)
        return self.pki, self._server, self._probe

    def command(self) -> list[str]:
        pki, server, _ = self._certs()
        plain = f"http://{self.endpoint}"
        args = [f"https://{self.endpoint}" if arg == plain else arg for arg in super().command()]
        return [
            *args,
            "--cert-file", str(server.cert_file),
            "--key-file", str(server.key_file),
            "--trusted-ca-file", str(pki.ca_file),
            "--client-cert-auth",
        ]  # fmt: skip

    def is_ready(self) -> bool:
        pki, _, probe = self._certs()
        try:
            with urllib.request.urlopen(
                f"https://{self.endpoint}/health", timeout=1, context=client_context(pki, probe)
            ) as resp:
                return b'"health":"true"' in resp.read()
        except OSError:
            return False
