"""Compiled (numba) kernel for cap populations: the same arithmetic as
``PopulationGrid._cap_sums`` (the plain NumPy version, kept as the reference that
tests/test_population.py checks this against), one loop per (centre, row)."""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def cap_sums(lat_deg, lon_deg, ang, prefix, sin_c, cos_c, north_deg, west_deg, cs,
             is_global, shift_cols, out):  # pragma: no cover - compiled
    n_rows = prefix.shape[0]
    n = prefix.shape[1] - 1
    for m in range(lat_deg.shape[0]):
        ang_deg = math.degrees(ang[m])
        i_lo = int(math.floor((north_deg - (lat_deg[m] + ang_deg)) / cs - 0.5)) - 1
        i_hi = int(math.ceil((north_deg - (lat_deg[m] - ang_deg)) / cs - 0.5)) + 1
        i_lo = min(max(i_lo, 0), n_rows - 1)
        i_hi = min(max(i_hi, 0), n_rows - 1)
        phi0 = math.radians(lat_deg[m])
        sin0 = math.sin(phi0)
        cos0 = math.cos(phi0)
        cos_ang = math.cos(ang[m])
        x0 = (lon_deg[m] - west_deg) / cs - 0.5
        total = 0.0
        for i in range(i_lo, i_hi + 1):
            num = cos_ang - sin0 * sin_c[i]
            den = cos0 * cos_c[i]
            if den <= 1e-15:
                c = -np.inf if num <= 0 else np.inf
            else:
                c = num / den
            if c <= -1.0:
                total += prefix[i, n]
                continue
            if c > 1.0:
                continue
            w = math.degrees(math.acos(c)) / cs
            a = int(math.ceil(x0 - w))
            b = int(math.floor(x0 + w))
            length = min(max(b - a + 1, 0), n)
            if length == 0:
                continue
            if is_global:
                a0 = a % n
                end = a0 + length
                if end > n:
                    total += prefix[i, n] - prefix[i, a0] + prefix[i, end - n]
                else:
                    total += prefix[i, end] - prefix[i, a0]
            else:
                for k in (-shift_cols, 0, shift_cols):
                    lo = min(max(a + k, 0), n)
                    hi = min(max(b + k + 1, 0), n)
                    if hi > lo:
                        total += prefix[i, hi] - prefix[i, lo]
        out[m] = total
