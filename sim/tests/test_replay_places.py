"""A replay registers each session's client place with the gateway (RegisterSession's
`place`), so that with link emulation the gateway times the session's ground link
(docs/emulation.md); without places, none is sent. The gateway's side (the wait of a
session with a place) is services/internal/gateway's emulation test."""

import numpy as np
import pytest

from pager.trace import Trace
from satpage.cluster.replayer import _Replayer


class _Gateway:
    """A GatewayService stub that records what it is asked to register."""

    def __init__(self):
        self.requests = []

    def RegisterSession(self, req, timeout=None):  # noqa: N802 (the gRPC method's name)
        self.requests.append(req)

        class _Reply:
            token, ticket = "t", ""
        return _Reply()


def _trace(n_sessions: int) -> Trace:
    return Trace(n_pages=4, visit_offsets=np.arange(n_sessions + 1),
                 visit_satellite=np.arange(n_sessions), visit_start_ns=np.zeros(n_sessions, np.int64),
                 access_offsets=np.arange(n_sessions + 1), access_page=np.zeros(n_sessions, np.int64),
                 access_time_ns=np.zeros(n_sessions, np.int64))


def test_each_replayed_session_registers_its_clients_place():
    places = np.array([[59.9, 10.7], [-6.2, 106.8], [0.0, 180.0]])
    rp = _Replayer(_trace(3), 1, None, "p", places=places)
    gw = _Gateway()
    for s in rp.sessions:
        rp._register((None, gw), s)
    got = [(r.session_id, r.place.lat_deg, r.place.lon_deg) for r in gw.requests]
    assert got == [("p-0", 59.9, 10.7), ("p-1", -6.2, 106.8), ("p-2", 0.0, 180.0)]


def test_without_places_no_session_carries_one_and_a_wrong_shape_is_named():
    rp = _Replayer(_trace(2), 1, None, "p")
    gw = _Gateway()
    for s in rp.sessions:
        rp._register((None, gw), s)
    assert [r.HasField("place") for r in gw.requests] == [False, False]
    with pytest.raises(ValueError, match=r"places has shape \(3, 2\), want \(2, 2\)"):
        _Replayer(_trace(2), 1, None, "p", places=np.zeros((3, 2)))


def test_ground_links_without_a_cluster_backend_is_refused_naming_why():
    from typer.testing import CliRunner

    from satpage.cli import app

    out = CliRunner().invoke(app, ["compare", "--ground-links", "--sessions", "2"])
    assert out.exit_code == 2 and "needs --backend cluster" in out.output, out.output
