"""The local cluster of real processes (redis-server, satnode, gateway) gives the
engine's counts for the same seeded trace, and `satpage cluster down` stops exactly
what `up` started."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import pager
from orbit_model import Constellation, IslNetwork
from satpage.cli import app
from satpage.cluster import cluster_down, cluster_status, load_state, replay_trace
from satpage.cluster.driver import _free_port_base
from satpage.cluster.local import LocalCluster, free_port_base
from satpage.comparator import compare_figures

pytestmark = pytest.mark.integration

SATPAGE = str(Path(sys.executable).with_name("satpage"))
QUANTITIES = ("totals", "last_row", "proactive_moves", "ondemand_moves", "ondemand_hops",
              "proactive_hops")


def _satpage(*args, env=None, check=True):
    out = subprocess.run([SATPAGE, *args], capture_output=True, text=True, env=env, timeout=600)
    if check and out.returncode != 0:
        raise AssertionError(f"satpage {' '.join(args)} exited {out.returncode}: {out.stderr[-2000:]}")
    return out


def _cli_json(*args, env=None) -> dict:
    """The CLI run in this process (a subprocess would import everything again: seconds
    of CPU each, and far more wall time on a loaded machine)."""
    r = CliRunner().invoke(app, list(args), env=env)
    assert r.exit_code == 0, f"satpage {' '.join(args)} exited {r.exit_code}: {r.output[-2000:]}"
    return json.loads(r.stdout)


def _check_paper(gateway, seed, tls_dir):
    """A given --target is reached with the TLS material named by $SATPAGE_TLS_DIR."""
    args = ("paper", "--runs", "1", "--seed", str(seed), "--json")
    engine = _cli_json(*args, "--backend", "engine")
    through = _cli_json(*args, "--backend", "cluster", "--target", gateway, env={"SATPAGE_TLS_DIR": tls_dir})
    verdict = compare_figures(engine, through, QUANTITIES)
    assert verdict.equal, (seed, verdict.different)
    assert through["backend"] == "cluster"


def _check_relayed_hops(cluster):
    """Sessions whose trails jump across planes, and one that comes back to its
    satellites (an orbit on, as at high latitude): every page fault costs the ISL hops
    orbit_model computes between the two satellites, and a page the serving satellite
    holds from an earlier visit is local (a plain scalar replay of the model, which
    names satellites, is the authority for which page moves when; the engine agrees)."""
    const = Constellation.from_spec(cluster.constellation, epoch="2022-09-14T00:00:00Z")
    hops = IslNetwork(const).hop_matrix(0)
    rng = np.random.default_rng(3)
    trails = [rng.choice(150, size=5, replace=False) for _ in range(3)]
    a, b, c = rng.choice(150, size=3, replace=False)
    trails.append(np.array([a, b, a, c, a]))
    n_s, n_pages, per_visit, v = len(trails), 60, 40, 5
    pages = rng.integers(0, n_pages, size=(n_s, v, per_visit)).astype(np.int32)
    trace = pager.Trace(
        n_pages=n_pages,
        visit_offsets=np.arange(n_s + 1, dtype=np.int64) * v,
        visit_satellite=np.concatenate(trails).astype(np.int32),
        visit_start_ns=np.tile(np.arange(v, dtype=np.int64) * 10**9, n_s),
        access_offsets=np.arange(n_s * v + 1, dtype=np.int64) * per_visit,
        access_page=pages.reshape(-1),
        access_time_ns=np.tile((np.arange(v)[:, None] * 10**9 + np.arange(per_visit)).reshape(-1), n_s),
    )
    want_moves = want_hops = back = 0
    for s in range(n_s):
        held_by = {}  # page -> (satellite, visit) that holds it
        for k in range(v):
            here = int(trails[s][k])
            for p in pages[s, k]:
                sat, visit = held_by.get(p, (here, k))
                if sat != here:
                    want_moves += 1
                    want_hops += int(hops[sat, here])
                back += visit < k and sat == here  # left here by an earlier visit
                held_by[p] = (here, k)
    assert back > 0  # the return is exercised
    eng = pager.replay(trace, pager.OnDemand())
    assert int(eng.counters["fault_moves"].sum()) == want_moves
    got = replay_trace(trace, "on-demand", target=cluster.gateway, tls_dir=cluster.tls_dir)
    assert (got["ondemand_moves"], got["ondemand_hops"]) == (want_moves, want_hops)
    assert got["accesses"] == n_s * v * per_visit
    assert got["pages_deleted"] == got["pages_created"]


@pytest.mark.xdist_group("default-cluster")
def test_the_default_cluster_gives_the_engines_counts(default_cluster):
    """The 150-satellite cluster (301 processes) of the session, which
    test_compare_cluster replays through too (sim/tests/conftest.py); `down` is
    test_down_stops_exactly_what_up_started's."""
    cluster = default_cluster
    st = cluster_status(cluster.state_dir)
    assert st["running"], st
    assert st["alive"] == {"redis": 150, "satnode": 150, "gateway": 1}
    out = _satpage("cluster", "status", "--state-dir", cluster.state_dir, "--json")
    assert json.loads(out.stdout)["running"] is True
    for seed in (5, 2024):
        _check_paper(cluster.gateway, seed, cluster.tls_dir)
    _check_relayed_hops(cluster)
    trace = pager.paper_trace(pager.PaperParams(n_pages=10, accesses=5, handovers=1), 1,
                              np.random.default_rng(0))
    with pytest.raises(ValueError, match="hot-k"):
        replay_trace(trace, "hot-k", target=cluster.gateway)


def test_an_unreachable_gateway_is_an_error_naming_it():
    out = _satpage("paper", "--runs", "1", "--backend", "cluster", "--target", "127.0.0.1:1",
                   check=False)
    assert out.returncode == 2
    assert "127.0.0.1:1" in out.stderr


def test_down_stops_exactly_what_up_started(tmp_path, cluster_binaries):
    """A decoy process, and a pid reused by another process, survive `down`."""
    base = _free_port_base("walker-star:4/2/0:500:87")
    decoy = subprocess.Popen(["sleep", "120"])
    try:
        _satpage("cluster", "up", "--constellation", "walker-star:4/2/0:500:87",
                 "--state-dir", str(tmp_path), "--port-base", str(base))
        state = load_state(tmp_path)
        assert len(state.processes) == 9
        pids = [p.pid for p in state.processes]
        # Record the decoy as if it were ours but with another start time (a reused pid).
        raw = json.loads((tmp_path / "cluster.json").read_text())
        raw["processes"].append({**raw["processes"][0], "pid": decoy.pid, "role": "satnode"})
        (tmp_path / "cluster.json").write_text(json.dumps(raw))
        again = _satpage("cluster", "up", "--constellation", "walker-star:4/2/0:500:87",
                         "--state-dir", str(tmp_path), "--port-base", str(base), check=False)
        assert again.returncode == 2 and "running" in again.stderr
        _satpage("cluster", "down", "--state-dir", str(tmp_path))
        for pid in pids:
            assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split(")")[-1][:3], pid
        assert decoy.poll() is None, "down killed a process it did not start"
        assert load_state(tmp_path) is None
        status = _satpage("cluster", "status", "--state-dir", str(tmp_path), check=False)
        assert status.returncode == 1
    finally:
        decoy.send_signal(signal.SIGKILL)
        decoy.wait()
        if load_state(tmp_path) is not None:
            _satpage("cluster", "down", "--state-dir", str(tmp_path), check=False)


def test_up_with_two_gateways_serves_at_each_and_restarts_each_by_its_index(tmp_path, cluster_binaries):
    """`cluster up --gateways 2`: both gateways SERVING on their own ports, recorded one
    by one; LocalCluster kills and restarts gateway 1 without touching gateway 0."""
    spec = "walker-star:4/2/0:500:87"
    up = json.loads(_satpage("cluster", "up", "--constellation", spec, "--state-dir", str(tmp_path),
                             "--port-base", str(free_port_base(4, gateways=2)), "--gateways", "2",
                             "--store", "memory", "--json").stdout)
    try:
        assert len(up["gateways"]) == 2 and up["gateways"][0] == up["gateway"]
        status = cluster_status(tmp_path)
        assert status["running"] and status["alive"]["gateway"] == 2 and status["gateways"] == up["gateways"]
        cl = LocalCluster.attach(tmp_path)
        g0 = [p.pid for p in cl.state.processes if p.role == "gateway" and p.index == -1]
        cl.kill_gateway(1)
        assert cluster_status(tmp_path, check_health=False)["alive"]["gateway"] == 1
        cl.restart_gateway(1)
        assert [p.pid for p in cl.state.processes if p.role == "gateway" and p.index == -1] == g0
        assert cluster_status(tmp_path)["running"]
        with pytest.raises(ValueError, match="gateway 2: the cluster has gateways 0-1"):
            cl.kill_gateway(2)
    finally:
        _satpage("cluster", "down", "--state-dir", str(tmp_path), check=False)
    bad = _satpage("cluster", "up", "--constellation", spec, "--state-dir", str(tmp_path / "b"),
                   "--gateways", "0", check=False)
    assert bad.returncode == 2 and "gateways 0 outside [1, 8]" in bad.stderr


def test_up_with_a_bad_store_is_refused_naming_it(tmp_path):
    out = CliRunner().invoke(app, ["cluster", "up", "--store", "disk", "--state-dir", str(tmp_path)])
    assert out.exit_code == 2 and "'disk'" in out.stderr


def test_up_with_a_bad_daemon_or_a_floor_on_redis_is_refused_naming_it(tmp_path):
    from satpage.cluster import cluster_up

    with pytest.raises(ValueError, match="'pagenode'"):
        cluster_up("walker-star:4/2/0:500:87", state_dir=tmp_path, daemon="pagenode")
    with pytest.raises(ValueError, match="store must be memory, got 'redis'"):
        cluster_up("walker-star:4/2/0:500:87", state_dir=tmp_path, daemon="floornode")
    assert not (tmp_path / "cluster.json").exists()


def test_a_floor_cluster_answers_the_load_generator_as_satnodes_do(tmp_path, cluster_binaries):
    """floornode (the floor under a page fault, bench_services.py): satload's one-hop
    reads over read streams and as ReadPage calls come back moved, one hop each, as
    the relays counted them, over mutual TLS; and its latency series over 1 and 2
    hops (each handover tells the new satellite where the pages are, and reads are
    relayed hop by hop through the access policy) moves every page exactly that far."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from bench_services import hops_ok, satload

    from satpage.cluster import cluster_up

    spec = "walker-star:6/2/1:500:87"
    st = cluster_up(spec, state_dir=tmp_path, port_base=None, emulate_links=False, store="memory",
                    daemon="floornode")
    base = st.port_base
    try:
        assert {p.role for p in st.processes} == {"satnode", "gateway"}
        assert all(Path(p.argv[0]).name == "floornode" for p in st.processes if p.role == "satnode")
        pids = tmp_path / "pids.txt"
        pids.write_text("\n".join(str(p.pid) for p in st.processes))
        for stream in (True, False):
            r = satload(base, spec, pids, "1", workers=2, duration=1.0, max_accesses=400, tls_dir=st.tls_dir,
                        read_stream=stream)[0]
            assert r["accesses"] > 0 and hops_ok(r), r
        series = satload(base, spec, pids, "1,2", workers=2, duration=1.0, rate=40.0, max_accesses=400,
                         tls_dir=st.tls_dir, interleave=True)
        assert [r["hops"] for r in series] == [1, 2]
        assert all(r["accesses"] > 0 and hops_ok(r) for r in series), series
    finally:
        cluster_down(tmp_path)


def test_a_port_range_taken_before_the_cluster_binds_it_is_left_for_another(tmp_path, monkeypatch,
                                                                         cluster_binaries):
    """Another process (one that does not book ports) holds a port of the range that
    free_port_base handed out: cluster_up with no port base starts on the next range."""
    from satpage.cluster import local

    spec = "walker-star:4/2/0:500:87"
    first, second = free_port_base(4), free_port_base(4)
    bases = iter([first, second])
    monkeypatch.setattr(local, "free_port_base", lambda n, gateways=1: next(bases))
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", first + 3))  # satellite 1's port
        squatter.listen(1)
        with pytest.raises(local.PortsTaken, match=str(first + 3)):
            local.cluster_up(spec, state_dir=tmp_path / "a", port_base=first, store="memory")
        st = local.cluster_up(spec, state_dir=tmp_path / "b", port_base=None, store="memory",
                              emulate_links=False)
        try:
            assert st.port_base == second and cluster_status(tmp_path / "b")["running"]
        finally:
            cluster_down(tmp_path / "b")


@pytest.mark.skipif(os.environ.get("SATPAGE_CLUSTER_DIR") is not None,
                    reason="a cluster directory is set in the environment")
def test_paper_without_a_target_starts_and_stops_a_cluster_of_its_own(tmp_path, cluster_binaries):
    # A one-plane constellation keeps the trail's in-plane distances and is 31 processes.
    env = {**os.environ, "SATPAGE_CLUSTER_DIR": str(tmp_path / "none"),
           "SATPAGE_CLUSTER_CONSTELLATION": "walker-star:15/1/0:500:87"}
    args = ("paper", "--runs", "1", "--seed", "9", "--pages", "50", "--accesses", "30", "--json")
    engine = _cli_json(*args)
    through = json.loads(_satpage(*args, "--backend", "cluster", env=env).stdout)
    verdict = compare_figures(engine, through, QUANTITIES)
    assert verdict.equal, verdict.different


def test_a_cluster_routes_on_the_isl_schedule_it_was_started_with(tmp_path, monkeypatch, cluster_binaries):
    """A schedule for another constellation stops `up` with the satnode's reason; a
    good one is recorded, and a replay that needs another topology is refused."""
    spec = "walker-star:4/2/0:500:87"
    base = _free_port_base(spec)
    doc = {"format": "satpage-isl-schedule/1", "constellation": spec, "latitude_cutoff_deg": 60.0,
           "step_ns": 60 * 10**9, "snapshots": 2, "high": [[0, 1, 2]]}
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({**doc, "constellation": "walker-star:150/10/1:500:87"}))
    out = _satpage("cluster", "up", "--constellation", spec, "--state-dir", str(tmp_path / "a"),
                   "--port-base", str(base), "--isl-schedule", str(wrong), check=False)
    assert out.returncode == 2
    assert "wrong.json" in out.stderr and "written for walker-star:150/10/1:500:87" in out.stderr
    assert load_state(tmp_path / "a") is None  # what was started is stopped again
    good = tmp_path / "good.json"
    good.write_text(json.dumps(doc))
    state_dir = tmp_path / "b"
    _satpage("cluster", "up", "--constellation", spec, "--state-dir", str(state_dir),
             "--port-base", str(base), "--isl-schedule", str(good))
    try:
        assert load_state(state_dir).isl_schedule == str(good)
        from satpage.cluster.driver import resolve_target
        monkeypatch.setenv("SATPAGE_CLUSTER_DIR", str(state_dir))
        with pytest.raises(ValueError, match="time-invariant"), resolve_target(None, spec):
            pass
        with resolve_target(None, spec, isl_schedule=good) as gw:
            assert gw == f"127.0.0.1:{base}"
    finally:
        _satpage("cluster", "down", "--state-dir", str(state_dir), check=False)


def test_a_satnode_stopped_with_sigterm_sends_the_releases_it_owes(tmp_path, cluster_binaries):
    """SIGTERM on the serving satellite: it sends the batched releases it still owes
    the old owner before it exits (Node.Close), so no stale copy stays behind."""
    import grpc

    from satpage_client.rpc import satpage_pb2 as pb
    from satpage_client.rpc import satpage_pb2_grpc as rpc

    spec = "walker-star:4/2/0:500:87"
    _satpage("cluster", "up", "--constellation", spec, "--state-dir", str(tmp_path),
             "--port-base", str(_free_port_base(spec)), "--insecure")
    try:
        st = load_state(tmp_path)
        with grpc.insecure_channel(st.gateway) as gw, grpc.insecure_channel(st.satellite_addr(0)) as sat0:
            page = rpc.PageServiceStub(gw)
            rpc.GatewayServiceStub(gw).RegisterSession(pb.RegisterSessionRequest(
                session_id="c", visits=[pb.Visit(satellite=0, start_ns=0), pb.Visit(satellite=1, start_ns=10)]))
            for p in range(5):
                page.WritePage(pb.WritePageRequest(session_id="c", page=p, data=b"x", scenario_time_ns=0))
            for p in range(5):  # five faults at satellite 1: fewer than a batch, so the releases wait
                r = page.ReadPage(pb.ReadPageRequest(session_id="c", page=p, scenario_time_ns=10))
                assert r.outcome == pb.OUTCOME_MOVED
            old_owner = rpc.SatelliteServiceStub(sat0)
            assert old_owner.SessionFrames(pb.SessionFramesRequest(session_id="c")).frames == 5
            serving = next(p for p in st.processes if p.role == "satnode" and p.index == 1)
            os.kill(serving.pid, signal.SIGTERM)
            proc = Path(f"/proc/{serving.pid}")
            for _ in range(200):  # its --stop-timeout is 5 s
                if not proc.exists() or "Z" in (proc / "stat").read_text().split(")")[-1][:3]:
                    break
                time.sleep(0.05)
            else:
                raise AssertionError("satellite 1 did not exit within 10 s of SIGTERM")
            assert old_owner.SessionFrames(pb.SessionFramesRequest(session_id="c")).frames == 0
    finally:
        _satpage("cluster", "down", "--state-dir", str(tmp_path), check=False)


def test_port_bases_handed_to_concurrent_processes_never_overlap(tmp_path):
    """Two processes asking at once (a second `cluster up`, the other test worker) get
    disjoint ranges: a range is booked when handed out, before its cluster binds it."""
    ask = ("import json; from satpage.cluster.local import free_port_base; "
           "print(json.dumps([free_port_base(150) for _ in range(10)]))")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", ask], stdout=subprocess.PIPE, env=env,
                              text=True) for _ in range(2)]
    bases = [b for p in procs for b in json.loads(p.communicate(timeout=60)[0])]
    assert len(bases) == 20
    n = 2 + 2 * 150
    for i, a in enumerate(bases):
        for b in bases[i + 1:]:
            assert a + n <= b or b + n <= a, (a, b)
    assert len(json.loads((tmp_path / "satpage-port-ranges.json").read_text())) == 20


def test_a_recorded_cluster_keeps_its_ports_booked_until_it_is_down(tmp_path, monkeypatch):
    """A booking past PORT_BOOKING_S still holds while a cluster is recorded on the
    range (a satellite killed for seconds leaves its port free, and a long-lived
    cluster must not lose it to a new one), and is let go once its record is gone."""
    from satpage.cluster import local

    monkeypatch.setattr(local, "PORT_BOOK", tmp_path / "book.json")
    monkeypatch.setattr(local, "PORT_BOOKING_S", 0.0)     # bookings by age alone: none
    top = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    n = 2 + 2 * 10
    low = top - n - 4                                    # four candidate bases
    state = tmp_path / "cluster"
    state.mkdir()
    (state / local.STATE_FILE).write_text("{}")
    local._claim_ports(low, n + 4, state)                # covers every candidate
    with pytest.raises(OSError, match=f"no free range of {n} loopback ports"):
        local.free_port_base(10, low=low)
    (state / local.STATE_FILE).unlink()                  # cluster down
    base = local.free_port_base(10, low=low)
    assert low <= base < top - n
    book = json.loads((tmp_path / "book.json").read_text())
    assert [h[:2] for h in book] == [[base, n]]          # the claim is gone, the new one booked


def test_a_killed_process_has_exited_only_when_its_last_thread_has():
    """A process whose leader thread is a zombie while another of its threads still
    runs holds its descriptors (a satnode's listening socket): _wait_exited waits
    for that thread too."""
    from satpage.cluster.local import _wait_exited

    code = ("import threading, time, ctypes; threading.Thread(target=time.sleep, args=(1.0,)).start(); "
            "ctypes.CDLL(None).pthread_exit(None)")
    p = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{p.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
            assert time.monotonic() < deadline, "the leader thread never exited"
            time.sleep(0.01)
        assert len(list(Path(f"/proc/{p.pid}/task").iterdir())) == 2
        _wait_exited(p.pid)
        assert len(list(Path(f"/proc/{p.pid}/task").iterdir())) <= 1
    finally:
        p.wait(timeout=10)


def test_a_restarted_satellite_waits_for_its_port(tmp_path, cluster_binaries):
    """LocalCluster.restart starts the satnode once its ports are free: held by another
    socket for a second after the kill, the satellite still comes back SERVING."""
    import socket
    import threading

    from satpage.cluster.local import LocalCluster

    with LocalCluster.up("walker-star:4/2/0:500:87", state_dir=tmp_path, store="memory", emulate_links=False) as cl:
        cl.kill(1)
        holder = socket.socket()
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("127.0.0.1", int(cl.state.satellite_addr(1).rpartition(":")[2])))
        holder.listen(1)
        threading.Timer(1.0, holder.close).start()
        took = cl.restart(1, timeout_s=30.0)
        assert took >= 0.9, took
        assert cluster_status(tmp_path)["running"]
