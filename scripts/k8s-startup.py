#!/usr/bin/env python3
"""Where a release's start-up went: the satellite pods' phases from kubectl and satnode logs.

Usage: k8s-startup.py PODS.json T0 [LOGDIR [KUBELET_LOG]]

PODS.json is `kubectl get pods -l app.kubernetes.io/component=satellite -o json`, T0 the
epoch seconds of `helm install`, LOGDIR (optional) holds NAME.log with the satnode
container's JSON log of each pod (`kubectl logs -c satnode`), KUBELET_LOG (optional) the
kubelet's own log (klog text). Prints, for each phase, the
seconds after T0 at which the pods reached it (p50, p90, last): created, scheduled, the
TLS init step done (cert-manager or a user's Secret), Redis started, satnode started, and from
the satnode logs "certificate issued" (its certificate from the gateway's signer, with the chart's
generated material), "starting", "serving" and "ready" (state restored), from the kubelet's log the start-up probe's first
success ("startup probe ok": kubelet has seen the container running and probed it), then
Ready (the kubelet's probes). The pod status times have one-second resolution. Last, ``last_ready_s=`` the latest Ready condition
(every pod Ready then); exit 1 when a pod is not Ready, 2 on unreadable input. When LOGDIR
holds gateway.log (the gateway's log), the time its certificate signer began listening too.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path


def _ts(s: str | None) -> float | None:
    if not s:
        return None
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def _started(statuses: list[dict], name: str, key: str = "startedAt") -> float | None:
    for st in statuses or ():
        if st.get("name") == name:
            state = st.get("state", {})
            for phase in ("running", "terminated"):
                if phase in state:
                    return _ts(state[phase].get(key))
    return None


def _condition(pod: dict, kind: str) -> float | None:
    for c in pod["status"].get("conditions", ()):
        if c["type"] == kind and c["status"] == "True":
            return _ts(c.get("lastTransitionTime"))
    return None


def _log_times(path: Path) -> dict[str, float]:
    """The first time each start-up message appears in a satnode's JSON log."""
    found: dict[str, float] = {}
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        msg = rec.get("msg")
        if msg in ("certificate issued", "certificate reused", "starting", "serving", "ready",
                   "certificate signer listening") and msg not in found and rec.get("time"):
            found[msg] = _ts(rec["time"])
        if "restore" in str(msg) and "restore" not in found and rec.get("time"):
            found["restore"] = _ts(rec["time"])  # the restore's outcome (restored / no copy)
    return found


# klog's header: severity, MMDD, wall clock (the kubelet runs in UTC here), e.g.
# I1127 20:09:26.299448 ... "SyncLoop (probe)" probe="startup" status="started" pod="ns/name"
_STARTUP_OK = re.compile(r'^[IWE](\d\d)(\d\d) (\d\d):(\d\d):(\d\d\.\d+) .*"SyncLoop \(probe\)" '
                         r'probe="startup" status="started" pod="[^/"]+/([^"]+)"')


def _kubelet_startup_ok(path: Path, year: int) -> dict[str, float]:
    """The first start-up probe success of each pod in a kubelet log (klog has no year: T0's)."""
    found: dict[str, float] = {}
    with path.open(errors="replace") as f:
        for line in f:
            m = _STARTUP_OK.match(line)
            if m and m.group(6) not in found:
                mo, d, h, mi, s, name = m.groups()
                t = datetime(year, int(mo), int(d), int(h), int(mi), tzinfo=UTC).timestamp() + float(s)
                found[name] = t
    return found


def phases(pods: list[dict], t0: float, logdir: Path | None,
           startup_ok: dict[str, float] | None = None) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}

    def add(key: str, t: float | None) -> None:
        if t is not None:
            out.setdefault(key, []).append(t - t0)

    for p in pods:
        st = p["status"]
        add("created", _ts(p["metadata"].get("creationTimestamp")))
        add("scheduled", _condition(p, "PodScheduled"))
        add("sandbox ready", _condition(p, "PodReadyToStartContainers"))
        add("fetch-tls done", _started(st.get("initContainerStatuses"), "fetch-tls", "finishedAt"))
        add("redis started", _started(st.get("initContainerStatuses"), "redis")
            or _started(st.get("containerStatuses"), "redis"))
        add("satnode started", _started(st.get("containerStatuses"), "satnode"))
        if logdir is not None:
            for msg, t in _log_times(logdir / f"{p['metadata']['name']}.log").items():
                add(f"log {msg}", t)
        if startup_ok is not None:
            add("startup probe ok", startup_ok.get(p["metadata"]["name"]))
        add("Ready", _condition(p, "Ready"))
    return out


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        pods = json.loads(Path(argv[0]).read_text())["items"]
        t0 = float(argv[1])
    except (OSError, ValueError, KeyError) as e:
        print(f"k8s-startup: cannot read {argv[0]!r} / T0 {argv[1]!r}: {e}", file=sys.stderr)
        return 2
    logdir = Path(argv[2]) if len(argv) >= 3 else None
    startup_ok = None
    if len(argv) == 4:
        try:
            startup_ok = _kubelet_startup_ok(Path(argv[3]), datetime.fromtimestamp(t0, UTC).year)
        except OSError as e:
            print(f"k8s-startup: cannot read the kubelet log {argv[3]!r}: {e}", file=sys.stderr)
            return 2
    print(f"start-up phases of {len(pods)} satellite pods, seconds after helm install (p50 / p90 / last):")
    found = phases(pods, t0, logdir, startup_ok)
    for key, xs in found.items():
        print(f"  {key:16s} {_pct(xs, 0.5):7.1f} {_pct(xs, 0.9):7.1f} {max(xs):7.1f}  (n={len(xs)})")
    if logdir is not None and (t := _log_times(logdir / "gateway.log").get("certificate signer listening")):
        print(f"  {'signer listening':16s} {t - t0:7.1f}  (the gateway)")
    ready = found.get("Ready", [])
    if len(ready) != len(pods):
        print(f"k8s-startup: {len(pods) - len(ready)} of {len(pods)} pods are not Ready", file=sys.stderr)
        return 1
    # The last pod's Ready condition (kubelet's time, whole seconds): when every pod was Ready.
    print(f"last_ready_s={max(ready):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
