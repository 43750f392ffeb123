"""``Estimate``: a central value with its uncertainty sources (laddu's ``Estimate``).

An estimate keeps its standard deviation from each source separately, as laddu's does:
``"data_fill"`` (the data sample's finite size, ``sqrt(sum w^2)``), ``"accepted_mc_fill"``
and ``"generated_mc_fill"`` (the Monte Carlo samples', ``sqrt(sum (w I)^2)``),
``"covariance"`` (the fit covariance propagated through the exact gradient of the
quantity, laddu-dask's own source), ``"luminosity"``, ``"branching_exposure"`` (the
uncertainty of external exposure or branching-fraction factors, see
:meth:`CrossSection.combine`; for an estimate given a ``standard_error`` of its own, that
error, as laddu's), and ``"ensemble"``: the spread of the quantity over the draws of a
bootstrap or MCMC ensemble (``draws``).  :meth:`Estimate.error` adds the selected ones in
quadrature.

Examples
--------
>>> e = Estimate(2.0, draws=[1.0, 2.0, 4.0])
>>> round(e.std(), 6), e.median(), e.error(ensemble=True).included_error_components
(1.527525, 2.0, ['ensemble'])
>>> f = Estimate(3.0, standard_error=0.2) + Estimate(1.0, standard_error=0.1)
>>> f.central, round(f.standard_error, 6), round(f.error(branching_exposure=True).error, 6)
(4.0, 0.223607, 0.223607)
"""

from __future__ import annotations

import itertools
import math
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from laddu_dask.errors import ParameterError

#: The uncertainty sources, in the order :meth:`Estimate.error` lists them.
SOURCES = ("data_fill", "accepted_mc_fill", "generated_mc_fill", "covariance", "ensemble", "luminosity",
           "branching_exposure")


#: The sample id of each uncertainty source when none is given (laddu numbers the data,
#: accepted-MC and generated-MC samples of an analysis 1, 2, 3 in that order).
DEFAULT_IDS = {"data_fill": 1, "accepted_mc_fill": 2, "generated_mc_fill": 3, "covariance": 0,
               "luminosity": 4, "branching_exposure": 5}


#: ids of external errors (an Estimate's own standard_error), apart from the samples' ids
_EXTERNAL_IDS = itertools.count(2**63 + 1)
_SAMPLE_IDS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_NEXT_SAMPLE = itertools.count(1)


def sample_id(dataset: Any) -> int:
    """The id of a data or Monte Carlo sample as an uncertainty source: 1, 2, 3, ... in the
    order samples are first used, as laddu numbers them (the same object keeps its id)."""
    if dataset not in _SAMPLE_IDS:
        _SAMPLE_IDS[dataset] = next(_NEXT_SAMPLE)
    return _SAMPLE_IDS[dataset]


def source_ids(given: Mapping[str, int] | None) -> dict[str, int]:
    """:data:`DEFAULT_IDS` updated with the ``given`` ids."""
    return {**DEFAULT_IDS, **dict(given or {})}


def apply_budget(variances: Mapping[str, Any], **wanted: bool
                 ) -> tuple[Any, list[str], list[tuple[str, str]]]:
    """The sum of the ``variances`` (by source; numbers or per-bin arrays) an error budget
    selects (``wanted``: a flag per source of :data:`SOURCES`), the sources it included
    and those it asked for but are missing, with the reason (laddu's)."""
    total: Any = 0.0
    included, omitted = [], []
    for name in SOURCES:
        if not wanted[name]:
            continue
        if name in variances:
            included.append(name)
            total = total + variances[name]
        else:
            omitted.append((name, "fewer_than_two_draws" if name == "ensemble" else "unavailable"))
    return total, included, omitted


@dataclass(frozen=True)
class ScalarErrorView:
    """A marginal error and which sources it includes (laddu's ``ScalarErrorView``)."""

    error: float
    included_error_components: list[str]
    omitted_error_components: list[tuple[str, str]]
    #: each included source and the id of its sample (an ensemble's ``source_id``)
    error_component_sources: list[tuple[str, int]] = field(default_factory=list)


class Estimate:
    """A central value with optional draws and per-source standard deviations.

    Parameters
    ----------
    central : float
        The value at the fitted point.
    draws : sequence of float, optional
        The quantity at each draw of an ensemble (bootstrap replicas, MCMC samples).
    source_id : int, optional
        Identifies the ensemble the draws come from.
    standard_error : float, optional
        A standard error of its own (otherwise the ``"covariance"`` source's, if any).
    components : mapping of str to float, optional
        Standard deviations by source (see :data:`SOURCES`).
    fill_ids : mapping of str to int, optional
        The id of each source's sample (default :data:`DEFAULT_IDS`; an own
        ``standard_error`` gets an id of its own), listed by
        :attr:`ScalarErrorView.error_component_sources`.

    Raises
    ------
    ParameterError
        For a non-finite central value, draw or error, or an unknown source.
    """

    def __init__(self, central: float, *, draws: Sequence[float] | np.ndarray | None = None,
                 source_id: int | None = None, standard_error: float | None = None,
                 components: Mapping[str, float] | None = None,
                 fill_ids: Mapping[str, int] | None = None) -> None:
        central = float(central)
        if not math.isfinite(central):
            raise ParameterError(f"an Estimate needs a finite central value, got {central!r}")
        self._central = central
        self._draws = None if draws is None else np.asarray(draws, dtype=np.float64).reshape(-1)
        if self._draws is not None and not np.isfinite(self._draws).all():
            raise ParameterError("an Estimate's draws must be finite")
        self._source_id = source_id
        self._components = {}
        for name, sigma in dict(components or {}).items():
            if name not in SOURCES or name == "ensemble":
                raise ParameterError(f"unknown uncertainty source {name!r}; one of "
                                     f"{', '.join(s for s in SOURCES if s != 'ensemble')}")
            if not (math.isfinite(sigma) and sigma >= 0):
                raise ParameterError(f"the {name} error must be finite and >= 0, got {sigma!r}")
            self._components[name] = float(sigma)
        if standard_error is not None and not (math.isfinite(standard_error) and standard_error >= 0):
            raise ParameterError(f"standard_error must be finite and >= 0, got {standard_error!r}")
        self._standard_error = standard_error
        self._ids = source_ids(fill_ids)
        if standard_error is not None and "branching_exposure" not in self._components:
            self._ids["branching_exposure"] = next(_EXTERNAL_IDS)

    @property
    def central(self) -> float:
        """The value at the fitted point."""
        return self._central

    @property
    def draws(self) -> np.ndarray | None:
        """The value at each ensemble draw (``None`` without an ensemble)."""
        return None if self._draws is None else self._draws.copy()

    @property
    def source_id(self) -> int | None:
        """The id of the ensemble of :attr:`draws`."""
        return self._source_id

    @property
    def components(self) -> dict[str, float]:
        """Standard deviations by source (without ``"ensemble"``, see :meth:`std`)."""
        return dict(self._components)

    @property
    def standard_error(self) -> float | None:
        """The given standard error, else the fit-covariance one (``None`` without either)."""
        if self._standard_error is not None:
            return float(self._standard_error)
        return self._components.get("covariance")

    def _need_draws(self) -> np.ndarray:
        if self._draws is None or len(self._draws) == 0:
            raise ParameterError("this Estimate has no draws (pass an ensemble)")
        return self._draws

    def std(self) -> float:
        """Standard deviation of the draws (``ddof=1``)."""
        draws = self._need_draws()
        return float(np.std(draws, ddof=1)) if len(draws) > 1 else 0.0

    def mean(self) -> float:
        """Mean of the draws."""
        return float(np.mean(self._need_draws()))

    def median(self) -> float:
        """Median of the draws."""
        return float(np.median(self._need_draws()))

    def quantile(self, probability: float) -> float:
        """A quantile of the draws (linear interpolation, as NumPy's)."""
        if not 0.0 <= probability <= 1.0:
            raise ParameterError(f"probability must lie in [0, 1], got {probability!r}")
        return float(np.quantile(self._need_draws(), probability))

    def interval(self, level: float = 0.68) -> tuple[float, float]:
        """The central ``level`` interval of the draws."""
        if not 0.0 < level < 1.0:
            raise ParameterError(f"level must lie in (0, 1), got {level!r}")
        return self.quantile((1 - level) / 2), self.quantile((1 + level) / 2)

    def error(self, *, data_fill: bool = True, accepted_mc_fill: bool = True,
              generated_mc_fill: bool = True, covariance: bool = True, ensemble: bool = False,
              luminosity: bool = False, branching_exposure: bool = False) -> ScalarErrorView:
        """The quadrature sum of the selected sources (laddu's ``Estimate.error``).

        ``branching_exposure`` is the estimate's ``"branching_exposure"`` source, or, for an
        estimate given a ``standard_error`` of its own (an external factor), that error.
        """
        available = {name: sigma**2 for name, sigma in self._components.items()}
        if self._draws is not None and len(self._draws) > 1:
            available["ensemble"] = self.std() ** 2
        if self._standard_error is not None and "branching_exposure" not in available:
            available["branching_exposure"] = self._standard_error**2
        total, included, omitted = apply_budget(
            available, data_fill=data_fill, accepted_mc_fill=accepted_mc_fill,
            generated_mc_fill=generated_mc_fill, covariance=covariance, ensemble=ensemble,
            luminosity=luminosity, branching_exposure=branching_exposure)
        ids = {**self._ids, "ensemble": self._source_id}
        return ScalarErrorView(math.sqrt(total), included, omitted,
                               [(name, ids[name]) for name in included if ids[name] is not None])

    # -- arithmetic of independent estimates (first order) -----------------------------------
    def _combine(self, other: Any, value: float, d_self: float, d_other: float,
                 draws_op: Any) -> Estimate:
        if isinstance(other, Estimate):
            a, b = self.standard_error, other.standard_error
            err = None if a is None and b is None else math.hypot(d_self * (a or 0.0), d_other * (b or 0.0))
            draws = None
            if self._draws is not None and other._draws is not None and len(self._draws) == len(other._draws):
                draws = draws_op(self._draws, other._draws)
            return Estimate(value, draws=draws, standard_error=err)
        err = None if self.standard_error is None else abs(d_self) * self.standard_error
        draws = None if self._draws is None else draws_op(self._draws, float(other))
        return Estimate(value, draws=draws, standard_error=err)

    def _other(self, other: Any) -> float:
        if isinstance(other, Estimate):
            return other.central
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            return float(other)
        raise TypeError(f"an Estimate combines with an Estimate or a number, not {type(other).__name__}")

    def __add__(self, other: Any) -> Estimate:
        b = self._other(other)
        return self._combine(other, self.central + b, 1.0, 1.0, np.add)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Estimate:
        b = self._other(other)
        return self._combine(other, self.central - b, 1.0, -1.0, np.subtract)

    def __mul__(self, other: Any) -> Estimate:
        b = self._other(other)
        return self._combine(other, self.central * b, b, self.central, np.multiply)

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Estimate:
        b = self._other(other)
        if b == 0:
            raise ZeroDivisionError("division of an Estimate by zero")
        return self._combine(other, self.central / b, 1.0 / b, -self.central / b**2, np.divide)

    def __repr__(self) -> str:
        err = self.error(ensemble=True, luminosity=True).error
        extra = f", {len(self._draws)} draws" if self._draws is not None else ""
        return f"Estimate({self.central:.6g} +- {err:.3g}{extra})"
