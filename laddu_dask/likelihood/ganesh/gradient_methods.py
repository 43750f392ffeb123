"""The gradient methods behind ``LBFGSBConfig``, ``ConjugateGradientConfig``,
``TrustRegionConfig`` and ``AdamConfig``, each with the objective's exact gradient.

Each is ``method(problem, run, y0, config, rng, (lo, hi)) -> (y, fx, message)`` on internal
coordinates; the engine (:mod:`.engine`) owns the step bookkeeping. SciPy's own stopping
tests are switched off (zero tolerances, no iteration limit) so that the terminators alone
decide, as in laddu; a SciPy method that cannot go on (a failed line search) ends the run
with SciPy's message, not a success.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.likelihood.ganesh.engine import minimize
>>> from laddu_dask.likelihood.ganesh.configs import ConjugateGradientConfig
>>> class Bowl:
...     def value(self, x):
...         return float(x @ x)
...     def value_and_gradient(self, x):
...         return float(x @ x), 2 * np.asarray(x)
>>> s = minimize(Bowl(), [1.0, -2.0], config=ConjugateGradientConfig())
>>> bool(np.abs(s.x).max() < 1e-6), str(s.message)
(True, 'Success: GRADIENT CONVERGED')
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.optimize as so

from laddu_dask.likelihood.ganesh.lbfgsb_core import LBFGSB_STOPPED, lbfgsb_iterations
from laddu_dask.likelihood.ganesh.status import StatusMessage
from laddu_dask.likelihood.steps import drive, pointwise

__all__ = ["LBFGSB_STOPPED", "adam", "conjugate_gradient", "lbfgsb", "trust_region"]

#: An iteration limit SciPy never reaches: the terminators stop the run.
UNLIMITED = 10**9


class _Cached:
    """Value-and-gradient evaluations kept by point, so that a callback or a line search's
    separate ``f`` and ``fprime`` calls do not evaluate a point twice."""

    def __init__(self, problem: Any) -> None:
        self.problem, self.memory = problem, {}

    def __call__(self, y: np.ndarray) -> tuple[float, np.ndarray]:
        key = np.asarray(y, dtype=float).tobytes()
        if key not in self.memory:
            if len(self.memory) > 64:
                self.memory.clear()
            self.memory[key] = self.problem.value_and_gradient(np.array(y, dtype=float))
        return self.memory[key]

    def value(self, y: np.ndarray) -> float:
        return self(y)[0]

    def gradient(self, y: np.ndarray) -> np.ndarray:
        return self(y)[1]


def _finish(run: Any, y: np.ndarray, fx: float, text: str, success: bool = False) -> tuple:
    return y, fx, run.message or StatusMessage(success, text)


def lbfgsb(problem: Any, run: Any, y0: np.ndarray, config: Any, rng: Any, bounds: tuple) -> tuple:
    """SciPy's L-BFGS-B (:func:`lbfgsb_iterations`) on the objective, one point a round."""
    return drive(lbfgsb_iterations(problem, run, y0, config, bounds),
                 pointwise(problem.objective.value_and_gradient))


def _search(config: Any) -> dict[str, Any]:
    ls = config.line_search
    if ls is None:
        return {"c1": 1e-4, "c2": 0.1, "maxiter": 20}  # SciPy's CG defaults: c2 = 0.4 would lose conjugacy
    if hasattr(ls, "delta"):
        return {"c1": ls.delta, "c2": ls.sigma, "maxiter": ls.max_iterations}
    return {"c1": ls.c1, "c2": ls.c2, "maxiter": ls.max_iterations}


def _beta(update: str, g1: np.ndarray, g0: np.ndarray, d: np.ndarray) -> float:
    """The conjugate-gradient update's ``beta``."""
    yk = g1 - g0
    dy = float(d @ yk)
    with np.errstate(all="ignore"):
        if update == "fletcher_reeves":
            beta = (g1 @ g1) / (g0 @ g0)
        elif update == "polak_ribiere_plus":
            beta = max(0.0, (g1 @ yk) / (g0 @ g0))
        elif update == "hestenes_stiefel_plus":
            beta = max(0.0, (g1 @ yk) / dy)
        elif update == "dai_yuan":
            beta = (g1 @ g1) / dy
        else:  # hager_zhang
            beta = ((yk - 2 * d * (yk @ yk) / dy) @ g1) / dy
    return float(beta) if np.isfinite(beta) else 0.0


def _wolfe(fg: _Cached, y: np.ndarray, d: np.ndarray, g: np.ndarray, f: float, f_old: float | None,
           search: dict[str, Any]) -> float | None:
    """The step length of SciPy's strong-Wolfe search along ``d`` (``None``: it failed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # SciPy's LineSearchWarning: a failure is None
        return so.line_search(fg.value, fg.gradient, y, d, gfk=g, old_fval=f, old_old_fval=f_old, **search)[0]


def conjugate_gradient(problem: Any, run: Any, y0: np.ndarray, config: Any, rng: Any, bounds: tuple) -> tuple:
    """Nonlinear CG on SciPy's strong-Wolfe ``line_search``; one step per line search.
    A direction that is not a descent direction restarts from the steepest descent; a
    failed search is tried once more along the unit steepest descent (a far shorter first
    step where the gradient is large), and when that fails too the run ends."""
    fg = _Cached(problem)
    search = _search(config)
    y = np.array(y0, dtype=float)
    f, g = fg(y)
    d, f_old = -g, None
    while True:
        if g @ d >= 0:
            d = -g
        alpha = _wolfe(fg, y, d, g, f, f_old, search)
        norm = float(np.linalg.norm(g))
        if alpha is None and norm > 0:  # again along the unit steepest descent: SciPy's zoom
            d = -g / norm  # gives up after 10 tries, too few to shorten a 1e4-long gradient
            alpha = _wolfe(fg, y, d, g, f, None, search)
        if alpha is None:
            return _finish(run, y, f, "LINE SEARCH FAILED")
        y_new = y + alpha * d
        f_new, g_new = fg(y_new)
        d = -g_new + _beta(config.update, g_new, g, d) * d
        y, f_old, f, g = y_new, f, f_new, g_new
        if run.after_step(y, f, gradient=g):
            return y, f, run.message


def trust_region(problem: Any, run: Any, y0: np.ndarray, config: Any, rng: Any, bounds: tuple) -> tuple:
    """``scipy.optimize.minimize(method="trust-exact")`` with the Hessian from exact
    gradients (:mod:`laddu_dask.likelihood.hessian`); one step per SciPy iteration."""
    fg = _Cached(problem)
    open_box = [(None, None)] * len(y0)
    last = [y0, None]

    def callback(intermediate_result: Any) -> None:
        y = np.asarray(intermediate_result.x, dtype=float)
        f, g = fg(y)
        last[:] = [y.copy(), f]
        if run.after_step(y, f, gradient=g):
            raise StopIteration

    radius = min(config.initial_radius, config.max_radius)
    res = so.minimize(
        fg.value,
        y0,
        jac=fg.gradient,
        hess=lambda y: problem.hessian(y, open_box),
        method="trust-exact",
        callback=callback,
        options={
            "initial_trust_radius": radius,
            "max_trust_radius": max(config.max_radius, radius),
            "eta": min(config.eta, 0.2499),
            "gtol": 0.0,
            "maxiter": UNLIMITED,
        },
    )
    if run.message is not None:
        return last[0], last[1], run.message
    return _finish(run, np.asarray(res.x), float(res.fun), f"trust region stopped: {res.message}")


def adam(problem: Any, run: Any, y0: np.ndarray, config: Any, rng: Any, bounds: tuple) -> tuple:
    """Adam (Kingma & Ba) with bias-corrected moments: each step moves with the gradient
    at the current point, then evaluates the new point (its value is the step's, as in
    laddu; its gradient serves the next step), so a step costs one value-and-gradient."""
    y = np.array(y0, dtype=float)
    f, g = problem.value_and_gradient(y)
    m = np.zeros_like(y)
    v = np.zeros_like(y)
    b1, b2 = config.beta_1, config.beta_2
    t = 0
    while True:
        t += 1
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        y = y - config.alpha * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + config.epsilon)
        f, g = problem.value_and_gradient(y)
        if run.after_step(y, f, gradient=g):
            return y, f, run.message
