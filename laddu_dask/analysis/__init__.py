"""Many fits and evaluations as one analysis: restarts, bootstrap refits, binned
(mass-independent) fits, and MCMC.

The analysis layer sits above the likelihood layer (DESIGN.md). Its functions take a
likelihood (``fit_restarts(likelihood, ...)``); the public ``ld.Likelihood`` has them as
laddu's methods ``fit_restarts``, ``bootstrap_fit``, ``sample`` and ``walker_positions``
because :mod:`laddu_dask.facade` assembles it so. Importing this package changes no class.

Examples
--------
>>> import laddu_dask as ld
>>> from laddu_dask.analysis import fit_bins
>>> callable(ld.Likelihood.fit_restarts), fit_bins.__module__
(True, 'laddu_dask.analysis.binned')
"""

from laddu_dask.analysis.binned import BinFit, binned_likelihoods, fit_bins
from laddu_dask.analysis.ensembles import FitEnsemble, failed_fit
from laddu_dask.analysis.mcmc import sample, walker_positions
from laddu_dask.analysis.replicas import replica_seeds
from laddu_dask.analysis.restarts import bootstrap_fit, fit_restarts
from laddu_dask.likelihood.ganesh.mcmc_summary import MCMCSummary

__all__ = ["BinFit", "FitEnsemble", "MCMCSummary", "binned_likelihoods", "bootstrap_fit", "failed_fit",
           "fit_bins", "fit_restarts", "replica_seeds", "sample", "walker_positions"]
