"""The paper's quantities (Fongen 2023, Table I and Sec. VI-A): counts over runs,
their exact expectation, and the one summary every backend prints.

Quantities, for a trail of V = H + 1 serving satellites (visits 0..H):

- ``rows`` (V, V): pages held by satellite j at the end of visit k, j <= k
  (Table I; row k < H is "just before handover k + 1", row H is the end)
- ``totals`` (V,): pages in existence at the end of each visit (row sums)
- ``last_row`` (V,): pages held by satellite 0..H at the end (row H)
- ``ondemand_moves`` / ``ondemand_hops``: page movements on access under on-demand,
  and the same weighted by trail distance (page-hops)
- ``proactive_moves`` / ``proactive_hops``: the whole object moved one hop at each
  of the H handovers (equal to each other on the trail)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import stdtrit  # Student t quantile (scipy.stats costs 0.3 s more to import)

from pager.workload import PaperParams, zipf_probabilities

__all__ = [
    "PAPER_QUANTITIES",
    "Moments",
    "PaperCounts",
    "PaperExpectation",
    "exact_paper",
    "json_floats",
    "paper_summary",
    "table_movements",
]

PAPER_QUANTITIES = ("totals", "last_row", "proactive_moves", "ondemand_moves",
                    "ondemand_hops", "proactive_hops")
"""The keys every backend reports (``rows`` is optional: a backend that cannot
snapshot the trail after each visit leaves it out)."""


@dataclass(frozen=True)
class Moments:
    """Count, sum and sum of squares of one quantity over runs (any shape).

    Sums are exact integers as long as the inputs are integer, so merging chunks in
    any order gives the same result."""

    n: int
    total: np.ndarray
    total_sq: np.ndarray

    @classmethod
    def of(cls, values: np.ndarray) -> Moments:
        """Moments of ``values`` (runs, ...)."""
        x = np.asarray(values)
        if x.ndim < 1 or x.shape[0] < 1:
            raise ValueError(f"need at least one run, got shape {x.shape}")
        if np.issubdtype(x.dtype, np.integer):
            x = x.astype(np.int64)
            return cls(x.shape[0], x.sum(axis=0), (x * x).sum(axis=0))
        x = x.astype(np.float64)
        return cls(x.shape[0], x.sum(axis=0), (x * x).sum(axis=0))

    def merge(self, other: Moments) -> Moments:
        return Moments(self.n + other.n, self.total + other.total,
                       self.total_sq + other.total_sq)

    @property
    def mean(self) -> np.ndarray:
        return np.asarray(self.total, dtype=np.float64) / self.n

    @property
    def sd(self) -> np.ndarray:
        """Sample standard deviation of one run (NaN for a single run)."""
        if self.n < 2:
            return np.full(np.shape(self.total), np.nan)
        mean = self.mean
        var = (np.asarray(self.total_sq, dtype=np.float64) - mean * self.total) / (self.n - 1)
        return np.sqrt(np.maximum(var, 0.0))

    @property
    def ci95(self) -> np.ndarray:
        """Half-width of the 95 % confidence interval of the mean (Student t)."""
        if self.n < 2:
            return np.full(np.shape(self.total), np.nan)
        return stdtrit(self.n - 1, 0.975) * self.sd / math.sqrt(self.n)


@dataclass(frozen=True)
class PaperCounts:
    """The paper's quantities accumulated over runs (see the module docstring)."""

    totals: Moments
    last_row: Moments
    proactive_moves: Moments
    ondemand_moves: Moments
    ondemand_hops: Moments
    proactive_hops: Moments
    rows: Moments | None = None

    @classmethod
    def from_runs(cls, *, totals, last_row, proactive_moves, ondemand_moves, ondemand_hops,
                  proactive_hops, rows=None) -> PaperCounts:
        """From per-run arrays: totals and last_row (runs, H + 1), the scalars (runs,),
        rows (runs, H + 1, H + 1) or None. This is how a backend that replays runs one
        by one (e.g. a deployed cluster) hands its counts to ``paper_summary``."""
        totals = np.asarray(totals)
        if totals.ndim != 2:
            raise ValueError(f"totals must have shape (runs, H + 1), got {totals.shape}")
        runs, v = totals.shape
        shapes = {"last_row": (runs, v), "proactive_moves": (runs,), "ondemand_moves": (runs,),
                  "ondemand_hops": (runs,), "proactive_hops": (runs,)}
        got = {"last_row": last_row, "proactive_moves": proactive_moves,
               "ondemand_moves": ondemand_moves, "ondemand_hops": ondemand_hops,
               "proactive_hops": proactive_hops}
        for name, shape in shapes.items():
            if np.shape(got[name]) != shape:
                raise ValueError(f"{name} has shape {np.shape(got[name])}, want {shape}")
        if rows is not None and np.shape(rows) != (runs, v, v):
            raise ValueError(f"rows has shape {np.shape(rows)}, want {(runs, v, v)}")
        return cls(
            totals=Moments.of(totals),
            rows=None if rows is None else Moments.of(rows),
            **{name: Moments.of(np.asarray(got[name])) for name in shapes},
        )

    @property
    def runs(self) -> int:
        return self.totals.n

    @property
    def n_visits(self) -> int:
        return int(np.shape(self.totals.total)[0])

    def merge(self, other: PaperCounts) -> PaperCounts:
        rows = None
        if self.rows is not None and other.rows is not None:
            rows = self.rows.merge(other.rows)
        return PaperCounts(
            rows=rows,
            **{name: getattr(self, name).merge(getattr(other, name))
               for name in PAPER_QUANTITIES},
        )


@dataclass(frozen=True)
class PaperExpectation:
    """Exact expected values of the paper's quantities (``exact_paper``)."""

    params: PaperParams
    rows: np.ndarray  # (V, V), zero above the diagonal
    totals: np.ndarray
    last_row: np.ndarray
    proactive_moves: float
    ondemand_moves: float
    ondemand_hops: float
    proactive_hops: float
    ondemand_moves_per_visit: np.ndarray = field(repr=False)  # (V,), 0 for visit 0
    ondemand_hops_per_visit: np.ndarray = field(repr=False)


def exact_paper(params: PaperParams) -> PaperExpectation:
    """Closed-form expectations for the independent-reference Zipf model, no sampling.

    With q_p the access probability of page p and A accesses per visit, page p is
    touched in a visit with probability pi_p = 1 - (1 - q_p)**A, independently from
    visit to visit. It is held by satellite j at the end of visit k >= j iff it was
    touched in visit j and in none of j+1..k; it moves into visit k from visit j < k
    iff touched in j, in none of j+1..k-1, and in k. Hence (docs/paging-model.md):

      E rows[k, j]      = sum_p pi_p (1 - pi_p)**(k - j)
      E totals[k]       = sum_p 1 - (1 - pi_p)**(k + 1)
      E moves into k    = sum_p pi_p (1 - (1 - pi_p)**k)
      E hops into k     = sum_p sum_{j<k} (k - j) pi_p**2 (1 - pi_p)**(k - 1 - j)
      E proactive moves = E proactive hops = sum_{k<H} E totals[k]
    """
    q = zipf_probabilities(params.n_pages, params.zipf_s)
    # pi = 1 - (1 - q)^A without cancellation for tiny q (q = 1, a one-page object,
    # gives log1p(-1) = -inf and pi = 1 exactly).
    with np.errstate(divide="ignore"):
        pi = -np.expm1(params.accesses * np.log1p(-q))
    stay = 1.0 - pi
    v = params.n_visits
    d = np.arange(v)
    # stay_pow[d, p] = (1 - pi_p)^d
    stay_pow = stay[None, :] ** d[:, None]
    kk, jj = np.meshgrid(d, d, indexing="ij")
    lower = jj <= kk
    rows = np.where(lower, (pi[None, :] * stay_pow).sum(axis=1)[np.where(lower, kk - jj, 0)],
                    0.0)
    totals = (1.0 - stay[None, :] * stay_pow).sum(axis=1)  # 1 - stay^(k+1)
    moves_k = np.zeros(v)
    hops_k = np.zeros(v)
    for k in range(1, v):
        moves_k[k] = (pi * (1.0 - stay ** k)).sum()
        gaps = np.arange(1, k + 1)  # k - j for j = k-1 .. 0
        hops_k[k] = (gaps[:, None] * pi[None, :] ** 2 * stay_pow[gaps - 1]).sum()
    proactive = float(totals[:-1].sum())
    return PaperExpectation(
        params=params, rows=rows, totals=totals, last_row=rows[-1].copy(),
        proactive_moves=proactive, ondemand_moves=float(moves_k.sum()),
        ondemand_hops=float(hops_k.sum()), proactive_hops=proactive,
        ondemand_moves_per_visit=moves_k, ondemand_hops_per_visit=hops_k,
    )


def table_movements(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """On-demand movements and page-hops into each visit, read off a Table I
    triangle (V, V): under on-demand a page leaves satellite j only by moving to the
    serving satellite, so rows[k-1, j] - rows[k, j] pages moved j -> k (k - j hops).
    Works on one run's table (the paper's) and on mean tables alike."""
    r = np.asarray(rows, dtype=np.float64)
    v = r.shape[0]
    moves = np.zeros(v)
    hops = np.zeros(v)
    for k in range(1, v):
        left = r[k - 1, :k] - r[k, :k]
        moves[k] = left.sum()
        hops[k] = (left * (k - np.arange(k))).sum()
    return moves, hops


def json_floats(x: Any) -> Any:
    """Floats (or nested lists of them) for JSON: NaN (undefined, e.g. a CI from one run) becomes None."""
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim == 0:
        f = float(arr)
        return None if math.isnan(f) else f
    return [json_floats(e) for e in arr]


def paper_summary(counts: PaperCounts | PaperExpectation, *, params: PaperParams,
                  seed: int | None, version: str, backend: str = "engine",
                  extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON object ``satpage paper --json`` prints, from Monte Carlo counts
    (means, 95 % CI half-widths ``*_ci95`` and one-run standard deviations ``*_sd``)
    or from the exact expectation (``*_ci95`` = 0, ``runs`` null)."""
    out: dict[str, Any] = {
        "method": "exact" if isinstance(counts, PaperExpectation) else "monte-carlo",
        "backend": backend,
        "runs": counts.runs if isinstance(counts, PaperCounts) else None,
        "seed": seed,
        "version": version,
        "parameters": {"pages": params.n_pages, "accesses": params.accesses,
                       "handovers": params.handovers, "zipf": params.zipf_s},
    }
    names = PAPER_QUANTITIES + ("rows",)
    for name in names:
        value = getattr(counts, name)
        if value is None:
            continue
        if isinstance(value, Moments):
            mean, ci, sd = value.mean, value.ci95, value.sd
        else:
            mean = np.asarray(value, dtype=np.float64)
            ci = sd = np.zeros_like(mean)
        if name == "rows":
            # Table I is a triangle: row k lists satellites 0..k.
            out[name] = [json_floats(mean[k, : k + 1]) for k in range(mean.shape[0])]
            out[f"{name}_ci95"] = [json_floats(ci[k, : k + 1]) for k in range(mean.shape[0])]
            continue
        out[name] = json_floats(mean)
        out[f"{name}_ci95"] = json_floats(ci)
        out[f"{name}_sd"] = json_floats(sd)
    pm, om, oh = out["proactive_moves"], out["ondemand_moves"], out["ondemand_hops"]
    ph = out["proactive_hops"]
    out["ondemand_over_proactive_moves"] = om / pm if pm else None
    out["ondemand_over_proactive_hops"] = oh / ph if ph else None
    if extra:
        out.update(extra)
    return out
