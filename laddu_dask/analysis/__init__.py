"""Analysis: many evaluations and fits of one likelihood (MCMC here).

Examples
--------
>>> from laddu_dask.analysis import MCMCSummary, sample, walker_positions
"""

from laddu_dask.analysis.mcmc import MCMCSummary, sample, walker_positions

__all__ = ["MCMCSummary", "sample", "walker_positions"]
