"""Parallel work on Dask (``dask.distributed``): the one engine for more than one process.

``--dask local[:N]`` starts a LocalCluster of N worker processes (one thread each,
default: the CPU count) on loopback for the run; ``--dask tcp://HOST:PORT`` uses a
running scheduler (``dask scheduler`` + ``dask worker`` on any number of hosts,
dask-jobqueue on SLURM/PBS, dask-kubernetes; docs/scale.md). ``run.processes = N``
(or ``--processes N``) with N > 1 and no ``--dask`` means ``local:N``.

Tasks: ``satpage compare`` submits groups of consecutive chunks; each returns its
per-strategy cost accumulators (satpage.costs: integer sums, maxima and
histograms), which the client merges as they complete: any completion order gives
the same totals. ``satpage sweep`` submits one task per grid point. The large
read-only inputs of a run (satellites, routing, the session table) are built once
per worker from the scenario (``_world``), not shipped per task, and each worker
propagates only the time blocks of its own chunks (satpage.geometry.PositionCache):
they are derived deterministically from the scenario and its seed, so every worker
builds the same World as the client would.

Plugin strategies (``module:Class``, docs/strategies.md) are code the workers must
import too: ``ship_plugins`` sends each plugin's top-level module (a ``.py`` file, or
its package folder as a zip) to every worker, present and future, as a Dask worker
plugin before any task runs, so a ``tcp://`` cluster on other hosts runs them as a
LocalCluster does. Entry-point plugins are installed packages: install them on the
workers as satpage itself is.
"""

from __future__ import annotations

import importlib
import itertools
import logging
import os
import re
import resource
import sys
import sysconfig
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from distributed import Client

    from satpage.scenario import Scenario
    from satpage.simulate import ChunkResult, World

__all__ = ["DaskTarget", "DaskUnreachable", "parse_dask", "dask_client", "chunk_groups",
           "run_chunks", "map_ordered", "peak_rss_mb", "workers_peak_rss_mb", "ship_plugins",
           "plugin_files"]

log = logging.getLogger(__name__)

_LOCAL = re.compile(r"^local(?::(\d+))?$")
_ADDRESS = re.compile(r"^(tcp|tls|inproc|ucx|ws|wss)://\S+:\d+$")


class DaskUnreachable(ValueError):
    """No Dask scheduler answers at the address given (the message names it)."""


@dataclass(frozen=True)
class DaskTarget:
    """Where parallel work runs: a LocalCluster of ``n_workers`` processes, or the
    scheduler at ``address``."""

    text: str
    n_workers: int | None = None
    address: str | None = None


def parse_dask(text: str) -> DaskTarget:
    """``local``, ``local:N`` (N >= 1) or ``tcp://HOST:PORT``; ValueError quotes the text."""
    t = text.strip()
    m = _LOCAL.match(t)
    if m:
        n = int(m.group(1)) if m.group(1) else (os.cpu_count() or 1)
        if n < 1:
            raise ValueError(f"--dask {text!r}: need at least 1 worker")
        return DaskTarget(text=f"local:{n}", n_workers=n)
    if _ADDRESS.match(t):
        return DaskTarget(text=t, address=t)
    raise ValueError(f"--dask {text!r} is not local, local:N or tcp://HOST:PORT")


@contextmanager
def dask_client(target: DaskTarget) -> Iterator[Client]:
    """A Client for ``target``; a LocalCluster is started (and stopped) here."""
    from distributed import Client, LocalCluster

    # the scheduler's and workers' INFO lines (start, stop) are not the run's news
    if not log.isEnabledFor(logging.DEBUG):
        logging.getLogger("distributed").setLevel(logging.WARNING)
    if target.address is not None:
        try:
            import dask
            # the connect timeout of the Dask configuration (30 s unless set)
            client = Client(target.address,
                            timeout=dask.config.get("distributed.comm.timeouts.connect"))
        except (OSError, TimeoutError) as exc:
            raise DaskUnreachable(f"--dask {target.address!r}: no scheduler answers "
                                  f"({exc})") from None
        with client:
            if not client.scheduler_info(n_workers=-1)["workers"]:
                log.warning("the scheduler at %s has no workers yet: tasks wait for one",
                            target.address)
            yield client
        return
    # one thread per worker: the engine's numba kernels are the parallelism, per process;
    # the dashboard on a free loopback port (8787 may be taken by another cluster)
    # and no statistical profiler in the workers: it samples the task's stack every
    # 10 ms, about 3 % of a compare's CPU (measured), for a dashboard no one reads here
    import dask
    with (dask.config.set({"distributed.worker.profile.enabled": False}),
          LocalCluster(n_workers=target.n_workers, threads_per_worker=1, processes=True,
                       host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster,
          Client(cluster) as client):
        yield client


# -- plugin strategies on the workers ---------------------------------------------------------
def plugin_files(sc: Scenario, folder: str) -> list[str]:
    """The files that carry the scenario's ``module:Class`` plugins: each plugin's top-level
    module as its ``.py`` file, or its package folder zipped into ``folder``. Modules
    installed in site-packages are left out (the workers install them as satpage)."""
    import pager

    installed = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")}
    out: list[str] = []
    for spec in sc.strategies.compare:
        name = pager.plugin_module(spec)
        if name is None:
            continue
        top = name.split(".")[0]
        pager.strategy_class(spec)               # imported (a bad plugin fails here)
        module = sys.modules.get(top) or importlib.import_module(top)
        file = getattr(module, "__file__", None)
        if file is None:
            continue
        path = os.path.realpath(file)
        if any(path.startswith(d + os.sep) for d in installed):
            continue
        if os.path.basename(path) == "__init__.py":
            package = os.path.dirname(path)
            zpath = os.path.join(folder, f"{top}.zip")
            with zipfile.ZipFile(zpath, "w") as z:
                for root, dirs, files in os.walk(package):
                    dirs[:] = [d for d in dirs if d != "__pycache__"]
                    for f in files:
                        full = os.path.join(root, f)
                        z.write(full, os.path.relpath(full, os.path.dirname(package)))
            path = zpath
        if path not in out:
            out.append(path)
    return out


def ship_plugins(client: Client, sc: Scenario) -> int:
    """Send the scenario's ``module:Class`` plugins to every worker (``plugin_files``),
    imported there before any task: workers on other hosts have no copy of a module in
    the client's working directory. Worker plugins only: the scheduler never imports
    them (in a LocalCluster it runs in this process). Returns the number of files."""
    from distributed.diagnostics.plugin import UploadFile

    with tempfile.TemporaryDirectory(prefix="satpage-plugins-") as tmp:
        files = plugin_files(sc, tmp)
        for path in files:
            client.register_plugin(UploadFile(path, load=True),
                                   name=f"satpage-plugin-{os.path.basename(path)}")
    return len(files)


# -- per-worker state ----------------------------------------------------------------------------
_WORLDS: dict[str, World] = {}


def _scenario_key(sc: Scenario) -> str:
    import json
    return json.dumps(sc.to_dict(), sort_keys=True, default=str) + f"|{sc.seed}"


def _world(sc: Scenario) -> World:
    """The World of ``sc``, built once per worker process (kept for the last scenario only,
    so a sweep's worker holds one World at a time)."""
    key = _scenario_key(sc)
    w = _WORLDS.get(key)
    if w is None:
        import numba

        from satpage.allocator import tune_allocator
        from satpage.simulate import prepare
        # parallelism comes from the workers: one engine thread each avoids oversubscription
        numba.set_num_threads(1)
        # the nanny's MALLOC_TRIM_THRESHOLD_ would make every chunk's arrays fresh
        # mappings, zeroed page by page (satpage.allocator)
        tune_allocator()
        _WORLDS.clear()
        w = _WORLDS[key] = prepare(sc)
    return w


def _chunk_group(sc: Scenario, start: int, stop: int,
                 waits: dict[str, np.ndarray] | None) -> ChunkResult:
    """Chunks ``start..stop-1`` accumulated in the worker: one result per group.
    ``waits``: the queueing waits of a second pass (satpage.simulate.run_scenario)."""
    from satpage.simulate import STAGES, ChunkResult, _new_acc, run_chunk

    w = _world(sc)
    into = {name: _new_acc(w) for name in w.strategies()}
    total = ChunkResult(start, into, dict.fromkeys(STAGES, 0.0), 0, 0)
    for i in range(start, stop):
        r = run_chunk(w, i, into, waits)
        for k, v in r.stage_s.items():
            total.stage_s[k] += v
        total.uncovered_steps += r.uncovered_steps
        total.client_steps += r.client_steps
    return total


def chunk_groups(n_chunks: int, n_workers: int) -> list[tuple[int, int]]:
    """Consecutive chunk ranges ``(start, stop)`` covering ``0..n_chunks-1``: four per
    worker (fewer when there are fewer chunks), so that few accumulators (11 MB per
    strategy at Starlink scale) travel back, of sizes that differ by at most one chunk,
    the larger first. The scheduler hands groups to workers as they free up, so every
    worker ends within about one chunk of the others. Measured at 100,000 sessions on
    starlink-gen1 with two workers (docs/scale.md): four per worker 116 s, two per worker
    127 s, guided self-scheduling (large groups first) 125 s; groups of one size but a
    short last one left one worker idle for 8.6 s of a 104.6 s run."""
    k = max(1, min(n_chunks, 4 * max(1, n_workers)))
    q, r = divmod(n_chunks, k)
    sizes = [q + 1] * r + [q] * (k - r)
    bounds = [0, *itertools.accumulate(sizes)]
    return [(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]


def run_chunks(client: Client, sc: Scenario, n_chunks: int,
               absorb: Callable[[ChunkResult, int], None],
               waits: dict[str, np.ndarray] | None = None) -> None:
    """Submit the chunks of ``sc`` in groups (``chunk_groups``: four per worker) and
    ``absorb(result, chunks_done)`` each as it completes.
    ``waits`` (per strategy, links x bins: megabytes at constellation scale) go to every
    worker once, not with every task."""
    from distributed import as_completed

    n_workers = max(1, len(client.scheduler_info(n_workers=-1)["workers"]))
    ship_plugins(client, sc)
    groups = chunk_groups(n_chunks, n_workers)
    shared = client.scatter(waits, broadcast=True) if waits is not None else None
    futures = [client.submit(_chunk_group, sc, a, b, shared, pure=False)
               for a, b in groups]
    span = {f.key: b - a for f, (a, b) in zip(futures, groups, strict=True)}
    done = 0
    for fut in as_completed(futures):
        result = fut.result()
        done += span[fut.key]
        absorb(result, done)
        fut.release()  # the worker may drop the accumulators now


def map_ordered(client: Client, fn: Callable[..., Any], items: list[Any],
                on_done: Callable[[int, int], None] | None = None) -> list[Any]:
    """``[fn(x) for x in items]`` as one task each; results in item order, ``on_done(done,
    total)`` as they complete."""
    from distributed import as_completed

    futures = [client.submit(fn, x, pure=False) for x in items]
    index = {f.key: i for i, f in enumerate(futures)}
    out: list[Any] = [None] * len(items)
    for done, fut in enumerate(as_completed(futures), start=1):
        out[index[fut.key]] = fut.result()
        if on_done:
            on_done(done, len(items))
    return out


# -- memory ----------------------------------------------------------------------------------------
def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM; ru_maxrss is the fallback), MB."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def workers_peak_rss_mb(client: Client) -> list[float]:
    """Peak resident set of every worker process, MB (in worker address order)."""
    got = client.run(peak_rss_mb)
    return [round(got[k], 1) for k in sorted(got)]
