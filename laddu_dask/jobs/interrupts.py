"""Ctrl-C in batch fits: SIGINT raises :class:`KeyboardInterrupt`, whatever a library installed.

Importing dask-jobqueue replaces the SIGINT handler of the process with one that calls
``sys.exit()`` (``dask_jobqueue/runner.py``), so Ctrl-C of a fit waiting for its worker
jobs used to end the process with status 0 and nothing written, as if the fit had
succeeded. :func:`sigint_raises` puts Python's own handler in place for a block and
restores the one before it afterwards (also over an import that replaced it).

Examples
--------
>>> import signal
>>> from laddu_dask.jobs.interrupts import sigint_raises
>>> with sigint_raises():
...     signal.getsignal(signal.SIGINT) is signal.default_int_handler
True
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["sigint_raises"]


@contextlib.contextmanager
def sigint_raises() -> Iterator[None]:
    """Within the block SIGINT raises :class:`KeyboardInterrupt`; afterwards the handler that was
    installed before the block is back. Outside the main thread (where handlers cannot be
    set) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before if before is not None else signal.SIG_DFL)
