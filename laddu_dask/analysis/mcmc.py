"""MCMC of a likelihood: laddu's ``Likelihood.sample`` and ``walker_positions``.

The log-density is ``-NLL / 2`` (laddu's likelihoods are ``-2 ln L``), ``-inf`` outside
the parameter bounds (not evaluated). ``sample(init, config=, seed=, terminators=,
observers=)`` runs laddu's sampler of ``init``: ``ld.ganesh.AIESInit`` the affine-invariant
ensemble sampler (emcee), ``ld.ganesh.ESSInit`` the ensemble slice sampler
(:mod:`laddu_dask.likelihood.ganesh.ess`), until a terminator such as
``ld.ganesh.MaxSteps(n)`` stops it. The walkers' proposals are evaluated together: each
half-ensemble proposal of AIES, each stepping-out or shrinking round of ESS, is ONE
:meth:`~laddu_dask.likelihood.Likelihood.values` call (one evaluation round, one call per
worker on a cluster, one pass over each partition), not one per walker.

The summary's ``chain`` is ``(n_walkers, n_kept, n_parameters)`` with the starting
walkers as entry 0, as laddu's.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> from laddu_dask.analysis.mcmc import sample
>>> x, s = ld.scalar("x"), ld.scalar("s")
>>> mu = ld.parameter("mu", initial=0.0, bounds=(-5.0, 5.0))
>>> gauss = ld.Model((-0.5 * s * (x - mu) * (x - mu)).exp())  # NLL = sum (x - mu)^2
>>> data = ld.Dataset.from_arrays(scalars={"x": np.array([-1.0, 0.0, 1.5]), "s": np.ones(3)})
>>> mc = ld.Dataset.from_arrays(scalars={"x": np.zeros(1), "s": np.zeros(1)})
>>> lik = ld.Likelihood([ld.NLL(gauss, data=data, accepted_mc=mc)])
>>> init = ld.ganesh.AIESInit(lik.walker_positions([0.0], 8, seed=1))
>>> fifty_steps = lambda step, snapshot: step >= 49  # as ld.ganesh.MaxSteps(50)
>>> summary = sample(lik, init, seed=1, terminators=[fifty_steps])
>>> summary.dimension, summary.evals.f
((8, 51, 1), 408)
>>> ld.Ensemble.from_mcmc(summary, discard=11).draws.shape
(320, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask.errors import ParameterError
from laddu_dask.likelihood.fit import FitResult
from laddu_dask.likelihood.fit_messages import require_free
from laddu_dask.likelihood.ganesh.mcmc_configs import AIESInit, ESSInit
from laddu_dask.likelihood.ganesh.mcmc_summary import MCMCSummary
from laddu_dask.likelihood.ganesh.sampling import check_config, run_ensemble
from laddu_dask.likelihood.likelihood import Likelihood
from laddu_dask.validate import number

#: Draws of a starting position outside the bounds before giving up.
MAX_REDRAWS = 1000


def _center(likelihood: Likelihood, init: Any) -> np.ndarray:
    if init is None:
        return np.array(likelihood.default_parameters, dtype=float)
    if isinstance(init, FitResult):
        return likelihood.resolve(init.values)
    return likelihood.resolve(init)


def _limits(bounds: list[tuple[float | None, float | None]]) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper limits (``-inf``/``inf`` where a side is unbounded)."""
    lo = np.array([-np.inf if b[0] is None else b[0] for b in bounds])
    hi = np.array([np.inf if b[1] is None else b[1] for b in bounds])
    return lo, hi


def walker_positions(likelihood: Likelihood, center: Any, n_walkers: int, *, scale: float = 1e-3,
                     seed: int = 0) -> np.ndarray:
    """Starting walkers in a small cloud around ``center`` (laddu's ``walker_positions``).

    Each coordinate is ``center + scale * s * u``, ``u`` uniform in ``[-1, 1]``, with ``s``
    the parameter's declared ``scale`` or else ``max(|center|, 1)``; a periodic coordinate
    wraps into its bounds, and a draw outside the bounds is drawn again.

    Parameters
    ----------
    likelihood : Likelihood
        Whose parameters (order, bounds, scales) to use.
    center : sequence, mapping or FitResult
        The centre (a mapping may leave parameters out: they take their initial values).
    n_walkers : int
        At least two.
    scale : float
        Fractional half-width of the cloud.
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    numpy.ndarray
        Shape ``(n_walkers, n_parameters)``.

    Raises
    ------
    ValueError
        Fewer than two walkers, a non-positive scale, or a centre whose cloud keeps
        leaving the bounds of a parameter (named).
    """
    if n_walkers < 2:
        raise ValueError(f"an ensemble sampler needs at least two walkers, got {n_walkers}")
    scale = number(scale, "scale", above=0.0)
    x0 = _center(likelihood, center)
    rng = np.random.default_rng(seed)
    specs = list(likelihood.parameters.values())
    limits = _limits(likelihood.bounds())
    out = np.empty((n_walkers, len(x0)))
    for j, (spec, c) in enumerate(zip(specs, x0)):
        half = scale * (spec.scale if spec.scale is not None else max(abs(c), 1.0))
        lo, hi = limits[0][j], limits[1][j]
        column = c + half * rng.uniform(-1.0, 1.0, n_walkers)
        if spec.periodic and np.isfinite(lo) and np.isfinite(hi):
            column = lo + np.mod(column - lo, hi - lo)
        for _ in range(MAX_REDRAWS):
            bad = (column < lo) | (column > hi)
            if not bad.any():
                break
            column[bad] = c + half * rng.uniform(-1.0, 1.0, int(bad.sum()))
        else:
            raise ValueError(f"parameter {spec.name!r}: the starting cloud around {float(c)!r} keeps leaving "
                             f"its bounds {spec.bounds}; start inside them")
        out[:, j] = column
    return out


def log_probability(likelihood: Likelihood, counter: list[int] | None = None):
    """The vectorised log-density ``X (K, n) -> (K,)``: ``-NLL / 2`` in one
    :meth:`Likelihood.values` call, ``-inf`` outside the bounds (not evaluated).
    ``counter`` (``[points, rounds]``) counts the points asked about (laddu's density
    evaluations, those outside the bounds too) and the rounds the likelihood ran."""
    lo, hi = _limits(likelihood.bounds())

    def log_prob(points: np.ndarray) -> np.ndarray:
        points = np.atleast_2d(points)
        out = np.full(len(points), -np.inf)
        inside = np.all((points >= lo) & (points <= hi), axis=1)
        if counter is not None:
            counter[0] += len(points)
        if inside.any():
            out[inside] = -0.5 * likelihood.values(points[inside])
            if counter is not None:
                counter[1] += 1
        return out

    return log_prob


def sample(likelihood: Likelihood, init: AIESInit | ESSInit, *, config: Any = None, seed: int = 0,
           terminators: Sequence[Any] = (), observers: Sequence[Any] = (), default_callbacks: bool = True,
           use_parameter_metadata: bool = True) -> MCMCSummary:
    """Sample ``exp(-NLL / 2)`` with laddu's AIES or ensemble slice sampler (laddu's
    ``Likelihood.sample``).

    Parameters
    ----------
    likelihood : Likelihood
        Any likelihood; its bounds bound the density (zero outside).
    init : ganesh.AIESInit or ganesh.ESSInit
        The starting walkers, ``(n_walkers, n_parameters)`` in :attr:`parameter_names`
        order (e.g. ``AIESInit(lik.walker_positions(fit.values, 32))``); picks the sampler.
        At least twice as many walkers as parameters.
    config : ganesh.AIESConfig or ganesh.ESSConfig, optional
        The sampler's settings (moves, chain storage, ...); ``None``: its defaults.
    seed : int
        Seeds the sampler: the same seed, the same chain.
    terminators : sequence
        What stops the run: ``ganesh.MaxSteps(n)`` (after ``n`` steps),
        ``ganesh.AutocorrelationTerminator``, or callables ``(step, snapshot) -> bool``.
        At least one must be able to stop it.
    observers : sequence
        ``ganesh.ProgressObserver``, ``ganesh.DebugObserver`` or callables ``(step, snapshot)``.
    default_callbacks : bool
        laddu's switch for ganesh's default sampler callbacks, of which there are none: no effect.
    use_parameter_metadata : bool
        ``True``: the summary names the likelihood's parameters (laddu also installs their
        linear scales, which no affine-invariant sampler feels). ``False``: the config's
        ``parameter_names`` (``None`` without them).

    Returns
    -------
    MCMCSummary
        ``chain`` ``(n_walkers, n_kept, n_parameters)``, entry 0 the start; ``evals.f``
        the density evaluations (the start counts).

    Raises
    ------
    TypeError
        ``init`` not an ``AIESInit``/``ESSInit``, ``config`` not its match, an unknown callback.
    ParameterError
        Walkers of the wrong width, fewer than twice the parameters, or one outside the
        bounds; no terminator that ends the run; a config ``transform`` (not supported);
        every parameter fixed.
    """
    require_free(likelihood)
    config = check_config(init, config)
    names = list(likelihood.parameter_names)
    walkers = init.walkers
    if walkers.shape[1] != len(names):
        raise ParameterError(f"init: walkers have {walkers.shape[1]} coordinates, the likelihood has "
                             f"{len(names)} free parameters ({', '.join(names)})")
    if len(walkers) < 2 * len(names):
        raise ParameterError(f"init: {len(walkers)} walkers for {len(names)} parameters; an ensemble "
                             f"sampler needs at least twice as many walkers as parameters "
                             f"({2 * len(names)}), or its walkers stay in a subspace")
    if config.transform is not None:
        raise ParameterError("config: transform is not supported by sample (the density would need its "
                             "Jacobian); sample in the likelihood's own parameters")
    lo, hi = _limits(likelihood.bounds())
    outside = ~np.all((walkers >= lo) & (walkers <= hi), axis=1)
    if outside.any():
        k = int(np.argmax(outside))
        point = dict(zip(names, map(float, walkers[k]), strict=True))
        raise ParameterError(f"init: starting walker {k} ({point}) is outside the parameter bounds")
    counter = [0, 0]
    return run_ensemble(log_probability(likelihood, counter), init, config, seed=seed,
                        terminators=terminators, observers=observers, counter=counter,
                        parameter_names=names if use_parameter_metadata else config.parameter_names)
