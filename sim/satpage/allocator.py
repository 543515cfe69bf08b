"""The C allocator of an engine process (this process in-process, or a Dask worker).

A chunk allocates and frees the same large arrays again and again: the window of
positions (4,408 satellites x a few hundred steps, 5-25 MB), the sweep's per-step
tables and the replay's event arrays. glibc serves a block above its mmap threshold
with a fresh mapping, and the kernel zeroes every page of it on first touch. An
ordinary process raises that threshold as it frees large blocks (up to 32 MB), so
after the first chunk the arrays come back from the heap. A Dask worker does not:
its nanny sets ``MALLOC_TRIM_THRESHOLD_=65536``, and setting any threshold turns
glibc's adaptation off. Measured on the 20,000-session slice of docs/scale.md: four
times the page faults of an in-process run (257,000 against 62,000) and the schedule
stage 20 % slower. Fixing both thresholds at the value an ordinary process adapts to
makes every engine process the same, with or without Dask.
"""

from __future__ import annotations

import ctypes
import logging
import platform

__all__ = ["tune_allocator", "is_tuned", "MMAP_THRESHOLD_BYTES", "TRIM_THRESHOLD_BYTES"]

log = logging.getLogger(__name__)

#: blocks at least this large get their own mapping: glibc's adaptive maximum on
#: 64-bit (DEFAULT_MMAP_THRESHOLD_MAX), so arrays up to it are reused from the heap
MMAP_THRESHOLD_BYTES = 32 << 20
#: free memory kept at the top of the heap before it is given back: four arrays of
#: the threshold's size, so a chunk's next arrays find their pages already mapped
TRIM_THRESHOLD_BYTES = 128 << 20

# mallopt parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

_done: list[bool] = []


def tune_allocator() -> bool:
    """Fix glibc's mmap and trim thresholds for this process (once); False where the C
    library is not glibc, which is left as it is."""
    if _done:
        return _done[0]
    ok = False
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        # glibc's soname on every Linux ABI; find_library would run ldconfig in a subprocess
        libc = ctypes.CDLL("libc.so.6")
        ok = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
                  and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
        if not ok:
            log.debug("mallopt refused the engine's allocator thresholds")
    _done.append(ok)
    return ok


def is_tuned() -> bool:
    """Whether ``tune_allocator`` has fixed this process's thresholds."""
    return bool(_done and _done[0])
