"""Access control on real processes (docs/security.md): a secure local cluster
(real satnode, gateway and redis-server processes) and every RPC against every
kind of caller, with the status code each must get; refused requests change
nothing; a page's content never appears in a log or an error message.

Tokens for the "expired" caller are minted here by an independent Python
implementation of the token format, with the cluster's signing key."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
from cryptography.hazmat.primitives import serialization

from satpage.cluster import load_state
from satpage.cluster.driver import _free_port_base
from satpage_client import errinfo
from satpage_client.channel import TOKEN_METADATA_KEY, secure_channel
from satpage_client.rpc import satpage_pb2 as pb
from satpage_client.rpc import satpage_pb2_grpc as pbg

pytestmark = pytest.mark.integration  # starts processes: a secure cluster, helm

SPEC = "walker-star:4/2/0:500:87"
SECRET = b"page content that must never be logged 7f3a9c"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, cluster_binaries):
    d = tmp_path_factory.mktemp("secure-cluster")
    # Through the CLI, as a user would (and so that no Popen object of a daemon
    # outlives its process in this one).
    satpage = Path(sys.executable).with_name("satpage")
    subprocess.run([str(satpage), "cluster", "up", "--constellation", SPEC, "--state-dir", str(d),
                    "--port-base", str(_free_port_base(SPEC))], check=True, capture_output=True, timeout=300)
    try:
        yield load_state(d)
    finally:
        subprocess.run([str(satpage), "cluster", "down", "--state-dir", str(d)], capture_output=True, timeout=120)


def mint(tls_dir: Path, session: str, table_pages: int, expires_unix_s: int) -> str:
    """A token in the format of docs/security.md, signed with the cluster's key."""
    key = serialization.load_pem_private_key((tls_dir / "token-signing-key.pem").read_bytes(), None)
    pub = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    kid = hashlib.sha256(pub).digest()[:8].hex()
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()  # noqa: E731
    body = f"v1.{kid}.{expires_unix_s}.{table_pages}.{b64(session.encode())}"
    return f"{body}.{b64(key.sign(b'satpage-token/v1.' + body.encode()))}"


def channel(st, target: str, who: str):
    """A channel to target ("gateway" or satellite index) as caller kind who."""
    tls = Path(st.tls_dir)
    addr = st.gateway if target == "gateway" else st.satellite_addr(int(target))
    name = "gateway.satpage" if target == "gateway" else f"satellite-{target}.satpage"
    if who == "plain text":
        return grpc.insecure_channel(addr)
    ca = (tls / "ca.pem").read_bytes()
    stem = {"client certificate": "client", "satellite": "satellite-1", "gateway": "gateway"}.get(who)
    if stem is None:  # token callers present no certificate
        creds = grpc.ssl_channel_credentials(root_certificates=ca)
    else:
        creds = grpc.ssl_channel_credentials(ca, (tls / f"{stem}-key.pem").read_bytes(),
                                             (tls / f"{stem}.pem").read_bytes())
    return grpc.secure_channel(addr, creds, options=[("grpc.ssl_target_name_override", name)])


def register(st, session: str, ch=None) -> str:
    """A session with SECRET in its page 0, registered by the client (over ch, a client
    channel to the gateway, when given; else over a channel of its own)."""
    with contextlib.nullcontext(ch) if ch is not None else secure_channel(st.gateway, Path(st.tls_dir)) as c:
        r = pbg.GatewayServiceStub(c).RegisterSession(pb.RegisterSessionRequest(
            session_id=session, table_pages=8, visits=[pb.Visit(satellite=0, start_ns=0)]), timeout=10)
        md = ((TOKEN_METADATA_KEY, r.token),)
        pbg.PageServiceStub(c).WritePage(pb.WritePageRequest(session_id=session, page=0, data=SECRET),
                                         timeout=10, metadata=md)
    return r.token


def intact(st, session: str, token: str, ch=None) -> None:
    with contextlib.nullcontext(ch) if ch is not None else secure_channel(st.gateway, Path(st.tls_dir)) as c:
        r = pbg.PageServiceStub(c).ReadPage(pb.ReadPageRequest(session_id=session, page=0), timeout=10,
                                            metadata=((TOKEN_METADATA_KEY, token),))
    assert r.data == SECRET and r.satellite == 0 and r.outcome == pb.OUTCOME_LOCAL


U, P, N, OK = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED,
               grpc.StatusCode.UNAVAILABLE, "pass")
CALLERS = ["none", "plain text", "client with token", "client with another session's token",
           "expired token", "client certificate", "satellite", "gateway"]
SESSION = dict(zip(CALLERS, [U, N, OK, P, U, U, U, U], strict=True))
PEER = dict(zip(CALLERS, [U, N, U, U, U, P, OK, P], strict=True))
PEER_OR_GATEWAY = {**PEER, "gateway": OK}
REGISTER = dict(zip(CALLERS, [U, N, U, U, U, OK, P, OK], strict=True))
ANY_CERT = dict(zip(CALLERS, [U, N, U, U, U, OK, OK, OK], strict=True))
ROUTE = pb.Route(origin=1, destination=0, hops=1, path=[1])

RPCS = [  # (target, service, method, request(session), expectations)
    *[(t, "PageService", m, req, SESSION) for t in ("gateway", "0") for m, req in (
        ("ReadPage", lambda s: pb.ReadPageRequest(session_id=s, page=0)),
        ("ReadPages", lambda s: pb.ReadPagesRequest(session_id=s, pages=[0, 1], scenario_time_ns=[0, 0])),
        ("WritePage", lambda s: pb.WritePageRequest(session_id=s, page=0, data=b"overwritten")),
        ("EndSession", lambda s: pb.EndSessionRequest(session_id=s)))],
    # A ReadPage as the one message of a read stream (satnodes only): ReadPage's answers.
    ("0", "PageService", "ReadStream", lambda s: pb.ReadPageRequest(session_id=s, page=0), SESSION),
    ("gateway", "GatewayService", "RegisterSession",
     lambda s: pb.RegisterSessionRequest(session_id=s + "-reg", visits=[pb.Visit(satellite=2)]), REGISTER),
    ("gateway", "GatewayService", "SessionStats", lambda s: pb.SessionStatsRequest(session_id=s), SESSION),
    ("gateway", "GatewayService", "OpenLiveSession",
     lambda s: pb.OpenLiveSessionRequest(lat_deg=59.9, lon_deg=10.7), REGISTER),
    ("gateway", "GatewayService", "Clock", lambda s: pb.ClockRequest(), ANY_CERT),
    ("0", "SatelliteService", "OpenSession", lambda s: pb.OpenSessionRequest(session_id=s + "-new"),
     PEER_OR_GATEWAY),
    ("0", "SatelliteService", "FetchPages",
     lambda s: pb.FetchPagesRequest(route=ROUTE, session_id=s, pages=[0]), PEER),
    ("0", "SatelliteService", "ReleasePages",
     lambda s: pb.ReleasePagesRequest(route=ROUTE, session_id=s, pages=[0], new_owner=1), PEER),
    ("0", "SatelliteService", "HandOver",
     lambda s: pb.HandOverRequest(session_id=s + "-unknown", to_satellite=1), PEER_OR_GATEWAY),
    ("0", "SatelliteService", "AcceptTable",
     lambda s: pb.AcceptTableRequest(route=ROUTE, session_id=s + "-accepted"), PEER),
    ("0", "SatelliteService", "MovePages", lambda s: pb.MovePagesRequest(session_id=s), PEER_OR_GATEWAY),
    ("0", "SatelliteService", "SessionFrames", lambda s: pb.SessionFramesRequest(session_id=s),
     PEER_OR_GATEWAY),
    ("0", "SatelliteService", "DropSession",
     lambda s: pb.DropSessionRequest(route=ROUTE, session_id=s), PEER_OR_GATEWAY),
]


def read_stream(stub, request, **kw):
    """request as the one message of a read stream; an answer's error raised as the unary call's."""
    for m in stub.ReadStream(iter([pb.ReadStreamRequest(id=1, request=request)]), **kw):
        if m.status:
            raise errinfo.StreamError(m.status)
        return m.response
    raise AssertionError("a read stream ended without an answer")


def test_every_rpc_against_every_kind_of_caller_on_real_processes(cluster):
    """Each case has a session of its own, so the cases run side by side (four at a
    time: the test waits on round trips more than on the CPU). Each caller kind keeps one
    channel per target for all its calls, as a real client does (a handshake per call
    would be 700 of them); the identity a server checks is the connection's
    certificate and each call's token, which a kept channel presents the same way."""
    st, tls = cluster, Path(cluster.tls_dir)
    with contextlib.ExitStack() as stack:
        client = stack.enter_context(secure_channel(st.gateway, tls))  # registrations and checks
        chans = {(target, who): stack.enter_context(channel(st, target, who))
                 for target in {r[0] for r in RPCS} for who in CALLERS}

        def case(k: int, who: str):
            target, service, method, request, want_by = RPCS[k]
            session = f"victim-{k}-{CALLERS.index(who)}"
            own = register(st, session, client)
            token = {"client with token": own,
                     "client with another session's token":
                         register(st, session + "-other", client) if "another" in who else None,
                     "expired token": mint(tls, session, 8, int(time.time()) - 60)}.get(who)
            md = ((TOKEN_METADATA_KEY, token),) if token else ()
            stub = getattr(pbg, f"{service}Stub")(chans[target, who])
            try:
                if method == "ReadStream":
                    read_stream(stub, request(session), timeout=5, metadata=md)
                else:
                    getattr(stub, method)(request(session), timeout=5, metadata=md)
                got, detail = grpc.StatusCode.OK, None
            except grpc.RpcError as exc:
                got, detail = exc.code(), exc.details() or ""
            want = want_by[who]
            if want == OK:
                assert got not in (U, P, N, grpc.StatusCode.INTERNAL), (method, target, who, got)
            else:
                assert got == want, (method, target, who, got)
                intact(st, session, own, client)
            return detail

        with ThreadPoolExecutor(max_workers=4) as pool:
            details = [d for d in pool.map(lambda kw: case(*kw),
                                           [(k, who) for k in range(len(RPCS)) for who in CALLERS])
                       if d is not None]
    assert not [d for d in details if SECRET.decode() in d]
    logs = "".join(p.read_text(errors="replace") for p in (Path(st.state_dir) / "logs").glob("*.log"))
    assert '"msg":"denied"' in logs and '"caller":"satellite 1"' in logs
    assert SECRET.decode() not in logs
    assert base64.b64encode(SECRET).decode() not in logs


def test_a_satellite_cannot_pass_its_request_off_as_anothers(cluster):
    st = cluster
    own = register(st, "relay")
    with channel(st, "0", "satellite") as ch:  # satellite 1's certificate
        with pytest.raises(grpc.RpcError) as exc:
            pbg.SatelliteServiceStub(ch).ReleasePages(pb.ReleasePagesRequest(
                route=pb.Route(origin=2, destination=0, hops=1, path=[2]), session_id="relay",
                pages=[0], new_owner=2), timeout=5)
    assert exc.value.code() == P and "does not end with the sender" in exc.value.details()
    intact(st, "relay", own)


def test_a_forged_token_and_a_page_outside_the_table_are_refused(cluster):
    st, tls = cluster, Path(cluster.tls_dir)
    own = register(st, "forgery")
    head, _, sig = own.rpartition(".")
    forged = f"{head.replace('.8.', '.4096.')}.{sig}"  # a bigger table, old signature
    with secure_channel(st.gateway, tls) as ch:
        page = pbg.PageServiceStub(ch)
        with pytest.raises(grpc.RpcError) as exc:
            page.ReadPage(pb.ReadPageRequest(session_id="forgery", page=100), timeout=5,
                          metadata=((TOKEN_METADATA_KEY, forged),))
        assert exc.value.code() == U and "bad signature" in exc.value.details()
        with pytest.raises(grpc.RpcError) as exc:
            page.ReadPage(pb.ReadPageRequest(session_id="forgery", page=4_294_967_295), timeout=5,
                          metadata=((TOKEN_METADATA_KEY, own),))
        assert exc.value.code() == grpc.StatusCode.OUT_OF_RANGE
        assert "page 4294967295 outside the session's table of 8 pages" in exc.value.details()
    intact(st, "forgery", own)


def test_the_helm_charts_generated_material_works_on_real_processes(tmp_path):
    """The Secrets `helm template` generates (ECDSA keys from genPrivateKey, an ECDSA
    CA whose key the gateway's signer holds, an Ed25519 token key and a certificate of
    its public key, which the satellites verify with and which holds no private key)
    run a secure cluster, each satellite's certificate signed with the chart's CA key
    in the shape the signer gives it (services/internal/signer): a registration, a
    write, a handover and a page fault relayed between satellites, all over them."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    helm = Path(__file__).resolve().parents[2] / ".tools" / "bin" / "helm"
    if not helm.is_file():
        pytest.skip(f"{helm} is missing")
    import yaml

    out = subprocess.run([str(helm), "template", "t", str(helm.parents[2] / "charts" / "satpage"),
                          "--kube-version", "1.34.0", "--set", f"constellation.spec={SPEC}"],
                         capture_output=True, text=True, timeout=120, check=True,
                         env={**os.environ, "HELM_CACHE_HOME": str(tmp_path / "hc"),
                              "HELM_CONFIG_HOME": str(tmp_path / "hg"), "HELM_DATA_HOME": str(tmp_path / "hd")})
    # One Secret per role (tls.crt, tls.key, ca.crt), laid out as one --tls-dir.
    secrets = [d for d in yaml.safe_load_all(out.stdout) if d and d["kind"] == "Secret"]
    tls = tmp_path / "tls"
    tls.mkdir(mode=0o700)
    stems = {"gateway": ("gateway", "gateway-key"), "client": ("client", "client-key"),
             "token": ("token-verify-keys", "token-signing-key"), "ca": ("ca", "ca-key")}
    for secret in secrets:
        crt, key = stems[secret["metadata"]["name"].removeprefix("t-satpage-")]
        for k, stem in (("tls.crt", crt), ("tls.key", key), ("ca.crt", "ca")):
            (tls / f"{stem}.pem").write_bytes(base64.b64decode(secret["data"][k]))
    ca = x509.load_pem_x509_certificate((tls / "ca.pem").read_bytes())
    ca_key = serialization.load_pem_private_key((tls / "ca-key.pem").read_bytes(), None)
    now = datetime.datetime.now(datetime.UTC)
    for i in range(int(SPEC.split(":")[1].split("/")[0])):
        key = ec.generate_private_key(ec.SECP256R1())
        name = f"satellite-{i}.satpage"
        cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
                .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
                .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                               critical=False)
                .sign(ca_key, hashes.SHA256()))
        (tls / f"satellite-{i}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (tls / f"satellite-{i}-key.pem").write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    (tls / "ca-key.pem").unlink()  # the signer's, not a cluster daemon's
    state = tmp_path / "state"
    satpage = Path(sys.executable).with_name("satpage")
    subprocess.run([str(satpage), "cluster", "up", "--constellation", SPEC, "--state-dir", str(state),
                    "--port-base", str(_free_port_base(SPEC)), "--tls-dir", str(tls)],
                   check=True, capture_output=True, timeout=300)
    try:
        st = load_state(state)
        assert st.tls_dir == str(tls)
        with secure_channel(st.gateway, tls) as ch:
            reg = pbg.GatewayServiceStub(ch).RegisterSession(pb.RegisterSessionRequest(
                session_id="helm", visits=[pb.Visit(satellite=0, start_ns=0), pb.Visit(satellite=1, start_ns=10)]),
                timeout=10)
            md = ((TOKEN_METADATA_KEY, reg.token),)
            page = pbg.PageServiceStub(ch)
            page.WritePage(pb.WritePageRequest(session_id="helm", page=3, data=b"x" * 64), timeout=10, metadata=md)
            r = page.ReadPage(pb.ReadPageRequest(session_id="helm", page=3, scenario_time_ns=11), timeout=10,
                              metadata=md)
        assert (r.outcome, r.hops, r.satellite, r.previous_owner, r.data) == (pb.OUTCOME_MOVED, 1, 1, 0, b"x" * 64)
    finally:
        subprocess.run([str(satpage), "cluster", "down", "--state-dir", str(state)], capture_output=True, timeout=120)
