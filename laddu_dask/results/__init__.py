"""Physics results from models and fitted likelihoods: projections, intensity integrals,
fit fractions, yields and cross sections with propagated uncertainties (binned on
:class:`Axis` grids too, with their rate closure and combinations of periods), projection plots
(:func:`projection_histograms`, :func:`plot_projection`), Monte Carlo generation
(:class:`Generator`, :class:`ProvenEnvelopeReport`) and closure studies (:func:`closure_study`).

This package sits above the likelihood and analysis layers (DESIGN.md) and may import
them; nothing below imports it. It gives :class:`~laddu_dask.Likelihood` laddu's
``projection``, ``intensity_integrals``, ``yield_context`` and ``cross_section`` methods
(and ``fit_fractions``, ``project``) by registering them when it is imported, which
``import laddu_dask`` does; likewise :class:`~laddu_dask.Channel` laddu's ``validate_generation``.

Examples
--------
>>> import laddu_dask as ld
>>> callable(ld.Likelihood.projection), ld.Yield.__module__, ld.Generator.__module__
(True, 'laddu_dask.results.yields', 'laddu_dask.results.generation')
"""

from laddu_dask.expr.topology import Channel
from laddu_dask.likelihood.likelihood import register_method
from laddu_dask.results.binned import Axis, BinnedEstimate, YieldHistogramView
from laddu_dask.results.closure import ClosureResult, closure_study
from laddu_dask.results.combination import CrossSectionProjection
from laddu_dask.results.envelope import ProvenEnvelopeReport
from laddu_dask.results.estimate import Estimate, ScalarErrorView
from laddu_dask.results.fractions import FitFractions, fit_fractions
from laddu_dask.results.generation import Generator
from laddu_dask.results.histograms import ProjectionHistograms, projection_histograms
from laddu_dask.results.integrals import (
    IntensityIntegrals,
    LikelihoodProjection,
    intensity_integrals,
    project,
    projection,
)
from laddu_dask.results.luminosity import AreaUnit, Luminosity
from laddu_dask.results.phase_space import PhaseSpacePlan, validate_generation
from laddu_dask.results.plot import plot_projection
from laddu_dask.results.rate_closure import RateClosure
from laddu_dask.results.report import GenerationReport
from laddu_dask.results.yield_projection import ComponentYieldProjection, YieldProjection
from laddu_dask.results.yields import CrossSection, Yield, cross_section, yield_context

register_method("project", project)
register_method("projection", projection)
register_method("intensity_integrals", intensity_integrals)
register_method("yield_context", yield_context)
register_method("cross_section", cross_section)
register_method("fit_fractions", fit_fractions)
Channel.validate_generation = validate_generation  # laddu's method; generation plans live here

__all__ = ["AreaUnit", "Axis", "BinnedEstimate", "ClosureResult", "ComponentYieldProjection", "CrossSection",
           "CrossSectionProjection", "Estimate", "FitFractions", "GenerationReport", "Generator",
           "IntensityIntegrals", "LikelihoodProjection", "Luminosity", "PhaseSpacePlan",
           "ProjectionHistograms", "ProvenEnvelopeReport", "RateClosure", "ScalarErrorView", "Yield",
           "YieldHistogramView", "YieldProjection", "closure_study", "cross_section", "fit_fractions",
           "intensity_integrals", "plot_projection", "project", "projection", "projection_histograms",
           "yield_context"]
