#!/usr/bin/env python3
"""Checks that a change leaves the JSON of compare, paper, and the deterministic parts of
live and chaos the same, timing and version aside.

    scripts/compare-same.py against [REV] [CASE ...]  # run every case at REV and here, diff
    scripts/compare-same.py record DIR [CASE ...]     # run the cases here, write DIR/<case>.json
    scripts/compare-same.py check DIR [CASE ...]      # run them again, diff against DIR

``against`` checks REV (default $BENCH_BASELINE, else bb88a37: the commit before the
one-system work) out in a git worktree, $TMPDIR/satpage-compare-same-REV (kept for the
next run; `git worktree remove` it), and runs each case in it and in this checkout, with this checkout's .venv/bin/python and the tree's own orbit-model, pager
and sim first on PYTHONPATH (as ``bench/bench_compare.py --baseline`` does).

The cases (CASES): ``satpage compare`` on the default scenario, the ``faults`` scenario
and the default scenario with every built-in strategy setting and the link model off
their defaults; ``satpage paper`` (Monte Carlo and exact); and three in-process probes
(PROBE) of what ``live`` and ``chaos`` compute without a cluster:

- ``live-engine``: ``live.engine_counts``, the engine's side of a live run, for every
  strategy the gateway runs, with and without an ISL latitude cut-off, and
  ``live.reference_schedule``;
- ``chaos-isls``: the +Grid ISLs chaos draws its cuts from (with the seed, they fix
  which links a run cuts), for Walker star shells. A Walker delta shell differs on
  purpose: bb88a37's hand-written grid had no links across the seam, and chaos now
  takes orbit_model's, which the Go satellites' grid is checked against (walker:24/3/1
  has 8 seam links more);
- ``chaos-replay-engine``: ``cluster chaos --failure-schedule``'s report with the
  cluster's side replaced by zeros (its replay needs a cluster; the fake is set per
  tree): the failure file ``compare --failure-schedule`` writes, and the engine's
  losses, replication and failure-free counts beside it.

What a cluster answers (the cluster's counts, chaos's requests, its unavailability and
event times) follows the machine's timing and is not compared here: the tests that
start clusters check it against the engine.

Top-level keys that differ from run to run (IGNORED: wall times, the code version, peak
memory) are left out, and file paths are compared by their names (PATH_KEYS); every
other byte of the JSON must be equal; against a baseline, the config echo's
``strategies`` table is compared in its present form (CONFIG_ECHO says why).

Exit 0 when every case is equal, 1 when one differs (the differing dotted keys are
printed, at most 20 per case), 2 on bad arguments.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv" / "bin" / "python"
DEFAULT_REV = os.environ.get("BENCH_BASELINE", "bb88a37")

IGNORED = ("version", "timing_s", "memory")
#: keys whose value is a file path: compared by the file's name (checkouts differ in where they are)
PATH_KEYS = ("scenario_file", "failure_schedule", "state_dir")
#: a probe's parts that hold a command's JSON: masked like it
NESTED = ("report", "failure_file")

CASES: dict[str, list[str]] = {
    "compare-default": ["compare", "default", "--json"],
    "compare-faults": ["compare", "faults", "--sessions", "600", "--json"],
    "compare-settings": ["compare", "default", "--sessions", "600",
                         "--set", "strategies.hot_k=8", "--set", "strategies.push_recent_visits=2",
                         "--set", "strategies.push_lead_s=4.0", "--set", "strategies.custody_pages=16",
                         "--set", "strategies.idle_threshold=0.3",
                         "--set", "network.background_load=0.4", "--set", "network.isl_capacity_gbps=0.2",
                         "--set", "network.load_bins=24", "--json"],
    "paper": ["paper", "--runs", "4000", "--seed", "3", "--json"],
    "paper-exact": ["paper", "--exact", "--json"],
    "live-engine": ["probe", "live-engine"],
    "chaos-isls": ["probe", "chaos-isls"],
    "chaos-replay-engine": ["probe", "chaos-replay-engine"],
}

#: Run in the tree under test (argv[1]: the case's argv as JSON); prints one JSON object.
#: Only names that both the baseline and this tree have are used, and where they moved
#: the probe looks for either.
PROBE = r'''
import json, logging, subprocess, sys
logging.disable(logging.WARNING)
args = json.loads(sys.argv[1])
if args[0] != "probe":
    from satpage.cli import main
    sys.argv = ["satpage", *args]
    main()
    sys.exit(0)
import numpy as np
from satpage.scenario import load_scenario, shipped_scenario, with_overrides
from satpage.simulate import chunk_trace, prepare
what, out = args[1], {}
if what == "live-engine":
    from satpage.live import engine_counts, reference_schedule
    sc = with_overrides(load_scenario(shipped_scenario("default")),
                        {"sessions.count": 12, "time.duration_s": 3600.0})
    ct = chunk_trace(prepare(sc), 0)
    tr = ct.trace
    until = np.asarray(ct.session_end_ns, np.int64) // 2
    spec, epoch = sc.constellation.spec, sc.time.epoch
    for strategy in ("on-demand", "proactive", "push-ahead"):
        for cutoff in (90.0, 53.0):
            key = f"{strategy} cutoff {cutoff:g}"
            out[key] = engine_counts(tr, strategy, spec, epoch, isl_latitude_cutoff_deg=cutoff,
                                     push_lead_ns=5_000_000_000)
            out[key + " until half"] = engine_counts(tr, strategy, spec, epoch,
                                                     isl_latitude_cutoff_deg=cutoff,
                                                     push_lead_ns=5_000_000_000, until_ns=until)
    out["reference_schedule"] = reference_schedule(spec, epoch, 48.1, 11.6, 3600 * 10**9,
                                                   policy="highest", sticky=True,
                                                   min_elevation_deg=25.0)
elif what == "chaos-isls":
    from satpage.cluster import chaos
    from orbit_model import parse_walker_spec
    for spec in ("walker-star:150/10/1:500:87", "walker-star:60/6/1:550:87", "walker-star:30/2/1:500:87"):
        _k, t, planes, *_ = parse_walker_spec(spec)
        if hasattr(chaos, "_isls"):
            links = chaos._isls(t, planes)
        else:
            from satpage.cluster.local import isls
            links = isls(spec)
        out[spec] = [list(map(int, x)) for x in links]
elif what == "chaos-replay-engine":
    import os, tempfile
    from pathlib import Path
    from satpage.cluster import failreplay
    tmp = Path(tempfile.mkdtemp(prefix="compare-same-"))
    f = tmp / "failures.json"
    # the schedule file as `compare --failure-schedule` writes it, in this tree
    subprocess.run([sys.executable, "-c", "from satpage.cli import main; main()", "compare", "faults",
                    "--sessions", "400", "--set", "time.duration_s=7200", "--set", "faults.replicas=2",
                    "--failure-schedule", str(f), "--json"], check=True, capture_output=True, cwd=tmp)
    doc = json.loads(f.read_text())
    zeros = lambda keys: {k: 0 for k in keys}
    if hasattr(failreplay, "replay_with_failures"):          # before: one function per replay
        class _Got:
            counts = zeros(failreplay.COUNT_KEYS)
            kills = []
            def summary(self):
                return zeros(("pages_lost", "sessions_hit", "page_tables_lost"))
        failreplay.replay_with_failures = lambda *a, **k: _Got()
    else:                                                    # now: the cluster Backend
        from satpage import backend
        backend.ClusterBackend.replay = lambda self, *a, **k: backend.ReplayResult(
            counts=zeros(failreplay.COUNT_KEYS), losses=zeros(backend.LOSS_KEYS))
    (tmp / "tls").mkdir()
    (tmp / "tls" / "ca.pem").write_text("")
    rep = failreplay.run_schedule_replay(f, replicas=2, gateway="127.0.0.1:1", tls_dir=tmp / "tls",
                                         kill_command="true {satellite}")
    for k in ("strategies", "equal", "counts_equal", "kills", "target"):
        rep.pop(k, None)                                     # the fake cluster's side
    out = {"failure_file": doc, "report": rep}
print(json.dumps(out))
'''

#: ``compare``'s ``config`` echoes the scenario. Its ``strategies`` table has another
#: shape since bb88a37: that echoed one flat table of built-in settings (hot_k,
#: push_recent_visits, push_lead_s in seconds, custody_pages, idle_threshold), while each
#: strategy now reads its settings from [strategies.params.NAME] (lead_ns in ns) and the
#: echo lists those tables. Echoing the flat keys again would bring back the spelling the
#: params tables replaced, so the shape is the one intended difference. Against a
#: baseline, both echoes are compared in the new form: the baseline's flat keys go
#: through the scenario reader's own conversion of earlier files
#: (``satpage.scenario._read_flat_keys``), and the tables are sorted by name.
CONFIG_ECHO = ("config", "strategies")


def _settings_as_tables(echo: dict) -> dict:
    """A config echo's ``strategies`` in the params form, tables sorted (CONFIG_ECHO)."""
    from satpage.scenario import _read_flat_keys

    table = _read_flat_keys({**echo, "params": echo.get("params", {})}, "baseline config")
    params = table.get("params") or {}
    return {**table, "params": {n: dict(sorted(params[n].items())) for n in sorted(params)}}


def masked(data: dict, *, baseline: bool) -> dict:
    out = {k: (masked(v, baseline=baseline) if k in NESTED and isinstance(v, dict) else v)
           for k, v in data.items() if k not in IGNORED}
    for k in PATH_KEYS:
        if isinstance(out.get(k), str):
            out[k] = Path(out[k]).name
    cfg = out.get(CONFIG_ECHO[0])
    if baseline and isinstance(cfg, dict) and isinstance(cfg.get(CONFIG_ECHO[1]), dict):
        out[CONFIG_ECHO[0]] = {**cfg, CONFIG_ECHO[1]: _settings_as_tables(cfg[CONFIG_ECHO[1]])}
    return out


def run(case: str, tree: Path, *, baseline: bool = False) -> str:
    """The case's JSON in ``tree``, masked, as canonical text."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        str(tree / d) for d in ("orbit-model", "pager", "sim")))
    with tempfile.TemporaryDirectory(prefix="compare-same-") as cwd:   # outputs stay out of the trees
        done = subprocess.run([str(PYTHON), "-c", PROBE, json.dumps(CASES[case])], cwd=cwd, env=env,
                              capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{case} in {tree}: exit {done.returncode}:\n{done.stderr[-3000:]}")
    data = json.loads(done.stdout)
    return json.dumps(masked(data, baseline=baseline), indent=1) + "\n"


def differences(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in list(dict.fromkeys([*a, *b])):
            key = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                out.append(f"{key}: only in {'new' if k in b else 'recorded'}")
            else:
                out.extend(differences(a[k], b[k], key))
        if not out and list(a) != list(b):
            out.append(f"{path or '(top)'}: same keys in another order")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in differences(x, y, f"{path}[{i}]")]
    return [] if json.dumps(a) == json.dumps(b) else [f"{path}: recorded {a!r}, new {b!r}"]


def report(case: str, want: str, got: str) -> bool:
    if got == want:
        print(f"{case}: same ({len(got):,} bytes)", flush=True)
        return True
    diffs = differences(json.loads(want), json.loads(got)) or ["(bytes differ)"]
    print(f"{case}: DIFFERENT in {len(diffs)} place(s)", flush=True)
    for d in diffs[:20]:
        print(f"  {d}")
    return False


def against(rev: str, cases: list[str]) -> int:
    # the baseline's worktree stays for the next run (its Numba caches with it)
    tree = Path(tempfile.gettempdir()) / f"satpage-compare-same-{rev}"
    if not (tree / "sim").is_dir():
        done = subprocess.run(["git", "worktree", "add", "--detach", str(tree), rev], cwd=ROOT,
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"compare-same: cannot check out {rev!r}: {done.stderr.strip()}", file=sys.stderr)
            return 2
    bad = 0
    for case in cases:
        before = run(case, tree, baseline=True)
        bad += not report(case, before, run(case, ROOT, baseline=True))
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("against", "record", "check") or (argv[0] != "against" and len(argv) < 2):
        print(__doc__, file=sys.stderr)
        return 2
    mode, rest = argv[0], argv[1:]
    if mode == "against":
        rev = rest.pop(0) if rest and rest[0] not in CASES else DEFAULT_REV
    else:
        folder = Path(rest.pop(0))
    unknown = [c for c in rest if c not in CASES]
    if unknown:
        print(f"compare-same: unknown case {unknown[0]!r} (cases: {', '.join(CASES)})", file=sys.stderr)
        return 2
    cases = rest or list(CASES)
    if mode == "against":
        return against(rev, cases)
    if mode == "check" and not folder.is_dir():
        print(f"compare-same: {folder}: no such folder (run `record` first)", file=sys.stderr)
        return 2
    folder.mkdir(parents=True, exist_ok=True)
    bad = 0
    for case in cases:
        got = run(case, ROOT)
        path = folder / f"{case}.json"
        if mode == "record":
            path.write_text(got)
            print(f"{case}: recorded {path}")
        else:
            bad += not report(case, path.read_text(), got)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
