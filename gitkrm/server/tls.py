"""TLS for a server bound beyond loopback: the given pair, or a self-signed one generated
into the state dir (and reused while it still covers the host names and is not expiring)."""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from gitkrm.errors import BadRequest

CERT_FILE: Final = "tls.crt"
KEY_FILE: Final = "tls.key"
VALIDITY: Final = datetime.timedelta(days=365)
RENEW_BEFORE: Final = datetime.timedelta(days=30)


@dataclass(frozen=True, slots=True)
class TLSFiles:
    cert: Path
    key: Path

    def ca_pem(self) -> bytes:
        """The certificate kubectl should trust (self-signed: the certificate itself)."""
        return self.cert.read_bytes()

    def check(self) -> None:
        for what, p in (("--tls-cert", self.cert), ("--tls-key", self.key)):
            if not p.is_file():
                raise BadRequest(f"{what} {p}: no such file")


def default_hosts(listen_host: str) -> list[str]:
    """Names the certificate must cover: loopback, this machine, and the listen address."""
    hosts = ["localhost", "127.0.0.1", "::1", socket.gethostname()]
    if listen_host not in ("", "0.0.0.0", "::") and listen_host not in hosts:
        hosts.append(listen_host)
    return hosts


def _san(hosts: Iterable[str]) -> list[x509.GeneralName]:
    out: list[x509.GeneralName] = []
    for h in hosts:
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            out.append(x509.DNSName(h))
    return out


def _covers(cert: x509.Certificate, hosts: Iterable[str]) -> bool:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    have = {str(v) for v in san.get_values_for_type(x509.DNSName)}
    have |= {str(v) for v in san.get_values_for_type(x509.IPAddress)}
    wanted = set()
    for h in hosts:
        try:
            wanted.add(str(ipaddress.ip_address(h)))
        except ValueError:
            wanted.add(h)
    return wanted <= have


def generate_self_signed(directory: Path, hosts: Iterable[str]) -> TLSFiles:
    """A new P-256 key and a self-signed certificate for `hosts` (key written mode 0600)."""
    hosts = list(hosts)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gitkrm")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectAlternativeName(_san(hosts)), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=False,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    files = TLSFiles(cert=directory / CERT_FILE, key=directory / KEY_FILE)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fd = os.open(files.key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key_pem)
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return files


def ensure_self_signed(directory: Path, hosts: Iterable[str]) -> TLSFiles:
    """The generated pair in `directory`, made anew when missing, expiring or too narrow."""
    hosts = list(hosts)
    files = TLSFiles(cert=directory / CERT_FILE, key=directory / KEY_FILE)
    if files.cert.is_file() and files.key.is_file():
        try:
            cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
        except ValueError:
            cert = None
        now = datetime.datetime.now(datetime.UTC)
        if (
            cert is not None
            and cert.not_valid_after_utc - RENEW_BEFORE > now
            and _covers(cert, hosts)
        ):
            return files
    return generate_self_signed(directory, hosts)
