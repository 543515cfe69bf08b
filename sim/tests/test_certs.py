"""The TLS directory `satpage cluster up` writes (docs/security.md), checked with
cryptography's own X.509 verifier as the authority."""

from __future__ import annotations

import stat

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_pem_public_key
from cryptography.x509.verification import PolicyBuilder, Store

from satpage.cluster.certs import write_tls_dir


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    write_tls_dir(d, 3, satellite_names=lambda i: [f"satpage-sat-{i}.satpage-sat-headless"])
    return d


def _cert(path):
    return x509.load_pem_x509_certificate(path.read_bytes())


def _dns(cert):
    return cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName)


@pytest.mark.parametrize("stem, server_name", [
    ("satellite-0", "satellite-0.satpage"), ("satellite-2", "satellite-2.satpage"),
    ("satellite-2", "satpage-sat-2.satpage-sat-headless"), ("gateway", "gateway.satpage"),
    ("gateway", "localhost"),
])
def test_each_server_certificate_verifies_under_the_ca_for_its_name(tls_dir, stem, server_name):
    store = Store([_cert(tls_dir / "ca.pem")])
    verifier = PolicyBuilder().store(store).build_server_verifier(x509.DNSName(server_name))
    chain = verifier.verify(_cert(tls_dir / f"{stem}.pem"), [])
    assert chain[-1] == _cert(tls_dir / "ca.pem")


def test_a_satellite_certificate_names_only_its_own_index(tls_dir):
    for i in range(3):
        names = _dns(_cert(tls_dir / f"satellite-{i}.pem"))
        assert [n for n in names if n.endswith(".satpage")] == [f"satellite-{i}.satpage"]
    store = Store([_cert(tls_dir / "ca.pem")])
    verifier = PolicyBuilder().store(store).build_server_verifier(x509.DNSName("satellite-1.satpage"))
    with pytest.raises(x509.verification.VerificationError):
        verifier.verify(_cert(tls_dir / "satellite-2.pem"), [])


def test_the_client_certificate_verifies_as_a_client(tls_dir):
    store = Store([_cert(tls_dir / "ca.pem")])
    verifier = PolicyBuilder().store(store).build_client_verifier()
    got = verifier.verify(_cert(tls_dir / "client.pem"), [])
    assert "client.satpage" in [n.value for n in got.subjects]


def test_keys_match_their_certificates_and_only_their_owner_reads_them(tls_dir):
    for stem in ("satellite-0", "gateway", "client"):
        key = load_pem_private_key((tls_dir / f"{stem}-key.pem").read_bytes(), None)
        assert key.public_key() == _cert(tls_dir / f"{stem}.pem").public_key()
        assert stat.S_IMODE((tls_dir / f"{stem}-key.pem").stat().st_mode) == 0o600
    sign = load_pem_private_key((tls_dir / "token-signing-key.pem").read_bytes(), None)
    verify = load_pem_public_key((tls_dir / "token-verify-keys.pem").read_bytes())
    assert sign.public_key() == verify
    assert stat.S_IMODE(tls_dir.stat().st_mode) == 0o700


def test_zero_satellites_is_refused(tmp_path):
    with pytest.raises(ValueError, match="satellites must be at least 1, got 0"):
        write_tls_dir(tmp_path, 0)
