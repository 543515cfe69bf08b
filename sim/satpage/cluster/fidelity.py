"""`satpage cluster fidelity`: how closely a deployed constellation's relayed hops
take what the sky would (docs/emulation.md).

A probe is one page fault over a multi-hop ISL path, sent through the gateway as
any session's access is: a session visits satellite A, then B; its page is
created at A, the handover to B is done by a first access, and the page is read
at B at time t, so B fetches it from A over the routed path B -> ... -> A and
back (FetchPages). B times that fetch (``ReadPageResponse.fault_ns``, the wait
of a fault as `compare --backend cluster` reports it); half of it is
``measured_ms``. What the client sees is reported too (``client_ms``): the
fault's round trip through the gateway less the median of three local reads of
the same page at once, halved; it carries the gateway's and the client's own
scheduling, which are no part of the path. ``intended_ms`` is the path's one-way delay: distance / c
from orbit_model's positions (SGP4) at t plus the per-hop processing the satnodes
add (``--per-hop-processing-ms``), over the path the relays take: the engine's route (relay_path)."""

from __future__ import annotations

import datetime as dt
import logging
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

__all__ = ["FidelityProbe", "fidelity", "relay_path"]

NS_PER_S = 1_000_000_000
RPC_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class FidelityProbe:
    """One path's probe."""

    satellites: list[int]  # the hop sequence, from the serving satellite to the page's owner
    time_s: float  # from the epoch
    intended_ms: float  # one way, from orbit_model's positions
    measured_ms: float  # one way: the serving satellite's wait for the page (fault_ns) / 2
    client_ms: float  # one way at the client: (fault round trip - median local round trip) / 2

    def to_json(self) -> dict:
        return {"satellites": self.satellites, "time_s": self.time_s,
                "intended_ms": round(self.intended_ms, 4), "measured_ms": round(self.measured_ms, 4),
                "client_ms": round(self.client_ms, 4)}


def relay_path(net, src: int, dst: int) -> list[int]:
    """The satellites a routed request from src to dst passes (both included) on a
    cluster whose links are emulated: the engine's route between them (of the
    fewest-hop paths the fastest, orbit_model's routing table at time 0: the +Grid
    without a cut-off never changes, so the engine keeps that one table), which the
    relays take (constellation.Grid.WithDelays). The page travels it from dst to src."""
    return [int(s) for s in net.path(dst, src, 0)[::-1]]


def _one_way_ms(positions_km: np.ndarray, path: list[int]) -> float:
    from orbit_model.constants import SPEED_OF_LIGHT_KM_S

    p = positions_km[path]
    return float(np.linalg.norm(np.diff(p, axis=0), axis=1).sum() / SPEED_OF_LIGHT_KM_S * 1e3)


def _substrate_ms(metrics_urls: list[str]) -> float | None:
    """Median of the satnodes' measured substrate (satpage_link_substrate_seconds)."""
    values = []
    for url in metrics_urls:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:  # noqa: S310 (loopback metrics)
                text = r.read().decode()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("satpage_link_substrate_seconds "):
                values.append(float(line.split()[1]) * 1e3)
    return float(np.median(values)) if values else None


def fidelity(target: str, constellation: str, epoch: str, *, hours: float, paths: int = 60,
             seed: int = 1, tls_dir: Path | None = None, min_hops: int = 2,
             metrics_urls: list[str] | None = None, per_hop_ms: float = 0.0) -> dict:
    """Probe ``paths`` random multi-hop paths (at least ``min_hops``) at random times in
    the first ``hours`` from ``epoch`` (the positions that time the cluster's links)
    through the gateway at ``target``; returns the report of `satpage cluster fidelity`."""

    from orbit_model import Constellation, IslNetwork, itrs_positions_km
    from satpage.cluster.replayer import wait_for_gateway
    from satpage_client.channel import open_channel, tls_dir_for, token_metadata
    from satpage_client.rpc import satpage_pb2 as pb
    from satpage_client.rpc import satpage_pb2_grpc as pbg

    if paths < 1:
        raise ValueError(f"paths {paths} must be at least 1")
    when = dt.datetime.fromisoformat(epoch.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    const = Constellation.from_spec(constellation, epoch=when.astimezone(dt.UTC))
    net = IslNetwork(const)
    hops = net.hop_matrix(0)
    n = const.n_satellites
    rng = np.random.default_rng(seed)
    lo, hi = 60 * NS_PER_S, int(hours * 3600 * NS_PER_S) - 60 * NS_PER_S
    if hi <= lo:
        raise ValueError(f"the links are timed for {hours} h: too short to probe")
    pairs = []
    while len(pairs) < paths:
        a, b = (int(x) for x in rng.integers(0, n, 2))
        if hops[a, b] >= min_hops:
            pairs.append((a, b))
    times = np.sort(rng.integers(lo // NS_PER_S, hi // NS_PER_S, paths)) * NS_PER_S + 250_000_000
    pos = itrs_positions_km(const, times, knot_ns=None, report=False)  # (n, paths, 3)
    if tls_dir is None:
        tls_dir = tls_dir_for(target)
    prefix = uuid.uuid4().hex[:8]
    out = []
    with open_channel(target, tls_dir) as ch:
        wait_for_gateway(ch, target, timeout_s=10)
        page, control = pbg.PageServiceStub(ch), pbg.GatewayServiceStub(ch)
        for j, (owner, server) in enumerate(pairs):
            t = int(times[j])
            sid = f"fidelity-{prefix}-{j}"
            visits = [pb.Visit(satellite=owner, start_ns=t - 2 * NS_PER_S),
                      pb.Visit(satellite=server, start_ns=t - NS_PER_S)]
            reg = control.RegisterSession(pb.RegisterSessionRequest(session_id=sid, visits=visits,
                                                                    table_pages=2), timeout=RPC_TIMEOUT_S)
            md = token_metadata(reg.token, reg.ticket)

            def read(p: int, at: int, _sid=sid, _md=md):
                start = time.perf_counter_ns()
                r = page.ReadPage(pb.ReadPageRequest(session_id=_sid, page=p, scenario_time_ns=at),
                                  timeout=RPC_TIMEOUT_S, metadata=_md)
                return r, (time.perf_counter_ns() - start) / 1e6

            try:
                read(0, t - 2 * NS_PER_S)  # created at the owner
                read(1, t - NS_PER_S // 2)  # the handover to the server is done here
                fault, fault_ms = read(0, t)
                # the machine's own round trip: the median of three local reads (one alone
                # is as noisy as the machine's load)
                locals_ = [read(0, t + 1 + k) for k in range(3)]
                local = locals_[0][0]
                local_ms = float(np.median([ms for _, ms in locals_]))
            finally:
                page.EndSession(pb.EndSessionRequest(session_id=sid, scenario_time_ns=t + 5),
                                timeout=RPC_TIMEOUT_S, metadata=md)
            path = relay_path(net, server, owner)
            if fault.outcome != pb.OUTCOME_MOVED or fault.hops != len(path) - 1 \
                    or local.outcome != pb.OUTCOME_LOCAL:
                raise OSError(f"probe {j} ({server} -> {owner} at {t} ns): fault outcome "
                              f"{fault.outcome} after {fault.hops} hops, then {local.outcome}; "
                              f"want a move over {len(path) - 1} hops, then a local access")
            out.append(FidelityProbe(satellites=path, time_s=t / NS_PER_S,
                                     intended_ms=_one_way_ms(pos[:, j], path)
                                     + (len(path) - 1) * per_hop_ms,
                                     measured_ms=fault.fault_ns / 2e6,
                                     client_ms=(fault_ms - local_ms) / 2))
    signed = np.array([p.measured_ms - p.intended_ms for p in out])
    err = np.abs(signed)
    client_err = np.abs(np.array([p.client_ms - p.intended_ms for p in out]))
    sub = _substrate_ms(metrics_urls) if metrics_urls else None
    return {"constellation": constellation, "epoch": when.astimezone(dt.UTC).isoformat(),
            "target": target, "paths": len(out), "per_hop_processing_ms": per_hop_ms,
            "error_ms_p50": round(float(np.percentile(err, 50)), 4),
            "error_ms_p99": round(float(np.percentile(err, 99)), 4),
            "error_ms_max": round(float(err.max()), 4),
            "signed_error_ms_p50": round(float(np.percentile(signed, 50)), 4),
            "client_error_ms_p50": round(float(np.percentile(client_err, 50)), 4),
            "client_error_ms_p99": round(float(np.percentile(client_err, 99)), 4),
            "substrate_ms_p50": None if sub is None else round(sub, 4),
            "hops_mean": round(float(np.mean([len(p.satellites) - 1 for p in out])), 2),
            "paths_detail": [p.to_json() for p in out]}
