"""Likelihoods with laddu's conventions, and fits.

Examples
--------
>>> from laddu_dask.likelihood import NLL, ExtendedNLL, Likelihood, FitResult
"""

from laddu_dask.likelihood import events  # noqa: F401 - installs Model.evaluate
from laddu_dask.likelihood.ensemble import Ensemble
from laddu_dask.likelihood.fit import FitResult, fit
from laddu_dask.likelihood.likelihood import Likelihood
from laddu_dask.likelihood.penalties import LassoPenalty, RidgePenalty
from laddu_dask.likelihood.terms import NLL, ExtendedNLL

__all__ = ["NLL", "Ensemble", "ExtendedNLL", "FitResult", "LassoPenalty", "Likelihood", "RidgePenalty", "fit"]
