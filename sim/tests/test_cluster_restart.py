"""A replica killed with its Redis and slow to come back does not block its primary's
writes (docs/faults.md, "Replication backoff"), on a small real cluster (6 satellites,
R = 2, 13 processes, about 40 s).

What make e2e-swarm met: satellite 14, the replica of satellite 0, killed with its
Redis; its new task ran (it asked 0 for its copy, so 0 held it alive) but could not be
reached for 36 s, and 0 failed every change meanwhile. Here the replica's ISLs are cut
for 6 s while it runs (it answers the primary's health checks), then it is killed,
restarted still cut off and held so for 20 s: its own calls (its restore, its
RequestSync) go straight to its peers, as the Swarm task's did, while the primary's
copies, routed over ISLs, cannot reach it."""

import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SPEC = "walker-star:6/2/0:500:87"  # 2 planes of 3: plane 0 is satellites 0, 1, 2
PRIMARY, REPLICA, STAND_IN = 2, 1, 0  # the replica of 2 is the one behind it; then 0
PAGES = 8
HOLD_S = 20.0
CUT_S = 6.0  # cut off, alive, before the kill: past asideAfter (3.5 s)
#: asideAfter (liveness.DetectionBound, 3.5 s) plus the stand-in's snapshot and the
#: gateway's hop, on a loaded shared machine
WRITE_BOUND_S = 10.0


class _Writer(threading.Thread):
    """Writes page n % PAGES = "w<n>" through the gateway, one request at a time, each
    sent again (same request id: exactly-once) until answered; records every failed
    attempt and each write's time to its answer."""

    def __init__(self, stub, md, sid: str) -> None:
        super().__init__(name="restart-writer", daemon=True)
        self.stub, self.md, self.sid = stub, md, sid
        self.stop = threading.Event()
        self.acked: dict[int, str] = {}
        self.failures: list[str] = []
        self.took: list[float] = []
        self.error = ""

    def write(self, n: int) -> None:
        import grpc

        from satpage_client.rpc import satpage_pb2 as pb

        page, value = n % PAGES, f"w{n}"
        t0 = time.monotonic()
        while True:
            try:
                self.stub.WritePage(pb.WritePageRequest(session_id=self.sid, page=page, data=value.encode(),
                                                        request_id=f"{self.sid}/{n}"),
                                    timeout=30, metadata=self.md)
                break
            except grpc.RpcError as exc:
                self.failures.append(f"write {n} at {time.monotonic() - t0:.1f} s: {exc.code().name} {exc.details()}")
                if time.monotonic() - t0 > 60:
                    raise
                time.sleep(0.2)
        self.acked[page] = value
        self.took.append(time.monotonic() - t0)

    def run(self) -> None:
        n = PAGES
        try:
            while not self.stop.is_set():
                self.write(n)
                n += 1
                time.sleep(0.1)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.error = f"{type(exc).__name__}: {exc}"


def _copy_at(tls_dir: Path, addr: str, at: int, namespace: int, sid: str):
    """Satellite at's copy of namespace's state (ReplicaState asks with a satellite's
    certificate: satellite 5's here)."""
    import grpc

    from satpage.cluster.certs import satellite_name
    from satpage_client.rpc import satpage_pb2 as pb
    from satpage_client.rpc import satpage_pb2_grpc as rpc

    creds = grpc.ssl_channel_credentials(root_certificates=(tls_dir / "ca.pem").read_bytes(),
                                         private_key=(tls_dir / "satellite-5-key.pem").read_bytes(),
                                         certificate_chain=(tls_dir / "satellite-5.pem").read_bytes())
    with grpc.secure_channel(addr, creds, options=[("grpc.ssl_target_name_override", satellite_name(at))]) as ch:
        return rpc.SatelliteServiceStub(ch).ReplicaState(
            pb.ReplicaStateRequest(namespace=namespace, snapshot=True, sessions=[sid]), timeout=5)


def _frames(resp, sid: str) -> dict[int, str]:
    return {f.page: f.data.decode() for s in resp.sessions if s.session_id == sid for f in s.frames}


def test_a_replica_restarting_slowly_does_not_block_its_primarys_writes(tmp_path, cluster_binaries):
    from satpage.cluster.local import LocalCluster
    from satpage_client.channel import open_channel, token_metadata
    from satpage_client.rpc import satpage_pb2 as pb
    from satpage_client.rpc import satpage_pb2_grpc as rpc

    with LocalCluster.up(SPEC, state_dir=tmp_path, replicas=2, emulate_links=False) as cl:
        tls = cl.tls_dir
        sid = "restart-0"
        with open_channel(cl.gateway, tls) as ch:
            reg = rpc.GatewayServiceStub(ch).RegisterSession(pb.RegisterSessionRequest(
                session_id=sid, visits=[pb.Visit(satellite=PRIMARY, start_ns=0)], table_pages=PAGES), timeout=30)
            w = _Writer(rpc.PageServiceStub(ch), token_metadata(reg.token, reg.ticket), sid)
            for n in range(PAGES):
                w.write(n)
            w.start()
            time.sleep(1.0)
            # Out of the copies' reach first, alive (it answers its health checks, so
            # 2's detector holds it alive): before, every write failed from here on.
            cl.partition(REPLICA)
            time.sleep(CUT_S)
            cut_writes = len(w.took)
            cl.kill(REPLICA)  # satnode and redis-server SIGKILLed: its memory is gone
            time.sleep(2.0)
            cl.restart(REPLICA)  # back, empty; it takes its own state from 0 and asks 2 for its copy
            before = len(w.took)
            time.sleep(HOLD_S)
            during = len(w.took) - before
            # Meanwhile 2's writes were held by 2 and the satellite behind 1.
            stand_in = _copy_at(tls, cl.state.satellite_addr(STAND_IN), STAND_IN, PRIMARY, sid)
            cl.heal(REPLICA)
            healed = time.monotonic()
            # It rejoins at its next try: within 8 s (the backoff's longest step) and the
            # primary's once-a-second upkeep.
            while True:
                copy = _copy_at(tls, cl.state.satellite_addr(REPLICA), REPLICA, PRIMARY, sid)
                if copy.synced or time.monotonic() - healed > 30:
                    break
                time.sleep(0.5)
            rejoined_s = time.monotonic() - healed
            w.stop.set()
            w.join(timeout=90)
            assert not w.is_alive() and not w.error, w.error
            w.write(10**6)  # one more, to 1 alone now
            # Every acknowledged write reads back through the gateway.
            got = {}
            for page in range(PAGES):
                r = rpc.PageServiceStub(ch).ReadPage(pb.ReadPageRequest(session_id=sid, page=page), timeout=30,
                                                     metadata=w.md)
                got[page] = r.data.decode()
        replica = _copy_at(tls, cl.state.satellite_addr(REPLICA), REPLICA, PRIMARY, sid)
        old = _copy_at(tls, cl.state.satellite_addr(STAND_IN), STAND_IN, PRIMARY, sid)

    assert not w.failures, w.failures[:10]
    assert cut_writes > PAGES + CUT_S, cut_writes  # writes went on while it was cut off alive
    assert max(w.took) < WRITE_BOUND_S, sorted(w.took)[-5:]
    # The writes went on through the whole hold (one every 0.1 s plus its round trip;
    # before, they failed from the restart on).
    assert during >= HOLD_S / 2, during
    assert stand_in.synced and sorted(_frames(stand_in, sid)) == list(range(PAGES))
    assert copy.synced, f"replica {REPLICA} not back in sync {rejoined_s:.1f} s after its ISLs were healed"
    assert rejoined_s < 15, rejoined_s
    assert got == w.acked
    # The rejoined replica holds every acknowledged write, and the changes since went to
    # it, not to the stand-in.
    assert _frames(replica, sid) == w.acked
    v, o = replica.version, old.version
    assert replica.synced and (v.epoch, v.incarnation, v.seq) > (o.epoch, o.incarnation, o.seq)
