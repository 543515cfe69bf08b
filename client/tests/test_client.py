"""satpage_client against an in-process fake gateway (a grpc server on a thread of
this process): the token goes with every call, gRPC codes become the typed
errors, and the channel finds a recorded cluster's TLS directory. The real
gateway is tested in sim/tests/test_live.py (integration)."""

from __future__ import annotations

import json
import threading
from concurrent import futures

import grpc
import pytest

import satpage_client
from satpage_client import (
    Gateway,
    InvalidArgument,
    PageLost,
    SatpageError,
    Session,
    SessionExpired,
    Unavailable,
)
from satpage_client.channel import register_tls_dir, tls_dir_for
from satpage_client.rpc import satpage_pb2 as pb
from satpage_client.rpc import satpage_pb2_grpc as pbg

TOKEN = "tok-1"


class FakeGateway(pbg.PageServiceServicer, pbg.GatewayServiceServicer):
    """One session; pages in a dict; fails the next call with ``fail_next`` (a code,
    and the ErrorInfo details to send with it, or None) if set."""

    def __init__(self):
        self.pages: dict[int, bytes] = {}
        self.tokens: list[str] = []
        self.fail_next: tuple[grpc.StatusCode, bytes | None] | None = None
        self.lock = threading.Lock()  # guards pages, tokens, fail_next (server threads)

    def _check(self, context):
        with self.lock:
            md = dict(context.invocation_metadata())
            self.tokens.append(md.get("satpage-token", ""))
            fail, self.fail_next = self.fail_next, None
        if fail is not None:
            code, details = fail
            if details is not None:
                context.set_trailing_metadata((("grpc-status-details-bin", details),))
            context.abort(code, f"injected {code.name}")

    def OpenLiveSession(self, request, context):
        if not -90 <= request.lat_deg <= 90:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"lat_deg {request.lat_deg}")
        return pb.OpenLiveSessionResponse(session_id="s1", satellite=7, scenario_time_ns=5,
                                          token=TOKEN)

    def WritePage(self, request, context):
        self._check(context)
        with self.lock:
            self.pages[request.page] = request.data
        return pb.WritePageResponse(outcome=2, satellite=7, scenario_time_ns=6)

    def ReadPage(self, request, context):
        self._check(context)
        with self.lock:
            data = self.pages.get(request.page, b"")
        return pb.ReadPageResponse(data=data, outcome=1, satellite=8, scenario_time_ns=7)

    def EndSession(self, request, context):
        self._check(context)
        with self.lock:
            n, self.pages = len(self.pages), {}
        return pb.EndSessionResponse(pages_deleted=n)

    def Clock(self, request, context):
        return pb.ClockResponse(epoch="2023-06-01T00:00:00Z", speed=60.0, now_ns=1,
                                constellation="walker-star:4/1/0:500:87", step_ns=10**9)


@pytest.fixture
def gateway():
    fake = FakeGateway()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pbg.add_PageServiceServicer_to_server(fake, server)
    pbg.add_GatewayServiceServicer_to_server(fake, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield fake, f"127.0.0.1:{port}"
    finally:
        server.stop(grace=None).wait()


def test_a_session_writes_reads_and_carries_its_token_on_every_call(gateway, tmp_path,
                                                                    monkeypatch):
    monkeypatch.chdir(tmp_path)  # no recorded cluster here: plain text
    fake, target = gateway
    with Session.open(target, lat_deg=59.9, lon_deg=10.7, record=True) as s:
        a = s.write(3, b"hello")
        assert (a.page, a.write, a.outcome, a.satellite) == (3, True, "created", 7)
        assert s.read(3) == b"hello"
        assert s.read(4) == b""
        assert s.satellite == 8  # the last access's serving satellite
        assert [x.outcome for x in s.accesses] == ["created", "local", "local"]
    assert fake.tokens == [TOKEN] * 4  # write, two reads, end
    assert fake.pages == {}


@pytest.mark.parametrize("code, reason, error", [
    (grpc.StatusCode.NOT_FOUND, "UNKNOWN_SESSION", SessionExpired),
    (grpc.StatusCode.NOT_FOUND, "PAGE_NOT_FOUND", PageLost),
    (grpc.StatusCode.NOT_FOUND, None, SatpageError),  # NOT_FOUND alone says neither
    (grpc.StatusCode.UNAVAILABLE, None, Unavailable),
    (grpc.StatusCode.DEADLINE_EXCEEDED, None, Unavailable),
    (grpc.StatusCode.OUT_OF_RANGE, None, InvalidArgument),
    (grpc.StatusCode.PERMISSION_DENIED, None, SatpageError),
])
def test_grpc_codes_and_reasons_become_the_typed_errors(gateway, tmp_path, monkeypatch, code, reason, error,
                                                        error_details):
    monkeypatch.chdir(tmp_path)
    fake, target = gateway
    with Gateway(target) as gw:
        s = Session.open(gw, lat_deg=0.0, lon_deg=0.0)
        details = None if reason is None else error_details(code.value[0], "m", reason)
        fake.fail_next = (code, details)
        with pytest.raises(error) as info:
            s.read(1)
        assert info.value.code == code.name and "session s1" in str(info.value)
        assert type(info.value) is error


def test_a_bad_place_and_a_bad_strategy_are_invalid_arguments(gateway, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, target = gateway
    with pytest.raises(InvalidArgument, match="lat_deg 91"):
        Session.open(target, lat_deg=91.0, lon_deg=0.0)
    with pytest.raises(ValueError, match="'teleport' is not one of on-demand"):
        Session.open(target, lat_deg=0.0, lon_deg=0.0, strategy="teleport")


def test_the_clock_reads_the_gateways_ephemeris(gateway, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, target = gateway
    with Gateway(target) as gw:
        c = gw.clock()
    assert (c.epoch, c.speed, c.constellation, c.step_ns) == (
        "2023-06-01T00:00:00Z", 60.0, "walker-star:4/1/0:500:87", 10**9)


def test_the_tls_directory_comes_from_env_then_this_process_then_cluster_json(tmp_path,
                                                                             monkeypatch):
    monkeypatch.delenv("SATPAGE_TLS_DIR", raising=False)
    monkeypatch.setenv("SATPAGE_CLUSTER_DIR", str(tmp_path))
    assert tls_dir_for("127.0.0.1:1") is None
    (tmp_path / "cluster.json").write_text(json.dumps(
        {"gateway": "127.0.0.1:1", "tls_dir": "/recorded/tls", "processes": []}))
    assert str(tls_dir_for("127.0.0.1:1")) == "/recorded/tls"
    assert tls_dir_for("127.0.0.1:2") is None  # another gateway
    register_tls_dir("127.0.0.1:1", "/started/tls")
    try:
        assert str(tls_dir_for("127.0.0.1:1")) == "/started/tls"
        monkeypatch.setenv("SATPAGE_TLS_DIR", "/env/tls")
        assert str(tls_dir_for("127.0.0.1:1")) == "/env/tls"
    finally:
        register_tls_dir("127.0.0.1:1", None)
    (tmp_path / "cluster.json").write_text("{not json")
    monkeypatch.delenv("SATPAGE_TLS_DIR")
    assert tls_dir_for("127.0.0.1:1") is None


def test_the_simulator_reexports_the_same_objects():
    import satpage.client

    for name in satpage_client.__all__:
        assert getattr(satpage.client, name) is getattr(satpage_client, name)
