"""`satpage cluster up|status|down`: a local cluster of real processes on loopback
(one redis-server and one satnode per satellite, and a gateway), see satpage.cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from satpage.cluster import (
    DEFAULT_CONSTELLATION,
    DEFAULT_PORT_BASE,
    cluster_down,
    cluster_status,
    cluster_up,
    default_state_dir,
)
from satpage.console import fail, print_json, setup_logging, stdout

app = typer.Typer(help="A local cluster of satnode + Redis processes and a gateway on loopback.",
                  no_args_is_help=True)

EmulateLinks = Annotated[bool, typer.Option(
    "--emulate-links/--no-emulate-links", envvar="SATPAGE_EMULATE_LINKS",
    help="Link emulation (docs/emulation.md): relayed hops wait their ISL's distance / c and "
    "queue at its capacity; the gateway waits the ground link of a session with a place.")]

StateDir = Annotated[Path | None, typer.Option(
    "--state-dir", help="Where the cluster records what it started "
    "(default $SATPAGE_CLUSTER_DIR or .cluster).")]

#: chaos's own cluster: its state (every satellite's TLS key among it) never in the working directory
RunStateDir = Annotated[Path | None, typer.Option(
    "--state-dir", help="Where the cluster started for the run keeps its state, logs and history "
    "(default: a new directory under the system's temporary directory, removed after a run "
    "that ends well, kept and named otherwise).")]
Keep = Annotated[bool, typer.Option(
    "--keep", help="Keep the temporary state directory after a run that ends well too.")]


@app.command("up")
def up(
    constellation: Annotated[str, typer.Option(
        "--constellation", help="Walker spec walker[-star]:T/P/F:ALT_KM:INC_DEG.")]
    = DEFAULT_CONSTELLATION,
    port_base: Annotated[int, typer.Option(
        "--port-base", help="Gateway on this port, satellite i on port-base + 2 + i, "
        "metrics after them, then the other gateways' ports.")] = DEFAULT_PORT_BASE,
    gateways: Annotated[int, typer.Option(
        "--gateways", help="Gateway replicas (at most 8): each serves every session, one "
        "registered at another included, so a client whose gateway is lost goes on at another "
        "(docs/faults.md).")] = 1,
    store: Annotated[str, typer.Option("--store", help="Page frames in redis or memory.")]
    = "redis",
    isl_schedule: Annotated[Path | None, typer.Option(
        "--isl-schedule", help="ISL schedule of a latitude cut-off (satpage-isl-schedule/1, "
        "services/README.md): the satnodes route on its snapshots.")] = None,
    insecure: Annotated[bool, typer.Option(
        "--insecure", help="Plain text and no access control (debugging only; the daemons "
        "warn at every start). Default: mutual TLS with a fresh CA in <state-dir>/tls.")] = False,
    replicas: Annotated[int, typer.Option(
        "--replicas", help="Replication factor R: every page is also held by the R-1 satellites "
        "behind its owner in its plane; writes are acknowledged once all R hold them "
        "(docs/faults.md). 1: no replicas (a lost satellite loses its pages).")] = 2,
    tls_dir: Annotated[Path | None, typer.Option(
        "--tls-dir", help="Bring your own TLS material (layout: docs/security.md) instead of "
        "a fresh CA.")] = None,
    emulate_links: EmulateLinks = True,
    link_epoch: Annotated[str | None, typer.Option(
        "--link-epoch", help="Epoch of the positions that time the links, ISO 8601 (the "
        "scenarios' time 0; default: the default scenario's).")] = None,
    link_hours: Annotated[float, typer.Option(
        "--link-hours", help="Hours of positions from the link epoch (later times cross "
        "without waiting).")] = 24.0,
    isl_capacity_gbps: Annotated[float, typer.Option(
        "--isl-capacity-gbps", help="Capacity of every directed ISL, Gbit/s "
        "(network.isl_capacity_gbps).")] = 100.0,
    per_hop_ms: Annotated[float, typer.Option(
        "--per-hop-processing-ms", help="On-board processing every ISL hop adds, each way, ms "
        "(network.per_hop_processing_ms; the machine's own is measured and subtracted).")] = 0.1,
    state_dir: StateDir = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Start one redis-server and one satnode per satellite, and a gateway."""
    setup_logging(verbose)
    if store not in ("redis", "memory"):
        fail(f"--store must be redis or memory, got {store!r}")
    try:
        st = cluster_up(constellation, state_dir=state_dir, port_base=port_base, store=store,
                        isl_schedule=isl_schedule, insecure=insecure, replicas=replicas,
                        tls_dir=tls_dir, emulate_links=emulate_links, link_epoch=link_epoch,
                        link_hours=link_hours, isl_capacity_gbps=isl_capacity_gbps,
                        per_hop_processing_ms=per_hop_ms, gateways=gateways)
    except ValueError as exc:
        fail(str(exc))
    if json_out:
        print_json({"gateway": st.gateway, "gateways": st.gateway_addrs, "satellites": st.satellites,
                    "tls_dir": st.tls_dir,
                    "insecure": st.tls_dir is None, "replicas": st.replicas,
                    "processes": len(st.processes), "state_dir": st.state_dir,
                    "links": st.links})
    else:
        sec = f"TLS material in {st.tls_dir}" if st.tls_dir else "[bold red]INSECURE[/] (plain text)"
        stdout.print(f"cluster up: {st.satellites} satellites ({st.constellation}), "
                     f"{len(st.processes)} processes; gateway{'s' if st.gateways > 1 else ''} "
                     f"[bold]{', '.join(st.gateway_addrs)}[/]; {sec}; "
                     f"state in {st.state_dir}")
        stdout.print(f"links: {'emulated from ' + st.links['epoch'] if st.links else 'not emulated'}")


@app.command("status")
def status(
    state_dir: StateDir = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Which recorded processes are alive and SERVING (gRPC health). Exit 1 when not running."""
    s = cluster_status(state_dir)
    if json_out:
        print_json(s)
    elif not s["processes"]:
        stdout.print(f"no cluster recorded in {s['state_dir']}")
    else:
        a = s["alive"]
        stdout.print(f"cluster {'running' if s['running'] else 'NOT running'}: "
                     f"{a['satnode']}/{s['satellites']} satnodes, {a['redis']} redis, "
                     f"{a['gateway']} gateway alive; gateway {s['gateway']}; state in {s['state_dir']}")
        if s["dead"]:
            stdout.print(f"exited: {s['dead'][:10]}")
        if s.get("not_serving"):
            stdout.print(f"not SERVING: {s['not_serving'][:10]}")
    if not s["running"]:
        raise typer.Exit(1)


@app.command("down")
def down(state_dir: StateDir = None) -> None:
    """Stop exactly the processes `up` recorded (SIGTERM, then SIGKILL after 10 s)."""
    setup_logging(False)
    n = cluster_down(state_dir)
    where = (state_dir or default_state_dir()).resolve()
    stdout.print(f"cluster down: stopped {n} processes recorded in {where}")


@app.command("fidelity")
def fidelity_cmd(
    paths: Annotated[int, typer.Option("--paths", help="Random multi-hop ISL paths to probe.")] = 60,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the paths and times.")] = 1,
    target: Annotated[str | None, typer.Option(
        "--target", help="Gateway host:port of any deployment (default: the recorded local "
        "cluster's).")] = None,
    tls_dir: Annotated[Path | None, typer.Option(
        "--tls-dir", help="TLS material for --target (default $SATPAGE_TLS_DIR or the recorded "
        "cluster's).")] = None,
    constellation: Annotated[str | None, typer.Option(
        "--constellation", help="With --target: its constellation (default: the default).")] = None,
    epoch: Annotated[str | None, typer.Option(
        "--epoch", help="With --target: the epoch of its link ephemeris, ISO 8601 (default: the "
        "default scenario's).")] = None,
    hours: Annotated[float, typer.Option(
        "--hours", help="With --target: hours its link ephemeris covers.")] = 24.0,
    per_hop_ms: Annotated[float, typer.Option(
        "--per-hop-processing-ms", help="With --target: its satnodes' per-hop processing, ms.")] = 0.1,
    state_dir: StateDir = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Probe random multi-hop ISL paths through the gateway (one page fault each) and
    compare each path's measured one-way time with distance / c from orbit_model's
    positions at the probe's time (docs/emulation.md)."""
    import os
    import time

    from satpage.cluster.fidelity import fidelity
    from satpage.cluster.local import load_state
    from satpage.scenario import TimeSection

    setup_logging(verbose)
    if not 1 <= paths <= 10_000:
        fail(f"--paths {paths} must lie in 1..10000")
    metrics = None
    if target is None:
        st = load_state(state_dir)
        if st is None or not st.processes:
            fail(f"no local cluster is recorded in {(state_dir or default_state_dir()).resolve()}: "
                 "start one with `satpage cluster up` or give --target")
        if not st.links:
            fail(f"the local cluster in {st.state_dir} does not emulate its links "
                 "(started with --no-emulate-links)")
        target, constellation = st.gateway, st.constellation
        epoch, hours = st.links["epoch"], float(st.links["hours"]) or hours
        per_hop_ms = float(st.links.get("per_hop_processing_ms", 0.0))
        tls_dir = Path(st.tls_dir) if st.tls_dir else None
        metrics = [f"http://127.0.0.1:{st.port_base + 2 + st.satellites + i}/metrics"
                   for i in range(st.satellites)]
    elif tls_dir is None and os.environ.get("SATPAGE_TLS_DIR"):
        tls_dir = Path(os.environ["SATPAGE_TLS_DIR"])
    load = os.getloadavg()
    started = time.monotonic()
    try:
        out = fidelity(target, constellation or DEFAULT_CONSTELLATION, epoch or TimeSection().epoch,
                       hours=hours, paths=paths, seed=seed, tls_dir=tls_dir, metrics_urls=metrics,
                       per_hop_ms=per_hop_ms)
    except ValueError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(str(exc), 1)
    out["load_1m"] = [round(load[0], 2), round(os.getloadavg()[0], 2)]  # before, after
    out["cpus"] = os.cpu_count()
    out["seconds"] = round(time.monotonic() - started, 1)
    if json_out:
        print_json(out)
        return
    stdout.print(f"fidelity of {out['paths']} paths ({out['hops_mean']:g} hops on average) at {target}: "
                 f"|measured - intended| p50 {out['error_ms_p50']:.3f} ms, p99 {out['error_ms_p99']:.3f} ms, "
                 f"max {out['error_ms_max']:.3f} ms (at the serving satellite; at the client p50 "
                 f"{out['client_error_ms_p50']:.3f} ms, p99 {out['client_error_ms_p99']:.3f} ms); "
                 f"substrate p50 {out['substrate_ms_p50']} ms; "
                 f"load {out['load_1m'][0]:g} -> {out['load_1m'][1]:g} on {out['cpus']} CPUs")


@app.command("kill")
def kill_satellite(
    satellite: Annotated[int, typer.Argument(help="Index of the satellite to kill.")],
    state_dir: StateDir = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """SIGKILL one satellite's satnode and redis-server (its memory is gone) and start
    both again at once, empty; return once it is SERVING (with R >= 2 it has taken its
    state back from its replicas). The kill command of `chaos --kill-command`."""
    from satpage.cluster.local import LocalCluster, load_state

    setup_logging(False)
    state = load_state(state_dir)
    if state is None or not state.processes:
        fail(f"no local cluster is recorded in {(state_dir or default_state_dir()).resolve()}")
    if not 0 <= satellite < state.satellites:
        fail(f"satellite {satellite}: the cluster has satellites 0-{state.satellites - 1}")
    try:
        up_s = LocalCluster(state).fail(satellite)
    except OSError as exc:
        fail(str(exc))
    if json_out:
        print_json({"satellite": satellite, "serving_after_s": round(up_s, 3)})
    else:
        stdout.print(f"satellite {satellite} killed and SERVING again, empty, {up_s:.1f} s later")


@app.command("chaos")
def chaos(
    replicas: Annotated[int | None, typer.Option(
        "--replicas", help="Replication factor R of the cluster (default 2; with --failure-schedule "
        "the file's).")] = None,
    failure_schedule: Annotated[Path | None, typer.Option(
        "--failure-schedule", help="Replay the sessions of the `satpage compare` run that wrote this "
        "file (satpage-failures/1) and kill its satellites at its scenario times; report the pages "
        "lost beside the engine's (docs/faults.md). --kill, --cut-links, --seed, --sessions, "
        "--seconds, --pages, --constellation do not apply.")] = None,
    strategies: Annotated[str | None, typer.Option(
        "--strategies", help="With --failure-schedule: on-demand and/or proactive (default: those of "
        "the scenario).")] = None,
    target: Annotated[str | None, typer.Option(
        "--target", help="With --failure-schedule: replay through this running gateway (host:port; "
        "a Kubernetes or Swarm deployment) instead of a local cluster started for the run; needs "
        "--kill-command and --replicas (the deployment's R).")] = None,
    tls_dir: Annotated[Path | None, typer.Option(
        "--tls-dir", help="With --target: the client TLS material (ca.pem, client.pem, "
        "client-key.pem; default: $SATPAGE_TLS_DIR, else plain text).")] = None,
    kill_command: Annotated[str | None, typer.Option(
        "--kill-command", help="With --target: the command that takes a satellite's memory and "
        "returns once it serves again; {satellite} becomes its index (run without a shell), e.g. "
        "'satpage cluster kill {satellite}'.")] = None,
    fail_satellite: Annotated[list[int] | None, typer.Option(
        "--fail-satellite", help="With --failure-schedule: kill this satellite instead of the "
        "file's failures (repeatable), at --fail-at.")] = None,
    fail_busiest: Annotated[bool, typer.Option(
        "--fail-busiest", help="With --failure-schedule: at --fail-at, kill the satellite that "
        "holds the most page frames of the replayed sessions then (read from the satellites) "
        "instead of the file's failures.")] = False,
    fail_at: Annotated[float | None, typer.Option(
        "--fail-at", help="Scenario seconds of the --fail-satellite and --fail-busiest kills.")] = None,
    settle: Annotated[float | None, typer.Option(
        "--settle-s", help="With --failure-schedule: wall seconds the replay waits after a killed "
        "satellite serves again, before the next request (default 1 at R >= 2, 0 at R = 1). A "
        "deployment whose satellites come back at a new address needs longer: the others hold it "
        "dead until their next probe reaches it, and route around it meanwhile.")] = None,
    kill: Annotated[int, typer.Option(
        "--kill", help="Satellites to SIGKILL (satnode and its redis-server), one at a time, each "
        "restarted empty.")] = 3,
    cut_links: Annotated[int, typer.Option("--cut-links", help="ISLs to cut at seeded times.")] = 2,
    pause: Annotated[int, typer.Option(
        "--pause", help="Satellites serving a seeded session to pause (SIGSTOP) for --pause-seconds, "
        "longer than the failure detector's bound, then resume (SIGCONT): their sessions are "
        "taken over meanwhile, and fencing keeps them from acknowledging a write when they wake.")] = 0,
    pause_seconds: Annotated[float, typer.Option(
        "--pause-seconds", help="How long each --pause lasts.")] = 6.0,
    partition: Annotated[int, typer.Option(
        "--partition", help="Satellites serving a seeded session to cut off from the gateways and "
        "their ISL neighbours for --partition-seconds (in the daemons' fault layer, as --cut-links), "
        "the ISLs both ways and one way alternately.")] = 0,
    partition_seconds: Annotated[float, typer.Option(
        "--partition-seconds", help="How long each --partition lasts.")] = 6.0,
    gateways: Annotated[int, typer.Option(
        "--gateways", help="Gateway replicas (1-8); a session starts at one and goes on at the "
        "next when its gateway does not answer.")] = 1,
    kill_gateway: Annotated[int, typer.Option(
        "--kill-gateway", help="Gateways to SIGKILL, in turn, each restarted empty after "
        "--restart-after (needs --gateways 2 or more).")] = 0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the workload and the fault schedule.")] = 0,
    sessions: Annotated[int, typer.Option("--sessions", help="Client sessions replayed at once.")] = 8,
    seconds: Annotated[float, typer.Option("--seconds", help="Length of the run; it stops by itself.")] = 60.0,
    constellation: Annotated[str, typer.Option("--constellation", help="Walker spec.")]
    = DEFAULT_CONSTELLATION,
    pages: Annotated[int, typer.Option("--pages", help="Pages per session (Zipf s = 1 popularity).")] = 16,
    restart_after: Annotated[float, typer.Option(
        "--restart-after", help="Seconds a killed satellite stays down before it restarts empty.")] = 1.0,
    kill_serving: Annotated[bool, typer.Option(
        "--kill-serving", help="Every victim is the satellite serving a seeded session when it dies "
        "(the failover case); by default half are the one before it on the session's trail.")] = False,
    history: Annotated[Path | None, typer.Option(
        "--history", help="Where to write the history (satpage-history/1) checked by bin/satcheck.")] = None,
    state_dir: RunStateDir = None,
    keep: Keep = False,
    expect_no_loss: Annotated[bool, typer.Option(
        "--expect-no-loss", help="Exit 1 unless pages_lost == 0, sessions_failed == 0 and the "
        "history is linearizable (the promise of R >= 2 when no two holders of a page die at once); "
        "with --failure-schedule, unless nothing is lost and the counts equal the engine's "
        "failure-free run.")]
    = False,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
    emulate_links: EmulateLinks = True,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Kill satellites and cut ISLs under load on a fresh local cluster (loopback only),
    then check the history with Porcupine and that every acknowledged page is readable."""
    from satpage.cluster.chaos import ChaosConfig, run_chaos
    from satpage.console import stderr

    setup_logging(verbose)
    if failure_schedule is not None:
        _chaos_replay(failure_schedule, replicas, strategies, state_dir, json_out, expect_no_loss,
                      keep=keep, target=target, tls_dir=tls_dir, kill_command=kill_command,
                      fail_satellite=fail_satellite, fail_at=fail_at, fail_busiest=fail_busiest,
                      emulate_links=emulate_links, settle_s=settle)
        return
    if target or kill_command or fail_satellite or fail_busiest or fail_at is not None or settle is not None:
        fail("--target, --kill-command, --fail-satellite, --fail-busiest, --fail-at and --settle-s "
             "need --failure-schedule")
    cfg = ChaosConfig(replicas=2 if replicas is None else replicas, kill=kill, cut_links=cut_links,
                      pause=pause, pause_s=pause_seconds, partition=partition, partition_s=partition_seconds,
                      gateways=gateways, kill_gateway=kill_gateway,
                      seed=seed, sessions=sessions,
                      seconds=seconds, constellation=constellation, pages=pages,
                      restart_after_s=restart_after, kill_serving=kill_serving, state_dir=state_dir,
                      keep=keep, history=history, emulate_links=emulate_links)
    try:
        cfg.check()
    except ValueError as exc:
        fail(str(exc))
    try:
        report = run_chaos(cfg, progress=lambda msg: stderr.print(f"chaos: {msg}", highlight=False))
    except ValueError as exc:
        fail(str(exc))
    if json_out:
        print_json(report)
    else:
        u = report["unavailability_ms"]
        stdout.print(f"chaos R={report['replicas']}: {report['satellites_killed']} killed, "
                     f"{report['links_cut']} ISLs cut, {report['pauses']} paused, {report['partitions']} "
                     f"partitioned, {report['gateway_kills']} gateways killed; {report['requests_total']} requests "
                     f"({report['requests_failed']} failed); pages lost {report['pages_lost']}, "
                     f"sessions failed {report['sessions_failed']}, linearizable {report['linearizable']}; "
                     f"unavailability p50 {u['p50']} ms, p99 {u['p99']} ms")
    if expect_no_loss and (report["pages_lost"] or report["sessions_failed"] or not report["linearizable"]):
        raise typer.Exit(1)


def _chaos_replay(path: Path, replicas: int | None, strategies: str | None, state_dir: Path | None,
                  json_out: bool, expect_no_loss: bool, *, keep: bool = False, target: str | None = None,
                  tls_dir: Path | None = None, kill_command: str | None = None,
                  fail_satellite: list[int] | None = None, fail_at: float | None = None,
                  fail_busiest: bool = False, emulate_links: bool = True,
                  settle_s: float | None = None) -> None:
    """`chaos --failure-schedule FILE`: the simulation's failures on the real cluster."""
    from satpage.cluster.failreplay import COUNT_KEYS, run_schedule_replay
    from satpage.comparator import compare_figures
    from satpage.console import stderr

    if replicas is not None and replicas < 1:
        fail(f"--replicas {replicas} must be at least 1")
    if settle_s is not None and not 0 <= settle_s <= 600:
        fail(f"--settle-s {settle_s} must be between 0 and 600 seconds")
    if (target is None) != (kill_command is None):
        fail("--target and --kill-command go together: a deployment's satellites are killed by the command")
    if target is not None and replicas is None:
        fail("--target needs --replicas: the deployment's R, for the engine's side")
    if tls_dir is not None and not (tls_dir / "ca.pem").is_file():
        fail(f"--tls-dir {str(tls_dir)!r} has no ca.pem")
    names = [n.strip() for n in strategies.split(",") if n.strip()] if strategies else None
    try:
        report = run_schedule_replay(path, replicas=replicas, strategies=names, state_dir=state_dir,
                                     progress=lambda msg: stderr.print(f"chaos: {msg}", highlight=False),
                                     gateway=target, tls_dir=tls_dir, kill_command=kill_command,
                                     satellites=fail_satellite, fail_s=fail_at, busiest=fail_busiest,
                                     emulate_links=emulate_links, keep=keep, settle_s=settle_s)
    except (ValueError, OSError) as exc:
        fail(str(exc))
    if json_out:
        print_json(report)
    else:
        for n, c in report["strategies"].items():
            e = report["engine"][n]
            stdout.print(f"{n} R={report['replicas']}: cluster lost {c['pages_lost']} pages, "
                         f"{c['sessions_hit']} sessions hit ({c['page_tables_lost']} page tables); "
                         f"engine {e['pages_lost']} pages, {e['sessions_hit']} sessions "
                         f"({e['page_tables_lost']} page tables)")
            diff = [f"{r.key} {r.other} vs {r.engine}" for r in compare_figures(e, c, COUNT_KEYS).rows
                    if not r.ok]
            stdout.print(f"  counts {'equal to' if not diff else 'not'} the engine's failure-free run"
                         + (f": {', '.join(diff)}" if diff else ""))
    if expect_no_loss and (any(c["pages_lost"] or c["sessions_hit"] for c in report["strategies"].values())
                           or not all(report["counts_equal"].values())):
        raise typer.Exit(1)
