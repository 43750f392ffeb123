"""glibc's heap settings while laddu-dask works inside a Dask worker.

Dask's nanny starts each worker with ``MALLOC_TRIM_THRESHOLD_=65536``
(``distributed.nanny.pre-spawn-environ``) so that freed memory goes back to the system.
Setting it also fixes glibc's mmap threshold at 128 KiB: every array of more than 16k
float64 values is then its own ``mmap``, zero-filled page by page and unmapped when freed,
and a fit task that prepares and evaluates bins of tens of thousands of events runs about
twice as slowly as the same code in the client (1.2 s against 0.6 s for 25 bootstrap
replicas of a KsKs bin). :func:`roomy_heap` raises both thresholds for the duration of a
block (32 MiB: arrays of that size reuse the heap) and puts Dask's values back after it;
outside a worker started that way (no ``MALLOC_TRIM_THRESHOLD_`` in the environment) or
without glibc it does nothing.

Examples
--------
>>> with roomy_heap():
...     total = sum(range(10))
>>> total
45
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["roomy_heap"]

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: The thresholds inside :func:`roomy_heap` (glibc's largest mmap threshold on 64 bits).
ROOMY = 32 * 1024 * 1024
#: glibc's mmap threshold once a trim threshold is set (its dynamic adjustment is off).
_MMAP_DEFAULT = 128 * 1024

_lock = threading.Lock()
_users = 0


@functools.cache
def _mallopt() -> ctypes._CFuncPtr | None:
    """glibc's ``mallopt`` from the symbols this process already has (no library search,
    nothing run), or None without glibc."""
    try:
        return ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None


@contextmanager
def roomy_heap() -> Iterator[None]:
    """Inside a Dask worker with ``MALLOC_TRIM_THRESHOLD_`` set: glibc's trim and mmap
    thresholds at :data:`ROOMY` while the block runs (nested and concurrent blocks share
    it; the last to end puts the worker's values back)."""
    global _users
    trim = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    mallopt = _mallopt() if trim is not None and trim.isdigit() else None
    if mallopt is None:
        yield
        return
    with _lock:
        _users += 1
        if _users == 1:
            mallopt(_M_MMAP_THRESHOLD, ROOMY)
            mallopt(_M_TRIM_THRESHOLD, ROOMY)
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                mallopt(_M_TRIM_THRESHOLD, int(trim))
                mallopt(_M_MMAP_THRESHOLD, _MMAP_DEFAULT)
