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
    "trail_trace",
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

    def session_pages(self, key, sessions, counts) -> np.ndarray:
        """int32 pages: ``counts[i]`` draws from the stream of session ``sessions[i]``
        (keyed by ``key``, e.g. ``paper_key(rng)``), concatenated in order. A session's
        draws depend only on (key, session), never on which other sessions are drawn
        with it, so chunks of sessions can be drawn anywhere in any grouping."""
        sessions = np.ascontiguousarray(sessions, dtype=np.int64).reshape(-1)
        counts = np.asarray(counts, dtype=np.int64).reshape(-1)
        if counts.size != sessions.size:
            raise ValueError(f"{sessions.size} sessions but {counts.size} counts")
        if counts.size and counts.min() < 0:
            raise ValueError(f"a count is negative: {int(counts.min())}")
        offsets = np.zeros(sessions.size + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        out = np.empty(int(offsets[-1]), dtype=np.int32)
        K.session_pages(np.uint64(key), sessions, offsets, self.threshold, self.alias, out)
        return out

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
    return trail_trace(params, paper_key(rng), runs, first_session=first_session)


def trail_trace(params: PaperParams, key, runs: int, *, first_session: int = 0,
                satellites=None, start_ns=None,
                visit_ns: int | None = None) -> Trace:
    """The paper's trail as a Trace, placed on a constellation: session i (global index
    ``first_session + i``) visits ``satellites[0..handovers]`` in order (default
    0, 1, ...), starting at ``start_ns[i]`` (default 0), each visit ``visit_ns`` long
    (default ``accesses`` x ``PAPER_ACCESS_INTERVAL_NS``) with its ``accesses``
    accesses evenly spaced from the visit start. The pages are the session streams
    of ``key`` that ``pager.run_paper`` draws for the same key, so replaying this
    trace gives ``run_paper``'s counts exactly."""
    runs = _positive_int("runs", runs)
    v, a = params.n_visits, params.accesses
    if visit_ns is None:
        visit_ns = a * PAPER_ACCESS_INTERVAL_NS
    visit_ns = _positive_int("visit_ns", visit_ns)
    sat = np.arange(v, dtype=np.int32) if satellites is None else \
        np.asarray(satellites, dtype=np.int32).reshape(-1)
    if sat.size != v:
        raise ValueError(f"the trail has {v} visits but {sat.size} satellites were given")
    start = np.zeros(runs, np.int64) if start_ns is None else \
        np.broadcast_to(np.asarray(start_ns, dtype=np.int64), (runs,))
    sampler = params.sampler()
    pages = np.empty((runs, v * a), dtype=np.int32)
    K.paper_pages(np.uint64(key), np.int64(first_session), np.int64(runs), np.int64(v),
                  np.int64(a), sampler.threshold, sampler.alias, pages)
    visit_start = (start[:, None] + visit_ns * np.arange(v, dtype=np.int64)[None, :]).reshape(-1)
    within = np.arange(a, dtype=np.int64) * visit_ns // a
    return Trace(
        n_pages=params.n_pages,
        visit_offsets=np.arange(runs + 1, dtype=np.int64) * v,
        visit_satellite=np.tile(sat, runs),
        visit_start_ns=visit_start,
        access_offsets=np.arange(runs * v + 1, dtype=np.int64) * a,
        access_page=pages.reshape(-1),
        access_time_ns=(visit_start[:, None] + within[None, :]).reshape(-1),
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
