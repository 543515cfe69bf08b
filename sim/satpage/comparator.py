"""The one comparison of what a backend measured with what the engine computed: the
verdict of ``satpage cluster chaos --failure-schedule``, the live tests and the
end-to-end targets (scripts/e2e-compare.py).

Figures are compared by name. Counts (movements, page-hops, pages lost) must be equal;
a figure that may differ within a bound has a named ``Tolerance``: ``TOLERANCES``, the
fault latencies of an emulated link against the engine's, is what every comparison
uses unless it is given others. Nested figures are named with
dots (``{"fault_latency_ms": {"p50": 3.1}}`` is ``fault_latency_ms.p50``); lists are
compared element by element (the paper's Table I rows).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["EXACT", "TOLERANCES", "Comparison", "ComparisonRow", "Tolerance", "compare_figures",
           "flatten"]


@dataclass(frozen=True)
class Tolerance:
    """How far a figure may lie from the engine's: ``|other - engine| <= abs + rel *
    |engine|`` (in the figure's own unit, as its name says: ms for ``*_ms``)."""

    abs: float = 0.0
    rel: float = 0.0

    def __post_init__(self) -> None:
        if self.abs < 0 or self.rel < 0:
            raise ValueError(f"a tolerance is not negative: abs {self.abs}, rel {self.rel}")

    def allows(self, engine, other) -> bool:
        if isinstance(engine, list | tuple) or isinstance(other, list | tuple):
            return (isinstance(engine, list | tuple) and isinstance(other, list | tuple)
                    and len(engine) == len(other)
                    and all(self.allows(a, b) for a, b in zip(engine, other, strict=True)))
        if not _number(engine) or not _number(other):
            return engine == other
        if self.abs == 0 and self.rel == 0:
            return engine == other
        return abs(other - engine) <= self.abs + self.rel * abs(engine)


#: counts: equal or different
EXACT = Tolerance()

#: The figures that may differ from the engine's, and by how much: the fault latencies
#: measured on the wire of an emulated link, relative to the engine's (the machine wakes
#: late now and then, the relays may take another path of the same hop count:
#: docs/emulation.md). Every other figure is a count: equal or different.
TOLERANCES = {"fault_latency_ms": Tolerance(rel=0.10), "fault_latency_p50_ms": Tolerance(rel=0.10),
              "fault_latency_p99_ms": Tolerance(rel=0.15)}


@dataclass(frozen=True)
class ComparisonRow:
    key: str
    engine: object
    other: object
    tolerance: Tolerance
    ok: bool


@dataclass(frozen=True)
class Comparison:
    """Rows in the order of the keys; ``equal`` when there is one and every row holds."""

    rows: tuple[ComparisonRow, ...]

    @property
    def equal(self) -> bool:
        return bool(self.rows) and all(r.ok for r in self.rows)

    @property
    def different(self) -> list[str]:
        return [r.key for r in self.rows if not r.ok]

    def __getitem__(self, key: str) -> ComparisonRow:
        for r in self.rows:
            if r.key == key:
                return r
        raise KeyError(key)


def _number(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def flatten(figures: Mapping, prefix: str = "") -> dict:
    """Nested mappings as one level, their keys joined with dots."""
    out: dict = {}
    for k, v in figures.items():
        if isinstance(v, Mapping):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def compare_figures(engine: Mapping, other: Mapping, keys: Iterable[str] | None = None, *,
                    tolerances: Mapping[str, Tolerance] | None = None) -> Comparison:
    """Compare other's figures with the engine's: the ``keys`` given (a key missing on
    either side is a row that fails), or else every number or list of numbers the two
    have in common. ``tolerances``: by key (default ``TOLERANCES``); a key without one
    must be equal."""
    e, o = flatten(engine), flatten(other)
    tolerances = TOLERANCES if tolerances is None else tolerances
    if keys is None:
        keys = [k for k, v in o.items() if k in e and (_number(v) or isinstance(v, list))]
    rows = []
    for k in keys:
        tol = tolerances.get(k, EXACT)
        ok = k in e and k in o and tol.allows(e[k], o[k])
        rows.append(ComparisonRow(k, e.get(k), o.get(k), tol, ok))
    return Comparison(tuple(rows))
