"""The Hessian of a likelihood from its exact gradients, in one evaluation round.

Each row of the Hessian is a central difference of the exact gradient,
``H[i] = (g(x + h_i e_i) - g(x - h_i e_i)) / (2 h_i)``, so the ``2 n`` displaced points of
``n`` parameters are evaluated together (:meth:`~laddu_dask.Likelihood.values_and_gradients`:
one pass of the thread pool, one call per worker on a cluster, every partition read once).
MIGRAD and HESSE then need no second derivatives from function values: Minuit's own
numerical HESSE takes about ``2 n`` evaluations per diagonal element and cycle plus one per
off-diagonal pair, each a separate round.

Steps are ``RELATIVE_STEP * max(|x_i|, 1)``, shrunk to ``0.01`` of a parameter's error
(``sqrt(2 / H_ii)`` for ``-2 ln L``) when that is smaller, in a second round.  Next to a
bound the difference is one-sided, of second order as well (two steps to one side, and the
point ``x`` itself), so no point leaves the parameter's bounds.  The result is symmetrised.

Examples
--------
>>> import numpy as np
>>> def values_and_gradients(points):  # -2 ln L of a Gaussian: a x^2 + b x y + c y^2
...     p = np.asarray(points)
...     return (p[:, 0] ** 2 + p[:, 0] * p[:, 1] + 2 * p[:, 1] ** 2,
...             np.stack([2 * p[:, 0] + p[:, 1], p[:, 0] + 4 * p[:, 1]], axis=1))
>>> gradient_hessian(values_and_gradients, np.array([0.5, -1.0]), [(None, None)] * 2).round(9)
array([[2., 1.],
       [1., 4.]])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from laddu_dask.errors import NonFiniteError
from laddu_dask.likelihood.steps import Steps, drive

__all__ = ["RELATIVE_STEP", "gradient_hessian", "hessian_steps"]

#: A step's size relative to ``max(|x_i|, 1)``.
RELATIVE_STEP = 1e-4
#: Steps longer than this fraction of a parameter's error are shrunk to ``ERROR_STEP`` of it.
MAX_ERROR_FRACTION, ERROR_STEP = 0.05, 0.01

Bounds = Sequence[tuple[float | None, float | None]]
PointsEvaluator = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def _sides(x: np.ndarray, bounds: Bounds, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Steps within the bounds and each difference's direction: 0 central, +1 forward,
    -1 backward (one-sided differences take two steps to that side)."""
    h = h.copy()
    side = np.zeros(len(x), dtype=int)
    for i, (lo, hi) in enumerate(bounds):
        room_up = math.inf if hi is None else hi - x[i]
        room_down = math.inf if lo is None else x[i] - lo
        if room_up >= h[i] and room_down >= h[i]:
            continue
        side[i] = 1 if room_up >= room_down else -1
        h[i] = min(h[i], 0.5 * max(room_up, room_down))
    return h, side


def _round(x: np.ndarray, bounds: Bounds, h: np.ndarray) -> Steps:
    """One round: the displaced points' gradients, then each row's difference of second
    order (central, or one-sided ``(-3 g(x) + 4 g(x + h) - g(x + 2 h)) / 2 h``)."""
    h, side = _sides(x, bounds, h)
    n = len(x)
    eye = np.eye(n)
    offsets = [[1.0, -1.0] if side[i] == 0 else [side[i] * 1.0, side[i] * 2.0] for i in range(n)]
    points = [x + k * h[i] * eye[i] for i in range(n) for k in offsets[i]]
    one_sided = bool(side.any())
    if one_sided:
        points.append(x.copy())
    _, grads = yield np.array(points)
    grads = np.asarray(grads, dtype=np.float64)
    rows = np.empty((n, n))
    with np.errstate(all="ignore"):  # a non-finite row is reported by the caller
        for i in range(n):
            first, second = grads[2 * i], grads[2 * i + 1]
            if side[i] == 0:
                rows[i] = (first - second) / (2.0 * h[i])
            else:
                rows[i] = side[i] * (4.0 * first - second - 3.0 * grads[-1]) / (2.0 * h[i])
    return 0.5 * (rows + rows.T), len(points)


def gradient_hessian(evaluate: PointsEvaluator, x: np.ndarray, bounds: Bounds,
                     names: Sequence[str] | None = None, counted: list[int] | None = None) -> np.ndarray:
    """The Hessian at ``x`` from central differences of exact gradients.

    Parameters
    ----------
    evaluate : callable
        ``(points (K, n)) -> (values (K,), gradients (K, n))``: a likelihood's
        ``values_and_gradients``.
    x : numpy.ndarray
        The point, shape ``(n,)``.
    bounds : sequence of (low, high)
        The parameters' bounds (``None`` for none); no point leaves them.
    names : sequence of str, optional
        The parameters' names, for an error message.
    counted : list of int, optional
        Each round appends how many points it evaluated.

    Returns
    -------
    numpy.ndarray
        The symmetric ``(n, n)`` Hessian.

    Raises
    ------
    NonFiniteError
        When a second derivative is not finite (naming the parameters).
    """
    return drive(hessian_steps(x, bounds, names, counted), evaluate)


def hessian_steps(x: np.ndarray, bounds: Bounds, names: Sequence[str] | None = None,
                  counted: list[int] | None = None) -> Steps:
    """:func:`gradient_hessian` as steps (:mod:`laddu_dask.likelihood.steps`): its one or
    two rounds of points are yielded, so the Hessians of many fits share their rounds."""
    x = np.asarray(x, dtype=np.float64)
    h = RELATIVE_STEP * np.maximum(np.abs(x), 1.0)
    hessian, points = yield from _round(x, bounds, h)
    if counted is not None:
        counted.append(points)
    diagonal = np.diag(hessian)
    with np.errstate(all="ignore"):
        error = np.where(diagonal > 0, np.sqrt(2.0 / np.where(diagonal > 0, diagonal, 1.0)), np.inf)
    if (h > MAX_ERROR_FRACTION * error).any():
        h = np.minimum(h, ERROR_STEP * error)
        hessian, points = yield from _round(x, bounds, h)
        if counted is not None:
            counted.append(points)
    if not np.isfinite(hessian).all():
        i, j = map(int, np.argwhere(~np.isfinite(hessian))[0])
        label = (lambda k: repr(names[k])) if names is not None else str  # noqa: E731
        raise NonFiniteError(f"the second derivative of the likelihood in parameters {label(i)} and "
                             f"{label(j)} at {x.tolist()} is {hessian[i, j]!r}")
    return hessian
