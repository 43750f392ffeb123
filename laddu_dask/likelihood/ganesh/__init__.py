"""laddu's ``ganesh`` namespace: minimizer and sampler configurations, terminators,
observers and summaries, run on well-kept libraries (SciPy, ``cma``, emcee) with the
likelihood's exact gradient.

The names, keywords and meanings are laddu 0.28.1's (``laddu.ganesh``); a script passes them
to :meth:`~laddu_dask.Likelihood.fit`, ``fit_restarts``, ``bootstrap_fit`` and ``sample``.

Examples
--------
>>> import laddu_dask as ld
>>> counts = ld.ganesh.EvalCounts(f=12, g=12)
>>> counts.f, counts.g, counts.h
(12, 12, 0)
"""

from laddu_dask.likelihood.ganesh.status import EvalCounts, StatusMessage, StatusSnapshot

__all__ = ["EvalCounts", "StatusMessage", "StatusSnapshot"]

# MCMC: the samplers' inits, moves, configs, chain storage, autocorrelation terminator and summary
from laddu_dask.likelihood.ganesh.autocorrelation import AutocorrelationTerminator  # noqa: E402
from laddu_dask.likelihood.ganesh.mcmc_configs import (  # noqa: E402
    AIESConfig,
    AIESInit,
    AIESMove,
    ChainStorage,
    ESSConfig,
    ESSInit,
    ESSMove,
)
from laddu_dask.likelihood.ganesh.mcmc_summary import MCMCSummary  # noqa: E402

__all__ += ["AIESConfig", "AIESInit", "AIESMove", "AutocorrelationTerminator", "ChainStorage", "ESSConfig",
            "ESSInit", "ESSMove", "MCMCSummary"]
