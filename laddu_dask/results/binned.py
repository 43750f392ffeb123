"""Differential axes and binned estimates (laddu's ``Axis``, ``BinnedEstimate`` and
``YieldHistogramView``).

An :class:`Axis` is a real per-event expression with explicit bin edges; several axes
make a joint grid whose bins are flattened row-major (the last axis varies fastest).  A
:class:`BinnedEstimate` holds one value per bin, optional ensemble draws, and per-bin
variances by uncertainty source (the sources of :class:`~laddu_dask.Estimate`); the
``"covariance"`` source is the fit covariance propagated through each bin's exact
gradient.  :meth:`BinnedEstimate.histogram` materialises the marginal errors of a chosen
error budget as a :class:`YieldHistogramView`.

Examples
--------
>>> import laddu_dask as ld
>>> axis = ld.Axis(ld.scalar("x"), edges=[0.0, 1.0, 3.0])
>>> axis.edges, axis.bins
([0.0, 1.0, 3.0], 2)
>>> est = BinnedEstimate([2.0, 4.0], axes=[axis.edges], unit="yield",
...                      variances={"data_fill": [1.0, 4.0]})
>>> view = est.histogram()
>>> view.values, view.errors, view.included_error_components
([2.0, 4.0], [1.0, 2.0], ['data_fill'])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from laddu_dask.data.operations import Bin
from laddu_dask.errors import ModelError, ParameterError
from laddu_dask.expr.node import Expr
from laddu_dask.results.binned_arithmetic import combine
from laddu_dask.results.estimate import SOURCES, apply_budget, source_ids
from laddu_dask.results.propagation import linear_sigma

#: The physical meaning of a binned estimate's values (laddu's ``BinnedEstimate.unit``).
UNITS = ("unitless", "yield", "cross_section")


class Axis:
    """A real per-event expression and its bin edges: one axis of a differential result.

    Parameters
    ----------
    expr : Expr
        The coordinate (a mass, an angle); a complex expression is binned by its real part.
    edges : sequence of float or Bin
        At least two finite, strictly increasing edges; bins are ``[low, high)``, an event
        on the last edge is outside.

    Raises
    ------
    ModelError
        If ``expr`` is not an expression or the edges are not valid.
    """

    def __init__(self, expr: Expr, *, edges: Sequence[float] | np.ndarray | Bin) -> None:
        if not isinstance(expr, Expr):
            raise ModelError(f"an Axis needs an expression to bin, got {type(expr).__name__}")
        self._expr = expr
        self._edges = (edges if isinstance(edges, Bin) else Bin(np.asarray(edges, dtype=np.float64))).edges

    @property
    def expr(self) -> Expr:
        """The binned expression."""
        return self._expr

    @property
    def edges(self) -> list[float]:
        """The bin edges."""
        return list(self._edges)

    @property
    def bins(self) -> int:
        """Number of bins."""
        return len(self._edges) - 1

    def __repr__(self) -> str:
        return f"Axis({self._expr!r}, {self.bins} bins in [{self._edges[0]:g}, {self._edges[-1]:g}))"


def axis_group(axes: Any, what: str = "axes") -> list[Axis]:
    """``axes`` (an :class:`Axis` or a non-empty sequence of them) as a list.

    Raises
    ------
    ModelError
        For anything else, naming ``what``.
    """
    group = [axes] if isinstance(axes, Axis) else list(axes) if isinstance(axes, (list, tuple)) else None
    if not group or not all(isinstance(a, Axis) for a in group):
        raise ModelError(f"{what} must be an Axis or a non-empty sequence of Axis objects, got {axes!r}")
    return group


def bin_volumes(axes: Sequence[Axis]) -> np.ndarray:
    """The row-major volume (product of widths) of every bin of a joint grid."""
    volume = np.ones(1)
    for axis in axes:
        volume = np.multiply.outer(volume, np.diff(axis.edges)).reshape(-1)
    return volume


@dataclass(frozen=True)
class Linear:
    """Per-bin exact gradients by the likelihood's free parameters with the fit covariance
    they propagate (the ``"covariance"`` source)."""

    gradients: np.ndarray  # (bins, parameters)
    covariance: np.ndarray
    names: tuple[str, ...]

    def scaled(self, factors: np.ndarray) -> Linear:
        """The gradients of the bins times ``factors``."""
        return Linear(self.gradients * factors[:, None], self.covariance, self.names)

    def variances(self) -> np.ndarray:
        """``g^T C g`` of every bin."""
        return np.array([linear_sigma(g, self.covariance) ** 2 for g in self.gradients])


@dataclass(frozen=True)
class YieldHistogramView:
    """Central values of a binned estimate on its axes with the marginal errors of one error
    budget (laddu's ``YieldHistogramView``); row-major, the last axis fastest."""

    axes: list[list[float]]
    shape: list[int]
    values: list[float]
    errors: list[float]
    included_error_components: list[str]
    omitted_error_components: list[tuple[str, str]]
    error_component_sources: list[tuple[str, int]] = field(default_factory=list)


class BinnedEstimate:
    """Central bin values with optional ensemble draws and per-bin variances by source
    (laddu's ``BinnedEstimate``).

    Parameters
    ----------
    central : sequence of float
        One finite value per bin.
    draws : array of shape (K, bins), optional
        The values at each ensemble draw.
    source_id : int, optional
        Identifies the ensemble of the draws.
    axes : list of list of float, optional
        The edges of each axis (needed by :meth:`histogram`).
    unit : str
        ``"unitless"``, ``"yield"`` or ``"cross_section"``.
    variances : mapping of str to sequence of float, optional
        Per-bin variances by source (the sources of :class:`~laddu_dask.Estimate`).
    fill_ids : mapping of str to int, optional
        The id of each source's sample (laddu's ``error_component_sources``; by default
        :data:`~laddu_dask.results.estimate.DEFAULT_IDS`). Sources of one id are correlated:
        :meth:`__add__` and the other operators cannot propagate them when both operands
        have one (laddu's ``covariance_unavailable``).

    Arithmetic (``+ - * /`` of two estimates on one grid, laddu's rules): central values and
    draws bin by bin, every source's variance to first order, units checked (see
    :mod:`laddu_dask.results.binned_arithmetic`).

    Raises
    ------
    ParameterError
        For non-finite values or draws, a shape mismatch, or an unknown source or unit.
    """

    def __init__(self, central: Sequence[float] | np.ndarray, *, draws: Any = None,
                 source_id: int | None = None, axes: Sequence[Sequence[float]] | None = None,
                 unit: str = "unitless", variances: Mapping[str, Any] | None = None,
                 linear: Linear | None = None, fill_ids: Mapping[str, int] | None = None) -> None:
        self._central = np.asarray(central, dtype=np.float64).reshape(-1)
        n = self._central.size
        if not np.isfinite(self._central).all():
            raise ParameterError("a BinnedEstimate needs finite bin values")
        ids = source_ids(fill_ids)
        self._draws = None if draws is None or len(draws) == 0 else np.asarray(draws, dtype=np.float64)
        if self._draws is not None and (self._draws.ndim != 2 or self._draws.shape[1] != n
                                        or not np.isfinite(self._draws).all()):
            raise ParameterError(f"BinnedEstimate draws must be finite and of shape (K, {n})")
        if unit not in UNITS:
            raise ParameterError(f"unknown BinnedEstimate unit {unit!r}; one of {', '.join(UNITS)}")
        self._axes = None if axes is None else [list(map(float, a)) for a in axes]
        if self._axes is not None and int(np.prod([len(a) - 1 for a in self._axes])) != n:
            raise ParameterError(f"axes of shape {[len(a) - 1 for a in self._axes]} do not hold {n} bins")
        self._variances: dict[str, np.ndarray] = {}
        for name, values in dict(variances or {}).items():
            v = np.asarray(values, dtype=np.float64).reshape(-1)
            if name not in SOURCES or name in ("ensemble", "covariance") or v.shape != (n,):
                raise ParameterError(f"bad variance source {name!r} (a source of Estimate other than "
                                     f"ensemble and covariance, one value per bin)")
            if not (np.isfinite(v).all() and (v >= 0).all()):
                raise ParameterError(f"the {name} variances must be finite and >= 0")
            self._variances[name] = v
        self._source_id, self._unit, self._linear = source_id, unit, linear
        #: per (source, sample id): the variances; and the sources whose correlation is unknown
        self._parts: dict[tuple[str, int], np.ndarray] = {(k, ids[k]): v for k, v in self._variances.items()}
        self._blocked: set[tuple[str, int]] = set()
        self._source_ids: list[int] = [] if source_id is None else [source_id]

    # -- laddu's accessors ---------------------------------------------------------------
    @property
    def central(self) -> list[float]:
        """The bin values."""
        return self._central.tolist()

    @property
    def draws(self) -> list[list[float]]:
        """The bin values at each draw (empty without an ensemble)."""
        return [] if self._draws is None else self._draws.tolist()

    @property
    def source_id(self) -> int | None:
        """The id of the ensemble of :attr:`draws`."""
        return self._source_id

    @property
    def source_ids(self) -> list[int]:
        """The ensemble ids behind the draws."""
        return list(self._source_ids)

    @property
    def axes(self) -> list[list[float]] | None:
        """The edges of each axis."""
        return None if self._axes is None else [list(a) for a in self._axes]

    @property
    def unit(self) -> str:
        """``"unitless"``, ``"yield"`` or ``"cross_section"``."""
        return self._unit

    def variances(self) -> dict[str, np.ndarray]:
        """Per-bin variances by source (``"covariance"`` included when propagated)."""
        out = {k: v.copy() for k, v in self._variances.items()}
        if self._linear is not None:
            out["covariance"] = self._linear.variances()
        return out

    def covariance(self) -> list[list[float]]:
        """The sample covariance of the draws between bins (``ddof=1``).

        Raises
        ------
        ParameterError
            With fewer than two draws.
        """
        if self._draws is None or len(self._draws) < 2:
            raise ParameterError("this BinnedEstimate needs at least two draws for a covariance "
                                 "(pass an ensemble)")
        return np.atleast_2d(np.cov(self._draws, rowvar=False, ddof=1)).tolist()

    def interval(self, level: float = 0.68) -> tuple[list[float], list[float]]:
        """The central ``level`` interval of the draws in every bin."""
        if not 0.0 < level < 1.0:
            raise ParameterError(f"level must lie in (0, 1), got {level!r}")
        if self._draws is None:
            raise ParameterError("this BinnedEstimate has no draws (pass an ensemble)")
        low, high = np.quantile(self._draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
        return low.tolist(), high.tolist()

    def histogram(self, *, data_fill: bool = True, accepted_mc_fill: bool = True,
                  generated_mc_fill: bool = True, covariance: bool = True, ensemble: bool = False,
                  luminosity: bool = False, branching_exposure: bool = False) -> YieldHistogramView:
        """The values with the quadrature sum of the selected sources in every bin.

        Raises
        ------
        ModelError
            For an estimate without axes.
        """
        if self._axes is None:
            raise ModelError("this BinnedEstimate has no axes to make a histogram of")
        available = self.variances()
        if self._draws is not None and len(self._draws) > 1:
            available["ensemble"] = np.var(self._draws, axis=0, ddof=1)
        wanted = dict(data_fill=data_fill, accepted_mc_fill=accepted_mc_fill,
                      generated_mc_fill=generated_mc_fill, covariance=covariance, ensemble=ensemble,
                      luminosity=luminosity, branching_exposure=branching_exposure)
        blocked = {name for name, _ in self._blocked}
        total, included, omitted = apply_budget({k: v for k, v in available.items() if k not in blocked},
                                                **wanted)
        unknown = [name for name in SOURCES if wanted[name] and name in blocked]
        omitted = sorted([o for o in omitted if o[0] not in blocked]
                         + [(name, "covariance_unavailable") for name in unknown],
                         key=lambda o: SOURCES.index(o[0]))
        errors = np.sqrt(total + np.zeros_like(self._central))
        if unknown:
            errors = np.full_like(self._central, np.nan)
        sources = [(k, i) for k in included for i in self._ids_of(k)]
        return YieldHistogramView(self.axes, [len(a) - 1 for a in self._axes], self.central, errors.tolist(),
                                  included, omitted, sources)

    def _ids_of(self, name: str) -> list[int]:
        if name == "ensemble":
            return [] if self._source_id is None else [self._source_id]
        if name == "covariance":
            return [0]
        return sorted(i for k, i in self._parts if k == name and (k, i) not in self._blocked)

    # -- derived estimates -----------------------------------------------------------------
    def scaled(self, factors: np.ndarray, unit: str | None = None) -> BinnedEstimate:
        """Every bin (values, draws, errors) times its factor."""
        out = BinnedEstimate(self._central * factors,
                             draws=None if self._draws is None else self._draws * factors,
                             source_id=self._source_id, axes=self._axes, unit=unit or self._unit,
                             variances={k: v * factors**2 for k, v in self._variances.items()},
                             linear=None if self._linear is None else self._linear.scaled(factors))
        out._parts = {k: v * factors**2 for k, v in self._parts.items()}
        out._blocked, out._source_ids = set(self._blocked), list(self._source_ids)
        return out

    def __add__(self, other: Any) -> BinnedEstimate:
        return combine(self, other, "+", BinnedEstimate)

    def __sub__(self, other: Any) -> BinnedEstimate:
        return combine(self, other, "-", BinnedEstimate)

    def __mul__(self, other: Any) -> BinnedEstimate:
        return combine(self, other, "*", BinnedEstimate)

    def __truediv__(self, other: Any) -> BinnedEstimate:
        return combine(self, other, "/", BinnedEstimate)

    def per_exposure(self, luminosity: Any, volumes: np.ndarray) -> BinnedEstimate:
        """A differential cross section: over the luminosity and each bin's volume, with the
        luminosity's relative uncertainty as the ``"luminosity"`` source."""
        out = self.scaled(1.0 / (luminosity.value * volumes), "cross_section")
        if luminosity.relative_uncertainty is not None:
            out._variances["luminosity"] = (out._central * luminosity.relative_uncertainty) ** 2
            out._parts[("luminosity", source_ids(None)["luminosity"])] = out._variances["luminosity"]
        return out

    def __repr__(self) -> str:
        extra = f", {len(self._draws)} draws" if self._draws is not None else ""
        return f"BinnedEstimate({self._central.size} bins, {self._unit}{extra})"
