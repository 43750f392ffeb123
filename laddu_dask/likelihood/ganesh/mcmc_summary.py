"""What an MCMC run returns (laddu's ``MCMCSummary``), with emcee's diagnostics.

``chain`` is ``(n_walkers, n_kept, n_parameters)``: entry 0 is the starting ensemble, then
the steps the run's :class:`~laddu_dask.ganesh.ChainStorage` kept (every step by default,
so that ``MaxSteps(n)`` gives ``n + 1`` entries, as laddu's). ``dimension`` is that shape.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.likelihood.ganesh.mcmc_summary import MCMCSummary
>>> from laddu_dask.likelihood.ganesh.status import EvalCounts, StatusMessage
>>> chain = np.arange(2 * 4 * 1, dtype=float).reshape(2, 4, 1)
>>> s = MCMCSummary(chain, EvalCounts(f=8), StatusMessage(True, "Maximum number of steps reached (3)"), ["a"])
>>> s.dimension, s.flat(discard=1, thin=2).ravel().tolist()
((2, 4, 1), [1.0, 3.0, 5.0, 7.0])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from laddu_dask.errors import ParameterError
from laddu_dask.likelihood.ganesh.status import EvalCounts, StatusMessage
from laddu_dask.validate import integer


def kept_entries(chain: np.ndarray, discard: int, thin: int) -> np.ndarray:
    """Entries ``discard, discard + thin, ...`` of every walker, ``(n_walkers, k, n)``
    (laddu's burn-in removal and thinning of ``Ensemble.from_mcmc``).

    Raises
    ------
    ParameterError
        ``discard`` negative or leaving no entry, ``thin`` below one.
    """
    discard = integer(discard, "discard", minimum=0)
    thin = integer(thin, "thin", minimum=1)
    if discard >= chain.shape[1]:
        raise ParameterError(f"discard={discard} must leave at least one step in every walker "
                             f"(the chain keeps {chain.shape[1]})")
    return chain[:, discard::thin]


@dataclass(frozen=True)
class MCMCSummary:
    """The chains of an ensemble sampler (laddu's ``MCMCSummary``).

    Attributes
    ----------
    chain : numpy.ndarray
        ``(n_walkers, n_kept, n_parameters)``; entry 0 is the starting ensemble.
    evals : EvalCounts
        Log-density evaluations (``f``; the starting ensemble counts; a point outside the
        parameter bounds counts though it is not evaluated).
    message : StatusMessage
        Why the run stopped (``"Maximum number of steps reached (N)"``, ...).
    parameter_names : list of str or None
        The order of the last axis (``None`` when ``use_parameter_metadata=False`` and the
        config names none, as laddu's).
    log_density : numpy.ndarray
        ``(n_walkers, n_kept)``: ``-NLL / 2`` at each kept position.
    acceptance_fraction : numpy.ndarray
        Per walker, the fraction of steps in which it moved.
    rounds : int
        Evaluation rounds of the likelihood (one :meth:`~laddu_dask.Likelihood.values` call
        for all the walkers a round asks about).
    steps : int
        Steps run (kept or not).
    kept_steps : numpy.ndarray
        The step of each chain entry (0 for the start).
    """

    chain: np.ndarray
    evals: EvalCounts
    message: StatusMessage
    parameter_names: list[str] | None
    log_density: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))
    acceptance_fraction: np.ndarray = field(default_factory=lambda: np.empty(0))
    rounds: int = 0
    steps: int = 0
    kept_steps: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))

    @property
    def dimension(self) -> tuple[int, int, int]:
        """``(n_walkers, n_kept, n_parameters)``, as laddu's."""
        return tuple(int(n) for n in self.chain.shape)

    def flat(self, discard: int = 0, thin: int = 1) -> np.ndarray:
        """Entries ``discard, discard + thin, ...`` of every walker as ``(n_samples,
        n_parameters)`` rows, walker by walker: the draws of ``Ensemble.from_mcmc(self,
        discard=discard, thin=thin)``. ``discard`` counts the starting entry."""
        return kept_entries(self.chain, discard, thin).reshape(-1, self.chain.shape[2])

    def autocorrelation(self, discard: int = 0) -> np.ndarray:
        """emcee's integrated autocorrelation time of each parameter, in kept entries, after
        ``discard`` entries (walkers' autocorrelations averaged; no error for a short chain)."""
        import emcee  # here, not at import: emcee imports scipy.stats (seconds at a cold start)

        return emcee.autocorr.integrated_time(np.swapaxes(kept_entries(self.chain, discard, 1), 0, 1), tol=0)

    def mean(self, discard: int = 0, thin: int = 1) -> np.ndarray:
        """The sample mean of each parameter (see :meth:`flat`)."""
        return self.flat(discard, thin).mean(axis=0)

    def covariance(self, discard: int = 0, thin: int = 1) -> np.ndarray:
        """The sample covariance matrix (see :meth:`flat`)."""
        return np.atleast_2d(np.cov(self.flat(discard, thin), rowvar=False))

    def mean_error(self, discard: int = 0) -> np.ndarray:
        """Monte Carlo standard error of :meth:`mean`: ``sigma sqrt(tau / samples)``."""
        samples = self.flat(discard)
        tau = np.maximum(self.autocorrelation(discard), 1.0)
        return np.sqrt(np.diag(self.covariance(discard)) * tau / len(samples))

    def __str__(self) -> str:
        walkers, kept, variables = self.dimension
        rows = [("Status", "Complete" if self.message.success else "Incomplete"), ("Walkers", walkers),
                ("Retained steps", kept), ("Variables", variables), ("Message", str(self.message)),
                ("Density evaluations", self.evals.f), ("Retained samples", walkers * kept)]
        width = max(len(k) for k, _ in rows)
        return "MCMC SUMMARY\n" + "\n".join(f"  {k:<{width}}  {v}" for k, v in rows)
