"""A simulation's failure schedule replayed on a cluster (`satpage cluster chaos
--failure-schedule FILE`, docs/faults.md): the sessions of the run that wrote FILE go
through the gateway (``replayer.replay`` with the file's failures, ``read_back`` on) while
its satellites die at their scenario times, and what the cluster lost and counted is set
beside the engine's (``pager.FaultModel`` for the same traces, schedule and R; the
failure-free counts, which R >= 2 promises) by ``satpage.comparator``.

A failure SIGKILLs the satellite's satnode and redis-server (its memory is gone) and
restarts both empty at once: no request is sent meanwhile, so in scenario time the
satellite is back before the next one (a repair after zero seconds; see docs/faults.md
for what that leaves out). With R > 1 it takes its state back from its replicas before
it serves; the run then waits ``settle_s`` for the primaries whose replica it was to send
it their copies again. The cluster is the local one (``LocalCluster``), or any deployment
reached at a gateway address with a kill command that takes a satellite's memory and
returns once it serves again (``CommandKiller``: `kubectl delete pod`, `docker kill`;
scripts/e2e-k8s.sh and scripts/e2e-swarm.sh use it).

What the cluster measured is all that is reported; nothing here computes a loss from
the schedule.
"""

from __future__ import annotations

import logging
import subprocess
import time
from pathlib import Path

import numpy as np

from satpage.cluster.replayer import BUSIEST, COUNT_KEYS, Target

__all__ = ["BUSIEST", "COUNT_KEYS", "CommandKiller", "Target", "run_schedule_replay"]

log = logging.getLogger(__name__)


class CommandKiller:
    """Takes a satellite's memory on any deployment by running a command (no shell):
    ``{satellite}`` in its words becomes the satellite's index. The command must return
    once the satellite serves again (a new pod Ready, a new task healthy); its exit
    status 0 says it did."""

    def __init__(self, command: str, timeout_s: float = 600.0) -> None:
        import shlex

        self.words = shlex.split(command)
        if not self.words:
            raise ValueError("--kill-command is empty")
        self.timeout_s = timeout_s

    def fail(self, i: int) -> float:
        argv = [w.replace("{satellite}", str(i)) for w in self.words]
        t0 = time.monotonic()
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout_s)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise OSError(f"kill command {' '.join(argv)!r}: {exc}") from None
        if out.returncode != 0:
            raise OSError(f"kill command {' '.join(argv)!r} exited {out.returncode}: "
                          f"{(out.stderr or out.stdout).strip()[-500:]}")
        return time.monotonic() - t0


def _permanent(satellites: list[int], fail_ns: list[int]):
    """A failure schedule of permanent failures (what a kill is to the engine)."""
    import pager

    return pager.FailureSchedule(np.asarray(satellites, np.int32), np.asarray(fail_ns, np.int64),
                                 np.full(len(satellites), pager.NEVER_NS, np.int64))


#: the engine's figures set beside the cluster's (the replication ones are reported, not
#: held equal: docs/faults.md)
ENGINE_FIGURES = ("pages_lost", "sessions_hit", "page_tables_lost", "replication_copies",
                  "replication_page_hops", "rereplication_copies", "rereplication_page_hops")
def run_schedule_replay(path: Path, *, replicas: int | None = None,
                        strategies: list[str] | None = None, state_dir: Path | None = None,
                        progress=None, gateway: str | None = None, tls_dir: Path | None = None,
                        kill_command: str | None = None, satellites: list[int] | None = None,
                        fail_s: float | None = None, busiest: bool = False,
                        emulate_links: bool = True, keep: bool = False,
                        settle_s: float | None = None) -> dict:
    """`satpage cluster chaos --failure-schedule FILE`: rebuild the sessions of the run
    that wrote FILE (its ``config``), replay each strategy's sessions with the file's
    failures (``replayer.replay``), and set what the cluster lost and counted
    beside the engine: ``pager.FaultModel`` for the same traces, schedule and R, and
    the failure-free counts (``counts_equal``: what R >= 2 promises).

    The cluster is a local one of the file's constellation started here with R =
    ``replicas`` (default: the file's), or, with ``gateway``, a running deployment
    (``tls_dir``: its client TLS material; ``kill_command``: see ``CommandKiller``;
    ``replicas``: its R, for the engine). ``satellites`` and ``fail_s`` replace the
    file's failures: each satellite dies once, at ``fail_s`` scenario seconds; with
    ``busiest`` the one satellite killed at ``fail_s`` is the one holding the most frames
    of the replayed sessions then (per strategy and chunk; the engine is given the
    satellites actually killed). ``emulate_links``: whether a local cluster started here
    times its links (``cluster_up``'s; the counts and losses do not depend on it).
    ``settle_s``: wall seconds waited after each restart (default 1 at R >= 2, 0 at R = 1)."""
    import contextlib
    import json

    from satpage.backend import LOSS_KEYS, ClusterBackend, EngineBackend
    from satpage.cluster.local import LocalCluster, run_state_dir, satellites_in
    from satpage.cluster.replayer import STRATEGIES
    from satpage.comparator import compare_figures
    from satpage.faults_io import read_failure_scenario, read_failure_schedule
    from satpage.simulate import chunk_trace, prepare
    from satpage.version import code_version

    path = Path(path)
    schedule = read_failure_schedule(path)
    sc = read_failure_scenario(path)
    doc = json.loads(path.read_text())
    spec = sc.constellation.spec
    if not spec.startswith("walker"):
        raise ValueError(f"{path}: the cluster runs Walker constellations; the schedule's is {spec!r}")
    if (gateway is None) != (kill_command is None):
        raise ValueError("--target and --kill-command go together: a deployment's satellites are "
                         "killed by the command")
    busiest_ns: tuple[int, ...] = ()
    if satellites or busiest or fail_s is not None:
        if fail_s is None or not (satellites or busiest):
            raise ValueError("--fail-at goes with --fail-satellite or --fail-busiest, and they need it "
                             "(scenario seconds)")
        t_ns = int(round(fail_s * 1e9))
        if not 0 <= t_ns < sc.duration_ns:
            raise ValueError(f"--fail-at {fail_s}: the run lasts {sc.duration_ns / 1e9:g} s")
        sats = list(satellites or [])
        schedule = _permanent(sats, [t_ns] * len(sats))
        busiest_ns = (t_ns,) if busiest else ()
    r = int(doc.get("replicas", 1)) if replicas is None else replicas
    names = strategies or [n for n in ("on-demand", "proactive") if n in sc.strategies.compare] \
        or ["on-demand", "proactive"]
    # push-ahead runs on the cluster without failures only: the gateway keeps no record of
    # the pages used during a visit served by a stand-in
    bad = [n for n in names if n not in STRATEGIES or n == "push-ahead"]
    if bad:
        raise ValueError(f"--strategies {','.join(bad)}: failures replay on the cluster with "
                         "on-demand and proactive")
    say = progress or (lambda msg: log.info("%s", msg))
    world = prepare(sc)
    if not world.router.static:
        raise ValueError(f"{path}: the scenario cuts ISLs above {sc.constellation.isl_latitude_cutoff_deg} "
                         "deg; the failure replay runs on the time-invariant +Grid only")
    if schedule.n_failures and int(np.max(schedule.satellite)) >= world.sats.n_sats:
        raise ValueError(f"{path}: failure of satellite {int(np.max(schedule.satellite))}, but {spec} "
                         f"has {world.sats.n_sats}")
    with contextlib.ExitStack() as dirs:
        cl = sdir = rd = None
        if gateway is None:
            # not the working directory: the state holds every satellite's TLS key
            rd = dirs.enter_context(run_state_dir(state_dir, prefix="satpage-chaos-replay-", keep=keep,
                                                  say=say))
            sdir = rd.path
            say(f"starting {satellites_in(spec)} satellites with R = {r} in {sdir}")
            cl = LocalCluster.up(spec, state_dir=sdir, replicas=r,  # one for every replay
                                 emulate_links=emulate_links)
            target = Target(cl.gateway, cl.tls_dir, cl.satellites, cl)
        else:
            from satpage_client.channel import tls_dir_for

            target = Target(gateway, tls_dir if tls_dir is not None else tls_dir_for(gateway),
                            world.sats.n_sats, CommandKiller(kill_command))
        cluster: dict[str, dict] = {}
        engine: dict[str, dict] = {}
        free = {n: dict.fromkeys(COUNT_KEYS, 0) for n in names}  # the engine's failure-free counts
        kills: dict[str, list] = {}
        # the engine's fault model: one per chunk for the file's failures, per replay for busiest kills
        eb = EngineBackend(world, replicas=r, recovery_ns=int(round(sc.faults.recovery_s * 1e9)))
        cb = ClusterBackend(target, local=(lambda: cl.state) if cl is not None else None, read_back=True,
                            settle_s=settle_s if settle_s is not None else (0.0 if r == 1 else 1.0),
                            progress=say)
        try:
            for i in range(world.n_chunks):
                ct = chunk_trace(world, i)
                for name in names:
                    say(f"chunk {i}: {name}, {ct.trace.n_sessions} sessions, "
                        f"{schedule.n_failures + len(busiest_ns)} failures")
                    got = cb.replay(ct, name, schedule, busiest_ns=busiest_ns)
                    # busiest kills: the engine gets the satellites the replay chose
                    failures = (_permanent([k["satellite"] for k in got.kills], [k["fail_ns"] for k in got.kills])
                                if busiest_ns else schedule)
                    e = eb.replay(ct, name, failures)
                    c = cluster.setdefault(name, {})
                    for k, v in {**got.losses, **{k: got.counts[k] for k in COUNT_KEYS}, **got.replication}.items():
                        c[k] = c.get(k, 0) + v
                    figures = {**e.losses, **e.replication}
                    en = engine.setdefault(name, dict.fromkeys(ENGINE_FIGURES, 0))
                    for k in ENGINE_FIGURES:
                        en[k] += figures[k]
                    for k in COUNT_KEYS:
                        free[name][k] += e.counts[k]
                    kills.setdefault(name, []).extend(got.kills)
        finally:
            if cl is not None:
                cl.down()  # the logs stay in sdir
        for n in names:
            engine[n].update(free[n])
        report = {
            "failure_schedule": str(path), "scenario": sc.name, "seed": sc.seed, "version": code_version(),
            "constellation": spec, "replicas": r, "failures": schedule.n_failures,
            "target": target.gateway if gateway is not None else "local",
            "restart": "at once (empty): a killed satellite is back before the next request",
            "strategies": cluster, "engine": engine,
            "equal": {n: compare_figures(engine[n], cluster[n], LOSS_KEYS).equal for n in names},
            # the movements of a run that lost nothing are the failure-free run's
            "counts_equal": {n: compare_figures(engine[n], cluster[n], COUNT_KEYS).equal for n in names},
            "engine_in_file": {n: doc.get("engine", {}).get(n) for n in names},
            "replicas_in_file": doc.get("replicas"),
            "kills": kills, "state_dir": str(sdir) if sdir is not None else None,
        }
        if rd is not None:
            # the cluster lost other pages than the engine's model: keep its logs
            rd.failed = not all(report["equal"].values())
    if rd is not None and not rd.kept:
        report["state_dir"] = None
    return report
