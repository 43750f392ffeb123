"""laddu's default fit: L-BFGS-B with the exact gradient and the parameters' bounds, then
the covariance from the Hessian of exact gradients.

laddu 0.28.1's ``Likelihood.fit()`` without a ``config`` runs ganesh's L-BFGS-B (10
correction pairs, native bounds) and stops when, after a step, ``-2 ln L`` changed by less
than ``sqrt(eps)`` (``"F_EVAL CONVERGED"``), the gradient's norm is below ``cbrt(eps)``
(``"GRADIENT CONVERGED"``), or the projected gradient's largest component is
(``"PROJECTED GRADIENT WITHIN TOLERANCE"``).  It then takes the Hessian ``H`` of ``-2 ln L``
from central differences of the gradient and reports the covariance ``2 H^-1``.  Here the
steps are SciPy's L-BFGS-B (:func:`scipy.optimize.minimize`) with the same memory, the same
stopping rules checked after every iteration, and the Hessian of
:mod:`laddu_dask.likelihood.hessian` (all ``2 n`` displaced gradients in one evaluation
round; one-sided next to a bound).

Examples
--------
>>> import numpy as np
>>> def both(x):  # -2 ln L of a Gaussian of sigma 0.5 at 1, bounded at 2
...     return float(4 * (x[0] - 1.0) ** 2), np.array([8 * (x[0] - 1.0)])
>>> run = minimize_lbfgsb(both, np.array([3.0]), [(None, 2.0)])
>>> run.converged, run.text, round(float(run.x[0]), 9)
(True, 'GRADIENT CONVERGED', 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["F_TOLERANCE", "G_TOLERANCE", "HISTORY", "LBFGSBRun", "covariance_from_hessian",
           "minimize_lbfgsb", "projected_gradient"]

#: ganesh's L-BFGS-B stopping rules (laddu 0.28.1's defaults): the change of ``-2 ln L`` in
#: one step, the gradient's norm and the projected gradient's largest component.
F_TOLERANCE = math.sqrt(np.finfo(np.float64).eps)
G_TOLERANCE = float(np.cbrt(np.finfo(np.float64).eps))
#: Correction pairs kept (ganesh's ``history_size``).
HISTORY = 10

Bounds = Sequence[tuple[float | None, float | None]]


@dataclass
class LBFGSBRun:
    """Where L-BFGS-B stopped: the point, ``-2 ln L`` there, whether it converged and why."""

    x: np.ndarray
    fx: float
    converged: bool
    text: str
    steps: int


class _Stop(StopIteration):
    pass


def _limits(bounds: Bounds | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper limits as arrays (infinite where there is none)."""
    rows = list(bounds) if bounds is not None else [(None, None)] * n
    return (np.array([-np.inf if lo is None else lo for lo, _ in rows], dtype=np.float64),
            np.array([np.inf if hi is None else hi for _, hi in rows], dtype=np.float64))


def projected_gradient(x: np.ndarray, g: np.ndarray, bounds: Bounds | None) -> np.ndarray:
    """The gradient with the components that push out of an active bound removed
    (``x - clip(x - g)``, L-BFGS-B's).

    Examples
    --------
    >>> projected_gradient(np.array([0.0, 0.5]), np.array([2.0, 2.0]), [(0.0, 1.0), (0.0, 1.0)]).tolist()
    [0.0, 0.5]
    """
    lo, hi = _limits(bounds, len(x))
    return x - np.clip(x - g, lo, hi)


def minimize_lbfgsb(both: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray,
                    bounds: Bounds | None, max_calls: int | None = None) -> LBFGSBRun:
    """Minimise with L-BFGS-B and laddu's stopping rules (see the module).

    Parameters
    ----------
    both : callable
        ``x -> (value, gradient)``; a call at the point of the last one should be cheap
        (each iteration's stopping check asks for the gradient at its new point).
    x0 : numpy.ndarray
        The start.
    bounds : sequence of (low, high), or None
        Each parameter's bounds (``None``: none on that side); None: unbounded.
    max_calls : int, optional
        Most evaluations (a run that reaches it has not converged).
    """
    lo, hi = _limits(bounds, len(x0))
    state = {"f_previous": math.inf, "text": "", "steps": 0}

    def check(intermediate_result: object) -> None:
        x = np.asarray(intermediate_result.x, dtype=np.float64)  # type: ignore[attr-defined]
        fx, g = both(x)
        state["steps"] += 1
        if abs(state["f_previous"] - fx) < F_TOLERANCE:
            state["text"] = "F_EVAL CONVERGED"
        elif np.linalg.norm(g) < G_TOLERANCE:
            state["text"] = "GRADIENT CONVERGED"
        elif np.max(np.abs(projected_gradient(x, g, bounds)), initial=0.0) < G_TOLERANCE:
            state["text"] = "PROJECTED GRADIENT WITHIN TOLERANCE"
        else:
            state["f_previous"] = fx
            return
        raise _Stop

    from scipy.optimize import minimize

    options = {"maxcor": HISTORY, "ftol": 0.0, "gtol": 0.0, "maxiter": 100_000,
               "maxfun": max_calls or 1_000_000}
    res = minimize(both, x0, jac=True, method="L-BFGS-B", callback=check,
                   bounds=None if bounds is None else list(zip(lo, hi)), options=options)
    x = np.asarray(res.x, dtype=np.float64)
    if state["text"]:
        return LBFGSBRun(x, float(both(x)[0]), True, state["text"], state["steps"])
    if res.status == 1:
        text = "call limit reached" if res.nfev >= options["maxfun"] else "step limit reached"
    else:
        text = " ".join(str(res.message).split())
    return LBFGSBRun(x, float(both(x)[0]), bool(res.success), text, state["steps"])


def covariance_from_hessian(hessian: np.ndarray) -> tuple[np.ndarray, bool]:
    """``2 H^-1``, the covariance of the parameters of ``-2 ln L`` (a pseudo-inverse when
    ``H`` is singular, as ganesh's; made exactly symmetric), and whether ``H`` is
    positive-definite.

    Examples
    --------
    >>> cov, ok = covariance_from_hessian(np.array([[8.0, 0.0], [0.0, 2.0]]))
    >>> cov.diagonal().tolist(), ok
    ([0.25, 1.0], True)
    """
    try:
        inverse = np.linalg.inv(hessian)
    except np.linalg.LinAlgError:
        inverse = np.linalg.pinv(hessian, rcond=G_TOLERANCE)
    try:
        np.linalg.cholesky(hessian)
        positive = True
    except np.linalg.LinAlgError:
        positive = False
    return inverse + inverse.T, positive  # 2 H^-1, exactly symmetric
