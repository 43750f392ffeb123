"""MCMC: emcee's affine-invariant ensemble sampler on a likelihood, vectorised.

The log-density is ``-NLL / 2`` (laddu's likelihoods are ``-2 ln L``), ``-inf`` outside
the parameter bounds.  emcee is run with ``vectorize=True``: each proposal of a half
ensemble (the stretch move updates the walkers in two halves, each proposed from the
other) is ONE :meth:`~laddu_dask.likelihood.Likelihood.values` call for all its
walkers, so a step costs two evaluation rounds whatever the number of walkers (two
calls per worker on a cluster, two passes over each partition), not one per walker.

The names follow laddu 0.28.1: ``Likelihood.sample`` returns an ``MCMCSummary`` whose
``chain`` is ``(n_walkers, n_steps + 1, n_parameters)`` with the starting positions as
step 0, and ``Likelihood.walker_positions(center, n_walkers, scale=1e-3, seed=0)``
draws the starting cloud.

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
>>> summary = sample(lik, n_walkers=8, n_steps=50, seed=1)
>>> summary.dimension
(8, 51, 1)
>>> summary.flat(discard=10).shape
(320, 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from laddu_dask.likelihood.fit import FitResult
from laddu_dask.likelihood.likelihood import Likelihood, require_free
from laddu_dask.validate import integer, number

#: Draws of a starting position outside the bounds before giving up.
MAX_REDRAWS = 1000


@dataclass(frozen=True)
class MCMCSummary:
    """The chains of an ensemble sampler (laddu's ``MCMCSummary``, with emcee's diagnostics).

    Attributes
    ----------
    chain : numpy.ndarray
        Shape ``(n_walkers, n_steps + 1, n_parameters)``; step 0 is the starting ensemble.
    log_prob : numpy.ndarray
        Shape ``(n_walkers, n_steps + 1)``: ``-NLL / 2`` at each position.
    acceptance_fraction : numpy.ndarray
        Per walker, the fraction of its proposals that were accepted.
    parameter_names : list of str
        Order of the last axis of :attr:`chain`.
    evals : int
        Log-density evaluations (points; out-of-bounds proposals cost none).
    rounds : int
        Evaluation rounds of the runtime (one per half-ensemble proposal, plus the start).
    """

    chain: np.ndarray
    log_prob: np.ndarray
    acceptance_fraction: np.ndarray
    parameter_names: list[str]
    evals: int
    rounds: int

    @property
    def dimension(self) -> tuple[int, int, int]:
        """``(n_walkers, n_steps + 1, n_parameters)``, as laddu's."""
        return tuple(int(n) for n in self.chain.shape)

    def _steps(self, discard: int, thin: int) -> np.ndarray:
        """Steps ``discard + 1, discard + 1 + thin, ...`` (step 0, the start, never counts)
        as ``(steps, walkers, parameters)``."""
        if discard < 0 or thin < 1:
            raise ValueError(f"discard must be >= 0 and thin >= 1, got discard={discard}, thin={thin}")
        if discard >= self.chain.shape[1] - 1:
            raise ValueError(f"discard={discard} leaves none of the {self.chain.shape[1] - 1} steps")
        return np.swapaxes(self.chain[:, 1 + discard::thin], 0, 1)

    def flat(self, discard: int = 0, thin: int = 1) -> np.ndarray:
        """The samples of all walkers after ``discard`` burn-in steps, every ``thin``-th,
        as ``(n_samples, n_parameters)`` (the starting ensemble excluded)."""
        return self._steps(discard, thin).reshape(-1, self.chain.shape[2])

    def autocorrelation(self, discard: int = 0) -> np.ndarray:
        """emcee's integrated autocorrelation time of each parameter, in steps, after
        ``discard`` steps (``quiet=True``: a chain shorter than 50 times it gets an estimate
        with a warning rather than an error)."""
        import emcee  # here, not at import: emcee imports scipy.stats (seconds at a cold start)

        return emcee.autocorr.integrated_time(self._steps(discard, 1), quiet=True)

    def mean(self, discard: int = 0, thin: int = 1) -> np.ndarray:
        """The sample mean of each parameter (see :meth:`flat`)."""
        return self.flat(discard, thin).mean(axis=0)

    def covariance(self, discard: int = 0, thin: int = 1) -> np.ndarray:
        """The sample covariance matrix, :attr:`parameter_names` order (see :meth:`flat`)."""
        return np.atleast_2d(np.cov(self.flat(discard, thin), rowvar=False))

    def mean_error(self, discard: int = 0) -> np.ndarray:
        """Monte Carlo standard error of :meth:`mean`: ``sigma sqrt(tau / (walkers steps))``."""
        steps = self._steps(discard, 1)
        tau = np.maximum(self.autocorrelation(discard), 1.0)
        return np.sqrt(np.diag(self.covariance(discard)) * tau / (steps.shape[0] * steps.shape[1]))


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
    ``counter`` (``[points, rounds]``) counts what it evaluated."""
    lo, hi = _limits(likelihood.bounds())

    def log_prob(points: np.ndarray) -> np.ndarray:
        points = np.atleast_2d(points)
        out = np.full(len(points), -np.inf)
        inside = np.all((points >= lo) & (points <= hi), axis=1)
        if inside.any():
            out[inside] = -0.5 * likelihood.values(points[inside])
            if counter is not None:
                counter[0] += int(inside.sum())
                counter[1] += 1
        return out

    return log_prob


def sample(likelihood: Likelihood, init: Any = None, *, n_walkers: int | None = None,
           n_steps: int = 1000, seed: int = 0, scale: float = 1e-3, moves: Any = None,
           progress: bool = False) -> MCMCSummary:
    """Sample ``exp(-NLL / 2)`` with emcee's affine-invariant ensemble sampler.

    Parameters
    ----------
    likelihood : Likelihood
        Any likelihood; its bounds bound the density (``-inf`` outside).
    init : None, sequence, mapping, FitResult or array of shape (n_walkers, n_parameters)
        The starting walkers themselves (a 2-D array, as laddu's ``AIESInit(walkers)``),
        or the centre of a :func:`walker_positions` cloud: by default each parameter's
        initial value; a :class:`FitResult` starts at its minimum.
    n_walkers : int, optional
        Walkers, at least twice the parameters; default ``max(32, 2 n_parameters)``
        (ignored when ``init`` gives the walkers).
    n_steps : int
        Steps of every walker.
    seed : int
        Seeds the starting cloud and emcee's moves: the same seed, the same chain.
    scale : float
        Fractional half-width of the starting cloud (see :func:`walker_positions`).
    moves : emcee move(s), optional
        Passed to ``emcee.EnsembleSampler`` (default: the stretch move).
    progress : bool
        emcee's progress bar.

    Returns
    -------
    MCMCSummary

    Raises
    ------
    ValueError
        Too few walkers, a starting walker outside the bounds, or a bad ``init`` shape
        (:class:`~laddu_dask.errors.ParameterError`: every parameter is fixed).
    """
    require_free(likelihood)
    n = len(likelihood.parameter_names)
    walkers = np.asarray(init, dtype=float) if isinstance(init, np.ndarray) and init.ndim == 2 else None
    if walkers is None:
        n_walkers = max(32, 2 * n) if n_walkers is None else int(n_walkers)
        walkers = walker_positions(likelihood, _center(likelihood, init), n_walkers, scale=scale,
                                   seed=seed)
    if walkers.shape[1:] != (n,) or len(walkers) < max(2, 2 * n):
        raise ValueError(f"the starting walkers must be an array of shape (n_walkers >= {max(2, 2 * n)}, "
                         f"{n}), got {walkers.shape}")
    n_steps = integer(n_steps, "n_steps", minimum=1)
    counter = [0, 0]
    log_prob = log_probability(likelihood, counter)
    start = log_prob(walkers)
    if not np.all(np.isfinite(start)):
        k = int(np.argmin(np.isfinite(start)))
        point = {name: float(v) for name, v in zip(likelihood.parameter_names, walkers[k])}
        raise ValueError(f"starting walker {k} ({point}) is "
                         "outside the parameter bounds")
    import emcee  # here, not at import: emcee imports scipy.stats (seconds at a cold start)

    sampler = emcee.EnsembleSampler(len(walkers), n, log_prob, moves=moves, vectorize=True)
    sampler.random_state = np.random.RandomState(seed).get_state()
    sampler.run_mcmc(emcee.State(walkers, log_prob=start), n_steps, progress=progress)
    chain = np.concatenate([walkers[:, None, :], np.swapaxes(sampler.get_chain(), 0, 1)], axis=1)
    lp = np.concatenate([start[:, None], sampler.get_log_prob().T], axis=1)
    return MCMCSummary(chain=chain, log_prob=lp, acceptance_fraction=np.asarray(sampler.acceptance_fraction),
                       parameter_names=list(likelihood.parameter_names), evals=counter[0],
                       rounds=counter[1])
