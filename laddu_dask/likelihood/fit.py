"""Fits: iminuit MIGRAD (+HESSE) or SciPy L-BFGS-B with the exact gradient.

Likelihoods here are ``-2 ln L``, so one standard error is where the value rises
by 1 (``errordef = 1``).

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> model = ld.Model(ld.parameter("a", initial=1.0, bounds=(0.0, 10.0)) * x * x + 1.0)
>>> rng = np.random.default_rng(1)
>>> data = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 500) ** 0.5})
>>> mc = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 5000)})
>>> result = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)]).fit()
>>> result.valid
True
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from laddu_dask.compile.layout import ParameterValues

METHODS = ("migrad", "lbfgsb")


@dataclass
class FitResult:
    """The outcome of a fit.

    Attributes
    ----------
    values, errors : dict[str, float]
        Best-fit values and their standard errors (HESSE).
    fval : float
        Minimum of the likelihood (``-2 ln L``).
    valid : bool
        Whether the minimiser reports convergence (and an accurate covariance).
    n_calls : int
        Likelihood evaluations used.
    method : str
        ``"migrad"`` or ``"lbfgsb"``.
    covariance : numpy.ndarray or None
        Covariance matrix in :attr:`parameter_names` order.
    parameter_names : list of str
        Order of :attr:`covariance`.
    minuit : iminuit.Minuit or None
        The minimiser (MIGRAD), or the one that computed HESSE errors.
    message : str
        The minimiser's own words.
    wall_time : float
        Seconds spent.
    """

    values: dict[str, float]
    errors: dict[str, float]
    fval: float
    valid: bool
    n_calls: int
    method: str
    covariance: np.ndarray | None
    parameter_names: list[str]
    minuit: Any = field(default=None, repr=False)
    message: str = ""
    wall_time: float = 0.0

    def __repr__(self) -> str:
        lines = [
            f"FitResult({self.method}: {'valid' if self.valid else 'INVALID'}, fval = {self.fval:.10g}, "
            f"{self.n_calls} calls, {self.wall_time:.2f} s)"
        ]
        for name in self.parameter_names:
            lines.append(f"  {name:>14s} = {self.values[name]: .6g} +- {self.errors[name]:.3g}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{n}</td><td>{self.values[n]:.6g}</td><td>{self.errors[n]:.3g}</td></tr>"
            for n in self.parameter_names
        )
        return (
            f"<b>FitResult</b> ({self.method}, {'valid' if self.valid else 'INVALID'}, "
            f"fval = {self.fval:.10g}, {self.n_calls} calls, {self.wall_time:.2f} s)"
            f"<table><tr><th>parameter</th><th>value</th><th>error</th></tr>{rows}</table>"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "method": self.method,
            "valid": self.valid,
            "fval": self.fval,
            "n_calls": self.n_calls,
            "parameter_names": list(self.parameter_names),
            "values": dict(self.values),
            "errors": dict(self.errors),
            "covariance": None if self.covariance is None else self.covariance.tolist(),
            "message": self.message,
            "wall_time": self.wall_time,
        }


class _Objective:
    """Caches the last value-and-gradient so a minimiser asking for both pays once."""

    def __init__(self, likelihood: Any, callback: Any = None) -> None:
        self.likelihood = likelihood
        self.callback = callback
        self.calls = 0
        self._x: np.ndarray | None = None
        self._value = 0.0
        self._grad: np.ndarray | None = None

    def both(self, x: Any) -> tuple[float, np.ndarray]:
        x = np.asarray(x, dtype=np.float64)
        if self._x is None or not np.array_equal(x, self._x):
            self._value, self._grad = self.likelihood.value_and_gradient(x)
            self._x = x.copy()
            self.calls += 1
            if self.callback is not None:
                self.callback(self.calls, self._value)
        return self._value, self._grad

    def value(self, x: Any) -> float:
        # line searches and HESSE ask for values only: do not pay for a gradient
        x = np.asarray(x, dtype=np.float64)
        if self._x is not None and np.array_equal(x, self._x):
            return self._value
        self.calls += 1
        value = self.likelihood.value(x)
        if self.callback is not None:
            self.callback(self.calls, value)
        return value

    def grad(self, x: Any) -> np.ndarray:
        return self.both(x)[1]


def _limits(bounds: list) -> list[tuple[float, float]]:
    return [(-np.inf if lo is None else lo, np.inf if hi is None else hi) for lo, hi in bounds]


def _hesse(objective: _Objective, names: list[str], x: np.ndarray, bounds: list) -> Any:
    from iminuit import Minuit

    m = Minuit(objective.value, x, grad=objective.grad, name=names)
    m.errordef = Minuit.LEAST_SQUARES
    m.limits = _limits(bounds)
    m.hesse()
    return m


def fit(
    likelihood: Any,
    initial: ParameterValues | None = None,
    method: str = "migrad",
    *,
    strategy: int = 1,
    tolerance: float = 0.1,
    max_calls: int | None = None,
    progress: bool | Any = False,
) -> FitResult:
    """Minimise ``likelihood`` from ``initial``.

    Parameters
    ----------
    likelihood : Likelihood
        The function to minimise.
    initial : sequence or mapping, optional
        Start values (a mapping may name only some parameters); default: each
        parameter's initial value.
    method : {"migrad", "lbfgsb"}
        iminuit MIGRAD followed by HESSE, or SciPy L-BFGS-B followed by HESSE.
    strategy, tolerance : int, float
        MIGRAD's strategy and EDM tolerance (L-BFGS-B stops when -2 ln L changes by less
        than ``0.002 * tolerance``).
    max_calls : int, optional
        Limit on likelihood evaluations.
    progress : bool or callable
        ``True`` prints an evaluation counter; a callable gets ``(calls, value)``.

    Returns
    -------
    FitResult
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    names = list(likelihood.parameter_names)
    x0 = likelihood.resolve({} if initial is None else initial)
    bounds = likelihood.bounds()
    for name, v, (lo, hi) in zip(names, x0, bounds):
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            from laddu_dask.errors import ParameterError

            raise ParameterError(f"start value {v} of {name!r} lies outside its bounds [{lo}, {hi}]")
    callback = _Printer() if progress is True else (progress or None)
    objective = _Objective(likelihood, callback)
    start = time.perf_counter()
    if method == "migrad":
        from iminuit import Minuit

        m = Minuit(objective.value, x0, grad=objective.grad, name=names)
        m.errordef = Minuit.LEAST_SQUARES
        m.limits = _limits(bounds)
        m.strategy = strategy
        m.tol = tolerance
        m.migrad(ncall=max_calls)
        if m.valid:
            m.hesse()
        values = np.array(m.values, dtype=np.float64)
        fval = float(m.fval)
        valid = bool(m.valid)
        message = str(m.fmin)
        minuit = m
    else:
        from scipy.optimize import minimize

        # stop when -2 ln L changes by less than MIGRAD's EDM goal (0.002 tolerance), relative
        f0 = abs(objective.value(x0))
        res = minimize(
            objective.both, x0, jac=True, method="L-BFGS-B", bounds=_limits(bounds),
            options={"maxfun": max_calls or 15000, "ftol": 0.002 * tolerance / max(f0, 1.0),
                     "gtol": 1e-8, "maxcor": 20},
        )
        values = np.asarray(res.x, dtype=np.float64)
        fval, _ = objective.both(values)
        minuit = _hesse(objective, names, values, bounds)
        valid = bool(res.success) and bool(minuit.accurate)
        message = str(res.message)
    if progress is True:
        print()
    errors = np.array(minuit.errors, dtype=np.float64)
    cov = None
    if minuit.covariance is not None:
        cov = np.array(minuit.covariance, dtype=np.float64)
    return FitResult(
        values=dict(zip(names, map(float, values))),
        errors=dict(zip(names, map(float, errors))),
        fval=float(fval),
        valid=valid,
        n_calls=objective.calls,
        method=method,
        covariance=cov,
        parameter_names=names,
        minuit=minuit,
        message=message,
        wall_time=time.perf_counter() - start,
    )


class _Printer:
    """A fit-iteration counter on one terminal line, refreshed at most every 0.25 s."""

    def __init__(self) -> None:
        self.last = 0.0

    def __call__(self, calls: int, value: float) -> None:
        now = time.perf_counter()
        if now - self.last >= 0.25:
            self.last = now
            print(f"\rfit: {calls} evaluations, -2 ln L = {value:.10g}   ", end="", flush=True)
