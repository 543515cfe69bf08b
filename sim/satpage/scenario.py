"""Scenarios: the TOML files that say what `satpage compare` and `satpage sweep` simulate.

A scenario is one TOML file with a few top-level keys (``name``, ``seed``,
``description``) and one table per section below. Every key is declared here
once, with its type, default and meaning; ``sim/README.md`` documents the same
keys (a test checks that each one is there). Unknown or mistyped keys are
errors that name the key and the file, so a typo never silently falls back to
a default.

Keys are addressed as ``section.key`` (``workload.zipf_s``) by ``--set`` and by
``satpage sweep --vary``; top-level keys by their bare name (``seed``). A plugin
strategy's settings are the table ``[strategies.params.NAME]`` (its keys are the
class's: pager.make_strategy checks them), addressed as
``strategies.params.NAME.KEY``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import tomllib
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any

import pager

__all__ = [
    "Scenario",
    "ConstellationSection",
    "TimeSection",
    "HandoverSection",
    "ClientsSection",
    "SessionsSection",
    "WorkloadSection",
    "NetworkSection",
    "StrategiesSection",
    "RunSection",
    "FaultsSection",
    "BACKGROUND_PROFILES",
    "HANDOVER_POLICIES",
    "load_scenario",
    "parse_scenario",
    "default_scenario_path",
    "shipped_scenario",
    "scenario_keys",
    "with_overrides",
    "parse_override",
    "compared_strategies",
]

log = logging.getLogger(__name__)

BACKGROUND_PROFILES = ("constant", "population")
HANDOVER_POLICIES = ("highest-elevation", "longest-visibility", "nearest", "trail")
_LIFETIMES = ("exponential", "fixed", "uniform")
_STARTS = ("uniform",)
_PLACEMENTS = ("population", "point")


def _doc(text: str, **kw: Any) -> Any:
    return field(metadata={"doc": text}, **kw)


@dataclass(frozen=True)
class ConstellationSection:
    spec: str = _doc("constellation spec: `walker:T/P/F:ALT_KM:INC_DEG`, "
                     "`walker-star:T/P/F:ALT_KM:INC_DEG`, `tle:PATH` (docs/conventions.md), several "
                     "joined with `+`, or a named constellation: `starlink-gen1` (five shells, "
                     "4,408 satellites, docs/orbit-model.md)",
                     default="walker-star:150/10/1:500:87")
    isl_latitude_cutoff_deg: float = _doc(
        "cross-plane ISLs are down while either end is above this absolute latitude "
        "(90 = never down)", default=90.0)


@dataclass(frozen=True)
class TimeSection:
    epoch: str = _doc("scenario epoch, ISO 8601 UTC; time 0 of every integer-ns time",
                      default="2023-06-01T00:00:00Z")
    duration_s: float = _doc("simulated span; sessions start and end inside it",
                             default=21600.0)
    step_s: float = _doc("time step of the handover schedule (visibility is sampled at it)",
                         default=10.0)
    routing_step_s: float = _doc("time step at which ISL hops, delays and paths are "
                                 "recomputed (a transfer uses the snapshot at or before it)",
                                 default=60.0)


@dataclass(frozen=True)
class HandoverSection:
    policy: str = _doc("`highest-elevation`, `longest-visibility`, `nearest`, or `trail` "
                       "(the paper's trail: slots k, k+1, ... of one plane, one hop apart)",
                       default="highest-elevation")
    min_elevation_deg: float = _doc("a satellite can serve a client above this elevation",
                                    default=10.0)
    sticky: bool = _doc("keep the serving satellite while it stays above the minimum "
                        "elevation, apply the policy only when it drops (false: re-apply the "
                        "policy at every step)", default=False)
    trail_visit_s: float = _doc("`trail` policy only: duration of each visit", default=240.0)
    trail_handovers: int = _doc("`trail` policy only: handovers per session (visits - 1)",
                                default=5)
    trail_plane: int = _doc("`trail` policy only: the plane whose slots form the trail",
                            default=0)
    interval_s: float = _doc(
        "scheduled reallocation: every this many seconds a controller reassigns every "
        "client afresh by the policy; between instants a client keeps its satellite unless "
        "it drops below the minimum elevation (a forced handover; `sticky` has no effect). "
        "Starlink: 15 (docs/orbit-model.md). 0 = no schedule: handovers follow the geometry",
        default=0.0)
    phase_s: float = _doc("scheduled reallocation: the instants are phase_s + k x interval_s "
                          "from the epoch (Starlink: 12, i.e. seconds 12, 27, 42 and 57); "
                          "in [0, interval_s), both multiples of time.step_s", default=0.0)


@dataclass(frozen=True)
class ClientsSection:
    placement: str = _doc("`population` (a GPW cell drawn with probability proportional to "
                          "its population, then a uniform point in it) or `point`",
                          default="population")
    source: str = _doc("population source: `default` (the embedded GPW v4.11 2020 grid, "
                       "30 arc-min, data/) or `gpw:PATH`", default="default")
    lat_deg: float = _doc("`point` placement: client latitude", default=0.0)
    lon_deg: float = _doc("`point` placement: client longitude", default=0.0)


@dataclass(frozen=True)
class SessionsSection:
    count: int = _doc("number of sessions (one client each)", default=2000)
    start: str = _doc("distribution of session start times: `uniform` over the span",
                      default="uniform")
    lifetime: str = _doc("distribution of session lifetimes: `exponential`, `fixed`, "
                         "`uniform` (on [0, 2 x mean])", default="exponential")
    lifetime_mean_s: float = _doc("mean session lifetime (ignored by the `trail` policy)",
                                  default=1200.0)


@dataclass(frozen=True)
class WorkloadSection:
    pages: int = _doc("page-table entries per session object", default=1000)
    page_bytes: int = _doc("bytes per page (byte-hops = page_bytes x page-hops)",
                           default=4096)
    zipf_s: float = _doc("Zipf exponent of page popularity, f = a / r^s (0 = uniform)",
                         default=1.0)
    access_rate_per_s: float = _doc("Poisson access rate per session; 0 = use "
                                    "`accesses_per_visit` instead", default=5.0)
    accesses_per_visit: int = _doc("exact accesses per serving satellite (the paper's A), "
                                   "spread evenly over each visit; used when "
                                   "`access_rate_per_s` = 0", default=0)


@dataclass(frozen=True)
class NetworkSection:
    per_hop_processing_ms: float = _doc("processing time added per ISL hop, each way",
                                        default=0.1)
    gateway_lat_deg: float = _doc("`ground-store`: latitude of the ground gateway that "
                                  "holds session objects", default=59.97)
    gateway_lon_deg: float = _doc("`ground-store`: longitude of the ground gateway",
                                  default=11.05)
    load_bins: int = _doc("time bins of the ISL load and pages-held series (also the bins "
                          "of link utilisation and queueing)", default=96)
    isl_capacity_gbps: float = _doc(
        "capacity of every ISL (Gbit/s, both directions together). Default: 100, SpaceX's "
        "figure for a Starlink laser link (T. Brashears, SPIE Photonics West, January 2024, "
        "as reported by PCMag, 31 January 2024)", default=100.0)
    background_load: float = _doc(
        "utilisation of the ISLs by other traffic, as a fraction of capacity in [0, 1): the "
        "same on every link (`constant`) or the peak of a profile following the population "
        "under each link (`population`)", default=0.0)
    background_profile: str = _doc("`constant` or `population` (see background_load)",
                                   default="population")


@dataclass(frozen=True)
class StrategiesSection:
    compare: tuple[str, ...] = _doc("strategies to compare, in report order: "
                                    + ", ".join(f"`{s}`" for s in pager.STRATEGY_NAMES)
                                    + "; a plugin as `module:Class` or by the name of an "
                                    "installed `satpage.strategies` entry point "
                                    "(docs/strategies.md)", default=pager.STRATEGY_NAMES)
    params: dict = _doc("strategies' settings, built-in or plugin: one table per strategy, "
                        "`[strategies.params.NAME]`, NAME its name, its class name or its "
                        "`module:Class` (quoted); the keys are the class's settings "
                        "(`hot-k`: `k`; `push-ahead`: `recent_visits`, `lead_ns`; `custody`: "
                        "`cache_pages`; `idle-link`: `recent_visits`, `lead_ns`, `threshold`) "
                        "and the class validates them; a setting not given keeps the class's "
                        "default", default_factory=dict)


#: [strategies] keys of earlier scenarios, read for compatibility only (files, ``--set``,
#: the config of recorded results): each sets built-in strategies' settings. It is not
#: to grow: a strategy's settings are its class's, in [strategies.params.NAME].
#: key -> (type, ((strategy name, setting), ...), seconds to ns?)
_FLAT_KEYS: dict[str, tuple[type, tuple[tuple[str, str], ...], bool]] = {
    "hot_k": (int, (("hot-k", "k"),), False),
    "push_recent_visits": (int, (("push-ahead", "recent_visits"),
                                 ("idle-link", "recent_visits")), False),
    "push_lead_s": (float, (("push-ahead", "lead_ns"), ("idle-link", "lead_ns")), True),
    "custody_pages": (int, (("custody", "cache_pages"),), False),
    "idle_threshold": (float, (("idle-link", "threshold"),), False),
}


def _flat_settings(key: str, value: Any, source: str) -> list[tuple[str, str, Any]]:
    """(strategy, setting, value) for a flat [strategies] key of earlier scenarios."""
    want, targets, seconds = _FLAT_KEYS[key]
    v = _coerce(f"strategies.{key}", value, want, source)
    if seconds:
        v = int(round(v * 1e9))
    return [(name, setting, v) for name, setting in targets]


def _read_flat_keys(table: dict[str, Any], source: str) -> dict[str, Any]:
    """[strategies] with its flat keys of earlier scenarios moved into ``params`` tables;
    a setting given both ways is an error naming both."""
    flat = [k for k in table if k in _FLAT_KEYS]
    params = table.get("params", {})
    if not flat or not isinstance(params, dict):
        return table
    out = {k: v for k, v in table.items() if k not in _FLAT_KEYS}
    params = {k: dict(v) if isinstance(v, dict) else v for k, v in params.items()}
    for key in flat:
        for name, setting, v in _flat_settings(key, table[key], source):
            t = params.setdefault(name, {})
            if not isinstance(t, dict):
                continue                           # _coerce names the bad table
            if setting in t:
                raise ValueError(f"{source}: strategies.{key} and strategies.params.{name}."
                                 f"{setting} both set {name}'s {setting}: give it once, in "
                                 f"[strategies.params.{name}] (strategies.{key} is the "
                                 "older spelling)")
            t[setting] = v
    out["params"] = params
    return out


@dataclass(frozen=True)
class RunSection:
    chunk_sessions: int = _doc("sessions per work unit; seeds are derived per chunk, so "
                               "results do not depend on the process count", default=250)
    processes: int = _doc("worker processes: 1 = in-process, N > 1 = a Dask LocalCluster of N "
                          "worker processes (`--dask local:N`)", default=1)


@dataclass(frozen=True)
class FaultsSection:
    count: int = _doc("satellite failures: this many distinct satellites, drawn uniformly, "
                      "each failing once at a uniform time in the run (seeded from the "
                      "scenario seed); 0 = none, or use `rate_per_sat_day`", default=0)
    rate_per_sat_day: float = _doc(
        "satellite failures as a Poisson process per satellite while it is up (failures "
        "per satellite-day); an assumption to sweep: no operator publishes on-orbit "
        "failure rates per day (0 = none; give this or `count`)", default=0.0)
    repair_after_s: float = _doc("a failed satellite comes back this long after it failed, "
                                 "with empty memory (0 = failures are permanent)",
                                 default=0.0)
    replicas: int = _doc("replication factor R for every strategy: each page is also held "
                         "by the R-1 satellites behind its owner in its plane "
                         "(docs/faults.md); 1 = the owner only", default=1)
    recovery_s: float = _doc(
        "time from a holder's failure until its replacement holds a copy again (detection + "
        "copy). Assumption: 1 s, the service's failure detection (a dead satellite is "
        "noticed within its probe deadline, docs/faults.md) plus the copy", default=1.0)
    write_share: float = _doc(
        "share of accesses that are writes, each copied to every replica (the workload does "
        "not tell reads from writes; 1 = every access, the upper bound replicate-next "
        "also assumes)", default=1.0)

    @property
    def active(self) -> bool:
        """Failures are drawn or replicas priced (else the fault pass is skipped)."""
        return self.count > 0 or self.rate_per_sat_day > 0 or self.replicas > 1


_SECTIONS: dict[str, type] = {
    "constellation": ConstellationSection,
    "time": TimeSection,
    "handover": HandoverSection,
    "clients": ClientsSection,
    "sessions": SessionsSection,
    "workload": WorkloadSection,
    "network": NetworkSection,
    "strategies": StrategiesSection,
    "run": RunSection,
    "faults": FaultsSection,
}

_TOP_DOCS = {
    "name": "short name recorded in every report",
    "seed": "root seed; every random draw derives from it (numpy SeedSequence)",
    "description": "free text recorded in the report",
}


@dataclass(frozen=True)
class Scenario:
    """A validated scenario; ``source`` is the file it came from (or ``<default>``)."""

    name: str = "default"
    seed: int = 2023
    description: str = ""
    constellation: ConstellationSection = field(default_factory=ConstellationSection)
    time: TimeSection = field(default_factory=TimeSection)
    handover: HandoverSection = field(default_factory=HandoverSection)
    clients: ClientsSection = field(default_factory=ClientsSection)
    sessions: SessionsSection = field(default_factory=SessionsSection)
    workload: WorkloadSection = field(default_factory=WorkloadSection)
    network: NetworkSection = field(default_factory=NetworkSection)
    strategies: StrategiesSection = field(default_factory=StrategiesSection)
    run: RunSection = field(default_factory=RunSection)
    faults: FaultsSection = field(default_factory=FaultsSection)
    source: str = "<default>"

    # -- derived quantities -----------------------------------------------------------------
    @property
    def epoch(self) -> dt.datetime:
        return _parse_epoch(self.time.epoch, self.source)

    @property
    def duration_ns(self) -> int:
        return int(round(self.time.duration_s * 1e9))

    @property
    def step_ns(self) -> int:
        return int(round(self.time.step_s * 1e9))

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (what reports record); ``source`` left out."""
        out: dict[str, Any] = {"name": self.name, "seed": self.seed,
                               "description": self.description}
        for sec in _SECTIONS:
            d = dataclasses.asdict(getattr(self, sec))
            out[sec] = {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}
        if not self.handover.interval_s and not self.handover.phase_s:
            # no scheduled reallocation: the record (and so a report) is what it was
            # before the keys existed
            del out["handover"]["interval_s"], out["handover"]["phase_s"]
        if not self.strategies.params:
            del out["strategies"]["params"]     # a table only when a plugin has settings
        return out

    def get(self, key: str) -> Any:
        """The value of ``section.key`` or a top-level key."""
        if "." not in key:
            _check_key(key, "", self.source)
            return getattr(self, key)
        sec, k = key.split(".", 1)
        _check_key(k, sec, self.source)
        return getattr(getattr(self, sec), k)


def scenario_keys() -> dict[str, str]:
    """Every key a scenario may hold (``section.key`` -> its documentation)."""
    out = dict(_TOP_DOCS)
    for sec, cls in _SECTIONS.items():
        for f in fields(cls):
            out[f"{sec}.{f.name}"] = f.metadata["doc"]
    return out


# -- loading --------------------------------------------------------------------------------

def default_scenario_path() -> Path:
    """The shipped default scenario (inside the package, so it works from any directory)."""
    return shipped_scenario("default")


def shipped_scenario(name: str) -> Path:
    """Path of a scenario shipped with satpage: ``default``, ``paper-mimic``, ``large``,
    ``faults``, ``starlink-15s``."""
    path = Path(str(resources.files("satpage") / "scenarios" / f"{name}.toml"))
    if not path.is_file():
        raise ValueError(f"no shipped scenario named {name!r} (looked for {path})")
    return path


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file; errors name the key and the file."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML: {exc}") from None
    sc = parse_scenario(data, source=str(path))
    return _relative_to(sc, path.parent)


def _relative_to(sc: Scenario, folder: Path) -> Scenario:
    """``tle:PATH`` and ``gpw:PATH`` relative to the scenario file when they exist there
    (a scenario and its data files travel together); else as given (relative to the
    working directory)."""
    def fix(spec: str, prefix: str) -> str:
        rest = spec[len(prefix):]
        if spec.startswith(prefix) and not Path(rest).is_absolute() and (folder / rest).exists():
            return prefix + str(folder / rest)
        return spec

    c = replace(sc.constellation, spec=fix(sc.constellation.spec, "tle:"))
    cl = replace(sc.clients, source=fix(sc.clients.source, "gpw:"))
    return replace(sc, constellation=c, clients=cl)


def parse_scenario(data: dict[str, Any], source: str = "<dict>") -> Scenario:
    """Validate a nested dict (as TOML gives it) into a Scenario."""
    top: dict[str, Any] = {}
    sections: dict[str, Any] = {}
    for key, value in data.items():
        if key in _SECTIONS:
            if not isinstance(value, dict):
                raise ValueError(f"{source}: [{key}] must be a table, got {value!r}")
            if key == "strategies":
                value = _read_flat_keys(value, source)
            sections[key] = _build_section(key, value, source)
        elif key in _TOP_DOCS:
            top[key] = _coerce(key, value, type(getattr(Scenario(), key)), source)
        else:
            raise ValueError(f"{source}: unknown key {key!r} "
                             f"(known: {', '.join(list(_TOP_DOCS) + list(_SECTIONS))})")
    sc = Scenario(**top, **sections, source=source)
    _validate(sc)
    return sc


def _build_section(name: str, table: dict[str, Any], source: str) -> Any:
    cls = _SECTIONS[name]
    known = {f.name: f for f in fields(cls)}
    kwargs = {}
    for key, value in table.items():
        if key not in known:
            hint = ("; a strategy's settings go in [strategies.params.NAME] "
                    "(docs/strategies.md)" if name == "strategies" else "")
            raise ValueError(f"{source}: unknown key {name}.{key!r} "
                             f"(known in [{name}]: {', '.join(known)}{hint})")
        f = known[key]
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        kwargs[key] = _coerce(f"{name}.{key}", value, type(default), source)
    return cls(**kwargs)


def _coerce(key: str, value: Any, want: type, source: str) -> Any:
    """TOML value to the declared type; ints are accepted where floats are declared."""
    if want is bool:
        ok = isinstance(value, bool)
    elif want is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif want is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if ok:
            value = float(value)
    elif want is tuple:
        ok = isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
        if ok:
            value = tuple(value)
    elif want is dict:
        # strategies.params: tables of scalars, one per strategy
        ok = isinstance(value, dict) and all(
            isinstance(t, dict) and all(isinstance(v, bool | int | float | str)
                                        for v in t.values()) for t in value.values())
        if ok:
            value = {str(k): dict(t) for k, t in value.items()}
    else:
        ok = isinstance(value, want)
    if not ok:
        raise ValueError(f"{source}: key {key} must be {_TYPE_NAMES.get(want, want.__name__)}, "
                         f"got {value!r}")
    return value


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false",
               tuple: "a list of strings",
               dict: "tables of settings ([strategies.params.NAME] with numbers, strings, "
                     "true or false)"}


def _parse_epoch(text: str, source: str) -> dt.datetime:
    try:
        epoch = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{source}: time.epoch {text!r} is not an ISO 8601 time") from None
    if epoch.tzinfo is None:
        epoch = epoch.replace(tzinfo=dt.UTC)
    return epoch.astimezone(dt.UTC)


def _validate(sc: Scenario) -> None:
    src = sc.source

    def bad(key: str, value: Any, why: str) -> ValueError:
        return ValueError(f"{src}: {key} = {value!r}: {why}")

    _parse_epoch(sc.time.epoch, src)
    for key in ("time.duration_s", "time.step_s", "time.routing_step_s",
                "sessions.lifetime_mean_s", "handover.trail_visit_s"):
        if not sc.get(key) > 0:
            raise bad(key, sc.get(key), "must be positive")
    if sc.time.step_s > sc.time.duration_s:
        raise bad("time.step_s", sc.time.step_s, "must not exceed time.duration_s")
    for key in ("sessions.count", "workload.pages", "workload.page_bytes",
                "run.chunk_sessions", "run.processes", "network.load_bins"):
        if sc.get(key) <= 0:
            raise bad(key, sc.get(key), "must be a positive integer")
    for key in ("workload.zipf_s", "workload.access_rate_per_s", "workload.accesses_per_visit",
                "network.per_hop_processing_ms",
                "handover.trail_handovers", "handover.trail_plane"):
        if sc.get(key) < 0:
            raise bad(key, sc.get(key), "must not be negative")
    if not sc.network.isl_capacity_gbps > 0:
        raise bad("network.isl_capacity_gbps", sc.network.isl_capacity_gbps, "must be positive")
    if not 0 <= sc.network.background_load < 1:
        raise bad("network.background_load", sc.network.background_load, "must be in [0, 1)")
    if (sc.workload.access_rate_per_s > 0) == (sc.workload.accesses_per_visit > 0):
        raise ValueError(f"{src}: give exactly one of workload.access_rate_per_s "
                         f"({sc.workload.access_rate_per_s!r}) and workload.accesses_per_visit "
                         f"({sc.workload.accesses_per_visit!r}) as positive")
    if not -90 <= sc.handover.min_elevation_deg < 90:
        raise bad("handover.min_elevation_deg", sc.handover.min_elevation_deg,
                  "must be in [-90, 90)")
    _validate_reallocation(sc)
    for key in ("clients.lat_deg", "network.gateway_lat_deg"):
        if not -90 <= sc.get(key) <= 90:
            raise bad(key, sc.get(key), "latitude must be in [-90, 90]")
    for key in ("clients.lon_deg", "network.gateway_lon_deg"):
        if not -180 <= sc.get(key) <= 360:
            raise bad(key, sc.get(key), "longitude must be in [-180, 360]")
    choices = {"handover.policy": HANDOVER_POLICIES, "sessions.lifetime": _LIFETIMES,
               "sessions.start": _STARTS, "clients.placement": _PLACEMENTS,
               "network.background_profile": BACKGROUND_PROFILES}
    for key, allowed in choices.items():
        if sc.get(key) not in allowed:
            raise bad(key, sc.get(key), f"must be one of {', '.join(allowed)}")
    if not sc.strategies.compare:
        raise bad("strategies.compare", [], "name at least one strategy")
    if len(set(sc.strategies.compare)) != len(sc.strategies.compare):
        raise bad("strategies.compare", list(sc.strategies.compare), "names a strategy twice")
    compared_strategies(sc)
    f = sc.faults
    if f.count < 0:
        raise bad("faults.count", f.count, "must not be negative")
    if f.rate_per_sat_day < 0:
        raise bad("faults.rate_per_sat_day", f.rate_per_sat_day, "must not be negative")
    if f.count and f.rate_per_sat_day:
        raise ValueError(f"{src}: give faults.count ({f.count!r}) or faults.rate_per_sat_day "
                         f"({f.rate_per_sat_day!r}), not both")
    for key in ("faults.repair_after_s", "faults.recovery_s"):
        if sc.get(key) < 0:
            raise bad(key, sc.get(key), "must not be negative")
    if f.replicas < 1:
        raise bad("faults.replicas", f.replicas, "must be at least 1")
    if not 0 <= f.write_share <= 1:
        raise bad("faults.write_share", f.write_share, "must be in [0, 1]")
    src_spec = sc.clients.source
    if src_spec != "default" and not src_spec.startswith("gpw:"):
        raise bad("clients.source", src_spec, "must be `default` or `gpw:PATH`")
    spec = sc.constellation.spec
    from orbit_model import NAMED_CONSTELLATIONS
    if not spec.startswith(("walker:", "walker-star:", "tle:")) and spec not in NAMED_CONSTELLATIONS:
        raise bad("constellation.spec", spec,
                  "must start with walker:, walker-star: or tle:, or name one of "
                  + ", ".join(NAMED_CONSTELLATIONS))


def _validate_reallocation(sc: Scenario) -> None:
    ho, src = sc.handover, sc.source
    if ho.interval_s < 0:
        raise ValueError(f"{src}: handover.interval_s = {ho.interval_s!r}: must not be negative")
    if not ho.interval_s:
        if ho.phase_s:
            raise ValueError(f"{src}: handover.phase_s = {ho.phase_s!r} needs "
                             "handover.interval_s")
        return
    if ho.policy == "trail":
        raise ValueError(f"{src}: handover.interval_s = {ho.interval_s!r}: the `trail` policy "
                         "has no reallocation schedule")
    if not 0 <= ho.phase_s < ho.interval_s:
        raise ValueError(f"{src}: handover.phase_s = {ho.phase_s!r}: must be in [0, "
                         f"handover.interval_s = {ho.interval_s!r})")
    for key in ("handover.interval_s", "handover.phase_s"):
        ns = int(round(sc.get(key) * 1e9))
        if ns % sc.step_ns:
            raise ValueError(f"{src}: {key} = {sc.get(key)!r}: must be a multiple of "
                             f"time.step_s = {sc.time.step_s!r} (reallocation happens at steps)")


# -- strategies ----------------------------------------------------------------------------

def compared_strategies(sc: Scenario) -> dict[str, Any]:
    """The pager Strategy object of each entry of ``strategies.compare``, by the name it
    reports under, built from its ``[strategies.params.NAME]`` table (NAME: the entry as
    written, its class name, or its name), the class's defaults for the rest. A table
    for a built-in strategy not compared is checked all the same; one that addresses
    nothing is logged. ValueError names the entry."""
    src = sc.source
    tables = dict(sc.strategies.params)
    out: dict[str, Any] = {}
    for spec in sc.strategies.compare:
        try:
            cls = pager.strategy_class(spec)
        except pager.StrategyError as exc:
            raise ValueError(f"{src}: strategies.compare: {exc}") from None
        keys = [k for k in dict.fromkeys((spec, cls.__name__, getattr(cls, "name", None)))
                if k in tables]
        if len(keys) > 1:
            raise ValueError(f"{src}: strategies.params: tables {', '.join(keys)} all "
                             f"address {spec!r}; give one")
        settings = tables.pop(keys[0]) if keys else {}
        try:
            obj = pager.make_strategy(spec, settings)
        except pager.StrategyError as exc:
            raise ValueError(f"{src}: strategies.compare: {exc}") from None
        if obj.name in out:
            raise ValueError(f"{src}: strategies.compare: {spec!r} reports as {obj.name!r}, "
                             "as another entry does: a strategy is compared once")
        out[obj.name] = obj
    builtin = {**{cls.__name__: name for name, cls in pager.BUILTIN_STRATEGIES.items()},
               **{name: name for name in pager.STRATEGY_NAMES}}
    for key, settings in tables.items():
        if key in builtin:
            try:
                pager.make_strategy(builtin[key], settings)
            except pager.StrategyError as exc:
                raise ValueError(f"{src}: strategies.params.{key}: {exc}") from None
            continue
        log.warning("%s: strategies.params.%s: no compared strategy has this name; its "
                    "settings are not used", src, key)
    return out


# -- overrides (--set and sweeps) -----------------------------------------------------------

def _check_key(key: str, section: str, source: str) -> None:
    full = f"{section}.{key}" if section else key
    if section and section not in _SECTIONS:
        raise ValueError(f"unknown scenario section {section!r} in {full!r} "
                         f"(known: {', '.join(_SECTIONS)})")
    if full not in scenario_keys():
        hint = (f"; a strategy's setting is {_PARAMS_PREFIX}NAME.KEY"
                if section == "strategies" else "")
        raise ValueError(f"unknown scenario key {full!r} ({source}){hint}")


def parse_override(text: str) -> tuple[str, Any]:
    """``section.key=VALUE`` with VALUE parsed as a TOML value (bare words are strings)."""
    if "=" not in text:
        raise ValueError(f"override {text!r} must look like section.key=value")
    key, raw = (s.strip() for s in text.split("=", 1))
    return key, _parse_value(raw)


def _parse_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


_PARAMS_PREFIX = "strategies.params."


def with_overrides(sc: Scenario, overrides: dict[str, Any] | list[tuple[str, Any]]) -> Scenario:
    """A new validated scenario with ``section.key`` values replaced (a plugin's setting:
    ``strategies.params.NAME.KEY``)."""
    items = overrides.items() if isinstance(overrides, dict) else overrides
    data = sc.to_dict()
    for key, value in items:
        flat = key.partition(".")[2] if key.startswith("strategies.") else ""
        if flat in _FLAT_KEYS:                        # an earlier spelling: its settings
            for name, setting, v in _flat_settings(flat, value, "--set"):
                data["strategies"].setdefault("params", {}).setdefault(name, {})[setting] = v
        elif key.startswith(_PARAMS_PREFIX):
            name, _, k = key[len(_PARAMS_PREFIX):].rpartition(".")
            if not name or not k:
                raise ValueError(f"override key {key!r} must look like "
                                 f"{_PARAMS_PREFIX}NAME.KEY")
            data["strategies"].setdefault("params", {}).setdefault(name, {})[k] = value
        elif "." in key:
            sec, k = key.split(".", 1)
            _check_key(k, sec, "--set")
            data[sec][k] = value
        else:
            _check_key(key, "", "--set")
            data[key] = value
    out = parse_scenario(data, source=sc.source)
    return replace(out, source=sc.source)
