"""The position cache of large runs: windows built from orbit_model's blocks equal the
Earth-fixed positions of each block (orbit_model's itrs_positions_km, held to Skyfield in
orbit-model/tests), to float32, across block boundaries and for each constellation."""

import numpy as np

from orbit_model import itrs_positions_km, parse_epoch
from orbit_model.kernels import BLOCK_STEPS
from satpage.geometry import PositionCache, SatelliteSet

EPOCH = parse_epoch("2022-09-14T00:00:00Z")
STEP_NS = 10 * 1_000_000_000


def _direct(sats: SatelliteSet, j0: int, j1: int, n_steps: int) -> np.ndarray:
    """Steps j0..j1, each from the direct propagation of its own whole block."""
    out = []
    for b in range(j0 // BLOCK_STEPS, j1 // BLOCK_STEPS + 1):
        lo, hi = b * BLOCK_STEPS, min(n_steps, (b + 1) * BLOCK_STEPS)
        block = itrs_positions_km(sats.constellation, np.arange(lo, hi, dtype=np.int64) * STEP_NS)
        out.append(block[:, max(j0, lo) - lo:min(j1 + 1, hi) - lo])
    return np.concatenate(out, axis=1).astype(np.float32).astype(np.float64)


def test_windows_across_blocks_equal_each_blocks_own_propagation():
    sats = SatelliteSet("walker:60/6/1:550:53", EPOCH)
    n_steps = 2 * BLOCK_STEPS + 50                   # a short last block
    cache = PositionCache(sats, STEP_NS, n_steps, max_cached_values=0, blocks_kept=2)
    for j0, j1 in [(0, 10), (BLOCK_STEPS - 5, BLOCK_STEPS + 5), (10, 2 * BLOCK_STEPS + 20),
                   (2 * BLOCK_STEPS, n_steps - 1), (3, 4)]:   # the last: block 0 again
        w = cache.window(j0, j1)
        assert w.shape == (60, j1 - j0 + 1, 3) and w.dtype == np.float64
        assert np.array_equal(w, _direct(sats, j0, j1, n_steps))
    assert len(cache._blocks) <= 2                  # memory: the blocks kept, not the span


def test_two_constellations_of_one_size_keep_their_own_positions():
    a = SatelliteSet("walker:60/6/1:550:53", EPOCH)
    b = SatelliteSet("walker:60/6/1:540:53.2", EPOCH)
    ca = PositionCache(a, STEP_NS, BLOCK_STEPS, max_cached_values=0)
    cb = PositionCache(b, STEP_NS, BLOCK_STEPS, max_cached_values=0)
    t = np.arange(30, dtype=np.int64) * STEP_NS
    # float32: 0.5 m at 7000 km
    np.testing.assert_allclose(ca.window(0, 29), a.positions_km(t), atol=1e-3)
    np.testing.assert_allclose(cb.window(0, 29), b.positions_km(t), atol=1e-3)
    assert not np.allclose(ca.window(0, 29), cb.window(0, 29), atol=1.0)
