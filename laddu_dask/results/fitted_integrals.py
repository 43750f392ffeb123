"""Integrals of several model selections at a fitted point, from one pass over the Monte
Carlo (what fit fractions, yields and cross sections are made of).

For each ``(selection, role)`` pair (a :class:`~laddu_dask.results.integrals.Selection`:
a term's model or its tagged part; ``role`` the accepted or generated Monte Carlo) at the
fitted point ``p_0`` and at an ensemble's draws ``p_1 .. p_K``:

``values``      ``sum w I(p_0)``, exact
``gradients``   ``sum w dI/dp`` at ``p_0`` by the likelihood's free parameters (with a covariance)
``draws``       ``sum w I(p_k)`` at every draw, ``(K, pairs)``
``squares``     ``sum (w I(p_0))^2`` (the variance of ``values`` from the sample's size)

Every pair of one Monte Carlo sample comes from ONE pass over its partitions, all samples
in one round: a one-bin fill (:mod:`laddu_dask.results.binned_fill`, the engine of the
binned yields) whose evaluations are the selections.  Each partition's task prepares it
for each selection, evaluates every point and drops it, so however many selections there
are (a fit fraction of W waves has ``1 + W + W(W-1)/2``), no prepared copy of the Monte
Carlo is kept; one memory decision per sample records the pass.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> from laddu_dask.results.integrals import Selection
>>> x = ld.scalar("x")
>>> s = ld.parameter("s", initial=1.0).tagged("S")
>>> d = (ld.parameter("d", initial=1.0) * x).tagged("D")
>>> mc = ld.Dataset.from_arrays(scalars={"x": np.array([-1.0, 1.0, 2.0])})
>>> lik = ld.Likelihood([ld.ExtendedNLL(ld.Model((s + d) * (s + d)), data=mc, accepted_mc=mc, name="t")])
>>> pairs = [(Selection(lik, "t", tags), "accepted") for tags in (None, ["S"], ["D"])]
>>> ints = Integrals(lik, pairs, [1.0, 2.0], covariance=np.eye(2))
>>> ints.values.tolist(), ints.squares.tolist()
([35.0, 3.0, 24.0], [707.0, 3.0, 288.0])
>>> ints.gradients[2].tolist()
[0.0, 24.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from dask.highlevelgraph import HighLevelGraph

from laddu_dask.compile.layout import ParameterValues
from laddu_dask.errors import ModelError
from laddu_dask.results.binned_fill import Evaluation, EvaluationSums, fill_layer, plan_fill
from laddu_dask.results.estimate import Estimate
from laddu_dask.results.integrals import Selection
from laddu_dask.results.propagation import covariance_matrix, ensemble_points, linear_sigma


class Integrals:
    """Integrals ``sum w I`` of several ``(selection, role)`` pairs at a fitted point, with
    their exact gradients (when a covariance is given), their values at an ensemble's draws
    and their sums of squares, from one pass over each Monte Carlo sample (see the module
    docstring).

    Raises
    ------
    ParameterError
        For a covariance or ensemble that does not fit the likelihood's parameters.
    ModelError
        For a role without its sample (``"generated"`` without ``generated_mc``).
    """

    def __init__(self, likelihood: Any, pairs: Sequence[tuple[Selection, str]], parameters: ParameterValues,
                 covariance: Any = None, ensemble: Any = None) -> None:
        self.likelihood = likelihood
        self.pairs = list(pairs)
        self.parameters = likelihood.resolve(parameters)
        self.covariance = covariance_matrix(likelihood, covariance)
        found = ensemble_points(likelihood, ensemble)
        self.draw_points, self.source_id = (None, None) if found is None else found
        points = [self.parameters] + ([] if self.draw_points is None else list(self.draw_points))
        sums = _one_pass(self.pairs, points, self.covariance is not None)
        self.values = np.array([s.values[0, 0] for s in sums])
        self.squares = np.array([s.squares[0] for s in sums])
        self.gradients = None
        if self.covariance is not None:
            self.gradients = np.array([sel.full_gradient(s.gradients[0])
                                       for (sel, _), s in zip(self.pairs, sums, strict=True)])
        self.draws = None
        if len(points) > 1:
            self.draws = np.array([s.values[1:, 0] for s in sums]).T  # (K, pairs)

    def estimate(self, f: Callable[[np.ndarray], float], df: Callable[[np.ndarray], np.ndarray],
                 components: Callable[[], dict[str, float]] | None = None,
                 what: str = "quantity", fill_ids: dict[str, int] | None = None) -> Estimate:
        """The :class:`Estimate` of ``f(integrals)`` (``df`` its partial derivatives);
        ``components()`` gives its other error components, asked for once ``f`` is known finite.

        Raises
        ------
        ModelError
            When ``f`` is not finite at the fitted point or at a draw; the message says why
            (an integral is zero, an integral is not finite, or the result overflows float64).
        """
        central = f(self.values)
        if not math.isfinite(central):
            raise ModelError(f"the {what} is {float(central)!r} ({_why_not_finite(self.values)})")
        parts = {} if components is None else dict(components())
        if self.covariance is not None:
            parts["covariance"] = linear_sigma(df(self.values) @ self.gradients, self.covariance)
        draws = None if self.draws is None else np.array([f(row) for row in self.draws])
        if draws is not None and not np.isfinite(draws).all():
            row = self.draws[int(np.flatnonzero(~np.isfinite(draws))[0])]
            raise ModelError(f"the {what} is not finite at a draw of the ensemble ({_why_not_finite(row)})")
        return Estimate(central, draws=draws, source_id=self.source_id, components=parts, fill_ids=fill_ids)


def _why_not_finite(values: np.ndarray) -> str:
    """Why a function of the integrals ``values`` came out infinite or NaN, in words."""
    if not np.isfinite(values).all():
        return "an integral is not finite"
    if (values == 0.0).any():
        return "an integral is zero"
    return "it overflows float64"


def _one_pass(pairs: list[tuple[Selection, str]], points: list[np.ndarray],
              with_gradient: bool) -> list[EvaluationSums]:
    """Each pair's one-bin sums at ``points``: one fill per Monte Carlo sample, one round."""
    if not pairs:
        return []
    samples: dict[int, tuple[Any, str, list[int]]] = {}
    for i, (sel, role) in enumerate(pairs):
        dataset = sel.dataset(role)
        samples.setdefault(id(dataset), (dataset, f"{sel.name}/{role}_mc", []))[2].append(i)
    execution = pairs[0][0].execution
    layers, evaluations, workers = [], [], execution.workers
    for dataset, label, members in samples.values():
        evs = [Evaluation.of(pairs[i][0], points, with_gradient) for i in members]
        name = f"{label}/integrals of {len(evs)} selection{'s' if len(evs) > 1 else ''}"
        planned, can_run = plan_fill(execution, dataset, [[]], evs, name)
        layers.append(fill_layer(planned, [[]], evs, "integrals"))
        evaluations.append(evs)
        workers = min(workers, can_run)
    graph = HighLevelGraph.merge(*[g for g, _ in layers])
    fills = execution.get(graph, [k for _, k in layers], num_workers=workers, progress="integrals")
    out: list[Any] = [None] * len(pairs)
    for (_, _, members), evs, fill in zip(samples.values(), evaluations, fills, strict=True):
        for i, sums in zip(members, EvaluationSums.split(fill.sums[0], evs), strict=True):
            out[i] = sums
    return out
