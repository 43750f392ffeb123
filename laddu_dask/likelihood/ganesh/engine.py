"""The one entry point of the ``ganesh`` minimizers: :func:`minimize`.

The fit layer calls::

    minimize(objective, x0, *, config=None, terminators=(), observers=(), seed=0,
             default_callbacks=True, bounds=None, parameter_names=None) -> MinimizationSummary

``objective`` has ``value(x) -> float`` and ``value_and_gradient(x) -> (float, ndarray)``
with ``x`` in parameter order (a :class:`~laddu_dask.Likelihood` has both; when it also has
``values(points)``, the population methods ask each generation in one round, and with
``values_and_gradients(points)`` the Hessian's displaced points go in one round).

How a run goes: the method (see :mod:`.configs` for the library behind each) works on
internal coordinates (:mod:`.transforms`: the config's ``transform``, and for every method
but L-BFGS-B the ``bounds`` as smooth bounds; L-BFGS-B keeps them native). After each step
(one iteration of the method) every observer is called once, then every terminator is
asked; the first to answer stops the run. ``default_callbacks=True`` adds the method's
default terminators (ganesh's); ``False`` leaves only the given ones. A run that nothing
could stop (PSO without ``MaxSteps``, or no terminator at all) is refused up front.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> from laddu_dask.likelihood.ganesh.engine import minimize
>>> class Quadratic:  # -2 ln L of a Gaussian with sigma = 2 around 3
...     def value(self, x):
...         return float((x[0] - 3.0) ** 2 / 4.0)
...     def value_and_gradient(self, x):
...         return self.value(x), np.array([(x[0] - 3.0) / 2.0])
>>> s = minimize(Quadratic(), [0.0], parameter_names=["mu"])
>>> round(float(s.x[0]), 6), s.message.success
(3.0, True)
>>> round(float(s.covariance[0, 0]), 6)  # half the physical variance 4: a -2 ln L objective
2.0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from laddu_dask.errors import GaneshConfigError, NonFiniteError
from laddu_dask.likelihood.ganesh import configs as cf
from laddu_dask.likelihood.ganesh.observers import Observer
from laddu_dask.likelihood.ganesh.status import EvalCounts, StatusMessage, StatusSnapshot
from laddu_dask.likelihood.ganesh.summaries import MinimizationSummary
from laddu_dask.likelihood.ganesh.terminators import Terminator, default_terminators
from laddu_dask.likelihood.ganesh.transforms import Bounds, Transform, TransformChain, check_transform
from laddu_dask.likelihood.hessian import gradient_hessian
from laddu_dask.likelihood.steps import Steps

__all__ = ["Problem", "Run", "lbfgsb_minimize_steps", "minimize"]

#: Methods whose summary carries the inverse-Hessian covariance.
WITH_COVARIANCE = ("LBFGSBConfig", "ConjugateGradientConfig", "TrustRegionConfig")


class Problem:
    """The objective on internal coordinates, counting evaluations: a value counts in ``f``,
    a value and gradient in ``f`` and ``g``, a Hessian in ``h``."""

    def __init__(self, objective: Any, transform: Transform | None, n: int) -> None:
        self.objective, self.transform, self.n = objective, transform, n
        self.f = self.g = self.h = 0

    def external(self, y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        return y.copy() if self.transform is None else self.transform.to_external(y)

    def internal(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return x.copy() if self.transform is None else self.transform.to_internal(x)

    def value(self, y: np.ndarray) -> float:
        self.f += 1
        return float(self.objective.value(self.external(y)))

    def values(self, ys: np.ndarray) -> np.ndarray:
        """Values at many internal points (a generation), counting each in ``f``: one
        :meth:`~laddu_dask.Likelihood.values` round when the objective has ``values``
        (bitwise :meth:`value` at each point), else one :meth:`value` call per point."""
        ys = np.asarray(ys, dtype=float)
        batch = getattr(self.objective, "values", None)
        if batch is None or not callable(batch):
            return np.array([self.value(y) for y in ys], dtype=float).reshape(len(ys))
        self.f += len(ys)
        if not len(ys):
            return np.zeros(0)
        return np.asarray(batch(np.array([self.external(y) for y in ys])), dtype=float).reshape(len(ys))

    def value_and_gradient(self, y: np.ndarray) -> tuple[float, np.ndarray]:
        return self.answer(y, *self.objective.value_and_gradient(self.ask(y)))

    def ask(self, y: np.ndarray) -> np.ndarray:
        """The external point of a value and gradient at internal ``y`` (counted in ``f`` and
        ``g``): :meth:`value_and_gradient` in two halves, for a method written as steps."""
        self.f += 1
        self.g += 1
        return self.external(y)

    def answer(self, y: np.ndarray, value: float, gradient: Any) -> tuple[float, np.ndarray]:
        """The value and internal gradient at ``y`` from the objective's at its external point."""
        g = np.asarray(gradient, dtype=float)
        return float(value), g if self.transform is None else g * self.transform.derivative(
            np.asarray(y, dtype=float)
        )

    def points(self, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Values and internal gradients at many internal points (uncounted: a Hessian's)."""
        xs = np.array([self.external(y) for y in ys])
        batch = getattr(self.objective, "values_and_gradients", None)
        if batch is not None:
            values, grads = batch(xs)
        else:
            pairs = [self.objective.value_and_gradient(x) for x in xs]
            values, grads = np.array([p[0] for p in pairs]), np.array([np.asarray(p[1]) for p in pairs])
        grads = np.asarray(grads, dtype=float)
        if self.transform is not None:
            grads = grads * np.array([self.transform.derivative(y) for y in ys])
        return np.asarray(values, dtype=float), grads

    def hessian(self, y: np.ndarray, bounds: Sequence[tuple[float | None, float | None]]) -> np.ndarray:
        """The Hessian in internal coordinates, from exact gradients (counts one in ``h``)."""
        self.h += 1
        return gradient_hessian(self.points, np.asarray(y, dtype=float), bounds)

    def counts(self) -> EvalCounts:
        return EvalCounts(f=self.f, g=self.g, h=self.h)


class Run:
    """The step loop's bookkeeping: after each step the method calls :meth:`after_step`.

    As in laddu, a step asks the method's default terminators first, then calls the
    observers, then asks the given terminators; the first terminator to answer stops the run
    (so a step that a default terminator ends is not observed)."""

    def __init__(
        self, problem: Problem, defaults: list[Any], observers: list[Any], terminators: list[Any]
    ) -> None:
        self.problem, self.defaults, self.observers, self.given = problem, defaults, observers, terminators
        self.terminators = defaults + terminators
        self.state = SimpleNamespace(step=-1, memory={}, f_previous=math.inf, fx=math.nan)
        self.message: StatusMessage | None = None

    def after_step(self, y: np.ndarray, fx: float, **fields: Any) -> bool:
        """Record the step's point (internal ``y``) and value, then test and observe; a
        ``label`` field names the kind of step in the snapshot (``"Step: REFLECT"``)."""
        st = self.state
        st.step += 1
        st.y, st.fx = np.array(y, dtype=float), float(fx)
        st.x, st.evals = self.problem.external(st.y), self.problem.counts()
        label = fields.pop("label", None)
        st.__dict__.update(fields)
        snapshot = StatusSnapshot(st.step, False, "Step" if label is None else f"Step: {label}")
        stop = self._ask(self.defaults, snapshot)
        if not stop:
            for obs in self.observers:
                obs.observe(st) if isinstance(obs, Observer) else obs(st.step, snapshot)
            stop = self._ask(self.given, snapshot)
        st.f_previous = st.fx
        return stop

    def _ask(self, terminators: list[Any], snapshot: StatusSnapshot) -> bool:
        st = self.state
        for t in terminators:
            if isinstance(t, Terminator):
                text = t.check(st)
                if text is not None:
                    self.message = StatusMessage(t.succeeds, text or None)
                    return True
            else:
                answer = t(st.step, snapshot)
                if not isinstance(answer, bool | np.bool_):
                    raise TypeError(
                        f"a Python terminator must return bool, got {type(answer).__name__} from {t!r}"
                    )
                if answer:
                    self.message = StatusMessage(False, None)
                    return True
        return False


def _callbacks(
    method: str, terminators: Sequence[Any], observers: Sequence[Any], default_callbacks: bool
) -> tuple[list[Any], list[Any], list[Any]]:
    """The method's default terminators (when asked for), the observers and the given
    terminators, checked."""
    terms = list(terminators)
    for t in terms:
        ok = (isinstance(t, Terminator) and t.method in (None, method)) or (
            callable(t) and not isinstance(t, Terminator | Observer | type)
        )
        if not ok:
            raise TypeError(
                f"terminators must be {method}'s terminators, ld.ganesh.MaxSteps or Python callables "
                f"(step, snapshot) -> bool, got {t!r}"
            )
    for o in observers:
        if not (isinstance(o, Observer) or (callable(o) and not isinstance(o, Terminator | type))):
            raise TypeError(
                f"observers must be ganesh observers or Python callables (step, snapshot), got {o!r}"
            )
    defaults = default_terminators(method) if default_callbacks else []
    if not terms and not defaults:
        raise GaneshConfigError(
            f"{method} would never stop: no terminator applies (pass terminators="
            "[ld.ganesh.MaxSteps(n)]" + (" or default_callbacks=True" if not default_callbacks else "") + ")"
        )
    return defaults, list(observers), terms


def _bounds(bounds: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    if bounds is None:
        return np.full(n, -np.inf), np.full(n, np.inf)
    pairs = Bounds(bounds).bounds
    if len(pairs) != n:
        raise GaneshConfigError(f"bounds has {len(pairs)} entries, the problem has {n} parameters")
    lo, hi = np.array(pairs, dtype=float).reshape(-1, 2).T
    return lo, hi


def _start(objective: Any, x0: np.ndarray, config: Any, terminators: Sequence[Any],
           observers: Sequence[Any], default_callbacks: bool, bounds: Any,
           metadata: Transform | None) -> tuple[Problem, Run, np.ndarray, np.ndarray, np.ndarray]:
    """A run's problem (its transforms), bookkeeping, internal start and bounds."""
    n = len(x0)
    method = type(config).__name__
    defaults, obs, terms = _callbacks(method, terminators, observers, default_callbacks)
    own = getattr(config, "bounds", None)
    lo, hi = _bounds(own if own is not None else bounds, n)
    user = check_transform(config.transform, n)
    native = isinstance(config, cf.LBFGSBConfig)
    parts = [] if metadata is None else [check_transform(metadata, n)]
    parts += [] if native or not (np.isfinite(lo) | np.isfinite(hi)).any() else [Bounds(list(zip(lo, hi)))]
    parts += [user] if user is not None else []
    transform = None if not parts else parts[0] if len(parts) == 1 else TransformChain(parts)
    problem = Problem(objective, transform, n)
    run = Run(problem, defaults, obs, terms)
    return problem, run, problem.internal(np.clip(x0, lo, hi)), lo, hi


def lbfgsb_minimize_steps(x0: np.ndarray, *, max_calls: int | None = None,
                          bounds: Sequence[tuple[float | None, float | None]] | None = None,
                          metadata: Transform | None = None) -> Steps:
    """:func:`minimize` with ``LBFGSBConfig(error_mode="skip")`` and its default terminators,
    as steps (:mod:`laddu_dask.likelihood.steps`): each point is yielded for evaluation
    instead of evaluated, so many runs can share their evaluation rounds, each bitwise the
    run :func:`minimize` makes.  After a step that took the evaluations past ``max_calls``
    the run stops (a terminator that answers without a message).  Returns ``(x, fx,
    message, counts)``."""
    from laddu_dask.likelihood.ganesh.lbfgsb_core import lbfgsb_iterations

    config = cf.LBFGSBConfig(error_mode="skip")
    x0 = np.asarray(x0, dtype=float).ravel()
    limit: list[Any] = [] if max_calls is None else [lambda step, snapshot: problem.f > max_calls]
    problem, run, y0, lo, hi = _start(None, x0, config, limit, (), True, bounds, metadata)
    y, fx, message = yield from lbfgsb_iterations(problem, run, y0, config, (lo, hi))
    return problem.external(y), float(fx), message, problem.counts()


def minimize(
    objective: Any,
    x0: Sequence[float] | np.ndarray,
    *,
    config: Any = None,
    terminators: Sequence[Any] = (),
    observers: Sequence[Any] = (),
    seed: int = 0,
    default_callbacks: bool = True,
    bounds: Sequence[tuple[float | None, float | None]] | None = None,
    parameter_names: Sequence[str] | None = None,
    metadata: Transform | None = None,
) -> MinimizationSummary:
    """Minimize ``objective`` from ``x0`` with a ``ganesh`` method.

    Parameters
    ----------
    objective : object
        ``value(x) -> float`` and ``value_and_gradient(x) -> (float, ndarray)``, ``x`` in
        parameter order (e.g. a :class:`~laddu_dask.Likelihood`).
    x0 : sequence of float or VectorInit
        The start.
    config : object, optional
        A ``ganesh`` configuration; ``None`` is laddu's default, ``LBFGSBConfig()`` with the
        exact gradient and ``bounds``.
    terminators, observers : sequence, optional
        ``ganesh`` terminators and observers, or Python callables ``(step, snapshot)``
        (a terminator's returns ``bool``: ``True`` stops).
    seed : int, default 0
        Seeds every random choice: the same seed gives the same run.
    default_callbacks : bool, default True
        Add the method's default terminators; ``False`` leaves only ``terminators``.
    bounds : sequence of (low, high), optional
        The parameters' bounds (``None`` an open end): native for L-BFGS-B (a config's own
        ``bounds`` take precedence), smooth bounds for the other methods.
    parameter_names : sequence of str, optional
        Names for the summary (a config's ``parameter_names`` take precedence).
    metadata : Transform, optional
        The parameters' own transform (the fit layer's: laddu's periodic wrapping), applied
        first, before the bounds and the config's ``transform``.

    Returns
    -------
    MinimizationSummary
        ``covariance`` is the inverse Hessian of the objective (laddu's raw convention: half
        the physical covariance for ``-2 ln L``), for L-BFGS-B, CG and trust region.

    Raises
    ------
    TypeError
        For a config, terminator or observer of the wrong kind.
    GaneshConfigError
        For bounds or a transform of the wrong length, or a run nothing could stop.
    """
    from laddu_dask.likelihood.ganesh import derivative_free, gradient_methods

    config = cf.LBFGSBConfig() if config is None else config
    methods: dict[type, Callable[..., Any]] = {
        cf.LBFGSBConfig: gradient_methods.lbfgsb,
        cf.ConjugateGradientConfig: gradient_methods.conjugate_gradient,
        cf.TrustRegionConfig: gradient_methods.trust_region,
        cf.AdamConfig: gradient_methods.adam,
        cf.NelderMeadConfig: derivative_free.nelder_mead,
        cf.SimulatedAnnealingConfig: derivative_free.annealing,
        cf.PSOConfig: derivative_free.swarm,
        cf.DifferentialEvolutionConfig: derivative_free.evolution,
        cf.CMAESConfig: derivative_free.cmaes,
    }
    if type(config) not in methods:
        raise TypeError(
            "config must be a ganesh minimizer configuration (LBFGSBConfig, NelderMeadConfig, ...), "
            f"got {type(config).__name__}"
        )
    x0 = np.asarray(getattr(x0, "values", x0), dtype=float).ravel()
    n = len(x0)
    if not n or not np.isfinite(x0).all():
        raise GaneshConfigError(f"x0 must be non-empty and finite, got {x0.tolist()}")
    method = type(config).__name__
    problem, run, y0, lo, hi = _start(objective, x0, config, terminators, observers, default_callbacks,
                                      bounds, metadata)
    rng = np.random.default_rng(seed)
    y, fx, message = methods[type(config)](problem, run, y0, config, rng, (lo, hi))
    x = problem.external(y)
    covariance = np.full((n, n), np.nan)
    if method in WITH_COVARIANCE and getattr(config, "error_mode", "exact_hessian") == "exact_hessian":
        covariance = _covariance(problem, x, lo, hi)
    names = (
        config.parameter_names
        if config.parameter_names is not None
        else (list(parameter_names) if parameter_names is not None else None)
    )
    return MinimizationSummary(
        x=x,
        fx=float(fx),
        x0=x0,
        covariance=covariance,
        evals=problem.counts(),
        message=message,
        parameter_names=names,
        bounds=list(zip(lo, hi)),
    )


def _covariance(problem: Problem, x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The inverse of the Hessian at external ``x`` (NaN when it is not finite)."""
    external = Problem(problem.objective, None, problem.n)
    box = [
        (None if not np.isfinite(a) else float(a), None if not np.isfinite(b) else float(b))
        for a, b in zip(lo, hi)
    ]
    try:
        hessian = external.hessian(x, box)
    except NonFiniteError:
        return np.full((problem.n, problem.n), np.nan)
    finally:
        problem.h += 1
    try:
        return np.linalg.inv(hessian)
    except np.linalg.LinAlgError:
        return np.linalg.pinv(hessian)
