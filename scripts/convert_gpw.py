#!/usr/bin/env python3
"""Convert a GPW v4 ESRI ASCII grid into satpage's compact embedded grid (.npz).

Run once, from the repository root, to (re)make the embedded default:

    .venv/bin/python scripts/convert_gpw.py \
        ../shared/data/gpw-v4-2020-30min/gpw_v4_population_count_adjusted_2020_30_min.asc.gz \
        orbit-model/orbit_model/data/gpw-v4-2020-30min.npz

Cell values are kept as float64, exactly as parsed from the text (NODATA -> NaN);
the source file name and its SHA-256 are stored in the .npz. The script prints
the figures that data/README.md quotes (shape, total, densest cell).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from orbit_model import PopulationGrid, population_io


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="GPW v4 grid (.asc, .asc.gz, .tif)")
    parser.add_argument("output", type=Path, help="the .npz to write")
    args = parser.parse_args(argv)

    arrays = population_io.read_grid_file(args.source)
    grid = PopulationGrid(arrays.population, arrays.west_deg, arrays.north_deg,
                          arrays.cell_size_deg, str(args.source))
    population_io.write_npz(args.output, arrays, source=args.source.name,
                            source_sha256=population_io.sha256_of(args.source))
    back = PopulationGrid.from_file(args.output)
    same = np.array_equal(back.population, grid.population, equal_nan=True)
    if not same:
        print(f"error: {args.output} does not read back identical to {args.source}",
              file=sys.stderr)
        return 1
    row, col = np.unravel_index(np.argmax(grid.counts), grid.counts.shape)
    print(f"wrote {args.output} ({args.output.stat().st_size:,} bytes) from {args.source.name}")
    print(f"  shape {grid.n_rows} x {grid.n_cols}, cell {grid.cell_size_deg} deg, "
          f"west {grid.west_deg}, north {grid.north_deg}")
    print(f"  total population {grid.total:,.0f}; densest cell row {row} col {col} "
          f"(centre {grid.lat_centres_deg[row]:+.2f}, {grid.lon_centres_deg[col]:+.2f}): "
          f"{grid.counts[row, col]:,.0f}")
    print(f"  source sha256 {population_io.sha256_of(args.source)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
