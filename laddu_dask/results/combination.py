"""Differential cross sections and the pooling of fitted periods (laddu's
``CrossSectionProjection`` and ``CrossSection.combine``).

A differential cross section divides each bin's generated fitted yield by the luminosity
and the bin's volume.  Several periods ``i`` (runs of one reaction, or decay channels of
one parent with branching fractions ``B_i`` as exposure factors) pool as

``sigma = sum_i G_i / sum_i L_i B_i``

(bin by bin for projections: ``sum_i L_i sigma_i / sum_i L_i B_i``), not as an average of
cross sections.  Each member's own error sources add in quadrature weighted by their
share; the factors' uncertainty (their standard errors, or a ``factor_covariance`` between
them) is the ``"branching_exposure"`` source, with derivative ``-N L_i / E^2``; the
luminosities' is ``"luminosity"``; draws pair position by position; and the fit
covariance of members evaluated at one fit propagates through the sum of their exact
gradients.

Examples
--------
>>> from laddu_dask.results.estimate import Estimate
>>> from laddu_dask.results.luminosity import AreaUnit, Luminosity
>>> lum = Luminosity(2.0, AreaUnit.PICOBARN)
>>> xs = pool_scalar([(Estimate(6.0), lum, Estimate(0.5)), (Estimate(2.0), lum, Estimate(1.5))], None, None)
>>> xs.central
2.0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask.errors import ParameterError
from laddu_dask.results.binned import BinnedEstimate, Linear
from laddu_dask.results.estimate import Estimate
from laddu_dask.results.luminosity import Luminosity
from laddu_dask.results.propagation import linear_sigma

Member = tuple[Any, Luminosity, Estimate]


def as_factor(factor: Any) -> Estimate:
    """An exposure factor (a number or an :class:`Estimate`), checked positive.

    Raises
    ------
    ParameterError
        For a factor that is not positive in its central value and every draw.
    """
    if isinstance(factor, (int, float, np.floating)) and not isinstance(factor, bool):
        factor = Estimate(float(factor))
    if not isinstance(factor, Estimate):
        raise ParameterError(f"an exposure factor is a number or an Estimate, got {type(factor).__name__}")
    draws = factor.draws
    if factor.central <= 0 or (draws is not None and (draws <= 0).any()):
        raise ParameterError("exposure factors must be positive in the central value and every draw, got "
                             f"{factor.central!r}")
    return factor


def check_factor_covariance(factors: Sequence[Estimate], covariance: Any) -> np.ndarray | None:
    """``factor_covariance`` as a matrix over the members, checked.

    Raises
    ------
    ParameterError
        For a matrix that is not square over the members, finite, symmetric and positive
        semi-definite, or one given beside factors with their own errors or draws.
    """
    if covariance is None:
        return None
    n = len(factors)
    matrix = np.asarray(covariance, dtype=np.float64)
    if matrix.shape != (n, n):
        raise ParameterError(f"factor_covariance must have one row and column per member ({n}), "
                             f"got shape {matrix.shape}")
    if any(f.standard_error is not None or f.draws is not None for f in factors):
        raise ParameterError("factor_covariance cannot accompany factors with their own errors or draws")
    scale = max(float(np.abs(matrix).max(initial=0.0)), np.finfo(float).tiny)
    if not np.isfinite(matrix).all() or np.abs(matrix - matrix.T).max(initial=0.0) > 1e-12 * scale:
        raise ParameterError("factor_covariance must be finite and symmetric")
    if np.linalg.eigvalsh(matrix).min() < -1e-12 * scale:
        raise ParameterError("factor_covariance must be positive semi-definite")
    return matrix


def common_linear(linears: Sequence[Linear | None]) -> tuple[np.ndarray, tuple[str, ...]] | None:
    """The fit covariance shared by every member (``None`` when none has one).

    Raises
    ------
    ParameterError
        When some members have a fit covariance and others none, or they differ.
    """
    given = [lin for lin in linears if lin is not None]
    if not given:
        return None
    first = given[0]
    if len(given) != len(linears) or any(lin.names != first.names or not np.array_equal(lin.covariance,
                                                                                         first.covariance)
                                         for lin in given):
        raise ParameterError("members combine their fit-covariance errors only when all were evaluated with "
                             "the same covariance= over the same parameters; pass it to every member or none")
    return first.covariance, first.names


def _exposures(members: Sequence[Member], draws: int) -> tuple[float, np.ndarray]:
    """``E = sum L_i B_i`` and its value at each draw of the factors."""
    exposure = sum(lum.value * f.central for _, lum, f in members)
    per_draw = np.array([sum(lum.value * (f.central if f.draws is None else f.draws[k])
                             for _, lum, f in members) for k in range(draws)])
    if not (np.isfinite(exposure) and exposure > 0 and np.isfinite(per_draw).all() and (per_draw > 0).all()):
        raise ParameterError("the total effective exposure must be finite and positive")
    return exposure, per_draw


def _draw_count(counts: Sequence[int]) -> int:
    k = max(counts, default=0)
    if any(c not in (0, k) for c in counts):
        raise ParameterError(f"combined members' draw counts do not match: {sorted(set(counts))}")
    return k


def _factor_variance(derivatives: np.ndarray, factors: Sequence[Estimate],
                     covariance: np.ndarray | None) -> Any:
    """The ``"branching_exposure"`` variance of derivatives ``(..., members)``."""
    if covariance is not None:
        return np.einsum("...i,ij,...j->...", derivatives, covariance, derivatives)
    se = np.array([f.standard_error or 0.0 for f in factors])
    return (derivatives**2) @ se**2


def _has_factor_errors(factors: Sequence[Estimate], covariance: np.ndarray | None) -> bool:
    return covariance is not None or any(f.standard_error is not None for f in factors)


def pool_scalar(members: Sequence[Member], covariance: np.ndarray | None,
                linears: Sequence[Linear | None] | None) -> Estimate:
    """The pooled cross section of members ``(G_i, L_i, B_i)`` (generated fitted yields,
    luminosities, factors); ``linears`` are the yields' gradients (one row each)."""
    factors = [f for _, _, f in members]
    k = _draw_count([len(x) for g, _, f in members for x in (g.draws, f.draws) if x is not None])
    exposure, per_draw = _exposures(members, k)
    numerator = sum(g.central for g, _, _ in members)
    draws = None
    if k:
        draws = np.array([sum(g.central if g.draws is None else g.draws[j] for g, _, _ in members)
                          for j in range(k)]) / per_draw
    variances: dict[str, float] = {}
    for g, lum, f in members:
        for name, sigma in g.components.items():
            if name != "covariance":
                variances[name] = variances.get(name, 0.0) + sigma**2 / exposure**2
        if lum.relative_uncertainty is not None:
            d = -numerator * f.central / exposure**2
            term = (d * lum.value * lum.relative_uncertainty) ** 2
            variances["luminosity"] = variances.get("luminosity", 0.0) + term
    if _has_factor_errors(factors, covariance):
        d = np.array([-numerator * lum.value / exposure**2 for _, lum, _ in members])
        variances["branching_exposure"] = max(float(_factor_variance(d, factors, covariance)), 0.0)
    shared = common_linear(linears or [None] * len(members))
    components = {name: float(np.sqrt(v)) for name, v in variances.items()}
    if shared is not None:
        gradient = sum(lin.gradients[0] for lin in linears) / exposure
        components["covariance"] = linear_sigma(gradient, shared[0])
    ids = {g.source_id for g, _, _ in members if g.draws is not None}
    return Estimate(numerator / exposure, draws=draws, source_id=ids.pop() if len(ids) == 1 else None,
                    components=components)


def pool_binned(members: Sequence[tuple[BinnedEstimate, Luminosity, Estimate]],
                covariance: np.ndarray | None) -> BinnedEstimate:
    """The pooled differential cross section of members ``(sigma_i, L_i, B_i)``."""
    first = members[0][0]
    if any(m.axes != first.axes or m.unit != first.unit for m, _, _ in members):
        raise ParameterError("combined projections must share their axes and units")
    factors = [f for _, _, f in members]
    k = _draw_count([n for m, _, f in members
                     for n in (len(m.draws), 0 if f.draws is None else len(f.draws))])
    exposure, per_draw = _exposures(members, k)
    central = [np.asarray(m.central) for m, _, _ in members]
    numerators = sum(c * lum.value for c, (_, lum, _) in zip(central, members, strict=True))
    draws = None
    if k:
        draws = np.array([sum(lum.value * (np.asarray(m.draws[j]) if m.draws else c)
                              for c, (m, lum, _) in zip(central, members, strict=True))
                          for j in range(k)]) / per_draw[:, None]
    variances: dict[str, np.ndarray] = {}
    for m, lum, _ in members:
        for name, v in m.variances().items():
            if name != "covariance":
                variances[name] = variances.get(name, 0.0) + (lum.value / exposure) ** 2 * v
    if _has_factor_errors(factors, covariance):
        d = -np.outer(numerators, [lum.value for _, lum, _ in members]) / exposure**2
        variances["branching_exposure"] = np.maximum(_factor_variance(d, factors, covariance), 0.0)
    linear = None
    shared = common_linear([m._linear for m, _, _ in members])
    if shared is not None:
        gradients = sum(m._linear.gradients * (lum.value / exposure) for m, lum, _ in members)
        linear = Linear(gradients, *shared)
    ids = {m.source_id for m, _, _ in members if m.draws}
    return BinnedEstimate(numerators / exposure, draws=draws, source_id=ids.pop() if len(ids) == 1 else None,
                          axes=first.axes, unit=first.unit, variances=variances, linear=linear)


class CrossSectionProjection:
    """A differential cross section on joint axes (laddu's ``CrossSectionProjection``):
    :attr:`total` and each component's generated fitted yield per luminosity and bin volume.
    """

    def __init__(self, axes: list[list[float]], total: BinnedEstimate, components: dict[str, BinnedEstimate],
                 member_validity: list[list[str]]) -> None:
        self._axes, self._total, self._components = axes, total, components
        self._member_validity = member_validity

    @classmethod
    def from_yield(cls, projection: Any, luminosity: Luminosity) -> CrossSectionProjection:
        """The cross section of one period's :class:`YieldProjection`."""
        v = projection.volumes
        return cls(projection.axes, projection.generated_estimate.per_exposure(luminosity, v),
                   {name: c.generated_estimate.per_exposure(luminosity, v)
                    for name, c in projection.components.items()}, [projection.validity])

    @classmethod
    def pooled(cls, members: Sequence[tuple[CrossSectionProjection, Luminosity, Estimate]],
               covariance: np.ndarray | None) -> CrossSectionProjection:
        """The pooled projection of several periods (see the module docstring)."""
        first = members[0][0]
        if any(p.axes != first.axes or set(p.components) != set(first.components) for p, _, _ in members):
            raise ParameterError("combined projections must share geometry and component selections")
        total = pool_binned([(p.total, lum, f) for p, lum, f in members], covariance)
        components = {name: pool_binned([(p.components[name], lum, f) for p, lum, f in members], covariance)
                      for name in first.components}
        return cls(first.axes, total, components, [v for p, _, _ in members for v in p.member_validity])

    @property
    def axes(self) -> list[list[float]]:
        """The edges of each axis."""
        return [list(a) for a in self._axes]

    @property
    def shape(self) -> list[int]:
        """Bins per axis."""
        return [len(a) - 1 for a in self._axes]

    @property
    def total(self) -> BinnedEstimate:
        """The full model's differential cross section."""
        return self._total

    @property
    def components(self) -> dict[str, BinnedEstimate]:
        """Each component's differential cross section."""
        return dict(self._components)

    @property
    def member_validity(self) -> list[list[str]]:
        """Each period's per-bin support diagnostic."""
        return [list(v) for v in self._member_validity]

    def __repr__(self) -> str:
        return f"CrossSectionProjection(shape {self.shape}, {len(self._components)} components)"
