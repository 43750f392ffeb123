"""``Likelihood``: a sum of terms sharing parameters by name.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> a = ld.parameter("a", initial=1.0, bounds=(0.0, 10.0))
>>> model = ld.Model(a * x * x + 1.0)
>>> data = ld.Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0, 0.9])})
>>> mc = ld.Dataset.from_arrays(scalars={"x": np.linspace(0, 1, 101)})
>>> lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
>>> lik.parameter_names
['a']
>>> value, grad = lik.value_and_gradient({"a": 2.0})
>>> grad.shape
(1,)
>>> values = lik.values([[1.0], [2.0]])  # K points in one evaluation round
>>> bool(values[1] == value)
True
>>> lik.hessian([1.0]).shape  # from exact gradients at 2 points, in one round
(1, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask.arrays import all_finite
from laddu_dask.compile.layout import ParameterValues, resolve_parameters
from laddu_dask.errors import ParameterError
from laddu_dask.expr.parameter import ParameterSpec, draw_starts, merge_parameters
from laddu_dask.likelihood.cost import MinuitCost
from laddu_dask.likelihood.dashboard_notes import note_points
from laddu_dask.likelihood.diagnostics import LikelihoodDiagnostics, likelihood_diagnostics
from laddu_dask.likelihood.fingerprint import likelihood_fingerprint
from laddu_dask.likelihood.fit import fit
from laddu_dask.likelihood.penalties import Penalty
from laddu_dask.likelihood.stochastic import fit_stochastic
from laddu_dask.likelihood.term_base import _Term
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.prepared import run_jobs

#: A model-backed term: :class:`~laddu_dask.likelihood.terms.NLL` or ``ExtendedNLL``.
Term = _Term


class Likelihood(MinuitCost):
    """The sum of likelihood terms, evaluated on one execution; an iminuit cost.

    This is the likelihood layer's class: values, gradients, fits. The public
    ``ld.Likelihood`` (:mod:`laddu_dask.facade`) is its subclass with the methods of the
    layers above (``fit_restarts``, ``bootstrap_fit``, ``sample``, ``walker_positions``;
    ``project``, ``projection``, ``intensity_integrals``, ``yield_context``,
    ``cross_section``, ``fit_fractions``). A sum (``a + b``, :meth:`combined`) has the class
    of its more derived side.

    ``iminuit.Minuit(lik, a=1.0, ...)`` fits it directly (see
    :mod:`laddu_dask.likelihood.cost`); ``lik.fit()`` runs MIGRAD and HESSE with progress
    and a :class:`~laddu_dask.likelihood.FitResult`. ``lik + other`` is the likelihood of
    both sets of terms.

    Parameters
    ----------
    terms : sequence of NLL, ExtendedNLL, RidgePenalty or LassoPenalty
        Terms; parameters with one name are one parameter (their definitions must agree).
        A penalty names parameters of the other terms.
    execution : Execution, optional
        Where to evaluate; the default is the local threaded scheduler in f64.

    Attributes
    ----------
    parameter_names : list of str
        Free parameters: each term's, in term order, first appearance wins.
    parameters : dict[str, ParameterSpec]
        Their definitions.
    fixed_parameters : dict[str, float]
        The fixed parameters and the values they are held at.
    """

    def __init__(self, terms: Sequence[Term], execution: Execution | None = None) -> None:
        if isinstance(terms, _Term):
            terms = [terms]
        terms = list(terms)
        if not terms:
            raise ValueError("a Likelihood needs at least one term")
        names_seen: set[str] = set()
        for t in terms:
            if not isinstance(t, (_Term, Penalty)):
                raise TypeError(f"Likelihood terms must be NLL, ExtendedNLL or a penalty, got "
                                f"{type(t).__name__}")
            if t.name in names_seen:
                raise ValueError(f"two likelihood terms are named {t.name!r}; give each a unique name")
            names_seen.add(t.name)
        self.penalties: list[Penalty] = [t for t in terms if isinstance(t, Penalty)]
        terms = [t for t in terms if not isinstance(t, Penalty)]
        if not terms:
            raise ValueError("a Likelihood needs at least one NLL or ExtendedNLL term")
        self.terms = terms
        self._execution_given = execution is not None
        self.execution = execution if execution is not None else Execution()
        specs = merge_parameters(
            spec for t in terms for spec in t.model.parameters.values()
        )
        self.parameters: dict[str, ParameterSpec] = {
            n: s for n, s in specs.items() if not s.is_fixed
        }
        self.parameter_names: list[str] = list(self.parameters)
        self.fixed_parameters: dict[str, float] = {n: s.fixed for n, s in specs.items() if s.is_fixed}
        self._index = [
            np.array([self.parameter_names.index(n) for n in t.parameter_names], dtype=int)
            for t in terms
        ]
        for pen in self.penalties:
            unknown = [n for n in pen.parameter_names if n not in self.parameters]
            if unknown:
                raise ParameterError(f"penalty {pen.name!r} names {', '.join(map(repr, unknown))}, which "
                                     f"is not a free parameter of the likelihood (free: "
                                     f"{', '.join(self.parameter_names)})")
        # the lean path's index of each term: None where the term takes every parameter in order
        self._lean_index = [None if idx.tolist() == list(range(len(self.parameter_names))) else idx
                            for idx in self._index]
        self._penalty_index = [np.array([self.parameter_names.index(n) for n in pen.parameter_names])
                               for pen in self.penalties]
        self.n_evaluations = 0
        #: parameter points evaluated for the value alone / for the value and the gradient
        self.objective_evaluations = 0
        self.gradient_evaluations = 0

    def __repr__(self) -> str:
        return (
            f"Likelihood({len(self.terms)} term(s): {', '.join(t.name for t in self.terms)}; "
            f"{len(self.parameter_names)} free parameters)"
        )

    def _cost_likelihood(self) -> Likelihood:
        return self

    def combined(self, other: Likelihood) -> Likelihood:
        """The likelihood of this one's terms and ``other``'s (what ``self + other`` returns).

        The sum evaluates on the execution either side was given; two different ones are
        an error.

        Raises
        ------
        ValueError
            If both sides were given different executions, or two terms share a name.
        """
        given = [lik.execution for lik in (self, other) if lik._execution_given]
        if len(given) == 2 and given[0] is not given[1]:
            raise ValueError(
                "cannot add likelihoods on two different executions; build "
                "ld.Likelihood([...terms], execution=...) with the one to use"
            )
        # the class of the more derived side: the public ld.Likelihood (laddu_dask.facade) when
        # either is one, so that a sum carries its methods
        cls = type(other) if issubclass(type(other), type(self)) else type(self)
        return cls([*self.terms, *self.penalties, *other.terms, *other.penalties],
                   execution=given[0] if given else None)

    @property
    def default_parameters(self) -> list[float]:
        """Initial values of the free parameters."""
        return [s.initial for s in self.parameters.values()]

    def bounds(self) -> list[tuple[float | None, float | None]]:
        """Bounds of the free parameters, in order."""
        return [s.bounds for s in self.parameters.values()]

    def resolve(self, params: ParameterValues) -> np.ndarray:
        """Parameter values in :attr:`parameter_names` order.

        A mapping may leave parameters out (they take their initial values).
        """
        if (isinstance(params, np.ndarray) and params.dtype == np.float64
                and params.shape == (len(self.parameter_names),) and all_finite(params)):
            return params.copy()  # a minimiser's point: nothing to look up
        defaults = {n: s.initial for n, s in self.parameters.items()}
        return np.array(
            resolve_parameters(self.parameter_names, params, defaults=defaults), dtype=np.float64
        )

    def _evaluate(self, params: ParameterValues, with_gradient: bool) -> tuple[float, Any]:
        return self._evaluate_points([self.resolve(params)], with_gradient)[0]

    def _evaluate_points(self, points: list[np.ndarray], with_gradient: bool) -> list[tuple[float, Any]]:
        """``(value, gradient or None)`` at each resolved point, all in one round.

        The points are trusted (:meth:`resolve` checked them, into arrays of their own):
        below here nothing re-checks or copies them."""
        return evaluate_together([(self, points)], with_gradient)[0]

    def _point_jobs(self, points: list[np.ndarray], with_gradient: bool) -> tuple[list[Any], list[Any]]:
        """The runtime's jobs of every term at ``points`` and what :meth:`_finish_points` needs."""
        execution = self.execution
        jobs: list[Any] = []
        per_term = []
        for term, idx in zip(self.terms, self._lean_index):
            own = points if idx is None else [p[idx] for p in points]
            prep, term_jobs = term.jobs(execution, own, with_gradient)
            per_term.append((term, idx, prep, own, len(term_jobs)))
            jobs.extend(term_jobs)
        return per_term, jobs

    def _finish_points(self, points: list[np.ndarray], per_term: list[Any], results: Any,
                       with_gradient: bool) -> list[tuple[float, Any]]:
        """The likelihood at ``points`` from the results of :meth:`_point_jobs` (an iterator)."""
        totals = [0.0] * len(points)
        n = len(self.parameter_names)
        grads = [np.zeros(n) if with_gradient else None for _ in points]
        for term, idx, prep, own, n_jobs in per_term:
            per_job = [next(results) for _ in range(n_jobs)]
            for k, (value, g) in enumerate(term.combine_points(prep, own, per_job, with_gradient)):
                totals[k] += value
                if with_gradient:
                    if idx is None:
                        grads[k] += g
                    else:
                        grads[k][idx] += g  # a term names each of its parameters once
        for pen, idx in zip(self.penalties, self._penalty_index, strict=True):
            for k, p in enumerate(points):
                value, g = pen.value_and_gradient(p[idx])
                totals[k] += value
                if with_gradient:
                    np.add.at(grads[k], idx, g)
        self.n_evaluations += len(points)
        if with_gradient:
            self.gradient_evaluations += len(points)
        else:
            self.objective_evaluations += len(points)
        return list(zip(totals, grads))

    def diagnostics(self) -> LikelihoodDiagnostics:
        """How each dataset is prepared and how often the likelihood was evaluated (laddu's
        ``Likelihood.diagnostics``; see :mod:`laddu_dask.likelihood.diagnostics`). The terms
        are prepared first, as the first evaluation would."""
        return likelihood_diagnostics(self)

    def _resolve_points(self, points: Any) -> list[np.ndarray]:
        if isinstance(points, np.ndarray) and points.ndim != 2:
            raise ValueError(f"points must be a (K, {len(self.parameter_names)}) array, one row per "
                             f"point, got shape {points.shape}")
        return [self.resolve(point) for point in points]

    def value(self, parameters: ParameterValues) -> float:
        """The likelihood at ``parameters`` (sequence in :attr:`parameter_names` order, or mapping)."""
        return self._evaluate(parameters, False)[0]

    def nll(self, parameters: ParameterValues) -> float:
        """The total ``-2 ln L`` at ``parameters``: laddu's alias of :meth:`value`."""
        return self.value(parameters)

    def value_and_gradient(self, parameters: ParameterValues) -> tuple[float, np.ndarray]:
        """The likelihood and its exact gradient at ``parameters``."""
        return self._evaluate(parameters, True)

    def gradient(self, parameters: ParameterValues) -> np.ndarray:
        """The exact gradient at ``parameters``."""
        return self._evaluate(parameters, True)[1]

    def values(self, points: Any) -> np.ndarray:
        """The likelihood at K points in one evaluation round.

        Locally one pass of the thread pool's tasks, on a cluster one call per worker,
        and each partition's data read once for all K points (a streamed one re-read once,
        not K times): an MCMC step for all its walkers costs one round trip.  Each value
        is bitwise :meth:`value` at that point.

        Parameters
        ----------
        points : array of shape (K, n_parameters), or sequence of K points
            Rows in :attr:`parameter_names` order (or mappings by name).

        Returns
        -------
        numpy.ndarray
            The K values.

        Examples
        --------
        See the module's: ``lik.values([[1.0], [2.0]])``.
        """
        points = self._resolve_points(points)
        if not points:
            return np.zeros(0)
        return np.array([value for value, _ in self._evaluate_points(points, False)])

    def values_and_gradients(self, points: Any) -> tuple[np.ndarray, np.ndarray]:
        """The likelihood and its exact gradient at K points in one round (see :meth:`values`).

        Returns
        -------
        values : numpy.ndarray
            Shape ``(K,)``.
        gradients : numpy.ndarray
            Shape ``(K, n_parameters)``, each row bitwise :meth:`gradient` at that point.
        """
        points = self._resolve_points(points)
        if not points:
            return np.zeros(0), np.zeros((0, len(self.parameter_names)))
        out = self._evaluate_points(points, True)
        return np.array([v for v, _ in out]), np.array([g for _, g in out]).reshape(len(out), -1)

    def sample_parameters(self, *, seed: int = 0, n: int | None = None) -> list[float] | list[list[float]]:
        """Reproducible starts for the free parameters, in :attr:`parameter_names` order
        (laddu's ``Likelihood.sample_parameters``; the rules of
        :meth:`~laddu_dask.Model.sample_parameters`): ``n`` gives that many."""
        return draw_starts(self.parameters.values(), seed, n)

    def fit_stochastic(self, initial: ParameterValues | None = None, *, config: Any = None,
                       fraction: float = 0.1, seed: int = 0, terminators: Sequence[Any] = (),
                       observers: Sequence[Any] = (), default_callbacks: bool = True,
                       use_parameter_metadata: bool = True) -> Any:
        """Adam on minibatches of the data (laddu's ``fit_stochastic``): each step's value and
        gradient come from one random ``fraction`` of every term's data events; returns a
        ``ganesh.MinimizationSummary``. See :mod:`laddu_dask.likelihood.stochastic`."""
        return fit_stochastic(self, initial, config=config, fraction=fraction, seed=seed,
                              terminators=terminators, observers=observers,
                              default_callbacks=default_callbacks,
                              use_parameter_metadata=use_parameter_metadata)

    def fit(self, initial: ParameterValues | None = None, *, config: Any = None,
            terminators: Sequence[Any] = (), observers: Sequence[Any] = (), seed: int = 0,
            default_callbacks: bool = True, use_parameter_metadata: bool = True,
            method: str | None = None, **options: Any) -> Any:
        """Minimise the likelihood (laddu's ``fit``: L-BFGS-B with the exact gradient unless
        given a ganesh ``config``; ``method="migrad"`` for MIGRAD and HESSE) and return a
        :class:`~laddu_dask.likelihood.FitResult`. See :func:`laddu_dask.likelihood.fit.fit`."""
        result = fit(self, initial=initial, method=method, config=config, terminators=terminators,
                     observers=observers, seed=seed, default_callbacks=default_callbacks,
                     use_parameter_metadata=use_parameter_metadata, **options)
        result.likelihood_fingerprint = likelihood_fingerprint(self)
        return result


def evaluate_together(pairs: Sequence[tuple[Likelihood, list[np.ndarray]]],
                      with_gradient: bool) -> list[list[tuple[float, Any]]]:
    """``(value, gradient or None)`` of each likelihood at its resolved points, the reductions
    of all those on one execution in one round (one pass of the thread pool, one call per
    worker on a cluster): the bootstrap replicas of one dataset, which share its accepted
    MC, fitted in lockstep.  Each result is bitwise that of the likelihood's own
    :meth:`Likelihood.values_and_gradients` (exact sums per job).

    Examples
    --------
    >>> import numpy as np
    >>> import laddu_dask as ld
    >>> x = ld.scalar("x")
    >>> model = ld.Model(ld.parameter("a", initial=1.0) * x * x + 1.0)
    >>> mc = ld.Dataset.from_arrays(scalars={"x": np.linspace(0, 1, 101)})
    >>> liks = [ld.Likelihood([ld.NLL(model, data=ld.Dataset.from_arrays(scalars={"x": d}),
    ...                               accepted_mc=mc)]) for d in (np.array([0.5, 0.9]), np.array([0.1]))]
    >>> out = evaluate_together([(liks[0], [np.array([2.0])]), (liks[1], [np.array([3.0])])], True)
    >>> out[1][0][0] == liks[1].value([3.0])
    True
    """
    by_execution: dict[int, list[int]] = {}
    for i, (lik, _) in enumerate(pairs):
        by_execution.setdefault(id(lik.execution), []).append(i)
    out: list[Any] = [None] * len(pairs)
    for group in by_execution.values():
        staged, jobs = [], []
        for i in group:
            lik, points = pairs[i]
            per_term, own_jobs = lik._point_jobs(points, with_gradient)
            staged.append((i, per_term))
            jobs.extend(own_jobs)
        results = iter(run_jobs(pairs[group[0]][0].execution, jobs))
        for i, per_term in staged:
            lik, points = pairs[i]
            out[i] = lik._finish_points(points, per_term, results, with_gradient)
            note_points(lik, points, out[i])  # the dashboard's page, on a cluster
    return out
