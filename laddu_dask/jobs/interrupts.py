"""Ctrl-C in batch fits: SIGINT raises :class:`KeyboardInterrupt`, whatever a library installed.

Importing dask-jobqueue replaces the SIGINT handler of the process with one that calls
``sys.exit()`` (``dask_jobqueue/runner.py``), so Ctrl-C of a fit waiting for its worker
jobs used to end the process with status 0 and nothing written, as if the fit had
succeeded. :func:`sigint_raises` puts Python's own handler in place for a block and
restores the one before it afterwards (also over an import that replaced it).

A Ctrl-C that lands while ``distributed`` is starting one of its blocking calls makes
distributed's own cancel callback fail (``NameError: cannot access free variable
'future'``, in ``distributed/utils.py``'s ``sync``; the call is abandoned all the same),
and tornado logs that traceback over the one line the command prints.  Within the block
that one record is dropped (:class:`DistributedCancelRace`); every other log record stays.

CPython (3.11 at least) remembers a :class:`KeyboardInterrupt` that escaped code run from
source text (``exec``/``eval`` of a string: ``dataclasses`` and ``namedtuple`` build their
methods so), even once the command caught it; ``python -m laddu_dask.cli`` then ended by
SIGINT at exit (status -2 for a parent process) in place of the 130 it returned.
:func:`forget_caught_interrupt` clears that record once the interrupt has been handled.

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
import logging
import os
import signal
import threading
from collections.abc import Iterator

__all__ = ["DistributedCancelRace", "forget_caught_interrupt", "sigint_raises"]


class DistributedCancelRace(logging.Filter):
    """Drops the log record of distributed's failing cancel callback after a Ctrl-C (a
    ``NameError`` raised in ``cancel`` of ``distributed/utils.py``); passes every other."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, NameError):
            return True
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        code = tb.tb_frame.f_code if tb is not None else None
        return not (code is not None and code.co_name == "cancel"
                    and code.co_filename.endswith(os.path.join("distributed", "utils.py")))


_RACE = DistributedCancelRace()


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
    # kept after the block: the loop thread may log the record after the interrupt returned
    logging.getLogger("tornado.application").addFilter(_RACE)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before if before is not None else signal.SIG_DFL)


def forget_caught_interrupt() -> None:
    """Tell the interpreter that the last :class:`KeyboardInterrupt` was handled.

    CPython records an interrupt that escaped code run from a string, and ``python -m``
    re-raises SIGINT at exit when that record is set, whatever status the program chose; any
    later run of source text resets the record, so this runs an empty one.
    """
    exec("pass", {})  # noqa: S102 - an empty constant string, to reset CPython's record
