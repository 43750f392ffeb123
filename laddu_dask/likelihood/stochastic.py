"""``Likelihood.fit_stochastic``: laddu's minibatch fit, Adam on an unbiased stochastic
likelihood.

Each evaluation draws one batch: every model term keeps each of its data events with
probability ``fraction`` (:meth:`Dataset.subsample <laddu_dask.Dataset.subsample>`, so a batch
does not depend on the partitioning) and replaces its data sum by the batch's sum over
``fraction``; the accepted-MC normalisation, the data weight ``N_w`` and the penalties stay
exact, as in laddu. So the value and gradient are unbiased estimates of the likelihood's, and
equal to them at ``fraction=1``. A value and its gradient come from one batch; batches are
seeded ``seed, seed + 1, ...`` (term ``k`` of a batch mixes in ``k`` times the golden-ratio
constant, as laddu does), so equal seeds repeat the batch sequence. The batches are drawn with
laddu-dask's own generator, so they are not laddu's events: a run agrees with laddu's
statistically, and exactly at ``fraction=1``.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> model = ld.Model(ld.parameter("a", initial=1.0, bounds=(0.0, 10.0)) * x * x + 1.0)
>>> rng = np.random.default_rng(1)
>>> data = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 200)})
>>> mc = ld.Dataset.from_arrays(scalars={"x": np.linspace(0, 1, 101)})
>>> lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
>>> s = lik.fit_stochastic(fraction=0.5, seed=3, terminators=[ld.ganesh.MaxSteps(3)])
>>> s.evals.f, s.parameter_names, s.message.success
(4, ['a'], False)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask.errors import DataError
from laddu_dask.likelihood.fit_messages import require_free
from laddu_dask.likelihood.ganesh import configs as cf
from laddu_dask.likelihood.ganesh.engine import minimize
from laddu_dask.likelihood.ganesh.summaries import MinimizationSummary
from laddu_dask.runtime.prepared import reduce_many

__all__ = ["StochasticObjective", "fit_stochastic"]

#: laddu's per-term seed offset (the 64-bit golden-ratio constant).
_GOLDEN = 0x9E3779B97F4A7C15
_MASK64 = (1 << 64) - 1


def check_fraction(fraction: Any) -> float:
    """``fraction`` as a float in ``(0, 1]``.

    Raises
    ------
    ValueError
        Otherwise (laddu's message).
    """
    if isinstance(fraction, bool) or not isinstance(fraction, int | float | np.floating) \
            or not 0.0 < float(fraction) <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    return float(fraction)


class StochasticObjective:
    """The likelihood with each term's data sum taken on a fresh random batch per call.

    Parameters
    ----------
    likelihood : Likelihood
        The exact objective.
    fraction : float
        Probability that a data event is in a batch, in ``(0, 1]``.
    seed : int
        The first batch's seed; each call uses the next.
    """

    def __init__(self, likelihood: Any, fraction: float, seed: int) -> None:
        self.likelihood = likelihood
        self.fraction = check_fraction(fraction)
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed <= _MASK64:
            raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
        self.next_seed = int(seed)
        self.batches = 0

    def _term(self, term: Any, params: np.ndarray, seed: int) -> tuple[float, np.ndarray]:
        execution = self.likelihood.execution
        n_w = term.prepare(execution).data_weight
        try:
            twin = term.with_data(term.data.subsample(self.fraction, seed=seed))
        except DataError:  # an empty batch: its data sum is zero
            twin = None
        if twin is None:
            s_data, g_data = 0.0, np.zeros(len(params))
            (s_mc, g_mc) = _mc_sums(term, execution, params)
        else:
            results = reduce_many(execution, twin.requests(execution, params, True))
            s_data, g_data, s_mc, g_mc = twin._sums(execution, params, results, True)
        s_data, g_data = s_data / self.fraction, np.asarray(g_data) / self.fraction
        value, grad = term._batch_value(s_data, g_data, s_mc, g_mc, n_w)
        return term._finite(float(value), grad)

    def value_and_gradient(self, x: Sequence[float] | np.ndarray) -> tuple[float, np.ndarray]:
        """The stochastic value and gradient at ``x`` on the next batch."""
        lik = self.likelihood
        x = lik.resolve(x)
        seed, self.next_seed = self.next_seed, (self.next_seed + 1) & _MASK64
        self.batches += 1
        total, grad = 0.0, np.zeros(len(lik.parameter_names))
        for k, (term, idx) in enumerate(zip(lik.terms, lik._index, strict=True)):
            value, g = self._term(term, x[idx], (seed + k * _GOLDEN) & _MASK64)
            total += value
            grad[idx] += g
        for pen, idx in zip(lik.penalties, lik._penalty_index, strict=True):
            value, g = pen.value_and_gradient(x[idx])
            total += value
            np.add.at(grad, idx, g)
        return total, grad

    def value(self, x: Sequence[float] | np.ndarray) -> float:
        """The stochastic value at ``x`` on the next batch."""
        return self.value_and_gradient(x)[0]


def _mc_sums(term: Any, execution: Any, params: np.ndarray) -> tuple[float, Any]:
    """``sum_accmc w I`` and its gradient of ``term`` (for a batch without data events)."""
    results = reduce_many(execution, term.requests(execution, params, True))
    return term._sums(execution, params, results, True)[2:]


def fit_stochastic(likelihood: Any, initial: Any = None, *, config: Any = None, fraction: float = 0.1,
                   seed: int = 0, terminators: Sequence[Any] = (), observers: Sequence[Any] = (),
                   default_callbacks: bool = True,
                   use_parameter_metadata: bool = True) -> MinimizationSummary:
    """Minimise ``likelihood`` with Adam on minibatches (laddu's ``Likelihood.fit_stochastic``).

    Parameters
    ----------
    likelihood : Likelihood
        The objective.
    initial : sequence or mapping, optional
        Start values (default: the parameters' initial values).
    config : ganesh.AdamConfig, optional
        Adam's settings (default ``AdamConfig()``).
    fraction : float, default 0.1
        Probability that a data event is in a batch, in ``(0, 1]``.
    seed : int, default 0
        The first batch's seed.
    terminators, observers : sequence, optional
        ganesh callbacks (``AdamEMATerminator``, ``MaxSteps``, Python callables).
    default_callbacks : bool, default True
        Include Adam's default EMA terminator.
    use_parameter_metadata : bool, default True
        Give Adam the parameters' names and bounds (as smooth bounds); False leaves the
        config's.

    Returns
    -------
    ganesh.MinimizationSummary

    Raises
    ------
    ValueError
        For ``fraction`` outside ``(0, 1]``.
    TypeError
        For a ``config`` other than ``AdamConfig``.
    """
    objective = StochasticObjective(likelihood, fraction, seed)
    if config is not None and not isinstance(config, cf.AdamConfig):
        raise TypeError(f"config must be a ganesh.AdamConfig, got {type(config).__name__}")
    require_free(likelihood)
    x0 = likelihood.resolve({} if initial is None else initial)
    meta = use_parameter_metadata
    return minimize(objective, x0, config=cf.AdamConfig() if config is None else config,
                    terminators=list(terminators), observers=list(observers), seed=seed,
                    default_callbacks=default_callbacks, bounds=likelihood.bounds() if meta else None,
                    parameter_names=list(likelihood.parameter_names) if meta else None)
