"""laddu's ``AutocorrelationTerminator``: stop an MCMC run once the chain is many
integrated autocorrelation times long and that time has settled.

Every ``n_check`` steps (counted from 0, the first step, as laddu's callbacks count) it
drops the first ``discard`` fraction of the kept chain, estimates each parameter's
integrated autocorrelation time ``tau`` with emcee (the walkers' autocorrelation functions
averaged, Sokal's window ``c = sokal_window``, 7 by default as laddu's), averages it over
the parameters, and stops the run when ``tau * n_taus_threshold < step`` and ``tau`` moved
by less than ``dtau_threshold`` (relative) since the previous check.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.likelihood.ganesh.autocorrelation import AutocorrelationTerminator
>>> chain = np.random.default_rng(1).normal(size=(8, 400, 1))  # independent draws: tau ~ 1
>>> t = AutocorrelationTerminator(n_check=100, n_taus_threshold=300, dtau_threshold=0.2)
>>> [t.check(step, lambda: chain[:, : step + 2]) for step in (99, 100, 200, 300)]  # 300 tau < 300 steps
[False, False, False, True]
>>> [round(tau, 2) for tau in t.taus]
[0.8, 0.76, 0.88]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from laddu_dask.likelihood.ganesh.mcmc_configs import setting, whole


class AutocorrelationTerminator:
    """Stops a sampler when its chain is long against its autocorrelation time (laddu's).

    Parameters
    ----------
    n_check : int
        Check every ``n_check`` steps.
    n_taus_threshold : int
        The chain must be longer than this many autocorrelation times.
    dtau_threshold : float
        The most relative change of ``tau`` between two checks.
    discard : float
        The fraction of the current step count dropped from the chain's start as burn-in.
    terminate : bool
        ``False`` records :attr:`taus` without stopping the run.
    sokal_window : float, optional
        Sokal's window constant ``c`` (default 7).
    verbose : bool
        Print ``tau`` and the verdict at each check.

    Attributes
    ----------
    taus : list of float
        The mean ``tau`` at each check of the latest run.
    """

    def __init__(self, *, n_check: int = 50, n_taus_threshold: int = 50, dtau_threshold: float = 0.01,
                 discard: float = 0.5, terminate: bool = True, sokal_window: float | None = None,
                 verbose: bool = False) -> None:
        self.n_check = whole(n_check, "AutocorrelationTerminator n_check", minimum=1)
        self.n_taus_threshold = whole(n_taus_threshold, "AutocorrelationTerminator n_taus_threshold",
                                        minimum=0)
        self.dtau_threshold = setting(dtau_threshold, "AutocorrelationTerminator dtau_threshold", minimum=0.0)
        self.discard = setting(discard, "AutocorrelationTerminator discard", minimum=0.0, maximum=1.0)
        self.terminate = bool(terminate)
        self.sokal_window = 7.0 if sokal_window is None else setting(
            sokal_window, "AutocorrelationTerminator sokal_window", above=0.0)
        self.verbose = bool(verbose)
        self.taus: list[float] = []

    def reset(self) -> None:
        """Forget the previous run's checks (``Likelihood.sample`` calls it at the start)."""
        self.taus = []

    def check(self, step: int, chain: Callable[[], np.ndarray]) -> bool:
        """Whether to stop after step ``step`` (0 is the first); ``chain()`` gives the kept
        chain ``(n_walkers, n_kept, n_parameters)``, asked for only at a check."""
        if step % self.n_check:
            return False
        whole = chain()
        kept = whole[:, min(int(step * self.discard), whole.shape[1]):]
        if kept.shape[1] < 2:
            return False
        import emcee  # here, not at import: emcee imports scipy.stats (seconds at a cold start)

        with np.errstate(invalid="ignore", divide="ignore"):
            taus = emcee.autocorr.integrated_time(np.swapaxes(kept, 0, 1), c=self.sokal_window, tol=0)
        tau = float(np.mean(taus))
        dtau = abs(self.taus[-1] - tau) / tau if self.taus else float("nan")
        converged = tau * self.n_taus_threshold < step and dtau < self.dtau_threshold
        self.taus.append(tau)
        if self.verbose:
            print(f"Integrated autocorrelation: tau = {np.asarray(taus).tolist()}, "
                  f"minimum steps to converge = {int(tau * self.n_taus_threshold)}, "
                  f"steps completed = {step}, dtau/tau = {dtau} "
                  f"(converges if < {self.dtau_threshold}), converged: {converged}")
        return converged and self.terminate

    def __repr__(self) -> str:
        return (f"AutocorrelationTerminator(n_check={self.n_check}, "
                f"n_taus_threshold={self.n_taus_threshold}, dtau_threshold={self.dtau_threshold}, "
                f"discard={self.discard}, terminate={self.terminate})")
