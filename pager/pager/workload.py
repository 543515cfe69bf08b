"""Workloads: Zipf page popularity and the paper's trail workload.

The paper's workload (Fongen 2023, Sec. VI): a session object of ``n_pages``
pages; page of popularity rank r (page index r - 1) is accessed with probability
f = a / r**s (s = 0 is uniform); each of the ``handovers + 1`` serving satellites
of the trail sees ``accesses`` independent accesses.

Trail -> satellites: visit i of the paper trail is served by satellite i, which
on the default constellation (walker-star:150/10/1:500:87, index p*S + k) is slot
i of plane 0; slots i and j of one plane are |i - j| in-plane ISL hops apart (for
|i - j| <= S/2 = 7), which is the trail distance the paper's page-hops use.

Sampling: the same compiled sampler feeds the engine's fast path and
``paper_trace``, so a materialised trace holds exactly the accesses the fast path
replays for the same generator state (docs/paging-model.md, "Random streams").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pager import _kernels as K
from pager.trace import Trace

__all__ = [
    "PAPER_ACCESS_INTERVAL_NS",
    "PaperParams",
    "ZipfSampler",
    "paper_key",
    "paper_trace",
    "zipf_probabilities",
]

PAPER_ACCESS_INTERVAL_NS = 1_000_000
"""Scenario time between two accesses of a paper trace (1 ms; the paper gives no
time scale: only the order of accesses matters to the page table)."""

MAX_VISITS = np.iinfo(np.int16).max  # trail positions are int16 in the page table


def zipf_probabilities(n_pages: int, zipf_s: float) -> np.ndarray:
    """float64 (n_pages,): access probability of page index i, proportional to
    (i + 1) ** -zipf_s."""
    n_pages = _positive_int("n_pages", n_pages)
    zipf_s = _exponent(zipf_s)
    ranks = np.arange(1, n_pages + 1, dtype=np.float64)
    weights = ranks ** -zipf_s
    return weights / weights.sum()


@dataclass(frozen=True)
class ZipfSampler:
    """Alias table of a Zipf popularity (Vose's method, 32-bit integer coin).

    A page costs one 64-bit random word: column from the high half by
    multiply-shift, alias coin from the low half. The probabilities it realises
    differ from ``prob`` by at most about n_pages / 2**32 (relative), far below any
    Monte Carlo error this project reports.
    """

    prob: np.ndarray
    threshold: np.ndarray  # uint64 (n,), out of 2**32
    alias: np.ndarray  # int32 (n,)

    @classmethod
    def zipf(cls, n_pages: int, zipf_s: float) -> ZipfSampler:
        prob = zipf_probabilities(n_pages, zipf_s)
        threshold, alias = K.build_alias(prob)
        return cls(prob=prob, threshold=threshold, alias=alias)

    def realised_probabilities(self) -> np.ndarray:
        """float64 (n,): the exact probabilities the integer table draws with
        (up to the multiply-shift column bias)."""
        n = self.prob.size
        keep = self.threshold.astype(np.float64) / 2.0**32
        out = keep / n
        np.add.at(out, self.alias, (1.0 - keep) / n)
        return out


@dataclass(frozen=True)
class PaperParams:
    """Parameters of the paper workload; defaults are the paper's (Sec. VI)."""

    n_pages: int = 1000
    accesses: int = 1000
    handovers: int = 5
    zipf_s: float = 1.0

    def __post_init__(self) -> None:
        _positive_int("n_pages", self.n_pages)
        _positive_int("accesses", self.accesses)
        if not isinstance(self.handovers, int | np.integer) or not (
            0 <= self.handovers < MAX_VISITS
        ):
            raise ValueError(f"handovers must be an integer in [0, {MAX_VISITS - 1}], "
                             f"got {self.handovers!r}")
        _exponent(self.zipf_s)

    @property
    def n_visits(self) -> int:
        return self.handovers + 1

    def sampler(self) -> ZipfSampler:
        return ZipfSampler.zipf(self.n_pages, self.zipf_s)


def paper_key(rng: np.random.Generator) -> np.uint64:
    """The 64-bit key all session streams derive from: one draw from ``rng``."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return np.uint64(rng.integers(0, 2**64, dtype=np.uint64))


def paper_trace(params: PaperParams, runs: int, rng: np.random.Generator, *,
                first_session: int = 0) -> Trace:
    """The paper workload as a Trace: sessions ``first_session ... + runs - 1`` with
    exactly the accesses the engine's fast path (``pager.run_paper``) draws for a
    generator in the same state. Visit i of each session is served by satellite i
    (slot i of plane 0); accesses are ``PAPER_ACCESS_INTERVAL_NS`` apart and a
    visit starts at its first access."""
    runs = _positive_int("runs", runs)
    key = paper_key(rng)
    sampler = params.sampler()
    v, a = params.n_visits, params.accesses
    pages = np.empty((runs, v * a), dtype=np.int32)
    K.paper_pages(key, np.int64(first_session), np.int64(runs), np.int64(v), np.int64(a),
                  sampler.threshold, sampler.alias, pages)
    n_visits = runs * v
    t_visit = np.arange(v, dtype=np.int64) * a * PAPER_ACCESS_INTERVAL_NS
    return Trace(
        n_pages=params.n_pages,
        visit_offsets=np.arange(runs + 1, dtype=np.int64) * v,
        visit_satellite=np.tile(np.arange(v, dtype=np.int32), runs),
        visit_start_ns=np.tile(t_visit, runs),
        access_offsets=np.arange(n_visits + 1, dtype=np.int64) * a,
        access_page=pages.reshape(-1),
        access_time_ns=np.tile(np.arange(v * a, dtype=np.int64) * PAPER_ACCESS_INTERVAL_NS,
                               runs),
    )


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _exponent(value) -> float:
    try:
        s = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"the Zipf exponent must be a number >= 0, got {value!r}") from None
    if not np.isfinite(s) or s < 0:
        raise ValueError(f"the Zipf exponent must be a number >= 0, got {value!r}")
    return s
