"""The fused kernels' compilations: whether Numba is there, and waiting for the background
compilations of this process (:meth:`~laddu_dask.runtime.reducer.PartitionReducer.compile_ahead`
starts and registers each thread through :func:`start_compilation`)."""

from __future__ import annotations

import threading
import weakref

__all__ = ["numba_available", "start_compilation", "wait_compilations"]


def numba_available() -> bool:
    """Whether Numba can be imported."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


_COMPILING: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


def start_compilation(thread: threading.Thread) -> threading.Thread:
    """Start ``thread`` (a background compilation) and register it for
    :func:`wait_compilations`, in that order: a wait in another thread joins only threads
    that have started (joining one before its start raises ``RuntimeError``)."""
    thread.start()
    _COMPILING.add(thread)
    return thread


def wait_compilations(timeout: float | None = None) -> bool:
    """Wait for every background compilation of fused kernels in this process (``timeout``
    seconds at most for each); ``True`` when none is left running.

    A process that exits stops a child compilation still running, so a script that wants
    the kernels in the disk cache for the next process (a benchmark, a warm-up job) calls
    this before it exits.

    Examples
    --------
    >>> wait_compilations(600.0)  # returns once nothing compiles
    True
    """
    for thread in list(_COMPILING):
        thread.join(timeout)
    return not any(t.is_alive() for t in list(_COMPILING))
