"""bench/profile_fault.py's reading of `go tool pprof -top` (the JSON's pprof_cum_share)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from profile_fault import cum_shares  # noqa: E402

TOP = """File: satnode
Type: cpu
Duration: 480.33s, Total samples = 5.38s ( 1.12%)
Showing nodes accounting for 5.38s, 100% of 5.38s total
      flat  flat%   sum%        cum   cum%
         0     0%     0%      2.76s 51.30%  google.golang.org/grpc.(*Server).processRPC
     0.03s  0.56%  0.56%      0.49s  9.11%  google.golang.org/grpc.(*ClientConn).Invoke
      10ms  0.19%  0.74%      0.11s  2.04%  slices.Clone[go.shape.[]uint8,go.shape.uint8] (inline)
"""


def test_every_row_gives_its_cumulative_share_and_the_header_none():
    assert cum_shares(TOP) == {
        "google.golang.org/grpc.(*Server).processRPC": 51.30,
        "google.golang.org/grpc.(*ClientConn).Invoke": 9.11,
        "slices.Clone[go.shape.[]uint8,go.shape.uint8]": 2.04,
    }
