"""Sweeps: one scenario run at every point of a grid of key values, in this process
or on Dask (satpage.parallel: one task per point).

Each grid point is a whole scenario run (its own seed handling, chunked as
satpage.simulate does), so a point's numbers do not depend on which worker ran
it or how many there were. Rows come back in grid order.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from satpage.scenario import Scenario, parse_override, with_overrides

__all__ = ["parse_vary", "grid_points", "run_sweep", "SWEEP_COSTS"]

log = logging.getLogger(__name__)

#: Costs charted against the varied key (one PNG each).
SWEEP_COSTS = ("page_moves", "page_hops", "byte_hops", "fault_latency_ms",
               "fault_latency_p99_ms", "handover_transfer_bytes", "isl_load_max_bytes",
               "pages_held_max_per_satellite", "pages_left_behind", "pages_lost",
               "sessions_hit", "replication_page_hops")


def parse_vary(text: str) -> tuple[str, list[Any]]:
    """``section.key=v1,v2,...`` -> (key, values); values parsed as TOML (bare words are
    strings). A list value needs brackets: ``strategies.compare=[...]`` is not sweepable."""
    key, _ = parse_override(text.split(",", 1)[0])
    raw = text.split("=", 1)[1]
    values = [parse_override(f"x={v.strip()}")[1] for v in raw.split(",") if v.strip()]
    if not values:
        raise ValueError(f"--vary {text!r} gives no values")
    return key, values


def grid_points(base: Scenario, vary: list[tuple[str, list[Any]]]) -> list[dict[str, Any]]:
    """Every combination of the varied values, validated against the base scenario."""
    keys = [k for k, _ in vary]
    if len(set(keys)) != len(keys):
        raise ValueError(f"--vary names a key twice: {keys}")
    points = [dict(zip(keys, combo, strict=True))
              for combo in itertools.product(*(v for _, v in vary))]
    for p in points:
        with_overrides(base, p)        # fail early, naming the bad key or value
    return points


def _run_point(base: Scenario, point: dict[str, Any]) -> dict[str, Any]:
    from satpage.simulate import run_scenario

    sc = with_overrides(base, point)
    res = run_scenario(sc, processes=1)
    return {"point": point, "strategies": res.summaries(), "wall_s": res.wall_s}


def _run_point_on_worker(base: Scenario, point: dict[str, Any]) -> dict[str, Any]:
    import numba

    numba.set_num_threads(1)  # parallelism comes from the workers
    return _run_point(base, point)


def run_sweep(base: Scenario, vary: list[tuple[str, list[Any]]], processes: int = 1,
              on_point: Callable[[int, int], None] | None = None,
              dask: str | None = None, memory: dict[str, Any] | None = None
              ) -> list[dict[str, Any]]:
    """Rows ``{key: value, ..., "strategy": name, cost: value, ...}`` in grid order.
    ``dask`` (``local[:N]``, ``tcp://HOST:PORT``) runs one task per point; ``processes``
    > 1 alone means ``local:processes``. ``memory``, when given, receives the peak
    resident sets (MB) of this process and of the Dask workers."""
    from satpage.parallel import peak_rss_mb

    points = grid_points(base, vary)
    if dask is None and processes > 1:
        dask = f"local:{processes}"
    results: list[dict[str, Any]] = []
    workers: list[float] = []
    if dask is None:
        for i, p in enumerate(points):
            results.append(_run_point(base, p))
            if on_point:
                on_point(i + 1, len(points))
    else:
        from satpage.parallel import (
            dask_client,
            map_ordered,
            parse_dask,
            ship_plugins,
            workers_peak_rss_mb,
        )

        with dask_client(parse_dask(dask)) as client:
            ship_plugins(client, base)
            results = map_ordered(client, partial(_run_point_on_worker, base), points, on_point)
            workers = workers_peak_rss_mb(client)
    if memory is not None:
        client_mb = round(peak_rss_mb(), 1)
        memory.update(peak_rss_mb=max([client_mb, *workers]), client_peak_rss_mb=client_mb,
                      workers_peak_rss_mb=workers)
    rows = []
    for r in results:
        for name, s in r["strategies"].items():
            rows.append({**r["point"], "strategy": name, **s})
    return rows
