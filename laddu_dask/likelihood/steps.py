"""Minimisers written as steps: generators that ask for evaluations instead of making them.

A *steps* generator yields each round of points it needs, an array of shape ``(K, n)``,
and is sent back ``(values (K,), gradients (K, n))`` at those points; it returns its
result.  The same steps then run alone (:func:`drive`, one call of ``evaluate`` per round)
or together with the steps of other fits (:mod:`laddu_dask.analysis.lockstep`, one
evaluation round for the points of all of them), and follow bitwise the same path either
way: only who evaluates differs.  An evaluation that fails is thrown into the generator at
its ``yield``, so a fit sees the error where it asked.

Examples
--------
>>> import numpy as np
>>> def newton(x):  # minimise (x - 2)^2 from x: one step of Newton's method, then stop
...     values, grads = yield np.array([[x]])
...     return float(x - grads[0, 0] / 2.0)
>>> drive(newton(5.0), lambda p: ((p[:, 0] - 2) ** 2, 2 * (p - 2)))
2.0
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import numpy as np

__all__ = ["Steps", "drive", "observe", "pointwise"]

#: A steps generator: yields ``(K, n)`` points, is sent ``(values, gradients)``, returns its result.
Steps = Generator[np.ndarray, tuple[np.ndarray, np.ndarray], Any]


def drive(steps: Steps, evaluate: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]) -> Any:
    """Run ``steps`` to its end with ``evaluate(points) -> (values, gradients)``; its result.

    An exception of ``evaluate`` is thrown into ``steps`` (which may handle it); one that
    leaves ``steps`` propagates."""
    try:
        points = next(steps)
        while True:
            try:
                reply = evaluate(points)
            except Exception as exc:  # noqa: BLE001 - the steps hear of it where they asked
                points = steps.throw(exc)
            else:
                points = steps.send(reply)
    except StopIteration as stop:
        return stop.value


def pointwise(value_and_gradient: Callable[[np.ndarray], tuple[float, Any]]
              ) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """``evaluate`` for :func:`drive` from an objective of one point at a time.

    Examples
    --------
    >>> evaluate = pointwise(lambda x: (float(x @ x), 2 * x))
    >>> evaluate(np.array([[1.0, 2.0], [0.0, 1.0]]))
    (array([5., 1.]), array([[2., 4.],
           [0., 2.]]))
    """
    def evaluate(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pairs = [value_and_gradient(p) for p in points]
        return (np.array([float(v) for v, _ in pairs]),
                np.array([np.asarray(g, dtype=np.float64) for _, g in pairs]))

    return evaluate


def observe(steps: Steps, seen: Callable[[np.ndarray, np.ndarray, np.ndarray], None]) -> Steps:
    """``steps``, with ``seen(points, values, gradients)`` called on every reply it is sent.

    Examples
    --------
    >>> def twice(x):
    ...     yield np.array([[x]])
    ...     yield np.array([[x + 1.0]])
    >>> log = []
    >>> drive(observe(twice(1.0), lambda p, v, g: log.append(float(v[0]))), lambda p: (p[:, 0] ** 2, 2 * p))
    >>> log
    [1.0, 4.0]
    """
    try:
        points = next(steps)
        while True:
            try:
                reply = yield points
            except Exception as exc:  # noqa: BLE001 - thrown on into the observed steps
                points = steps.throw(exc)
            else:
                seen(points, *reply)
                points = steps.send(reply)
    except StopIteration as stop:
        return stop.value
