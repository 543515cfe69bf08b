"""The failure schedule file (format ``satpage-failures/1``, docs/faults.md): the
satellite failures of a run and the engine's losses for them, for the cluster's chaos
run to replay (`satpage cluster chaos` kills the same satellites at the same scenario
times and compares the pages it loses with R = 1 to ``engine.<strategy>.pages_lost``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

import pager
from satpage.scenario import Scenario

__all__ = ["FORMAT", "failure_schedule_doc", "write_failure_schedule", "read_failure_schedule",
           "read_failure_scenario"]

FORMAT = "satpage-failures/1"

#: per-strategy figures the file carries
ENGINE_KEYS = ("pages_lost", "sessions_hit", "page_tables_lost", "replication_page_hops",
               "replication_bytes")


def failure_schedule_doc(sc: Scenario, schedule: pager.FailureSchedule,
                         strategies: dict[str, dict[str, Any]], version: str,
                         plane: np.ndarray | None = None,
                         slot: np.ndarray | None = None) -> dict[str, Any]:
    """The JSON object of the file (``strategies``: the run's summaries by name)."""
    f = sc.faults
    rows = []
    for i in range(schedule.n_failures):
        s = int(schedule.satellite[i])
        rep = int(schedule.repair_ns[i])
        row: dict[str, Any] = {"satellite": s, "fail_ns": int(schedule.fail_ns[i]),
                               "repair_ns": None if rep == pager.NEVER_NS else rep}
        if plane is not None and slot is not None:
            row["plane"], row["slot"] = int(plane[s]), int(slot[s])
        rows.append(row)
    return {
        "format": FORMAT,
        "scenario": sc.name,
        "scenario_file": sc.source,
        "seed": sc.seed,
        "version": version,
        "constellation": sc.constellation.spec,
        "epoch": sc.time.epoch,
        "duration_ns": sc.duration_ns,
        "replicas": f.replicas,
        "recovery_ns": int(round(f.recovery_s * 1e9)),
        "write_share": f.write_share,
        "failures": rows,
        # the whole scenario, --set and --sessions included: what the chaos replay
        # rebuilds the same sessions from
        "config": sc.to_dict(),
        "engine": {name: {k: s.get(k, 0) for k in ENGINE_KEYS}
                   for name, s in strategies.items()},
    }


def write_failure_schedule(path: str | Path, sc: Scenario, schedule: pager.FailureSchedule,
                           strategies: dict[str, dict[str, Any]], version: str,
                           plane: np.ndarray | None = None,
                           slot: np.ndarray | None = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = failure_schedule_doc(sc, schedule, strategies, version, plane, slot)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def read_failure_schedule(path: str | Path) -> pager.FailureSchedule:
    """The failures of a ``satpage-failures/1`` file; errors name the file and the field."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read a failure schedule: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(f"{path}: format is {got!r}, want {FORMAT!r}")
    rows = doc.get("failures")
    if not isinstance(rows, list):
        raise ValueError(f"{path}: failures must be a list, got {rows!r}")
    sat, fail, rep = [], [], []
    for i, r in enumerate(rows):
        try:
            sat.append(int(r["satellite"]))
            fail.append(int(r["fail_ns"]))
            rep.append(pager.NEVER_NS if r.get("repair_ns") is None else int(r["repair_ns"]))
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{path}: failures[{i}] = {r!r} needs integer satellite and "
                             "fail_ns (repair_ns: integer or null)") from None
    try:
        return pager.FailureSchedule(np.array(sat, np.int32), np.array(fail, np.int64),
                                     np.array(rep, np.int64))
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def read_failure_scenario(path: str | Path) -> Scenario:
    """The scenario that drew the failures of a ``satpage-failures/1`` file (its
    ``config``), so that its sessions can be rebuilt; errors name the file."""
    from satpage.scenario import parse_scenario

    path = Path(path)
    read_failure_schedule(path)  # the format and the failures are checked first
    doc = json.loads(path.read_text())
    cfg = doc.get("config")
    if not isinstance(cfg, dict):
        raise ValueError(f"{path}: no scenario config (written before the chaos replay needed it): "
                         "write it again with `satpage compare ... --failure-schedule FILE`")
    try:
        return parse_scenario(cfg, source=f"{path}#config")
    except ValueError as exc:
        raise ValueError(f"{path}: config: {exc}") from None
