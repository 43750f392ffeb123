"""laddu's ``ganesh`` observers: ``ProgressObserver`` and ``DebugObserver``. A run calls
each observer once per step, after the step and before the terminators; a plain Python
callable is called as ``observer(step, snapshot)`` with a
:class:`~laddu_dask.likelihood.ganesh.status.StatusSnapshot` (as laddu does), and what it
returns is ignored.

Examples
--------
>>> import laddu_dask as ld
>>> ld.ganesh.ProgressObserver(interval=10).interval
10
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import numpy as np

from laddu_dask.likelihood.ganesh.validate import count

__all__ = ["DebugObserver", "Observer", "ProgressObserver"]


class Observer:
    """An observer of a run: :meth:`observe` is called after every step."""

    def observe(self, state: SimpleNamespace) -> None:
        raise NotImplementedError


class ProgressObserver(Observer):
    """Print one line every ``interval`` steps: the step, the objective and the evaluations
    so far (to ``sys.stderr``).

    Examples
    --------
    >>> ProgressObserver(interval=0)
    Traceback (most recent call last):
    ...
    laddu_dask.errors.GaneshConfigError: interval must be an integer >= 1, got 0
    """

    def __init__(self, *, interval: int = 1) -> None:
        self.interval = count("interval", interval, 1)

    def __repr__(self) -> str:
        return f"ProgressObserver(interval={self.interval})"

    def observe(self, state: SimpleNamespace) -> None:
        if state.step % self.interval == 0:
            print(
                f"step {state.step}: f(x) = {state.fx:.10g}, evaluations f = {state.evals.f}, "
                f"g = {state.evals.g}",
                file=sys.stderr,
            )


class DebugObserver(Observer):
    """Print every step in full: the step, the point, the objective and, where the method
    has one, the gradient (to ``sys.stderr``)."""

    def __repr__(self) -> str:
        return "DebugObserver()"

    def observe(self, state: SimpleNamespace) -> None:
        gradient = getattr(state, "gradient", None)
        extra = "" if gradient is None else f", gradient = {np.asarray(gradient).tolist()}"
        print(
            f"step {state.step}: x = {np.asarray(state.x).tolist()}, f(x) = {state.fx!r}{extra}",
            file=sys.stderr,
        )
