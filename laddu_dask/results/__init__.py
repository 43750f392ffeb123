"""Physics results from models and fitted likelihoods: projections, intensity integrals,
fit fractions, yields and cross sections with propagated uncertainties (binned on
:class:`Axis` grids too, with their rate closure and combinations of periods), projection plots
(:func:`projection_histograms`, :func:`plot_projection`) and closure studies
(:func:`closure_study`, on the Monte Carlo generation of :mod:`laddu_dask.generation`).

This package sits above the likelihood and analysis layers (DESIGN.md) and may import
them; nothing below imports it. Its functions take a likelihood (``projection(likelihood,
...)``); the public ``ld.Likelihood`` has them as laddu's methods ``projection``,
``intensity_integrals``, ``yield_context``, ``cross_section`` (and ``fit_fractions``,
``project``), because :mod:`laddu_dask.facade` assembles them so. Importing this package
changes no class.

Examples
--------
>>> import laddu_dask as ld
>>> callable(ld.Likelihood.projection), ld.Yield.__module__
(True, 'laddu_dask.results.yields')
"""

from laddu_dask.results.binned import Axis, BinnedEstimate, YieldHistogramView
from laddu_dask.results.closure import ClosureResult, closure_study
from laddu_dask.results.combination import CrossSectionProjection
from laddu_dask.results.estimate import Estimate, ScalarErrorView
from laddu_dask.results.fractions import FitFractions, fit_fractions
from laddu_dask.results.histograms import ProjectionHistograms, projection_histograms
from laddu_dask.results.integrals import (
    IntensityIntegrals,
    LikelihoodProjection,
    intensity_integrals,
    project,
    projection,
)
from laddu_dask.results.luminosity import AreaUnit, Luminosity
from laddu_dask.results.plot import plot_projection
from laddu_dask.results.rate_closure import RateClosure
from laddu_dask.results.yield_projection import ComponentYieldProjection, YieldProjection
from laddu_dask.results.yields import CrossSection, Yield, cross_section, yield_context

__all__ = ["AreaUnit", "Axis", "BinnedEstimate", "ClosureResult", "ComponentYieldProjection", "CrossSection",
           "CrossSectionProjection", "Estimate", "FitFractions",
           "IntensityIntegrals", "LikelihoodProjection", "Luminosity",
           "ProjectionHistograms", "RateClosure", "ScalarErrorView", "Yield",
           "YieldHistogramView", "YieldProjection", "closure_study", "cross_section", "fit_fractions",
           "intensity_integrals", "plot_projection", "project", "projection", "projection_histograms",
           "yield_context"]
