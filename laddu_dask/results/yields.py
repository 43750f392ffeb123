"""Yields and cross sections of a fitted term, with uncertainties (laddu's ``Yield`` and
``CrossSection``).

For an extended term (:class:`~laddu_dask.ExtendedNLL`, whose intensity is an absolute
rate) at fitted parameters ``p``:

``selected_yield``          ``N = sum_data w`` (error ``sqrt(sum_data w^2)``)
``accepted_fitted_yield``   ``sum_accmc w I(p)``: the events the model predicts after the detector
``generated_fitted_yield``  ``sum_genmc w I(p)``: the acceptance-corrected (produced) yield
``acceptance``              ``accepted / generated`` fitted yield
``corrected_yield``         ``N / acceptance``: the observed yield corrected for acceptance

and a cross section is a yield divided by the integrated luminosity:
``CrossSection.total = generated_fitted_yield / L`` (the fitted cross section, laddu's
``total``), ``CrossSection.observed = corrected_yield / L``.  Every value is an
:class:`Estimate` whose sources are the Monte Carlo samples' finite size
(``sqrt(sum (w I)^2)``), the data's, the fit covariance propagated through the exact
gradient of the integrals (``covariance=``), the luminosity's relative uncertainty, and,
with ``ensemble=``, the spread over the ensemble's draws (all draws evaluated in one
round).

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> model = ld.Model(ld.parameter("a", initial=1.0) * (x * x + 1.0))
>>> data = ld.Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0])})
>>> mc = ld.Dataset.from_arrays(scalars={"x": np.array([0.0, 1.0])})
>>> gen = ld.Dataset.from_arrays(scalars={"x": np.array([0.0, 0.5, 1.0, 2.0])})
>>> lik = ld.Likelihood([ld.ExtendedNLL(model, data=data, accepted_mc=mc, name="t")])
>>> y = lik.yield_context("t", generated_mc=gen, parameters=[2.0])
>>> y.selected_yield().central, y.accepted_fitted_yield().central, y.generated_fitted_yield().central
(2.0, 6.0, 18.5)
>>> xs = lik.cross_section("t", gen, ld.Luminosity(2.0, ld.AreaUnit.PICOBARN), [2.0])
>>> xs.total.central, xs.unit
(9.25, AreaUnit.PICOBARN)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from laddu_dask.compile.layout import ParameterValues
from laddu_dask.data.dataset import Dataset
from laddu_dask.errors import ModelError, NonFiniteError, ParameterError
from laddu_dask.likelihood.terms import ExtendedNLL
from laddu_dask.results.binned import Axis, Linear, axis_group
from laddu_dask.results.combination import (
    CrossSectionProjection,
    as_factor,
    check_factor_covariance,
    pool_scalar,
)
from laddu_dask.results.estimate import Estimate, sample_id
from laddu_dask.results.events import weight_square_sum
from laddu_dask.results.fitted_integrals import Integrals
from laddu_dask.results.integrals import Selection
from laddu_dask.results.luminosity import Luminosity
from laddu_dask.results.rate_closure import RateClosure
from laddu_dask.results.yield_projection import YieldProjection, project_yields


def _extended(selection: Selection) -> None:
    if not isinstance(selection.term, ExtendedNLL):
        raise ModelError(f"likelihood term does not determine an absolute rate: {selection.name!r} is "
                         f"an {type(selection.term).__name__}; yields and cross sections need an ExtendedNLL")


class Yield:
    """Observed and fitted yields of one term (laddu's ``Yield``; build it with
    :meth:`Likelihood.yield_context`).  See the module docstring for the definitions."""

    def __init__(self, likelihood: Any, term_name: str, *, generated_mc: Dataset, parameters: ParameterValues,
                 ensemble: Any = None, covariance: Any = None, tags: Sequence[str] | None = None) -> None:
        if generated_mc is None:
            raise ModelError("yield_context needs generated_mc= (the generated Monte Carlo)")
        self._selection = Selection(likelihood, term_name, tags, generated_mc)
        self._ints = Integrals(likelihood, [(self._selection, "accepted"), (self._selection, "generated")],
                               parameters, covariance, ensemble)
        self._fills: dict[str, float] = {}
        term = self._selection.term
        self._ids = {"data_fill": sample_id(term.data), "accepted_mc_fill": sample_id(term.accepted_mc),
                     "generated_mc_fill": sample_id(generated_mc)}

    @property
    def term_name(self) -> str:
        """The term."""
        return self._selection.name

    @property
    def parameters(self) -> list[float]:
        """The fitted point, in the likelihood's order."""
        return self._ints.parameters.tolist()

    @property
    def has_absolute_rate(self) -> bool:
        """Whether the term is extended (its intensity is a rate)."""
        return isinstance(self._selection.term, ExtendedNLL)

    def _fill(self, role: str) -> float:
        """The statistical error of the ``role`` sample's sum, ``sqrt(sum (w I)^2)``."""
        if role == "accepted":
            square = float(self._ints.squares[0])
        elif role == "generated":
            square = float(self._ints.squares[1])
        else:
            if role not in self._fills:
                sel = self._selection
                self._fills[role] = weight_square_sum(sel.execution, sel.term.data)
            square = self._fills[role]
        if not math.isfinite(square):
            what = "w^2" if role == "data" else "(w I)^2"
            raise NonFiniteError(f"the sum of {what} over the {role} sample of term {self.term_name!r} is "
                                 f"{square!r} (it overflows float64), so its statistical error is not finite")
        return math.sqrt(square)

    def selected_yield(self) -> Estimate:
        """``sum_data w``, with the data's statistical error ``sqrt(sum w^2)`` (the same at
        every draw of an ensemble: the draws are parameter points)."""
        n = self._selection.term.data.sum_weights()
        draws = None if self._ints.draws is None else np.full(len(self._ints.draws), n)
        return Estimate(n, draws=draws, source_id=self._ints.source_id,
                        components={"data_fill": self._fill("data")}, fill_ids=self._ids)

    def accepted_fitted_yield(self) -> Estimate:
        """``sum_accmc w I`` at the fitted point."""
        _extended(self._selection)
        return self._ints.estimate(lambda v: v[0], lambda v: np.array([1.0, 0.0]),
                                   lambda: {"accepted_mc_fill": self._fill("accepted")}, "accepted yield",
                                   self._ids)

    def generated_fitted_yield(self) -> Estimate:
        """``sum_genmc w I`` at the fitted point: the acceptance-corrected fitted yield."""
        _extended(self._selection)
        return self._ints.estimate(lambda v: v[1], lambda v: np.array([0.0, 1.0]),
                                   lambda: {"generated_mc_fill": self._fill("generated")}, "generated yield",
                                   self._ids)

    def acceptance(self) -> Estimate:
        """The fitted acceptance ``sum_accmc w I / sum_genmc w I``."""
        return self._ints.estimate(lambda v: v[0] / v[1], lambda v: np.array([1 / v[1], -v[0] / v[1] ** 2]),
                                   None, "acceptance", self._ids)

    def corrected_yield(self) -> Estimate:
        """The observed yield corrected for the fitted acceptance, ``N sum_genmc w I / sum_accmc w I``."""
        n = self._selection.term.data.sum_weights()
        return self._ints.estimate(lambda v: n * v[1] / v[0],
                                   lambda v: np.array([-n * v[1] / v[0] ** 2, n / v[0]]),
                                   lambda: {"data_fill": self._fill("data") * self._ints.values[1]
                                            / self._ints.values[0]},
                                   "corrected yield", self._ids)

    def rate_closure(self) -> RateClosure:
        """Whether the accepted fitted yield reproduces the observed one (laddu's
        ``Yield.rate_closure``; ``"not_applicable"`` for a shape-only term)."""
        if not self.has_absolute_rate:
            return RateClosure(self.selected_yield(), None, None)
        return RateClosure(self.selected_yield(), self.accepted_fitted_yield(), self.generated_fitted_yield())

    def projection(self, axes: Axis | Sequence[Axis], *,
                   components: Mapping[str, Sequence[str]] | None = None) -> YieldProjection:
        """Binned selected, accepted and generated yields on the joint grid of ``axes``, and
        those of named coherent tag selections (laddu's ``Yield.projection``; see
        :mod:`laddu_dask.results.yield_projection`).

        Raises
        ------
        ModelError
            For a bad axis group or component (an unknown tag).
        """
        return project_yields(self, {"yield": axis_group(axes)}, components)["yield"]

    def projection_set(self, projections: Mapping[str, Axis | Sequence[Axis]], *,
                       components: Mapping[str, Sequence[str]] | None = None) -> dict[str, YieldProjection]:
        """Several named projections from one pass over the samples (laddu's
        ``Yield.projection_set``)."""
        return project_yields(self, projections, components)

    def _generated_linear(self) -> Linear | None:
        ints = self._ints
        if ints.covariance is None:
            return None
        return Linear(ints.gradients[1:2], ints.covariance, tuple(ints.likelihood.parameter_names))

    def __repr__(self) -> str:
        return f"Yield({self.term_name!r}, observed {self.selected_yield().central:.6g})"


class CrossSection:
    """The cross section of an extended term (laddu's ``CrossSection``; build it with
    :meth:`Likelihood.cross_section`): ``total`` is the fitted generated yield over the
    luminosity, ``observed`` the acceptance-corrected observed yield over it."""

    def __init__(self, likelihood: Any, term_name: str, generated_mc: Dataset, luminosity: Luminosity,
                 parameters: ParameterValues, *, ensemble: Any = None, covariance: Any = None,
                 tags: Sequence[str] | None = None, projections: Mapping[str, Any] | None = None,
                 components: Mapping[str, Sequence[str]] | None = None) -> None:
        if not isinstance(luminosity, Luminosity):
            raise ParameterError(f"luminosity must be a Luminosity, got {type(luminosity).__name__}")
        self._yield: Yield | None = Yield(likelihood, term_name, generated_mc=generated_mc,
                                          parameters=parameters, ensemble=ensemble, covariance=covariance,
                                          tags=tags)
        _extended(self._yield._selection)
        self._luminosity = luminosity
        self._members: list[tuple[CrossSection, Estimate]] | None = None
        self._factor_covariance: np.ndarray | None = None
        self._pooled: Estimate | None = None
        self._prepared: tuple[Any, dict[str, CrossSectionProjection]] | None = None
        if projections is not None:
            if not isinstance(projections, Mapping):
                raise ModelError("projections= maps names to an Axis or a list of Axis objects")
            done = self.project(projections, components=components)
            self._prepared = (_request_key(projections, components), done)

    def _per_luminosity(self, e: Estimate) -> Estimate:
        lum = self._luminosity
        parts = {k: v / lum.value for k, v in e.components.items()}
        central = e.central / lum.value
        if lum.relative_uncertainty is not None:
            parts["luminosity"] = abs(central) * lum.relative_uncertainty
        draws = None if e.draws is None else e.draws / lum.value
        return Estimate(central, draws=draws, source_id=e.source_id, components=parts, fill_ids=e._ids)

    @property
    def total(self) -> Estimate:
        """The fitted cross section ``sum_genmc w I / L`` (pooled for a combination)."""
        if self._pooled is not None:
            return self._pooled
        return self._per_luminosity(self._yield.generated_fitted_yield())

    @property
    def observed(self) -> Estimate | None:
        """The observed cross section ``N sum_genmc w I / (sum_accmc w I L)`` (``None`` for a
        combination)."""
        return None if self._yield is None else self._per_luminosity(self._yield.corrected_yield())

    @property
    def accepted_integral(self) -> Estimate | None:
        """``sum_accmc w I`` at the fitted point (``None`` for a combination)."""
        return None if self._yield is None else self._yield.accepted_fitted_yield()

    @property
    def generated_integral(self) -> Estimate | None:
        """``sum_genmc w I`` at the fitted point (``None`` for a combination)."""
        return None if self._yield is None else self._yield.generated_fitted_yield()

    @property
    def data_yield(self) -> Estimate | None:
        """``sum_data w`` (``None`` for a combination)."""
        return None if self._yield is None else self._yield.selected_yield()

    @property
    def rate_closure(self) -> RateClosure | None:
        """The period's :class:`RateClosure` (``None`` for a combination)."""
        return None if self._yield is None else self._yield.rate_closure()

    @property
    def unit(self) -> Any:
        """The area unit (the luminosity's)."""
        return self._luminosity.unit

    @property
    def total_effective_exposure(self) -> float:
        """The luminosity, in inverse :attr:`unit` (``sum L_i B_i`` for a combination)."""
        if self._members is not None:
            return math.fsum(m._luminosity.value * f.central for m, f in self._members)
        return self._luminosity.value

    def project(self, axes: Any, *, components: Mapping[str, Sequence[str]] | None = None) -> Any:
        """The differential cross section on the joint grid of ``axes`` (an :class:`Axis` or
        a sequence of them), or a ``{name: axes}`` mapping of several from one pass: each
        bin's generated fitted yield over the luminosity and its volume, and that of each
        named component (laddu's ``CrossSection.project``).

        Raises
        ------
        ModelError
            For a bad axis group or component.
        """
        named = isinstance(axes, Mapping)
        requests = dict(axes) if named else {"cross_section": axis_group(axes)}
        if named and self._prepared is not None and self._prepared[0] == _request_key(requests, components):
            return dict(self._prepared[1])
        if self._members is None:
            out = {name: CrossSectionProjection.from_yield(p, self._luminosity)
                   for name, p in project_yields(self._yield, requests, components).items()}
        else:
            per_member = [(m.project(requests, components=components), m._luminosity, f)
                          for m, f in self._members]
            out = {name: CrossSectionProjection.pooled([(p[name], lum, f) for p, lum, f in per_member],
                                                       self._factor_covariance)
                   for name in requests}
        return out if named else out["cross_section"]

    @staticmethod
    def combine(members: Sequence[Any], *, factor_covariance: Any = None) -> CrossSection:
        """Pool periods (laddu's ``CrossSection.combine``): ``sum G_i / sum L_i B_i``, with
        ``members`` single-period cross sections or ``(cross section, factor)`` pairs, a
        factor (a number or an :class:`Estimate`) being a branching fraction or exposure
        factor; ``factor_covariance`` is the covariance between the factors, in member
        order.  Their uncertainty is the ``"branching_exposure"`` source.

        Raises
        ------
        ParameterError
            For no member, a combination as a member, members of different units, a
            factor that is not positive, a bad ``factor_covariance``, or members whose
            draws or fit covariances do not pair.
        """
        pairs = []
        for item in members:
            section, factor = (item, 1.0) if isinstance(item, CrossSection) else (
                tuple(item) if isinstance(item, (tuple, list)) and len(item) == 2 else (item, None))
            if not isinstance(section, CrossSection):
                raise ParameterError(f"CrossSection.combine takes cross sections or (cross section, factor) "
                                     f"pairs, got {type(section).__name__}")
            if section._members is not None:
                raise ParameterError("nested period combinations are not supported: combine single periods")
            pairs.append((section, as_factor(factor)))
        if not pairs:
            raise ParameterError("CrossSection.combine needs at least one period")
        if any(s.unit != pairs[0][0].unit for s, _ in pairs):
            raise ParameterError("combined periods must share one area unit (convert the luminosities)")
        out = object.__new__(CrossSection)
        out._yield, out._luminosity, out._members, out._prepared = None, pairs[0][0]._luminosity, pairs, None
        out._factor_covariance = check_factor_covariance([f for _, f in pairs], factor_covariance)
        out._pooled = pool_scalar([(s.generated_integral, s._luminosity, f) for s, f in pairs],
                                  out._factor_covariance, [s._yield._generated_linear() for s, _ in pairs])
        return out

    def __repr__(self) -> str:
        return f"CrossSection({self.total!r} {self.unit.name.lower()})"


def yield_context(likelihood: Any, term_name: str, *, generated_mc: Dataset, parameters: ParameterValues,
                  ensemble: Any = None, covariance: Any = None, tags: Sequence[str] | None = None) -> Yield:
    """laddu's ``Likelihood.yield_context``, plus ``covariance=`` (a fit result or matrix) and
    ``tags=`` (the fitted yields of those waves alone; the selected yield is the data's).

    Raises
    ------
    ModelError
        For an unknown term (and, when asked for a fitted yield, a term that is not extended).
    ParameterError
        For a covariance or ensemble that does not fit the likelihood's parameters.
    """
    return Yield(likelihood, term_name, generated_mc=generated_mc, parameters=parameters,
                 ensemble=ensemble, covariance=covariance, tags=tags)


def _request_key(requests: Mapping[str, Any], components: Mapping[str, Sequence[str]] | None) -> tuple:
    """What identifies a set of projections (expressions are hash-consed: one per structure,
    whose serial number no other expression of this process gets, unlike its id)."""
    def group(axes: Any) -> tuple:
        return tuple((a.expr.serial, tuple(a.edges)) for a in axis_group(axes))
    comps = tuple(sorted((k, tuple(sorted(set(v)))) for k, v in (components or {}).items()))
    return tuple((name, group(axes)) for name, axes in requests.items()), comps


def cross_section(likelihood: Any, term_name: str, generated_mc: Dataset, luminosity: Luminosity,
                  parameters: ParameterValues, *, ensemble: Any = None,
                  covariance: Any = None, tags: Sequence[str] | None = None,
                  projections: Mapping[str, Any] | None = None,
                  components: Mapping[str, Sequence[str]] | None = None) -> CrossSection:
    """laddu's ``Likelihood.cross_section``, plus ``covariance=`` and ``tags=`` (the cross
    section of those waves alone).  ``projections=`` (``{name: axes}``, with
    ``components=``) evaluates those differential cross sections with it, and a matching
    :meth:`CrossSection.project` returns them.

    Raises
    ------
    ModelError
        For an unknown term, or one that is not an ``ExtendedNLL``.
    ParameterError
        For a luminosity that is not a :class:`Luminosity`, a bad covariance or ensemble.
    """
    return CrossSection(likelihood, term_name, generated_mc, luminosity, parameters, ensemble=ensemble,
                        covariance=covariance, tags=tags, projections=projections, components=components)
