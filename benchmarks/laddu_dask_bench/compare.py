"""Comparing like with like: one fit driver for every library, and checks before timing.

* :func:`migrad` fits any likelihood-like object (``parameter_names``, ``resolve``,
  ``bounds``, ``value``, ``value_and_gradient``) with :func:`laddu_dask.fit`'s MIGRAD
  driver: iminuit MIGRAD with the given strategy and tolerance, ``errordef = 1``
  (``-2 ln L``), the parameters' limits, then HESSE; every side sits behind the
  same cache (one ``value_and_gradient`` per new point; a ``value`` at the cached
  point reuses it; a ``value`` at a new point, as line searches and HESSE ask, is the
  library's own ``value``).  Calls are counted by :class:`Counted`.
* :func:`same_minimum` says whether two fits reached the same minimum, and
  :func:`same_function` whether two implementations compute the same ``-2 ln L`` up
  to a normalisation convention (a factor and a constant); each raises
  :class:`NotComparableError` when not, so a benchmark never times different things.

Examples
--------
>>> import numpy as np
>>> class Quadratic:
...     parameter_names = ["a", "b"]
...     def resolve(self, p): return np.asarray(p, dtype=float)
...     def bounds(self): return [(None, None), (None, None)]
...     def value(self, p): return float(((np.asarray(p) - [1.0, 2.0]) ** 2).sum())
...     def value_and_gradient(self, p):
...         d = np.asarray(p) - [1.0, 2.0]
...         return float((d ** 2).sum()), 2 * d
>>> fit = migrad(Quadratic(), [0.0, 0.0])
>>> [round(v, 6) for v in fit["values"]], fit["valid"]
([1.0, 2.0], True)
>>> fit["value_and_gradient_calls"] > 0
True
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

#: Two fits reached the same minimum when their -2 ln L differ by at most this much ...
FVAL_TOLERANCE = 1e-3
#: ... and every parameter by at most this fraction of its HESSE error.
SIGMA_TOLERANCE = 0.05
#: :func:`same_function`: NLL differences agree to this fraction of the NLL's magnitude ...
VALUE_RTOL = 1e-9
#: ... and gradients to this fraction of the largest gradient component.
GRADIENT_RTOL = 1e-8


class NotComparableError(RuntimeError):
    """Two sides of a comparison compute or reach different things: no times are reported."""


class Counted:
    """A likelihood that counts its ``value`` and ``value_and_gradient`` calls and the
    seconds they take (``evaluation_s``: the rest of a fit's time is the minimiser's and
    the driver's).

    Every other attribute is the wrapped object's.

    Examples
    --------
    >>> class F:
    ...     def value(self, p): return 1.0
    ...     def value_and_gradient(self, p): return 1.0, [0.0]
    >>> c = Counted(F())
    >>> _ = c.value([0.0]), c.value([1.0]), c.value_and_gradient([0.0])
    >>> c.value_calls, c.value_and_gradient_calls, c.evaluation_s > 0
    (2, 1, True)
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.value_calls = 0
        self.value_and_gradient_calls = 0
        self.evaluation_s = 0.0

    def value(self, params: Any) -> float:
        self.value_calls += 1
        t0 = time.perf_counter()
        try:
            return self.inner.value(params)
        finally:
            self.evaluation_s += time.perf_counter() - t0

    def value_and_gradient(self, params: Any) -> tuple[float, np.ndarray]:
        self.value_and_gradient_calls += 1
        t0 = time.perf_counter()
        try:
            return self.inner.value_and_gradient(params)
        finally:
            self.evaluation_s += time.perf_counter() - t0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class SameOrder:
    """A likelihood (with ``parameter_names``) taking and returning parameters in ``names``'s order.

    For two libraries that order the same parameters differently (laddu's first-seen
    order against laddu-dask's): both sides are then given the same parameter vector.

    Examples
    --------
    >>> class F:
    ...     parameter_names = ["b", "a"]
    ...     def value(self, p): return float(10 * p[0] + p[1])
    ...     def value_and_gradient(self, p): return self.value(p), np.array([10.0, 1.0])
    >>> f = SameOrder(F(), ["a", "b"])
    >>> f.value([1.0, 2.0]), f.value_and_gradient([1.0, 2.0])[1].tolist()
    (21.0, [1.0, 10.0])
    """

    def __init__(self, inner: Any, names: Sequence[str]) -> None:
        theirs = list(inner.parameter_names)
        if sorted(theirs) != sorted(names):
            raise NotComparableError(f"different parameters: {sorted(theirs)} against {sorted(names)}")
        self.inner = inner
        self.parameter_names = list(names)
        self._to_theirs = np.array([self.parameter_names.index(n) for n in theirs])
        self._to_ours = np.array([theirs.index(n) for n in self.parameter_names])

    def value(self, params: Any) -> float:
        return self.inner.value(np.asarray(params, dtype=float)[self._to_theirs])

    def value_and_gradient(self, params: Any) -> tuple[float, np.ndarray]:
        v, g = self.inner.value_and_gradient(np.asarray(params, dtype=float)[self._to_theirs])
        return v, np.asarray(g)[self._to_ours]


def migrad(likelihood: Any, start: Any, *, strategy: int = 1, tolerance: float = 0.1) -> dict[str, Any]:
    """Fit ``likelihood`` from ``start`` with :func:`laddu_dask.fit` (MIGRAD, then HESSE).

    Returns wall time, minimum, values, HESSE errors, validity, the likelihood's
    ``value_and_gradient`` and ``value`` calls and the seconds spent in them
    (``evaluation_s``), and MIGRAD's own counts (``nfcn``, ``ngrad``: requests before
    the cache).
    """
    from laddu_dask.likelihood.fit import fit

    counted = Counted(likelihood)
    t0 = time.perf_counter()
    # Minuit's own HESSE for both libraries, so that the driver is the same one (laddu's
    # likelihood has no K-point evaluation for laddu-dask's HESSE from exact gradients)
    result = fit(counted, initial=start, method="migrad", strategy=strategy, tolerance=tolerance,
                 hessian="minuit")
    wall = time.perf_counter() - t0
    m = result.minuit
    return {
        "wall_s": wall, "fval": result.fval, "valid": result.valid,
        "values": [float(v) for v in result.values],
        "errors": [result.errors[n] for n in result.parameter_names],
        "value_and_gradient_calls": counted.value_and_gradient_calls,
        "value_calls": counted.value_calls, "evaluation_s": counted.evaluation_s,
        "minuit_nfcn": int(m.nfcn), "minuit_ngrad": int(m.ngrad), "edm": float(m.fmin.edm),
    }


def same_minimum(a: dict[str, Any], b: dict[str, Any], names: Sequence[str], *,
                 fval_tolerance: float = FVAL_TOLERANCE,
                 sigma_tolerance: float = SIGMA_TOLERANCE) -> dict[str, Any]:
    """Check that fits ``a`` and ``b`` (dicts of :func:`migrad`) reached the same minimum.

    Both must be valid, their ``fval`` within ``fval_tolerance`` and each parameter
    within ``sigma_tolerance`` of ``a``'s HESSE error.  Returns the differences;
    raises :class:`NotComparableError` naming what differs.

    Examples
    --------
    >>> a = {"valid": True, "fval": 10.0, "values": [1.0, 2.0], "errors": [0.1, 0.1]}
    >>> same_minimum(a, dict(a, values=[1.001, 2.0]), ["x", "y"])["worst_parameter"]
    'x'
    >>> same_minimum(a, dict(a, values=[1.0, 2.05]), ["x", "y"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    laddu_dask_bench.compare.NotComparableError: the fits reached different minima: parameter 'y' ...
    """
    for label, fit in (("first", a), ("second", b)):
        if not fit["valid"]:
            raise NotComparableError(f"the {label} fit is not valid: its minimum cannot be compared")
    dfval = abs(a["fval"] - b["fval"])
    dsigma = np.abs(np.subtract(a["values"], b["values"])) / np.asarray(a["errors"], dtype=float)
    worst = int(np.argmax(dsigma))
    if dfval > fval_tolerance:
        raise NotComparableError(f"the fits reached different minima: -2 ln L differs by {dfval:.3g} "
                                 f"(tolerance {fval_tolerance:g})")
    if dsigma[worst] > sigma_tolerance:
        raise NotComparableError(f"the fits reached different minima: parameter {names[worst]!r} differs "
                                 f"by {dsigma[worst]:.3g} sigma (tolerance {sigma_tolerance:g})")
    return {"fval_difference": dfval, "max_parameter_difference_sigma": float(dsigma[worst]),
            "worst_parameter": names[worst], "fval_tolerance": fval_tolerance,
            "sigma_tolerance": sigma_tolerance}


def same_function(ours: Callable[[Any], tuple[float, np.ndarray]],
                  theirs: Callable[[Any], tuple[float, np.ndarray]],
                  points: Sequence[Any], *, scale: float = 1.0,
                  value_rtol: float = VALUE_RTOL, gradient_rtol: float = GRADIENT_RTOL) -> dict[str, Any]:
    """Check that ``theirs`` is ``ours`` up to a convention: ``ours = scale * theirs + constant``.

    ``ours`` and ``theirs`` return ``(value, gradient)``.  At every point the
    difference of values from the first point must agree, ``ours`` against
    ``scale * theirs``, to ``value_rtol`` of ``|ours|``, and the gradients to
    ``gradient_rtol`` of ``ours``'s largest component.  Returns the largest relative
    differences; raises :class:`NotComparableError` at the first point that differs.

    Examples
    --------
    >>> import numpy as np
    >>> f = lambda p: (float(np.sum(np.square(p))) + 7.0, 2 * np.asarray(p))
    >>> g = lambda p: (0.5 * float(np.sum(np.square(p))) - 3.0, np.asarray(p))
    >>> same_function(f, g, [[1.0, 2.0], [1.5, 2.5]], scale=2.0)["points"]
    2
    >>> same_function(f, lambda p: g(np.multiply(p, 1.01)), [[1.0, 2.0], [1.5, 2.5]],
    ...               scale=2.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    laddu_dask_bench.compare.NotComparableError: different functions: at point 0 the gradients differ ...
    """
    if len(points) < 2:
        raise ValueError("same_function needs at least two parameter points")
    v0, _ = ours(points[0])
    w0, _ = theirs(points[0])
    worst_value = worst_gradient = 0.0
    for i, p in enumerate(points):
        v, g = ours(p)
        w, h = theirs(p)
        g, h = np.asarray(g, dtype=float), scale * np.asarray(h, dtype=float)
        dv, dw = v - v0, scale * (w - w0)
        rel_value = abs(dv - dw) / max(abs(v), 1e-300)
        rel_gradient = float(np.max(np.abs(g - h)) / max(float(np.max(np.abs(g))), 1e-300))
        if not (rel_value <= value_rtol):
            raise NotComparableError(
                f"different functions: at point {i} the value difference from point 0 is {dv:.6g} "
                f"against {dw:.6g} (relative {rel_value:.3g} of the value, tolerance {value_rtol:g})")
        if not (rel_gradient <= gradient_rtol):
            raise NotComparableError(
                f"different functions: at point {i} the gradients differ by {rel_gradient:.3g} of the "
                f"largest component (tolerance {gradient_rtol:g})")
        worst_value, worst_gradient = max(worst_value, rel_value), max(worst_gradient, rel_gradient)
    return {"points": len(points), "scale": scale, "value_difference_rel": worst_value,
            "gradient_difference_rel": worst_gradient, "value_rtol": value_rtol,
            "gradient_rtol": gradient_rtol}
