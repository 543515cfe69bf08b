"""The view data format ``satpage-view/1``: what `satpage view` draws, in two files.

- ``view.json``: metadata (scenario, seed, code version, epoch, strategies, the
  run's totals, the population grid's extent) and ``arrays``, a directory of the
  binary arrays: ``{name: {"dtype", "shape", "offset"}}``.
- ``view.bin.gz``: the arrays, little-endian, C order, each at an 8-byte aligned
  ``offset`` of the uncompressed bytes, gzip-compressed as one stream (the browser
  inflates it with ``DecompressionStream``).

Any source that produces these two files (a finished run, a synthetic benchmark, a
live cluster's snapshot) feeds the same page. sim/README.md lists every array with
its shape and unit; ``ARRAY_SPECS`` below is the schema `ViewData.validate` checks.

Shape letters: F frames, N satellites, L links, S strategies, W time windows,
C clients, K sampled sessions, V their visits, H holding rows.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FORMAT", "ViewData", "ARRAY_SPECS", "JSON_NAME", "BLOB_NAME", "GROUND_HOLDER"]

FORMAT = "satpage-view/1"
JSON_NAME = "view.json"
BLOB_NAME = "view.bin.gz"
#: holder id of pages kept on the ground (the ground-store strategy's gateway)
GROUND_HOLDER = -2
_ALIGN = 8

#: name -> (dtype, shape letters): the arrays every view has.
ARRAY_SPECS: dict[str, tuple[str, str]] = {
    "frame_t_s": ("<f8", "F"),                 # frame times, s from the epoch
    "sat_latlon_cdeg": ("<i2", "FN2"),         # sub-satellite lat, lon, centidegrees
    "sat_plane": ("<i4", "N"),
    "sat_shell": ("<i4", "N"),
    "footprint_rad": ("<f4", "N"),             # footprint central angle at the min. elevation
    "links": ("<i4", "L2"),                    # ISL end satellites, a < b
    "window_edges_s": ("<f8", "W+"),           # W + 1 edges, s from the epoch
    "link_load_pages": ("<u4", "SWL"),         # pages crossing each link in each window
    "held_pages": ("<i4", "SWN"),              # pages held per satellite at each window end
    "client_latlon_cdeg": ("<i2", "C2"),
    "client_t_s": ("<f4", "C2"),               # session start, end (s)
    "population": ("u1", "yx"),                # log-scaled population per grid cell, row 0 north
    "sess_index": ("<i4", "K"),                # index in the run's session table
    "sess_latlon_cdeg": ("<i2", "K2"),
    "sess_t_s": ("<f8", "K2"),                 # start, end (s)
    "sess_visit_offsets": ("<i4", "K+"),
    "visit_sat": ("<i4", "V"),
    "visit_start_s": ("<f8", "V"),
    "hold_offsets": ("<i4", "SK+"),            # rows of strategy s, session k: [o[s,k], o[s,k+1])
    "hold_frame": ("<i4", "H"),
    "hold_sat": ("<i4", "H"),                  # satellite, or GROUND_HOLDER
    "hold_pages": ("<i4", "H"),
    "sess_window_moves": ("<i4", "SKW"),       # page movements of the session in each window
    "sess_counters": ("<f8", "SKc"),           # pager counters, names in meta["session_counters"]
}
#: optional arrays (a live source or a capacity model may add them)
OPTIONAL_SPECS: dict[str, tuple[str, str]] = {
    # with capacities the page shows utilisation = background + load bytes/s / capacity
    "link_capacity_bytes_per_s": ("<f4", "L"),
    "link_background_util": ("<f4", "WL"),      # other traffic, fraction of capacity
}


@dataclass(frozen=True, eq=False)
class ViewData:
    """``meta``: JSON-serialisable metadata; ``arrays``: the named arrays of ARRAY_SPECS."""

    meta: dict[str, Any]
    arrays: dict[str, np.ndarray]

    def validate(self) -> None:
        """Raise ValueError naming the first array whose dtype or shape breaks the schema."""
        a = self.arrays
        missing = [k for k in ARRAY_SPECS if k not in a]
        if missing:
            raise ValueError(f"view data lacks arrays {missing}")
        dims: dict[str, int] = {}
        for name, (dtype, letters) in {**ARRAY_SPECS, **OPTIONAL_SPECS}.items():
            if name not in a:
                continue
            arr = a[name]
            if arr.dtype != np.dtype(dtype):
                raise ValueError(f"view array {name}: dtype {arr.dtype}, want {np.dtype(dtype)}")
            want = _shape_letters(letters)
            if len(want) != arr.ndim:
                raise ValueError(f"view array {name}: shape {arr.shape}, want {letters}")
            for (letter, plus), n in zip(want, arr.shape, strict=True):
                if letter.isdigit():
                    if n != int(letter):
                        raise ValueError(f"view array {name}: shape {arr.shape}, want {letters}")
                    continue
                n = n - plus
                if dims.setdefault(letter, n) != n:
                    raise ValueError(f"view array {name}: {letter} = {n}, elsewhere "
                                     f"{dims[letter]} (shape {arr.shape})")
        n_strat = len(self.meta.get("strategies", []))
        if dims.get("S") != n_strat:
            raise ValueError(f"view: {dims.get('S')} strategies in the arrays, "
                             f"{n_strat} in meta['strategies']")

    # -- files ---------------------------------------------------------------------------
    def to_bytes(self) -> tuple[bytes, bytes]:
        """(view.json bytes, view.bin.gz bytes); deterministic for the same data."""
        self.validate()
        directory, parts, offset = {}, [], 0
        for name in sorted(self.arrays):
            arr = np.ascontiguousarray(self.arrays[name])
            raw = arr.tobytes()
            directory[name] = {"dtype": arr.dtype.str, "shape": list(arr.shape),
                               "offset": offset}
            pad = (-len(raw)) % _ALIGN
            parts.append(raw + b"\0" * pad)
            offset += len(raw) + pad
        head = {"format": FORMAT, **self.meta, "blob": BLOB_NAME, "blob_bytes": offset,
                "arrays": directory}
        blob = gzip.compress(b"".join(parts), compresslevel=6, mtime=0)
        return (json.dumps(head, indent=1, sort_keys=False) + "\n").encode(), blob

    def write(self, out_dir: Path) -> list[Path]:
        """Write view.json and view.bin.gz into ``out_dir``."""
        out_dir.mkdir(parents=True, exist_ok=True)
        head, blob = self.to_bytes()
        paths = [out_dir / JSON_NAME, out_dir / BLOB_NAME]
        paths[1].write_bytes(blob)
        paths[0].write_bytes(head)
        return paths

    @classmethod
    def read(cls, run_dir: Path) -> ViewData:
        """Read a run folder's view files; errors name the file and what is wrong."""
        path = Path(run_dir) / JSON_NAME
        if not path.is_file():
            raise ValueError(f"{run_dir}: no {JSON_NAME} (write one with "
                             "`satpage compare --out DIR`)")
        head = json.loads(path.read_text())
        if head.get("format") != FORMAT:
            raise ValueError(f"{path}: format {head.get('format')!r}, this satpage reads "
                             f"{FORMAT!r}")
        raw = gzip.decompress((Path(run_dir) / head["blob"]).read_bytes())
        arrays = {}
        for name, d in head.pop("arrays").items():
            dt = np.dtype(d["dtype"])
            n = int(np.prod(d["shape"], dtype=np.int64))
            arrays[name] = np.frombuffer(raw, dt, n, d["offset"]).reshape(d["shape"])
        for k in ("format", "blob", "blob_bytes"):
            head.pop(k, None)
        view = cls(head, arrays)
        view.validate()
        return view


def _shape_letters(letters: str) -> list[tuple[str, int]]:
    """"SK+" -> [("S", 0), ("K", 1)]: a letter, and 1 when the axis has one more entry."""
    out: list[tuple[str, int]] = []
    for ch in letters:
        if ch == "+":
            out[-1] = (out[-1][0], 1)
        else:
            out.append((ch, 0))
    return out
