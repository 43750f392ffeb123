"""The public ``Likelihood``, ``NLL`` and ``ExtendedNLL``: the likelihood layer's classes
with the methods of the analysis and results layers (see :mod:`laddu_dask.facade`).

Each method added here is one call of the function of its layer with the likelihood
first: ``lik.fit_restarts(...)`` is :func:`laddu_dask.analysis.fit_restarts`,
``lik.projection(...)`` is :func:`laddu_dask.results.projection`, and so on.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> events = ld.Dataset.from_arrays(scalars={"x": np.linspace(0.1, 1.0, 20)})
>>> nll = ld.NLL(ld.parameter("a", initial=1.0) * ld.scalar("x") + 1.0, data=events, accepted_mc=events)
>>> lik = nll + ld.ExtendedNLL(nll.model, data=events, accepted_mc=events, name="ext")
>>> type(lik) is Likelihood, lik.project([1.0], "nll").shape
(True, (20,))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask.analysis.mcmc import sample, walker_positions
from laddu_dask.analysis.restarts import bootstrap_fit, fit_restarts
from laddu_dask.compile.layout import ParameterValues
from laddu_dask.facade.models import Model
from laddu_dask.likelihood.likelihood import Likelihood as _Likelihood
from laddu_dask.likelihood.terms import NLL as _NLL
from laddu_dask.likelihood.terms import ExtendedNLL as _ExtendedNLL
from laddu_dask.results.fractions import fit_fractions
from laddu_dask.results.integrals import intensity_integrals, project, projection
from laddu_dask.results.yields import cross_section, yield_context

__all__ = ["NLL", "ExtendedNLL", "Likelihood"]


class Likelihood(_Likelihood):
    __doc__ = _Likelihood.__doc__

    def fit_restarts(self, restarts: int, initial: ParameterValues | None = None, *, config: Any = None,
                     seed: int = 0, terminators: Sequence[Any] = (), observers: Sequence[Any] = (),
                     default_callbacks: bool = True, use_parameter_metadata: bool = True,
                     **options: Any) -> Any:
        """``restarts`` fits, the first from ``initial`` when given, the others from
        reproducible sampled starts (laddu's ``fit_restarts``): a list of
        :class:`~laddu_dask.likelihood.FitResult` (a :class:`~laddu_dask.analysis.FitEnsemble`,
        which is a ``list``). See :func:`laddu_dask.analysis.fit_restarts`."""
        return fit_restarts(self, restarts, initial, config=config, seed=seed,
                            terminators=terminators, observers=observers,
                            default_callbacks=default_callbacks,
                            use_parameter_metadata=use_parameter_metadata, **options)

    def bootstrap_fit(self, samples: int, initial: ParameterValues | None = None, *, config: Any = None,
                      seed: int = 0, terminators: Sequence[Any] = (), observers: Sequence[Any] = (),
                      default_callbacks: bool = True, use_parameter_metadata: bool = True,
                      **options: Any) -> Any:
        """Refits of ``samples`` Poisson-bootstrap replicas of the data (laddu's
        ``bootstrap_fit``); returns an :class:`~laddu_dask.Ensemble`. See
        :func:`laddu_dask.analysis.bootstrap_fit`."""
        return bootstrap_fit(self, samples, initial, config=config, seed=seed,
                             terminators=terminators, observers=observers,
                             default_callbacks=default_callbacks,
                             use_parameter_metadata=use_parameter_metadata, **options)

    def sample(self, init: Any, *, config: Any = None, seed: int = 0, terminators: Sequence[Any] = (),
               observers: Sequence[Any] = (), default_callbacks: bool = True,
               use_parameter_metadata: bool = True) -> Any:
        """MCMC of ``exp(-NLL / 2)`` with laddu's AIES or ensemble slice sampler (laddu's
        ``Likelihood.sample``), the walkers' proposals one :meth:`values` round; returns a
        ``ganesh.MCMCSummary``. See :func:`laddu_dask.analysis.sample`."""
        return sample(self, init, config=config, seed=seed, terminators=terminators,
                      observers=observers, default_callbacks=default_callbacks,
                      use_parameter_metadata=use_parameter_metadata)

    def walker_positions(self, center: Any, n_walkers: int, **options: Any) -> Any:
        """Starting walkers around ``center`` (laddu's ``walker_positions``). See
        :func:`laddu_dask.analysis.walker_positions`."""
        return walker_positions(self, center, n_walkers, **options)

    def project(self, params: ParameterValues, term: str | None = None) -> np.ndarray:
        """Accepted-MC weights ``w I`` at ``params``, scaled to the data (for plots).

        See :func:`laddu_dask.results.integrals.project`.
        """
        return project(self, params, term)

    def projection(self, term_name: str, *, generated_mc: Any = None,
                   tags: Sequence[str] | None = None) -> Any:
        """Per-event weights of a (tagged) projection of a term (laddu's ``projection``).
        See :func:`laddu_dask.results.projection`."""
        return projection(self, term_name, generated_mc=generated_mc, tags=tags)

    def intensity_integrals(self, term_name: str, *, generated_mc: Any = None,
                            tags: Sequence[str] | None = None) -> Any:
        """Accepted and generated intensity integrals of a term (laddu's
        ``intensity_integrals``). See :func:`laddu_dask.results.intensity_integrals`."""
        return intensity_integrals(self, term_name, generated_mc=generated_mc, tags=tags)

    def yield_context(self, term_name: str, *, generated_mc: Any, parameters: ParameterValues,
                      ensemble: Any = None, covariance: Any = None, tags: Sequence[str] | None = None) -> Any:
        """Observed and fitted yields of a term (laddu's ``yield_context``). See
        :func:`laddu_dask.results.yield_context`."""
        return yield_context(self, term_name, generated_mc=generated_mc, parameters=parameters,
                             ensemble=ensemble, covariance=covariance, tags=tags)

    def cross_section(self, term_name: str, generated_mc: Any, luminosity: Any, parameters: ParameterValues,
                      *, ensemble: Any = None, covariance: Any = None, tags: Sequence[str] | None = None,
                      projections: Any = None, components: Any = None) -> Any:
        """The fitted cross section of an extended term (laddu's ``cross_section``). See
        :func:`laddu_dask.results.cross_section`."""
        return cross_section(self, term_name, generated_mc, luminosity, parameters,
                             ensemble=ensemble, covariance=covariance, tags=tags,
                             projections=projections, components=components)

    def fit_fractions(self, term_name: str, parameters: ParameterValues, *,
                      waves: Sequence[str] | None = None, generated_mc: Any = None,
                      ensemble: Any = None, covariance: Any = None) -> Any:
        """Fit fractions and interference terms of the tagged waves of a term. See
        :func:`laddu_dask.results.fit_fractions`."""
        return fit_fractions(self, term_name, parameters, waves=waves, generated_mc=generated_mc,
                             ensemble=ensemble, covariance=covariance)


class NLL(_NLL):
    __doc__ = _NLL.__doc__
    model_class = Model
    likelihood_class = Likelihood


class ExtendedNLL(_ExtendedNLL):
    __doc__ = _ExtendedNLL.__doc__
    model_class = Model
    likelihood_class = Likelihood
