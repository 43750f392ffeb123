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

import html
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from laddu_dask.compile.layout import ParameterValues
from laddu_dask.files import read_json, write_json
from laddu_dask.likelihood.cost import MinuitCost
from laddu_dask.likelihood.fit_messages import (
    covariance_problems,
    fit_message,
    migrad_problems,
    minuit_output,
    outside_minuit,
)
from laddu_dask.likelihood.likelihood import require_free
from laddu_dask.likelihood.progress import ProgressLine
from laddu_dask.options import FitMethod, HessianSource
from laddu_dask.validate import integer, number
from laddu_dask.views import format_bounds, table

METHODS = FitMethod.values()


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
        Whether the minimiser reports convergence and HESSE an accurate covariance:
        MIGRAD's minimum is valid (L-BFGS-B reports success), and HESSE ran, did not
        fail and did not have to force the covariance positive-definite.
        :attr:`message` says what failed.
    n_calls : int
        Likelihood evaluations used.
    method : str
        ``"migrad"`` or ``"lbfgsb"``.
    covariance : numpy.ndarray or None
        Covariance matrix in :attr:`parameter_names` order.
    parameter_names : list of str
        Order of :attr:`covariance` and :attr:`correlation`.
    minuit : iminuit.Minuit or None
        The minimiser (MIGRAD), or the one that computed HESSE errors.
    message : str
        One plain sentence: ``"valid minimum; EDM 1.2e-05 < goal 0.0002"``, or
        ``"invalid minimum: "`` and what failed (``"call limit reached"``,
        ``"covariance forced positive-definite"``, ...).
    wall_time : float
        Seconds spent.
    edm : float
        Estimated distance to the minimum (iminuit's, after HESSE).
    correlation : numpy.ndarray or None
        Correlation matrix (``covariance / (sigma sigma^T)``), :attr:`parameter_names` order.
    bounds : dict[str, tuple]
        Each parameter's limits (``None``: none on that side).
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
    edm: float = math.nan
    correlation: np.ndarray | None = None
    bounds: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)

    def _bounds_text(self, name: str) -> str:
        return format_bounds(*self.bounds.get(name, (None, None)))

    def _headline(self) -> str:
        return (
            f"{self.method}: {'valid' if self.valid else 'INVALID'}, fval = {self.fval:.10g}, "
            f"edm = {self.edm:.3g}, {self.n_calls} calls, {self.wall_time:.2f} s"
        )

    def __repr__(self) -> str:
        lines = [f"FitResult({self._headline()})", f"  {self.message}"]
        for name in self.parameter_names:
            lines.append(f"  {name:>14s} = {self.values[name]: .6g} +- {self.errors[name]:.3g}"
                         f"  {self._bounds_text(name)}")
        if self.correlation is not None:
            lines.append("  correlation:")
            for name, row in zip(self.parameter_names, self.correlation):
                lines.append(f"  {name:>14s} " + " ".join(f"{c:+.2f}" for c in row))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        names = self.parameter_names
        params = table(
            ["parameter", "value", "error", "bounds"],
            [[n, f"{self.values[n]:.6g}", f"{self.errors[n]:.3g}", self._bounds_text(n)] for n in names],
        )
        corr = ""
        if self.correlation is not None:
            corr = table(["correlation", *names],
                         [[n, *(f"{c:+.2f}" for c in row)] for n, row in zip(names, self.correlation)])
        return (
            f"<b>FitResult</b> ({html.escape(self._headline())})"
            f"<p>{html.escape(self.message)}</p>{params}{corr}"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (every field but :attr:`minuit`); :meth:`from_dict` reverses it."""
        return {
            "kind": "laddu_dask.FitResult",
            "method": self.method,
            "valid": self.valid,
            "fval": self.fval,
            "edm": self.edm,
            "n_calls": self.n_calls,
            "parameter_names": list(self.parameter_names),
            "values": dict(self.values),
            "errors": dict(self.errors),
            "covariance": None if self.covariance is None else self.covariance.tolist(),
            "correlation": None if self.correlation is None else self.correlation.tolist(),
            "message": self.message,
            "wall_time": self.wall_time,
            "bounds": {n: list(b) for n, b in self.bounds.items()},
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FitResult:
        """The result :meth:`to_dict` described (:attr:`minuit` is ``None``).

        Raises
        ------
        ValueError
            If ``d`` is not a fit result's dictionary (a missing or mistyped field, named).
        """
        try:
            names = [str(n) for n in d["parameter_names"]]
            matrix = (lambda m: None if m is None else np.array(m, dtype=np.float64))  # noqa: E731
            return cls(
                values={n: float(d["values"][n]) for n in names},
                errors={n: float(d["errors"][n]) for n in names},
                fval=float(d["fval"]), valid=bool(d["valid"]), n_calls=int(d["n_calls"]),
                method=str(d["method"]), covariance=matrix(d["covariance"]), parameter_names=names,
                message=str(d.get("message", "")), wall_time=float(d.get("wall_time", 0.0)),
                edm=float(d.get("edm", math.nan)), correlation=matrix(d.get("correlation")),
                bounds={n: tuple(b) for n, b in d.get("bounds", {}).items()},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a fit result: {type(exc).__name__}: {exc}") from None

    def save(self, path: str | Any) -> None:
        """Write the result as JSON (atomically: a temporary file renamed over ``path``),
        with the laddu-dask version and the time it was written."""
        write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | Any) -> FitResult:
        """The result :meth:`save` wrote.

        Examples
        --------
        >>> import tempfile, os
        >>> r = FitResult({"a": 1.0}, {"a": 0.1}, 3.0, True, 12, "migrad", None, ["a"])
        >>> path = os.path.join(tempfile.mkdtemp(), "fit.json")
        >>> r.save(path); FitResult.load(path).values
        {'a': 1.0}
        """
        return cls.from_dict(read_json(path, "laddu_dask.FitResult"))


class _Watched(MinuitCost):
    """The likelihood as iminuit's cost, counting evaluations for a progress display."""

    def __init__(self, likelihood: Any, callback: Any = None, hessian: str = "gradient") -> None:
        self.likelihood = likelihood
        self.callback = callback
        self.calls = 0
        self.last_value = math.nan
        self.gradient_hessian = hessian == "gradient"

    def for_hesse(self, on: bool) -> _Watched:
        """Offer iminuit the Hessian from exact gradients (for HESSE, when the fit asks for
        it) or not (MIGRAD: its path stays Minuit's own; a Newton step from the Hessian at a
        start far from the minimum can leave for another basin)."""
        self.has_hessian = self.has_g2 = on and self.gradient_hessian
        return self

    def _cost_likelihood(self) -> Any:
        return self.likelihood

    def _compute(self, x: np.ndarray, with_gradient: bool) -> tuple[float, Any]:
        with outside_minuit():  # what the likelihood or the progress line prints is theirs
            value, grad = super()._compute(x, with_gradient)
            self.calls += 1
            self.last_value = value
            if self.callback is not None:
                self.callback(self.calls, value)
        return value, grad

    def _points(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with outside_minuit():
            values, grads = super()._points(points)
            for _ in points:  # a Hessian's points: each is an evaluation
                self.calls += 1
                if self.callback is not None:
                    self.callback(self.calls, self.last_value)
        return values, grads


def _minuit(objective: _Watched, x: np.ndarray, names: list[str]) -> Any:
    """``Minuit`` on the cost: errordef, gradient, limits and second derivatives from it."""
    from iminuit import Minuit
    from iminuit.util import IMinuitWarning

    with warnings.catch_warnings():
        # iminuit 2.33 calls g2 even with a Hessian, so the cost gives both, and is told
        # that g2 has no effect
        warnings.filterwarnings("ignore", "hessian overrides g2", IMinuitWarning)
        return Minuit(objective, x, name=names)


def _hesse(objective: _Watched, names: list[str], x: np.ndarray, tolerance: float,
           strategy: int = 1) -> Any:
    """A Minuit at ``x`` after HESSE (with the cost's Hessian when the fit asks for it)."""
    m = _minuit(objective.for_hesse(True), x, names)
    m.strategy = strategy
    m.tol = tolerance  # the EDM goal it reports
    m.hesse()
    return m


def check_fit_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` of :func:`fit` (``strategy``, ``tolerance``, ``max_calls``) checked: a
    NaN or infinite tolerance would let MIGRAD stop anywhere and call it valid.

    Raises
    ------
    ParameterError
        Naming the keyword and its allowed values.
    """
    out = dict(options)
    if "strategy" in out:
        out["strategy"] = integer(out["strategy"], "strategy", minimum=0, maximum=2)
    if "tolerance" in out:
        out["tolerance"] = number(out["tolerance"], "tolerance", above=0.0)
    if out.get("max_calls") is not None:
        out["max_calls"] = integer(out["max_calls"], "max_calls", minimum=1)
    return out


def fit(
    likelihood: Any,
    initial: ParameterValues | None = None,
    method: str = "migrad",
    *,
    strategy: int = 1,
    tolerance: float = 0.1,
    max_calls: int | None = None,
    progress: bool | Any = False,
    hessian: str = "gradient",
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
        Limit on likelihood evaluations (a fit that reaches it is not valid).
    progress : bool or callable
        ``True`` shows an evaluation counter (one updating line in a terminal, one
        updating display in a notebook, whole lines at most every 5 s in a file or a
        pipe); a callable gets ``(calls, value)``.
    hessian : {"gradient", "minuit"}
        Where MIGRAD's seed and HESSE take second derivatives from: central differences
        of the exact gradient, the ``2 n`` points in one evaluation round
        (:mod:`laddu_dask.likelihood.hessian`; each point counts as an evaluation), or
        Minuit's own from function values, one evaluation a round (about ``2 n`` per
        parameter and cycle). ``"gradient"`` falls back to ``"minuit"`` for a likelihood
        without ``values_and_gradients``.

    Returns
    -------
    FitResult
        ``valid`` only when the minimum converged and HESSE gave an accurate covariance.
    """
    method = FitMethod.check(method, "method")
    hessian = HessianSource.check(hessian, "hessian")
    checked = check_fit_options({"strategy": strategy, "tolerance": tolerance, "max_calls": max_calls})
    strategy, tolerance, max_calls = checked["strategy"], checked["tolerance"], checked["max_calls"]
    if not hasattr(likelihood, "values_and_gradients"):
        hessian = "minuit"
    require_free(likelihood)
    names = list(likelihood.parameter_names)
    x0 = likelihood.resolve({} if initial is None else initial)
    bounds = likelihood.bounds()
    for name, v, (lo, hi) in zip(names, x0, bounds):
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            from laddu_dask.errors import ParameterError

            raise ParameterError(
                f"start value {v} of {name!r} lies outside its bounds {format_bounds(lo, hi)}")
    printer = ProgressLine() if progress is True else None
    objective = _Watched(likelihood, printer or progress or None, hessian)
    start = time.perf_counter()
    try:
        with minuit_output() as said:  # Minuit's own messages: to the log and the message
            if method == "migrad":
                run = _run_migrad(objective, names, x0, tolerance, max_calls, strategy)
            else:
                run = _run_lbfgsb(objective, names, x0, bounds, tolerance, max_calls)
    except BaseException:
        if printer is not None:
            printer.finish(None)
        raise
    minuit, values, fval, problems, note = run
    if printer is not None:
        printer.finish(fval)
    errors = np.array(minuit.errors, dtype=np.float64)
    cov = corr = None
    if minuit.covariance is not None:
        cov = np.array(minuit.covariance, dtype=np.float64)
        corr = np.array(minuit.covariance.correlation(), dtype=np.float64)
    fmin = minuit.fmin
    return FitResult(
        values=dict(zip(names, map(float, values))),
        errors=dict(zip(names, map(float, errors))),
        fval=float(fval),
        valid=not problems,
        n_calls=objective.calls,
        method=method,
        covariance=cov,
        parameter_names=names,
        minuit=minuit,
        message=fit_message(problems, fmin, note, said),
        wall_time=time.perf_counter() - start,
        edm=math.nan if fmin is None else float(fmin.edm),
        correlation=corr,
        bounds=dict(zip(names, bounds)),
    )


_Run = tuple[Any, np.ndarray, float, list[str], str]  # minuit, values, fval, problems, note


def _run_migrad(objective: _Watched, names: list[str], x0: np.ndarray, tolerance: float,
                max_calls: int | None, strategy: int) -> _Run:
    m = _minuit(objective.for_hesse(False), x0, names)
    m.strategy = strategy
    m.tol = tolerance
    m.migrad(ncall=max_calls)
    problems = migrad_problems(m.fmin)
    if problems:
        problems.append("HESSE not run")
    else:
        if objective.gradient_hessian and not m.fmin.has_parameters_at_limit:
            # HESSE on a Minuit that has the cost's Hessian; at a limit the minimum is not
            # stationary, and Minuit's bounded coordinates need its own second derivatives
            m = _hesse(objective, names, np.array(m.values, dtype=np.float64), tolerance, strategy)
        else:
            m.hesse()
        problems = covariance_problems(m.fmin)
        if not problems and not m.fmin.is_valid:
            problems = ["minimum not valid after HESSE"]
    return m, np.array(m.values, dtype=np.float64), float(m.fval), problems, ""


def _run_lbfgsb(objective: _Watched, names: list[str], x0: np.ndarray, bounds: list, tolerance: float,
                max_calls: int | None) -> _Run:
    from scipy.optimize import minimize

    # stop when -2 ln L changes by less than MIGRAD's EDM goal (0.002 tolerance), relative
    f0 = abs(objective(x0))
    res = minimize(
        objective._both, x0, jac=True, method="L-BFGS-B", bounds=bounds,
        options={"maxfun": max_calls or 15000, "ftol": 0.002 * tolerance / max(f0, 1.0),
                 "gtol": 1e-8, "maxcor": 20},
    )
    values = np.asarray(res.x, dtype=np.float64)
    fval, _ = objective._both(values)
    minuit = _hesse(objective, names, values, tolerance)
    problems = []
    if not res.success:
        problems.append("call limit reached" if res.status == 1 else "L-BFGS-B did not converge")
    problems += covariance_problems(minuit.fmin)
    return minuit, values, float(fval), problems, f"L-BFGS-B: {' '.join(str(res.message).split())}"
