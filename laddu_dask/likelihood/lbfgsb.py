"""laddu's default fit: the ganesh engine's L-BFGS-B, then the covariance from the Hessian
of exact gradients.

laddu 0.28.1's ``Likelihood.fit()`` without a ``config`` runs ganesh's L-BFGS-B (10
correction pairs, native bounds) and stops when, after a step, ``-2 ln L`` changed by less
than ``sqrt(eps)`` (``"F_EVAL CONVERGED"``), the gradient's norm is below ``cbrt(eps)``
(``"GRADIENT CONVERGED"``), or the projected gradient's largest component is
(``"PROJECTED GRADIENT WITHIN TOLERANCE"``).  It then takes the Hessian ``H`` of ``-2 ln L``
from central differences of the gradient and reports the covariance ``2 H^-1``.  Here the
steps are those of ``ld.ganesh.LBFGSBConfig()`` (:func:`lbfgsb_steps`: the one L-BFGS-B
driver, SciPy's, with those default terminators), and the Hessian is
:mod:`laddu_dask.likelihood.hessian`'s (all ``2 n`` displaced gradients in one evaluation
round; one-sided next to a bound).

Examples
--------
>>> import numpy as np
>>> class Bowl:  # -2 ln L of a Gaussian of sigma 0.5 at 1, bounded at 2
...     def value_and_gradient(self, x):
...         return float(4 * (x[0] - 1.0) ** 2), np.array([8 * (x[0] - 1.0)])
>>> run = lbfgsb_steps(Bowl(), np.array([3.0]), [(None, 2.0)])
>>> run.converged, run.text, round(float(run.x[0]), 9)
(True, 'GRADIENT CONVERGED', 1.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from laddu_dask.likelihood.steps import Steps, drive, pointwise

__all__ = ["LBFGSBRun", "covariance_from_hessian", "lbfgsb_run", "lbfgsb_steps", "projected_gradient"]

Bounds = Sequence[tuple[float | None, float | None]]


@dataclass
class LBFGSBRun:
    """Where L-BFGS-B stopped: the point, ``-2 ln L`` there, whether it converged and why,
    and how many evaluations it made."""

    x: np.ndarray
    fx: float
    converged: bool
    text: str
    calls: int = 0


def projected_gradient(x: np.ndarray, g: np.ndarray, bounds: Bounds) -> np.ndarray:
    """The gradient with the components that push out of an active bound removed
    (``x - clip(x - g)``, L-BFGS-B's); ``bounds`` one ``(low, high)`` pair per parameter
    (``None`` or an infinity: no bound on that side).

    Examples
    --------
    >>> projected_gradient(np.array([0.0, 0.5]), np.array([2.0, 2.0]), [(0.0, 1.0), (0.0, 1.0)]).tolist()
    [0.0, 0.5]
    """
    lo = np.array([-np.inf if low is None else low for low, _ in bounds], dtype=np.float64)
    hi = np.array([np.inf if high is None else high for _, high in bounds], dtype=np.float64)
    return x - np.clip(x - g, lo, hi)


def lbfgsb_steps(objective: Any, x0: np.ndarray, bounds: Bounds, max_calls: int | None = None, *,
                 metadata: Any = None) -> LBFGSBRun:
    """Minimise with ``ld.ganesh.LBFGSBConfig()`` and its default terminators (laddu's
    stopping rules), without its error estimate.

    Parameters
    ----------
    objective : object
        ``value_and_gradient(x) -> (float, ndarray)``.
    x0 : numpy.ndarray
        The start.
    bounds : sequence of (low, high)
        Each parameter's bounds (``None``: none on that side).
    max_calls : int, optional
        After a step that took the evaluations past this, stop (not converged: ``"call
        limit reached"``), as SciPy's ``maxfun`` does.
    metadata : Transform, optional
        The engine's parameter transform (the wrapping of periodic parameters); the point
        returned is the likelihood's.
    """
    return drive(lbfgsb_run(x0, bounds, max_calls, metadata=metadata),
                 pointwise(objective.value_and_gradient))


def lbfgsb_run(x0: np.ndarray, bounds: Bounds, max_calls: int | None = None, *,
               metadata: Any = None) -> Steps:
    """:func:`lbfgsb_steps` as steps (:mod:`laddu_dask.likelihood.steps`)."""
    from laddu_dask.likelihood.ganesh.engine import lbfgsb_minimize_steps
    from laddu_dask.likelihood.ganesh.lbfgsb_core import LBFGSB_STOPPED

    x, fx, message, counts = yield from lbfgsb_minimize_steps(x0, max_calls=max_calls, bounds=bounds,
                                                         metadata=metadata)
    text = message.text
    text = "call limit reached" if text is None else text.removeprefix(LBFGSB_STOPPED)  # None: the limit
    # SciPy's own "CONVERGENCE: ..." comes before any step only where the projected gradient
    # at the start is exactly 0 (after a step the terminators answer first): the start is a minimum
    converged = message.success or text.startswith("CONVERGENCE")
    return LBFGSBRun(np.asarray(x, dtype=np.float64), float(fx), converged, text, counts.f)


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
        inverse = np.linalg.pinv(hessian, rcond=float(np.cbrt(np.finfo(np.float64).eps)))
    try:
        np.linalg.cholesky(hessian)
        positive = True
    except np.linalg.LinAlgError:
        positive = False
    return inverse + inverse.T, positive  # 2 H^-1, exactly symmetric
