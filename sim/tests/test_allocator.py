"""satpage.allocator: an engine process reuses its large arrays' pages, even where the
environment turned glibc's adaptive mmap threshold off (as a Dask nanny does). The
authority is the kernel's count of this process's page faults."""

import os
import platform
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.integration,  # runs python in a subprocess
              pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")]

CYCLES = """
import resource, sys
import numpy as np
from satpage.allocator import tune_allocator
if sys.argv[1] == "tuned":
    assert tune_allocator()
np.ones(2 << 20)
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    a = np.ones(2 << 20)  # 16 MB, as a chunk's window of positions
    del a
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
"""


def faults(mode: str) -> int:
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"}  # what Dask's nanny sets
    out = subprocess.run([sys.executable, "-c", CYCLES, mode], env=env, check=True,
                         capture_output=True, text=True)
    return int(out.stdout)


def test_a_tuned_process_takes_its_arrays_from_the_heap_where_dasks_setting_maps_each_anew():
    plain, tuned = faults("plain"), faults("tuned")
    assert plain >= 20  # each 16 MB array a fresh mapping, faulted in again
    assert tuned <= plain // 20
