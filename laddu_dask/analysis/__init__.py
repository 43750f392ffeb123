"""Many fits and evaluations as one analysis: restarts, bootstrap refits, binned
(mass-independent) fits, and MCMC.

The analysis layer sits above the likelihood layer (DESIGN.md). It gives
:class:`~laddu_dask.Likelihood` laddu's ``fit_restarts``, ``bootstrap_fit`` and ``sample``
(and ``walker_positions``) methods by
registering them (:func:`laddu_dask.likelihood.likelihood.register_method`) when it is
imported, which ``import laddu_dask`` does; the likelihood layer never imports it.

Examples
--------
>>> import laddu_dask as ld
>>> callable(ld.Likelihood.fit_restarts), ld.fit_bins.__module__
(True, 'laddu_dask.analysis.binned')
"""

from laddu_dask.analysis.binned import BinFit, binned_likelihoods, fit_bins
from laddu_dask.analysis.ensembles import FitEnsemble, failed_fit
from laddu_dask.analysis.mcmc import sample, walker_positions
from laddu_dask.analysis.replicas import replica_seeds
from laddu_dask.analysis.restarts import bootstrap_fit, fit_restarts
from laddu_dask.likelihood.ganesh.mcmc_summary import MCMCSummary
from laddu_dask.likelihood.likelihood import register_method

register_method("fit_restarts", fit_restarts)
register_method("bootstrap_fit", bootstrap_fit)
register_method("sample", sample)
register_method("walker_positions", walker_positions)

__all__ = ["BinFit", "FitEnsemble", "MCMCSummary", "binned_likelihoods", "bootstrap_fit", "failed_fit",
           "fit_bins", "fit_restarts", "replica_seeds", "sample", "walker_positions"]
