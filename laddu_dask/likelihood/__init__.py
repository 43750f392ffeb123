"""Likelihoods with laddu's conventions, and fits.

These are the likelihood layer's classes; the public ``ld.NLL``, ``ld.ExtendedNLL``,
``ld.Likelihood`` and ``ld.Model`` are their subclasses assembled in
:mod:`laddu_dask.facade` with the methods of the layers above. Importing this package
changes no class of another one.

Examples
--------
>>> from laddu_dask.likelihood import NLL, ExtendedNLL, Likelihood, FitResult
"""

from laddu_dask.likelihood.ensemble import Ensemble
from laddu_dask.likelihood.fit import FitResult, fit
from laddu_dask.likelihood.likelihood import Likelihood
from laddu_dask.likelihood.penalties import LassoPenalty, RidgePenalty
from laddu_dask.likelihood.terms import NLL, ExtendedNLL

__all__ = ["NLL", "Ensemble", "ExtendedNLL", "FitResult", "LassoPenalty", "Likelihood", "RidgePenalty", "fit"]
