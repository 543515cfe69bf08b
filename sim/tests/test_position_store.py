"""The position file store: one file per constellation, epoch and step, so a store shared
by sweep points or Dask workers never hands one constellation's positions to another."""

import numpy as np

from orbit_model import parse_epoch
from satpage.geometry import PositionCache, SatelliteSet

EPOCH = parse_epoch("2022-09-14T00:00:00Z")
STEP_NS = 60 * 1_000_000_000


def test_two_constellations_of_one_size_keep_their_own_positions_in_a_shared_store(tmp_path):
    a = SatelliteSet("walker:60/6/1:550:53", EPOCH)
    b = SatelliteSet("walker:60/6/1:540:53.2", EPOCH)
    ca = PositionCache(a, STEP_NS, 30, max_cached_values=0, store_dir=str(tmp_path))
    cb = PositionCache(b, STEP_NS, 30, max_cached_values=0, store_dir=str(tmp_path))
    assert ca.path != cb.path and ca.path.exists() and cb.path.exists()
    t = np.arange(30, dtype=np.int64) * STEP_NS
    # float32 file: 0.5 m at 7000 km
    np.testing.assert_allclose(cb.window(0, 29), b.positions_km(t), atol=1e-3)
    again = PositionCache(a, STEP_NS, 30, max_cached_values=0, store_dir=str(tmp_path))
    assert again.path == ca.path
    np.testing.assert_allclose(again.window(0, 29), a.positions_km(t), atol=1e-3)
