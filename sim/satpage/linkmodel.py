"""ISL capacity and queueing, and how each strategy's transfers use the links
(docs/strategies.md, "Network model", states the model and its assumptions).

- Every ISL has a capacity C (``network.isl_capacity_gbps``). A page crossing a
  link takes its transmission time D = page bits / C there (store and forward), plus
  the M/D/1 queueing wait W = rho D / (2 (1 - rho)) of the link in its time bin,
  where rho is the link's utilisation in that bin: the background load
  (``network.background_load``, constant or following the population under the
  link) plus the pages the strategy itself sends over it.
- ``price_events`` is the one compiled pass over a chunk's event log: price every
  transfer on orbit_model's routes, add the link loads, fault latencies (propagation +
  processing + transmission + queueing), and each transfer's arrival time (for handover
  stalls). It knows event kinds, not strategies: ``kind_rules`` turns a strategy's
  ``pager.NetworkUse`` into a rule table per EventKind (shortest hops, a second
  link-disjoint path, the nearest custody holder, deferral to an idle bin, an ownership
  switch without a transfer, ...), and the kernel prices each event by its kind's row.
- ``transfer_stalls`` and ``migration_waits`` turn arrival times and container
  downtimes into the waits of the accesses (vectorised, per chunk).

Routes are orbit_model's: ``price_events`` reads its stacked routing tables
(``RoutingSnapshots.stack``) and walks them with ``orbit_model.kernels.route_links`` and
``orbit_model.kernels.disjoint_route``; custody looks hop counts up in the tables. Link ids
are rows of orbit_model's link list (``IslLinks.endpoints``); both directions of a
link share its capacity (conservative).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numba
import numpy as np

import pager
from orbit_model.constants import SPEED_OF_LIGHT_KM_S as C_KM_S
from orbit_model.kernels import disjoint_route, route_links

__all__ = ["LinkModel", "price_events", "transfer_stalls", "migration_waits",
           "background_utilisation", "PRICE_KEYS", "RHO_MAX", "LogHistogram",
           "KindRules", "kind_rules", "ChunkPlaces", "ChunkRoutes", "LinkState", "PriceSums",
           "FAULT", "HANDOVER", "PUSH", "REMOTE", "CREATE", "REPLICA"]

log = logging.getLogger(__name__)

# pager's event kinds and owner codes as plain ints (numba compares them)
FAULT, HANDOVER, PUSH, REMOTE, CREATE, REPLICA = (
    int(pager.EventKind.FAULT), int(pager.EventKind.HANDOVER), int(pager.EventKind.PUSH),
    int(pager.EventKind.REMOTE), int(pager.EventKind.CREATE), int(pager.EventKind.REPLICA))
_NOWHERE, _GROUND = int(pager.NOWHERE), int(pager.GROUND)

#: Utilisation at which a link-bin is treated as saturated: M/D/1 has no steady
#: state at rho >= 1, so the wait is capped at that of RHO_MAX (49.5 D) and the
#: link-bin is counted as over capacity.
RHO_MAX = 0.99

#: Columns of ``price_events``'s ``out`` counter array.
PRICE_KEYS = ("page_moves", "page_hops", "ground_fetches", "handover_transfer_pages",
              "faults", "creates", "latency_sum_ns", "unreachable", "link_delay_sum_ns",
              "custody_hits", "custody_copies", "multipath_second_paths", "replica_copies",
              "idle_deferred", "idle_at_handover", "custody_copies_at_end")
# their indices, as the kernel writes them
(_MOVES, _HOPS, _GROUND_FETCHES, _HANDOVER_PAGES, _FAULTS, _CREATES, _LATENCY_NS, _UNREACHABLE,
 _LINK_DELAY_NS, _CUSTODY_HITS, _CUSTODY_COPIES, _SECOND_PATHS, _REPLICA_COPIES, _DEFERRED,
 _AT_HANDOVER, _CUSTODY_NEW) = range(16)
assert len(PRICE_KEYS) == 16


@dataclass(frozen=True, eq=False)
class LinkModel:
    """Capacity and background load of every ISL over the run's time bins.

    ``background`` float64 (load_bins, n_link_ids): utilisation of each link in each
    bin by traffic other than the session state (0 where there is none)."""

    capacity_gbps: float
    page_bytes: int
    bin_s: float
    background: np.ndarray

    @property
    def tx_ms(self) -> float:
        """Transmission time of one page on one link (ms)."""
        return self.page_bytes * 8.0 / (self.capacity_gbps * 1e9) * 1e3

    def utilisation(self, pages: np.ndarray) -> np.ndarray:
        """Utilisation (load_bins, n_link_ids): background plus ``pages`` (pages sent
        over each link in each bin) at the link rate."""
        own = np.asarray(pages, float) * self.page_bytes * 8.0 / (self.capacity_gbps * 1e9
                                                                   * self.bin_s)
        return self.background + own

    @cached_property
    def background_wait_ms(self) -> np.ndarray:
        """``wait_ms(background)``, computed once: every chunk of a run prices its first pass
        with it (per chunk it was constellation-sized work repeated a thousand times)."""
        return self.wait_ms(self.background)

    def wait_ms(self, rho: np.ndarray) -> np.ndarray:
        """M/D/1 mean wait in queue (ms) of a page at utilisation ``rho`` (capped at
        RHO_MAX)."""
        r = np.clip(np.asarray(rho, float), 0.0, RHO_MAX)
        return r * self.tx_ms / (2.0 * (1.0 - r))


def background_utilisation(profile: str, load: float, link_ends: np.ndarray,
                           positions_at_bins_km: np.ndarray, altitude_km: float,
                           min_elevation_deg: float, population_source: str,
                           n_link_ids: int, link_ids: np.ndarray) -> np.ndarray:
    """Background utilisation (load_bins, n_link_ids).

    ``constant``: ``load`` on every link in every bin. ``population``: ``load`` times
    the population under the link (within a satellite footprint of the link's
    midpoint, at each bin's middle) over its largest value over links and bins, so
    the link over the most people at the busiest time carries ``load``.
    ``positions_at_bins_km``: (n_sats, load_bins, 3) Earth-fixed."""
    n_bins = positions_at_bins_km.shape[1]
    out = np.zeros((n_bins, n_link_ids))
    if load <= 0 or link_ids.size == 0:
        return out
    if profile == "constant":
        out[:, link_ids] = load
        return out
    import orbit_model
    from orbit_model.kernels import footprint_central_angle_rad

    mid = 0.5 * (positions_at_bins_km[link_ends[:, 0]] + positions_at_bins_km[link_ends[:, 1]])
    r = np.linalg.norm(mid, axis=-1)
    lat = np.degrees(np.arcsin(np.clip(mid[..., 2] / np.where(r > 0, r, 1.0), -1, 1)))
    lon = np.degrees(np.arctan2(mid[..., 1], mid[..., 0]))
    ok = np.isfinite(lat) & np.isfinite(lon)
    grid = orbit_model.PopulationGrid.from_spec(population_source)
    ang = float(footprint_central_angle_rad(altitude_km, max(min_elevation_deg, 0.0)))
    pop = np.zeros(lat.shape)
    pop[ok] = grid.population_in_cap(lat[ok], lon[ok], ang)
    peak = pop.max(initial=0.0)
    if peak > 0:
        out[:, link_ids] = (load * pop / peak).T
    return out


# -- how each event kind is priced -------------------------------------------------------
# Columns of KindRules.table (a row per EventKind value). The kernel reads only these; which
# kinds carry which rule follows from the strategy's NetworkUse (``kind_rules``).
R_CREATE = 0      # the page appears on the destination (held there), counted as a creation
R_SWITCH = 1      # ownership moves to the destination, which holds a copy already: no transfer
R_PATHS = 2       # link-disjoint paths the page is sent over at once (1; 2 = the faster wins)
R_CUSTODY = 3     # served by the nearest custody holder; the relays on its path keep a copy
R_DEFER = 4       # sent at the first bin whose path links are idle (up to lead_ns later)
R_WAITS = 5       # an access waits for it: its round trip is a fault latency
R_HANDOVER = 6    # counted as a handover transfer
R_REPLICA = 7     # counted as a replica copy
R_MOVES = 8       # the page changes frames (held by the destination, no longer the source)
R_STALLS = 9      # a transfer in flight: the first access to its page in the visit stalls
N_RULES = 10
N_KINDS = max(FAULT, HANDOVER, PUSH, REMOTE, CREATE, REPLICA) + 1


class KindRules(NamedTuple):
    """How each event kind of one strategy's log is priced (``kind_rules``).

    ``table`` int64 (N_KINDS, N_RULES): row = EventKind value, columns R_*;
    ``idle_threshold``: utilisation below which a link counts as idle (R_DEFER);
    ``lead_ns``: how much later a deferred transfer goes at the latest (R_DEFER);
    ``custody_pages``: pages each relay keeps per session (R_CUSTODY; 0 = none)."""

    table: np.ndarray
    idle_threshold: float
    lead_ns: int
    custody_pages: int


def kind_rules(use: pager.NetworkUse, lead_ns: int = 0) -> KindRules:
    """The pricing rules of a strategy's event kinds from its NetworkUse (docs/strategies.md,
    "Network model"): plain paging sends every transfer once over the shortest-hop path;
    ``fault_paths`` = 2 sends faults over two disjoint paths, ``custody_pages`` lets relays
    serve faults, ``idle_threshold`` defers pushes, ``replicate_next`` makes a handover an
    ownership switch (the page was replicated there: REPLICA events carry the copies)."""
    t = np.zeros((N_KINDS, N_RULES), np.int64)
    t[CREATE, R_CREATE] = 1
    t[[FAULT, HANDOVER, PUSH, REMOTE, REPLICA], R_PATHS] = 1
    t[FAULT, R_PATHS] = use.fault_paths
    t[FAULT, R_CUSTODY] = use.custody_pages > 0
    t[PUSH, R_DEFER] = use.idle_threshold > 0.0
    t[[FAULT, REMOTE], R_WAITS] = 1
    t[[HANDOVER, PUSH], R_HANDOVER] = 1
    t[REPLICA, R_REPLICA] = 1
    t[[FAULT, HANDOVER, PUSH], R_MOVES] = 1
    t[[HANDOVER, PUSH, REPLICA], R_STALLS] = 1
    if use.replicate_next:
        t[HANDOVER] = 0
        t[HANDOVER, R_SWITCH] = 1
    return KindRules(t, float(use.idle_threshold), int(lead_ns), int(use.custody_pages))


class ChunkPlaces(NamedTuple):
    """Where one chunk's visits and the gateway are: ``vsat`` int64 (n_visits,) satellite of
    each visit; ``gw_sat`` int64 and ``gw_range_km`` float64 (n_steps,) the satellite
    above the gateway and its range; ``pos`` float64 (n_sats, n_steps, 3) km; ``step_ns``;
    ``step0`` the first step of the chunk's window; ``n_pages`` pages per session."""

    vsat: np.ndarray
    gw_sat: np.ndarray
    gw_range_km: np.ndarray
    pos: np.ndarray
    step_ns: int
    step0: int
    n_pages: int


class ChunkRoutes(NamedTuple):
    """orbit_model's routing tables for one event log (``RoutingSnapshots.stack``):
    ``table`` int64 (n_events,) the table of each event, then the RoutingStack's arrays."""

    table: np.ndarray
    hops: np.ndarray
    pred: np.ndarray
    link: np.ndarray
    endpoints: np.ndarray
    indptr: np.ndarray
    nbr: np.ndarray
    edge: np.ndarray


class LinkState(NamedTuple):
    """The links during the run: ``load_bins`` bins over ``duration_ns``; ``per_hop_ms``
    processing per hop; ``tx_ms`` transmission of one page; ``wait_ms`` and ``background``
    float64 (load_bins, n_link_ids): queueing wait (ms) and background utilisation."""

    load_bins: int
    duration_ns: int
    per_hop_ms: float
    tx_ms: float
    wait_ms: np.ndarray
    background: np.ndarray


class PriceSums(NamedTuple):
    """What ``price_events`` adds to (one strategy's running sums): ``link_load`` int64
    (load_bins, n_link_ids) pages; ``held_delta`` int64 (n_sats, load_bins); ``lat_hist``
    int64 fault latencies in bins of ``bin_ms``; ``out`` int64 PRICE_KEYS counters;
    ``lat_max`` float64 (1,); ``arrival_ns`` int64 (n_events,), written per event."""

    link_load: np.ndarray
    held_delta: np.ndarray
    lat_hist: np.ndarray
    bin_ms: float
    out: np.ndarray
    lat_max: np.ndarray
    arrival_ns: np.ndarray


@numba.njit(cache=True, nogil=True)
def price_events(ev, chunk, routes, links, rules, sums):
    """One pass over an event log ``ev`` (pager.EVENT_DTYPE, by session then time), each
    event priced by its kind's row of ``rules`` (KindRules) on ``routes`` (ChunkRoutes),
    ``chunk`` (ChunkPlaces) and ``links`` (LinkState), added to ``sums`` (PriceSums).

    Per transfer: links crossed (``link_load[bin, link] += 1``), page-hops, and its
    arrival time ``arrival_ns[e]`` (send time + propagation + per-hop processing +
    per-link transmission and queueing, one way); per event whose access waits its
    round-trip latency into ``lat_hist`` (request and page both propagate and are
    processed; only the page is transmitted and queued). ``out`` follows PRICE_KEYS."""
    vsat, gw_sat, gw_range_km, pos, step_ns, step0, n_pages = chunk
    table, hops_t, pred_t, link_t, endpoints, indptr, nbr, edge = routes
    load_bins, duration_ns, per_hop_ms, tx_ms, wait_ms, background = links
    rule, idle_threshold, lead_ns, custody_pages = rules
    link_load, held_delta, lat_hist, bin_ms, out, lat_max, arrival_ns = sums
    n_t = pos.shape[1]
    n_sats = hops_t.shape[1]
    n_hist = lat_hist.size
    ids = np.empty(n_sats + 1, np.int64)
    nodes = np.empty(n_sats + 2, np.int64)
    ids2 = np.empty(n_sats + 1, np.int64)
    parent = np.empty(n_sats, np.int64)
    seen = np.zeros(n_sats, np.int64)
    queue = np.empty(n_sats, np.int64)
    stamp = 0
    # custody: per satellite a ring of cached pages for the current session; has[sat,
    # page] == session + 1 while the copy is there (no reset between sessions)
    kc = max(custody_pages, 1)
    ring = np.zeros((n_sats if custody_pages > 0 else 1, kc), np.int64)
    ring_n = np.zeros(n_sats if custody_pages > 0 else 1, np.int64)
    ring_head = np.zeros(n_sats if custody_pages > 0 else 1, np.int64)
    ring_sess = np.full(n_sats if custody_pages > 0 else 1, -1, np.int64)
    has = np.zeros((n_sats if custody_pages > 0 else 1, n_pages if custody_pages > 0 else 1),
                   np.int32)
    # and per page the satellites holding a copy in this session (unordered), so a fault
    # looks at its page's holders only, not at every satellite
    hold = np.empty((n_pages if custody_pages > 0 else 1, n_sats if custody_pages > 0 else 1),
                    np.int32)
    hold_n = np.zeros(n_pages if custody_pages > 0 else 1, np.int64)
    hold_sess = np.full(n_pages if custody_pages > 0 else 1, -1, np.int64)
    for e in range(ev.size):
        rec = ev[e]
        k = np.int64(rec.kind)
        t_e = np.int64(rec.time_ns)
        fv_e = np.int64(rec.from_visit)
        tv_e = np.int64(rec.to_visit)
        s_e = np.int64(rec.session)
        p_e = np.int64(rec.page)
        step = t_e // step_ns - step0
        step = min(max(step, 0), n_t - 1)
        send = t_e
        b = (send * load_bins) // max(duration_ns, 1)
        b = min(max(b, 0), load_bins - 1)
        dst = vsat[tv_e]
        arrival_ns[e] = send
        if rule[k, R_CREATE]:
            held_delta[dst, b] += 1
            out[_CREATES] += 1
            continue
        if fv_e == _NOWHERE:
            continue
        if rule[k, R_SWITCH]:                        # the copy is there already
            held_delta[dst, b] += 1
            held_delta[vsat[fv_e], b] -= 1
            continue
        ground = fv_e == _GROUND
        src = gw_sat[step] if ground else vsat[fv_e]
        tbl = table[e]
        hit_local = False
        custody = rule[k, R_CUSTODY] != 0
        if custody and not ground:
            # nearest holder: the owner or a relay with a custody copy (ties: the owner)
            best = src
            best_h = hops_t[tbl, src, dst] if src != dst else 0
            if best_h < 0:
                best_h = n_sats + 1
            p = p_e
            if hold_sess[p] != s_e:
                hold_sess[p] = s_e
                hold_n[p] = 0
            for i in range(hold_n[p]):
                c = np.int64(hold[p, i])
                if c == src:
                    continue
                hc = 0 if c == dst else hops_t[tbl, c, dst]
                # fewest hops; ties: the owner, else the lowest satellite index
                if hc >= 0 and (hc < best_h or (hc == best_h and best != src and c < best)):
                    best_h = hc
                    best = c
            if best != src:
                out[_CUSTODY_HITS] += 1
                if best == dst:
                    hit_local = True
                src = best
        if src == dst and not ground:
            if hit_local:                            # served from the server's own custody copy
                out[_FAULTS] += 1
                lat_hist[0] += 1
                held_delta[vsat[fv_e], b] -= 1
                held_delta[dst, b] += 1
            continue
        h, d = route_links(pred_t, link_t, endpoints, tbl, src, dst, pos, step, ids, nodes)
        if h < 0:
            out[_UNREACHABLE] += 1
            h = 0
            d = 0.0
        if rule[k, R_DEFER]:
            # earliest bin from the push to the handover whose path links are idle
            t_h = t_e + lead_ns
            b_h = min(max((t_h * load_bins) // max(duration_ns, 1), 0), load_bins - 1)
            chosen = -1
            for bb in range(b, b_h + 1):
                busy = 0.0
                for i in range(h):
                    if background[bb, ids[i]] > busy:
                        busy = background[bb, ids[i]]
                if busy < idle_threshold:
                    chosen = bb
                    break
            if chosen < 0:
                send = t_h
                out[_AT_HANDOVER] += 1
            elif chosen > b:
                start = -((-chosen * duration_ns) // load_bins)   # ceil: first ns of the bin
                send = max(t_e, min(start, t_h))
                out[_DEFERRED] += 1
            b = min(max((send * load_bins) // max(duration_ns, 1), 0), load_bins - 1)
        link_ms = 0.0
        for i in range(h):
            link_load[b, ids[i]] += 1
            link_ms += tx_ms + wait_ms[b, ids[i]]
        prop_ms = d / C_KM_S * 1e3 + h * per_hop_ms
        page_hops = h + (1 if ground else 0)         # the feeder link counts as one hop
        if ground:
            out[_GROUND_FETCHES] += 1
            prop_ms += gw_range_km[step] / C_KM_S * 1e3 + per_hop_ms
        lat = 2.0 * prop_ms + link_ms
        if rule[k, R_PATHS] == 2 and h > 0:
            stamp += 1
            h2, d2 = disjoint_route(hops_t, indptr, nbr, edge, tbl, src, dst, pos, step, ids, h,
                                    ids2, parent, seen, stamp, queue)
            if h2 > 0:
                out[_SECOND_PATHS] += 1
                link2 = 0.0
                for i in range(h2):
                    link_load[b, ids2[i]] += 1
                    link2 += tx_ms + wait_ms[b, ids2[i]]
                lat2 = 2.0 * (d2 / C_KM_S * 1e3 + h2 * per_hop_ms) + link2
                page_hops += h2
                if lat2 < lat:
                    lat = lat2
                    link_ms = link2
        out[_MOVES] += 1
        out[_HOPS] += page_hops
        arrival_ns[e] = send + np.int64(np.round((prop_ms + link_ms) * 1e6))
        if rule[k, R_HANDOVER]:
            out[_HANDOVER_PAGES] += 1
        if rule[k, R_REPLICA]:
            out[_REPLICA_COPIES] += 1
        if rule[k, R_WAITS]:                         # the access waits
            out[_FAULTS] += 1
            out[_LATENCY_NS] += np.int64(np.round(lat * 1e6))
            out[_LINK_DELAY_NS] += np.int64(np.round(link_ms * 1e6))
            if lat > lat_max[0]:
                lat_max[0] = lat
            hb = np.int64(lat / bin_ms)
            lat_hist[min(hb, n_hist - 1)] += 1
        if not ground and rule[k, R_MOVES]:          # the page changes frames
            held_delta[dst, b] += 1
            held_delta[vsat[fv_e], b] -= 1
        if custody:
            # the relays (not the ends) keep a copy; oldest evicted when the ring is full
            s1 = s_e + 1
            p = p_e
            if hold_sess[p] != s_e:
                hold_sess[p] = s_e
                hold_n[p] = 0
            for i in range(1, h):
                r = nodes[i]
                if ring_sess[r] != s_e:
                    ring_sess[r] = s_e
                    ring_n[r] = 0
                    ring_head[r] = 0
                if has[r, p] == s1:
                    continue
                if ring_n[r] == custody_pages:
                    old = ring[r, ring_head[r]]
                    has[r, old] = 0
                    for q in range(hold_n[old]):             # r no longer holds old
                        if hold[old, q] == r:
                            hold_n[old] -= 1
                            hold[old, q] = hold[old, hold_n[old]]
                            break
                    ring[r, ring_head[r]] = p
                    ring_head[r] = (ring_head[r] + 1) % custody_pages
                else:
                    ring[r, (ring_head[r] + ring_n[r]) % custody_pages] = p
                    ring_n[r] += 1
                    out[_CUSTODY_NEW] += 1
                has[r, p] = s1
                hold[p, hold_n[p]] = r
                hold_n[p] += 1
                out[_CUSTODY_COPIES] += 1


_FIRST: list = []     # (access_page array, n_pages, table): the last trace's


@numba.njit(cache=True, nogil=True)
def _first_times(n_visits, n_pages, access_offsets, access_page, access_time_ns):
    """Time of the first access to each page in each visit (int64 max where none):
    a dense (n_visits * n_pages) table, key ``visit * n_pages + page``."""
    ft = np.full(n_visits * n_pages, np.iinfo(np.int64).max, np.int64)
    for v in range(n_visits):
        for a in range(access_offsets[v], access_offsets[v + 1]):
            key = v * n_pages + access_page[a]
            if ft[key] == np.iinfo(np.int64).max:
                ft[key] = access_time_ns[a]
    return ft


def first_access_times(n_pages: int, access_offsets: np.ndarray, access_page: np.ndarray,
                       access_time_ns: np.ndarray) -> np.ndarray:
    """``_first_times`` of a trace; the last trace's table is kept (every strategy of a
    chunk asks for the same one)."""
    if _FIRST and _FIRST[0][0] is access_page and _FIRST[0][1] == n_pages:
        return _FIRST[0][2]
    ft = _first_times(access_offsets.size - 1, n_pages, np.asarray(access_offsets, np.int64),
                      np.asarray(access_page), np.asarray(access_time_ns, np.int64))
    _FIRST[:] = [(access_page, n_pages, ft)]
    return ft


@numba.njit(cache=True, nogil=True)
def _late_arrivals(kind, stalls, to_visit, page, time_ns, arrival_ns, tx_ns, n_pages, first_t,
                   out_key, out_wait):
    """Transfers (kinds k with ``stalls[k]``) that arrive after the first access to their
    page in their target visit: key and wait into ``out_*``; returns how many."""
    n = 0
    rank = 0
    prev_e = -2
    prev_k = -1
    prev_v = -1
    prev_t = -1
    for e in range(kind.size):
        k = kind[e]
        if not stalls[k]:
            continue
        v = np.int64(to_visit[e])
        t0 = time_ns[e]
        if e == prev_e + 1 and k == prev_k and v == prev_v and t0 == prev_t:
            rank += 1                                # next page of the same batch
        else:
            rank = 0
        prev_e, prev_k, prev_v, prev_t = e, k, v, t0
        key = v * n_pages + page[e]
        w = arrival_ns[e] + rank * tx_ns - first_t[key]
        if w > 0:
            out_key[n] = key
            out_wait[n] = w
            n += 1
    return n


def transfer_stalls(kind: np.ndarray, to_visit: np.ndarray, page: np.ndarray,
                    time_ns: np.ndarray, arrival_ns: np.ndarray, tx_ns: int, n_pages: int,
                    access_offsets: np.ndarray, access_page: np.ndarray,
                    access_time_ns: np.ndarray, rules: KindRules) -> np.ndarray:
    """Waits (ns, int64, one per stalled access) of accesses to pages still in flight.

    A transfer in flight (a kind with R_STALLS in ``rules``: HANDOVER, PUSH, REPLICA
    unless the strategy's NetworkUse says otherwise) is sent as part
    of a batch (consecutive events with the same kind, target visit and send time) in
    log order at the link rate, so the i-th page of a batch arrives i transmission
    times after its own one-way delay. The first access to a page in the target
    visit waits until the last transfer of that page to the visit has arrived (an
    assumption: later accesses in the same visit find it there)."""
    if kind.size == 0 or access_page.size == 0:
        return np.zeros(0, np.int64)
    first_t = first_access_times(n_pages, access_offsets, access_page, access_time_ns)
    keys = np.empty(kind.size, np.int64)
    waits = np.empty(kind.size, np.int64)
    stalls = np.ascontiguousarray(rules.table[:, R_STALLS])
    n = _late_arrivals(np.asarray(kind, np.int64), stalls, to_visit, page, time_ns, arrival_ns,
                       int(tx_ns), int(n_pages), first_t, keys, waits)
    if n == 0:
        return np.zeros(0, np.int64)
    # one wait per stalled access: the last arrival of its page decides
    ukey, inv = np.unique(keys[:n], return_inverse=True)
    out = np.zeros(ukey.size, np.int64)
    np.maximum.at(out, inv, waits[:n])
    return out


def migration_waits(handover_visit: np.ndarray, downtime_ns: np.ndarray,
                    visit_start_ns: np.ndarray, access_offsets: np.ndarray,
                    access_time_ns: np.ndarray) -> np.ndarray:
    """Waits (ns, one per stalled access) of accesses made while the container is down:
    visit ``handover_visit[i]`` starts with ``downtime_ns[i]`` of downtime, and an
    access at time t in it waits until ``start + downtime``."""
    n_v = access_offsets.size - 1
    end = np.zeros(n_v, np.int64)                   # times are >= 0: no wait
    end[handover_visit] = visit_start_ns[handover_visit] + downtime_ns
    a_visit = np.repeat(np.arange(n_v, dtype=np.int64), np.diff(access_offsets))
    wait = end[a_visit] - access_time_ns
    return wait[wait > 0].astype(np.int64)


class LogHistogram:
    """Counts on log-spaced bins from 1 ns to 10^3 s (100 per decade): percentiles of
    waits that range from microseconds (stalls) to a minute (container downtime),
    to 2.3 % resolution. Integer counts, so chunk sums add up in any order."""

    PER_DECADE = 100
    LO_NS = 1.0
    DECADES = 12

    def __init__(self) -> None:
        self.counts = np.zeros(self.PER_DECADE * self.DECADES + 1, np.int64)
        self.sum_ns = 0
        self.max_ns = 0

    def add(self, values_ns: np.ndarray) -> None:
        v = np.asarray(values_ns, np.int64)
        if v.size == 0:
            return
        i = np.floor(np.log10(np.maximum(v, 1) / self.LO_NS) * self.PER_DECADE).astype(np.int64)
        np.add.at(self.counts, np.clip(i, 0, self.counts.size - 1), 1)
        self.sum_ns += int(v.sum())
        self.max_ns = max(self.max_ns, int(v.max()))

    def merge(self, other: LogHistogram) -> None:
        self.counts += other.counts
        self.sum_ns += other.sum_ns
        self.max_ns = max(self.max_ns, other.max_ns)

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    def percentile_ms(self, q: float) -> float:
        """The q-th percentile (ms): geometric centre of its bin; 0 when empty."""
        n = self.n
        if n == 0:
            return 0.0
        k = int(np.searchsorted(np.cumsum(self.counts), q / 100.0 * n, side="left"))
        centre_ns = self.LO_NS * 10 ** ((k + 0.5) / self.PER_DECADE)
        return float(min(centre_ns, self.max_ns) / 1e6)
