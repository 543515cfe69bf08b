"""TLS material of a constellation, written with ``cryptography`` (no openssl):
the layout of docs/security.md, shared with the satnode/gateway flag ``--tls-dir``,
the Helm chart and the Swarm stack.

    ca.pem                                   constellation CA
    satellite-<i>.pem, satellite-<i>-key.pem DNS SAN satellite-<i>.satpage (+ extra names)
    gateway.pem, gateway-key.pem             DNS SAN gateway.satpage, localhost, IP 127.0.0.1
    client.pem, client-key.pem               DNS SAN client.satpage
    token-signing-key.pem                    Ed25519 key the gateway signs session tokens with
    token-verify-keys.pem                    its public key (satellites verify tokens with it)

The role of a certificate is its DNS SAN; a satellite's names its index, so a
relay that dials satellite i checks it reached satellite i.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TLS_FILES", "TlsMaterial", "satellite_name", "write_tls_dir"]

TLS_FILES = ("ca.pem", "gateway.pem", "gateway-key.pem", "client.pem", "client-key.pem",
             "token-signing-key.pem", "token-verify-keys.pem")
#: Certificates of a local cluster last a year; the CA ten.
CERT_DAYS = 365
CA_DAYS = 3650


def satellite_name(i: int) -> str:
    """DNS SAN naming satellite i (and the TLS server name its peers dial)."""
    return f"satellite-{i}.satpage"


@dataclass(frozen=True)
class TlsMaterial:
    """Where a written TLS directory is, and the names clients need."""

    tls_dir: Path
    gateway_server_name: str = "gateway.satpage"

    def read(self, name: str) -> bytes:
        return (self.tls_dir / name).read_bytes()


def _write(path: Path, data: bytes, private: bool) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    tmp.replace(path)


def write_tls_dir(tls_dir: Path, satellites: int, *,
                  satellite_names: Callable[[int], Sequence[str]] | None = None,
                  gateway_names: Sequence[str] = (), days: int = CERT_DAYS) -> TlsMaterial:
    """Write a fresh CA, one certificate per satellite 0..satellites-1, the
    gateway's and a client's, and an Ed25519 token key pair into tls_dir (created
    0700; keys 0600). satellite_names(i) adds DNS names to satellite i's
    certificate (pod or task names); gateway_names add to the gateway's."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    if satellites < 1:
        raise ValueError(f"satellites must be at least 1, got {satellites}")
    tls_dir = Path(tls_dir)
    tls_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(tls_dir, 0o700)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)  # tolerate small clock skew
    pem = serialization.Encoding.PEM
    pkcs8 = serialization.PrivateFormat.PKCS8
    nocrypt = serialization.NoEncryption()

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "satpage"),
                         x509.NameAttribute(NameOID.COMMON_NAME, "satpage constellation CA")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now).not_valid_after(now + dt.timedelta(days=CA_DAYS))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, key_cert_sign=True, crl_sign=True,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(ca_ski, critical=False)
          .sign(ca_key, hashes.SHA256()))
    _write(tls_dir / "ca.pem", ca.public_bytes(pem), private=False)
    aki = x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski)
    usage = x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                          data_encipherment=False, key_agreement=False, key_cert_sign=False,
                          crl_sign=False, encipher_only=False, decipher_only=False)
    eku = x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH])

    def issue(stem: str, names: Sequence[str], ips: Sequence[str] = ()) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        san = [x509.DNSName(n) for n in dict.fromkeys(names)]
        san += [x509.IPAddress(ipaddress.ip_address(a)) for a in ips]
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "satpage"),
                                         x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
                .issuer_name(ca_name).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now).not_valid_after(now + dt.timedelta(days=days))
                .add_extension(x509.SubjectAlternativeName(san), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(usage, critical=True).add_extension(eku, critical=False)
                .add_extension(aki, critical=False)
                .sign(ca_key, hashes.SHA256()))
        _write(tls_dir / f"{stem}.pem", cert.public_bytes(pem), private=False)
        _write(tls_dir / f"{stem}-key.pem", key.private_bytes(pem, pkcs8, nocrypt), private=True)

    for i in range(satellites):
        extra = list(satellite_names(i)) if satellite_names else []
        issue(f"satellite-{i}", [satellite_name(i), *extra])
    issue("gateway", ["gateway.satpage", "localhost", *gateway_names], ips=["127.0.0.1"])
    issue("client", ["client.satpage"])

    tok = ed25519.Ed25519PrivateKey.generate()
    _write(tls_dir / "token-signing-key.pem", tok.private_bytes(pem, pkcs8, nocrypt), private=True)
    pub = tok.public_key().public_bytes(pem, serialization.PublicFormat.SubjectPublicKeyInfo)
    _write(tls_dir / "token-verify-keys.pem", pub, private=False)
    return TlsMaterial(tls_dir=tls_dir)
