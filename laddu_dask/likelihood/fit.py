"""Fits: laddu's default (L-BFGS-B with the exact gradient, errors from the Hessian of exact
gradients), iminuit MIGRAD (+HESSE), or any ganesh configuration.

Likelihoods here are ``-2 ln L``, so one standard error is where the value rises
by 1 (``errordef = 1``): the covariance is twice the inverse Hessian.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> model = ld.Model(ld.parameter("a", initial=1.0, bounds=(0.0, 10.0)) * x * x + 1.0)
>>> rng = np.random.default_rng(1)
>>> data = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 500) ** 0.5})
>>> mc = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 5000)})
>>> lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
>>> result = lik.fit()  # laddu's default: L-BFGS-B
>>> result.valid, result.method, result.terminal_message
(True, 'lbfgsb', 'Success: F_EVAL CONVERGED')
>>> migrad = lik.fit(method="migrad")  # MIGRAD and HESSE
>>> bool(abs(migrad.values[0] - result.values[0]) < 0.05 * result.standard_errors[0])
True
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask.compile.layout import ParameterValues
from laddu_dask.errors import ParameterError
from laddu_dask.likelihood.cost import MinuitCost
from laddu_dask.likelihood.dashboard_notes import note_result
from laddu_dask.likelihood.fit_messages import (
    covariance_problems,
    fit_message,
    migrad_problems,
    minuit_output,
    outside_minuit,
    require_free,
)
from laddu_dask.likelihood.fit_result import FitResult, correlation_of
from laddu_dask.likelihood.ganesh.engine import minimize as ganesh_minimize
from laddu_dask.likelihood.ganesh.transforms import PeriodicTransform
from laddu_dask.likelihood.hessian import hessian_steps
from laddu_dask.likelihood.lbfgsb import covariance_from_hessian, lbfgsb_run, projected_gradient
from laddu_dask.likelihood.progress import ProgressLine
from laddu_dask.likelihood.steps import Steps, drive, observe
from laddu_dask.options import FitMethod, HessianSource
from laddu_dask.validate import integer, number
from laddu_dask.views import format_bounds

__all__ = ["METHODS", "FitResult", "check_fit_options", "default_fit_steps", "fit"]

METHODS = FitMethod.values()


class _Watched(MinuitCost):
    """The likelihood as iminuit's cost, counting evaluations for a progress display."""

    def __init__(self, likelihood: Any, callback: Any = None, hessian: str = "gradient") -> None:
        self.likelihood = likelihood
        self.callback = callback
        self.calls = 0
        self.gradients = 0
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
            self.gradients += with_gradient
            self.last_value = value
            if self.callback is not None:
                self.callback(self.calls, value)
        return value, grad

    def value_and_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """The watched value and gradient at ``x`` (the L-BFGS-B engine's objective)."""
        return self._both(x)

    def one_by_one(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_points` for a likelihood that evaluates one point at a time."""
        pairs = [self._compute(np.asarray(p, dtype=np.float64), True) for p in points]
        return np.array([v for v, _ in pairs]), np.array([g for _, g in pairs])

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


def check_fit_options(options: dict[str, Any], method: str | None = "migrad") -> dict[str, Any]:
    """``options`` of :func:`fit` (``strategy``, ``tolerance``, ``max_calls``) checked: a
    NaN or infinite tolerance would let MIGRAD stop anywhere and call it valid; MIGRAD's
    options (``strategy``, ``tolerance``, ``hessian``) are an error for another ``method``
    (None: laddu's default), or with a ganesh ``config``.

    Raises
    ------
    ParameterError
        Naming the keyword and its allowed values.
    """
    ganesh = options.get("config") is not None or bool(options.get("terminators")) or \
        bool(options.get("observers")) or options.get("default_callbacks") is False
    migrads = [k for k in ("strategy", "tolerance", "hessian") if options.get(k) is not None]
    if migrads and (ganesh or method not in ("migrad", FitMethod.MIGRAD)):
        what = "is an option" if len(migrads) == 1 else "are options"
        raise ParameterError(f"{', '.join(migrads)} {what} of MIGRAD: pass method='migrad' (laddu's "
                             "default, L-BFGS-B, stops by its own rule)")
    out = dict(options)
    if out.get("strategy") is not None:
        out["strategy"] = integer(out["strategy"], "strategy", minimum=0, maximum=2)
    if out.get("tolerance") is not None:
        out["tolerance"] = number(out["tolerance"], "tolerance", above=0.0)
    if out.get("max_calls") is not None:
        out["max_calls"] = integer(out["max_calls"], "max_calls", minimum=1)
    return out


def fit(
    likelihood: Any,
    initial: ParameterValues | None = None,
    method: str | None = None,
    *,
    config: Any = None,
    terminators: Sequence[Any] = (),
    observers: Sequence[Any] = (),
    seed: int = 0,
    default_callbacks: bool = True,
    use_parameter_metadata: bool = True,
    strategy: int | None = None,
    tolerance: float | None = None,
    max_calls: int | None = None,
    progress: bool | Any = False,
    hessian: str | None = None,
) -> FitResult:
    """Minimise ``likelihood`` from ``initial`` (laddu's ``Likelihood.fit``, with MIGRAD
    one keyword away).

    Parameters
    ----------
    likelihood : Likelihood
        The function to minimise.
    initial : sequence or mapping, optional
        Start values (a mapping may name only some parameters); default: each
        parameter's initial value.
    method : {None, "lbfgsb", "migrad"}
        None or ``"lbfgsb"``: laddu's default, L-BFGS-B with the exact gradient, the
        parameters' bounds and laddu's stopping rules, then the covariance ``2 H^-1`` from
        the Hessian of exact gradients (:mod:`laddu_dask.likelihood.lbfgsb`).
        ``"migrad"``: iminuit MIGRAD followed by HESSE.
    config : ganesh configuration, optional
        Any ``ld.ganesh`` minimizer configuration (laddu's): the fit runs that method
        (:func:`laddu_dask.likelihood.ganesh.minimize`).
    terminators, observers : sequence, optional
        ganesh terminators (``ld.ganesh.MaxSteps(n)``) and observers; with no ``config``
        they apply to ganesh's L-BFGS-B.
    seed : int
        Seed of a randomized ganesh method.
    default_callbacks : bool
        Include the method's own stopping rules (False: only ``terminators``).
    use_parameter_metadata : bool
        Give the minimiser the parameters' bounds (False: unbounded; laddu's meaning).
    strategy, tolerance : int, float
        MIGRAD's strategy (default 1) and EDM tolerance (default 0.1); ``method="migrad"``
        only.
    max_calls : int, optional
        Limit on likelihood evaluations (a fit that reaches it has not converged).
    progress : bool or callable
        ``True`` shows an evaluation counter (one updating line in a terminal, one
        updating display in a notebook, whole lines at most every 5 s in a file or a
        pipe); a callable gets ``(calls, value)``.
    hessian : {"gradient", "minuit"}
        Where MIGRAD's seed and HESSE take second derivatives from (``method="migrad"``
        only; default ``"gradient"``):
        central differences of the exact gradient, the ``2 n`` points in one evaluation
        round (:mod:`laddu_dask.likelihood.hessian`; each point counts as an evaluation), or
        Minuit's own from function values. ``"gradient"`` falls back to ``"minuit"`` for a
        likelihood without ``values_and_gradients``.

    Returns
    -------
    FitResult
        ``converged`` when the minimiser says so; ``valid`` when also the covariance is
        accurate.

    Raises
    ------
    ParameterError
        For a start outside the bounds, a bad option, a MIGRAD option (``strategy``,
        ``tolerance``, ``hessian``) without ``method="migrad"``, or ``method`` together with
        a ganesh ``config``, ``terminators`` or ``observers``.
    TypeError
        For a ``config`` that is not a ganesh minimizer configuration, or a terminator or
        observer of the wrong kind (naming it).
    """
    ganesh = config is not None or bool(terminators) or bool(observers) or not default_callbacks
    if ganesh and method is not None:
        raise ParameterError(f"method={method!r} and a ganesh config, terminators or observers both choose "
                             "the minimiser; pass method= (laddu-dask's) or config= (ganesh's), not both")
    method = "lbfgsb" if method is None else FitMethod.check(method, "method")
    check_fit_options({"strategy": strategy, "tolerance": tolerance, "hessian": hessian, "config": config,
                       "terminators": terminators, "observers": observers,
                       "default_callbacks": default_callbacks}, method)
    strategy = 1 if strategy is None else strategy
    tolerance = 0.1 if tolerance is None else tolerance
    hessian = HessianSource.check("gradient" if hessian is None else hessian, "hessian")
    checked = check_fit_options({"strategy": strategy, "tolerance": tolerance, "max_calls": max_calls})
    strategy, tolerance, max_calls = checked["strategy"], checked["tolerance"], checked["max_calls"]
    if not hasattr(likelihood, "values_and_gradients"):
        hessian = "minuit"
    names, x0, bounds, used_bounds = _start(likelihood, initial, use_parameter_metadata)
    if ganesh:
        return _fit_ganesh(likelihood, x0, names, used_bounds, config, terminators, observers, seed,
                           default_callbacks)
    printer = ProgressLine() if progress is True else None
    objective = _Watched(likelihood, printer or progress or None, hessian)
    start = time.perf_counter()
    try:
        if method == "lbfgsb":
            result = _fit_lbfgsb(objective, names, x0, used_bounds, max_calls,
                                 _periodic(likelihood, names, used_bounds))
        else:
            with minuit_output() as said:  # Minuit's own messages: to the log and the message
                result, problems = _fit_migrad(objective, names, x0, tolerance, max_calls, strategy)
            result.message = result.terminal_message = fit_message(problems, result.minuit.fmin, "", said)
    except BaseException:
        if printer is not None:
            printer.finish(None)
        raise
    if printer is not None:
        printer.finish(result.fval)
    result.wall_time = time.perf_counter() - start
    result.bounds = dict(zip(names, bounds))
    note_result(likelihood, result, method)
    return result


def _periodic(likelihood: Any, names: list[str], bounds: list) -> list[tuple[float, float] | None]:
    """laddu's parameter metadata: the interval a periodic parameter wraps into (its bounds),
    ``None`` for the others (and for every parameter when ``bounds`` are open, as without
    ``use_parameter_metadata``). laddu's minimizers leave such a coordinate free and wrap it."""
    specs = getattr(likelihood, "parameters", {})
    return [tuple(b) if getattr(specs.get(n), "periodic", False) and None not in b else None
            for n, b in zip(names, bounds)]


def _fit_ganesh(likelihood: Any, x0: np.ndarray, names: list[str], bounds: list, config: Any,
                terminators: Sequence[Any], observers: Sequence[Any], seed: int,
                default_callbacks: bool) -> FitResult:
    """The fit by a ganesh configuration (L-BFGS-B's when ``config`` is None), through
    the ganesh engine's ``minimize``."""
    start = time.perf_counter()
    metadata, open_bounds = _periodic_transform(_periodic(likelihood, names, bounds), bounds)
    summary = ganesh_minimize(likelihood, x0, config=config, terminators=list(terminators),
                       observers=list(observers), seed=seed, default_callbacks=default_callbacks,
                       bounds=open_bounds, parameter_names=names, metadata=metadata)
    kind = "lbfgsb" if config is None else type(config).__name__.removesuffix("Config").lower()
    result = FitResult.from_summary(summary, method=kind, bounds=bounds, parameter_names=names,
                                    wall_time=time.perf_counter() - start)
    note_result(likelihood, result, kind)
    return result


def _periodic_transform(periodic: list | None, bounds: list) -> tuple[Any, list]:
    """The transform wrapping the ``periodic`` parameters (None: none is) and the bounds the
    minimizer sees: none on a periodic parameter, the others' own."""
    if periodic is None or all(p is None for p in periodic):
        return None, bounds
    free = [(None, None) if p is not None else b for p, b in zip(periodic, bounds, strict=True)]
    return PeriodicTransform(periodic), free


def default_fit_steps(likelihood: Any, initial: ParameterValues = None, *, max_calls: int | None = None,
                      use_parameter_metadata: bool = True) -> Steps:
    """``fit(likelihood, initial=initial, max_calls=max_calls)`` (laddu's default fit) as steps
    (:mod:`laddu_dask.likelihood.steps`): the same checks, path and :class:`FitResult`, with
    every evaluation yielded, so that many fits can share their rounds
    (:mod:`laddu_dask.analysis.lockstep`).  A bad start raises at the first ``next``.

    Examples
    --------
    >>> import numpy as np
    >>> import laddu_dask as ld
    >>> x = ld.scalar("x")
    >>> model = ld.Model(ld.parameter("a", initial=1.0, bounds=(0.0, 5.0)) * x * x + 1.0)
    >>> data = ld.Dataset.from_arrays(scalars={"x": np.random.default_rng(2).uniform(0, 1, 300)})
    >>> mc = ld.Dataset.from_arrays(scalars={"x": np.linspace(0.0, 1.0, 2000)})
    >>> lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
    >>> drive(default_fit_steps(lik), lik.values_and_gradients).fval == lik.fit().fval
    True
    """
    start = time.perf_counter()
    max_calls = check_fit_options({"max_calls": max_calls})["max_calls"]
    names, x0, bounds, used_bounds = _start(likelihood, initial, use_parameter_metadata)
    result = yield from lbfgsb_fit_steps(names, x0, used_bounds, max_calls,
                                         _periodic(likelihood, names, used_bounds))
    result.wall_time = time.perf_counter() - start
    result.bounds = dict(zip(names, bounds))
    note_result(likelihood, result, "lbfgsb")
    return result


def _start(likelihood: Any, initial: ParameterValues, use_parameter_metadata: bool) -> tuple:
    """A fit's parameter names, start, the likelihood's bounds and the bounds the minimiser
    sees (open without ``use_parameter_metadata``); a start outside its bounds is refused."""
    require_free(likelihood)
    names = list(likelihood.parameter_names)
    x0 = likelihood.resolve({} if initial is None else initial)
    bounds = likelihood.bounds()
    for name, v, (lo, hi) in zip(names, x0, bounds):
        if use_parameter_metadata and ((lo is not None and v < lo) or (hi is not None and v > hi)):
            raise ParameterError(
                f"start value {v} of {name!r} lies outside its bounds {format_bounds(lo, hi)}")
    return names, x0, bounds, bounds if use_parameter_metadata else [(None, None)] * len(names)


def _fit_lbfgsb(objective: _Watched, names: list[str], x0: np.ndarray, bounds: list,
                max_calls: int | None, periodic: list | None = None) -> FitResult:
    """laddu's default fit (:func:`lbfgsb_fit_steps`), evaluated by ``objective``."""
    batch = hasattr(objective.likelihood, "values_and_gradients")

    def evaluate(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if len(points) > 1:  # a Hessian's round (each point counts as a call, not a gradient)
            return objective._points(points) if batch else objective.one_by_one(points)
        value, grad = objective._compute(points[0], True)
        return np.array([value]), np.asarray(grad, dtype=np.float64)[None, :]

    return drive(lbfgsb_fit_steps(names, x0, bounds, max_calls, periodic), evaluate)


def lbfgsb_fit_steps(names: list[str], x0: np.ndarray, bounds: list, max_calls: int | None,
                     periodic: list | None = None) -> Steps:
    """laddu's default fit as steps (:mod:`laddu_dask.likelihood.steps`): L-BFGS-B (one
    point a round), then ``2 H^-1`` from the Hessian of exact gradients (its points in one
    round), then the gradient at the minimum when L-BFGS-B did not end on it; returns the
    :class:`FitResult` (without ``wall_time`` and ``bounds``, which the caller sets).

    A ``periodic`` parameter (:func:`_periodic`) is free for L-BFGS-B and wrapped into its
    interval where the likelihood sees it, as laddu's native transform does."""
    metadata, native = _periodic_transform(periodic, bounds)
    last: list[Any] = [None, None]  # the last point L-BFGS-B evaluated, and its gradient

    def seen(points: np.ndarray, values: np.ndarray, grads: np.ndarray) -> None:
        last[:] = [points[0], grads[0]]

    run = yield from observe(lbfgsb_run(x0, native, max_calls, metadata=metadata), seen)
    rounds: list[int] = []
    hess = yield from hessian_steps(run.x, bounds, names, counted=rounds)
    cov, positive = covariance_from_hessian(hess)
    if not positive:  # no covariance and no errors where the Hessian is not positive-definite (laddu's)
        cov = None
    again = last[0] is None or not np.array_equal(last[0], run.x)
    if again:
        _, grads = yield run.x[None, :]
        grad = np.asarray(grads[0], dtype=np.float64)
    else:
        grad = last[1]
    errors = np.full(len(names), math.nan) if cov is None else np.sqrt(np.diag(cov))
    problems = ([] if run.converged else [f"{run.text} (L-BFGS-B)"]) + \
        ([] if positive else ["Hessian not positive-definite"])
    grad = projected_gradient(run.x, grad, bounds)  # at an active bound the rest is not a distance
    edm = math.nan if cov is None else float(0.25 * grad @ cov @ grad)  # g^T H^-1 g / 2
    message = (f"valid minimum; L-BFGS-B: {run.text}; EDM {edm:.3g}" if not problems
               else "invalid minimum: " + "; ".join(problems))
    return FitResult(
        values=run.x, errors=errors, fval=run.fx, valid=not problems,
        n_calls=run.calls + sum(rounds) + again, method="lbfgsb", covariance=cov, parameter_names=names,
        message=message, edm=edm, correlation=correlation_of(cov), converged=run.converged,
        terminal_message=f"{'Success' if run.converged else 'Message'}: {run.text}",
        diagnostics={"function_evaluations": run.calls, "gradient_evaluations": run.calls + again,
                     "hessian_evaluations": 1},
    )


def _fit_migrad(objective: _Watched, names: list[str], x0: np.ndarray, tolerance: float,
                max_calls: int | None, strategy: int) -> tuple[FitResult, list[str]]:
    """MIGRAD, then HESSE (when MIGRAD converged); the result and its problems."""
    minuit, values, fval, problems, converged = _run_migrad(objective, names, x0, tolerance, max_calls,
                                                            strategy)
    cov = None
    if minuit.covariance is not None:
        cov = np.array(minuit.covariance, dtype=np.float64)
    fmin = minuit.fmin
    return FitResult(
        values=values, errors=np.array(minuit.errors, dtype=np.float64), fval=float(fval),
        valid=not problems, n_calls=objective.calls, method="migrad", covariance=cov, parameter_names=names,
        minuit=minuit,
        edm=math.nan if fmin is None else float(fmin.edm), correlation=correlation_of(cov),
        converged=converged,
        diagnostics={"function_evaluations": objective.calls, "gradient_evaluations": objective.gradients,
                     "hessian_evaluations": 0},
    ), problems


_Run = tuple[Any, np.ndarray, float, list[str], bool]  # minuit, values, fval, problems, converged


def _run_migrad(objective: _Watched, names: list[str], x0: np.ndarray, tolerance: float,
                max_calls: int | None, strategy: int) -> _Run:
    m = _minuit(objective.for_hesse(False), x0, names)
    m.strategy = strategy
    m.tol = tolerance
    m.migrad(ncall=max_calls)
    problems = migrad_problems(m.fmin)
    converged = not problems
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
    return m, np.array(m.values, dtype=np.float64), float(m.fval), problems, converged


