"""Weighted one-dimensional histograms (laddu's ``Histogram``), filled with exact sums.

Bins are ``[low, high)``: a value on the last edge is overflow, as in laddu.  Each bin's
weight and squared weight are the correctly rounded exact sums, so a histogram of a
dataset does not depend on its partitioning.  ``errors`` are ``sqrt(sum w^2)`` unless
given.

Examples
--------
>>> h = Histogram.from_values_with_edges([0.1, 0.5, 1.5, 2.5, -1.0], bin_edges=[0.0, 1.0, 2.0],
...                                      weights=[1.0, 2.0, 3.0, 4.0, 5.0])
>>> h.counts, h.underflow, h.overflow, h.total_weight(), h.density().counts
([3.0, 3.0], 5.0, 4.0, 6.0, [0.5, 0.5])
"""

from __future__ import annotations

import json as _json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask.errors import ModelError
from laddu_dask.sums import ExactPartials, exact_sum

__all__ = ["Histogram", "histogram_partials"]


def _edges(bin_edges: Sequence[float]) -> np.ndarray:
    edges = np.asarray(bin_edges, dtype=np.float64)
    if edges.ndim != 1 or edges.size < 2 or not np.isfinite(edges).all() or (np.diff(edges) <= 0).any():
        raise ModelError(f"bin edges must be at least two finite, strictly increasing numbers, "
                         f"got {list(edges)}")
    return edges


def _finite(x: float, what: str) -> float:
    x = float(x)
    if not math.isfinite(x):
        raise ModelError(f"{what} must be finite, got {x!r}")
    return x


def _error(x: float, what: str) -> float:
    x = float(x)
    if not (math.isfinite(x) and x >= 0.0):
        raise ModelError(f"{what} must be finite and non-negative, got {x!r}")
    return x


def histogram_partials(values: np.ndarray, weights: np.ndarray, edges: np.ndarray) -> ExactPartials:
    """The ``chunk`` step of a histogram: for each of underflow, the bins and overflow, the
    exact sums of the weights and of the squared weights (quantities ``2 * slot`` and
    ``2 * slot + 1``).  NaN values fall in no bin.

    Examples
    --------
    >>> p = histogram_partials(np.array([0.5, 3.0]), np.array([2.0, 3.0]), np.array([0.0, 1.0]))
    >>> p.to_floats().tolist()
    [0.0, 0.0, 2.0, 4.0, 3.0, 9.0]
    """
    slot = np.searchsorted(edges, values, side="right")  # 0: underflow, len(edges): overflow
    slot[np.isnan(values)] = -1
    return ExactPartials.from_groups(slot, np.stack([weights, weights * weights]), len(edges) + 1)


class Histogram:
    """A weighted histogram with underflow and overflow (laddu's ``Histogram``).

    Parameters
    ----------
    counts : sequence of float
        Weight in each regular bin.
    bin_edges : sequence of float
        One more edge than counts, strictly increasing.
    underflow, overflow : float
        Weight outside the edges.
    errors : sequence of float, optional
        Per-bin uncertainties; default ``sqrt(|count|)`` (``sqrt(sum w^2)`` when filled).
    """

    def __init__(self, counts: Sequence[float], *, bin_edges: Sequence[float], underflow: float = 0.0,
                 overflow: float = 0.0, errors: Sequence[float] | None = None) -> None:
        edges = _edges(bin_edges)
        c = np.array(counts, dtype=np.float64)  # a copy: fill and set_bin change it in place
        if c.shape != (edges.size - 1,):
            raise ModelError(f"a histogram with {edges.size} edges needs {edges.size - 1} counts, "
                             f"got {c.size}")
        e = np.sqrt(np.abs(c)) if errors is None else np.array(errors, dtype=np.float64)
        if e.shape != c.shape:
            raise ModelError(f"a histogram needs one error per bin ({c.size}), got {e.size}")
        self._edges, self._counts, self._errors = edges, c, e
        self._underflow, self._overflow = float(underflow), float(overflow)
        # laddu's bookkeeping: squared weights of the flows (known when filled from values)
        # and whether the errors are still reported (not after add/subtract of dependent ones)
        self._flow_squares: tuple[float, float] | None = None
        self._status = "available"

    def _with(self, counts: np.ndarray, errors: np.ndarray, underflow: float, overflow: float,
              flow_squares: tuple[float, float] | None, status: str) -> Histogram:
        out = Histogram(counts, bin_edges=self._edges, underflow=underflow, overflow=overflow, errors=errors)
        out._flow_squares, out._status = flow_squares, status
        return out

    @staticmethod
    def from_values_with_edges(values: Sequence[float], *, bin_edges: Sequence[float],
                               weights: Sequence[float] | None = None) -> Histogram:
        """The histogram of ``values`` (weighted by ``weights``, else 1) in ``bin_edges``."""
        x = np.asarray(values, dtype=np.float64)
        w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=np.float64)
        edges = _edges(bin_edges)
        return Histogram.from_partials([histogram_partials(x, w, edges)], edges)

    @staticmethod
    def from_values(values: Sequence[float], *, bins: int, limits: tuple[float, float],
                    weights: Sequence[float] | None = None) -> Histogram:
        """``bins`` equal bins over ``limits``."""
        lo, hi = limits
        edges = [lo + i * (hi - lo) / bins for i in range(bins)] + [float(hi)]
        return Histogram.from_values_with_edges(values, bin_edges=edges, weights=weights)

    @staticmethod
    def from_partials(partials: Sequence[ExactPartials], edges: np.ndarray) -> Histogram:
        """The histogram of the :func:`histogram_partials` of every batch (the exact
        ``combine`` and ``aggregate`` steps: merged, then rounded once)."""
        n = len(edges) + 1
        w, w2 = ExactPartials.merge(partials, k=2 * n).to_floats().reshape(n, 2).T.tolist()
        out = Histogram(w[1:-1], bin_edges=edges, underflow=w[0], overflow=w[-1], errors=np.sqrt(w2[1:-1]))
        out._flow_squares = (w2[0], w2[-1])
        return out

    # -- laddu's accessors ---------------------------------------------------------------
    @property
    def counts(self) -> list[float]:
        """Regular-bin contents."""
        return self._counts.tolist()

    @property
    def errors(self) -> list[float]:
        """Regular-bin uncertainties."""
        return self._errors.tolist()

    @property
    def bin_edges(self) -> list[float]:
        """The edges."""
        return self._edges.tolist()

    @property
    def bins(self) -> int:
        """Number of regular bins."""
        return int(self._counts.size)

    @property
    def limits(self) -> tuple[float, float]:
        """The first and last edges."""
        return float(self._edges[0]), float(self._edges[-1])

    def bin_center(self, index: int) -> float | None:
        """The middle of bin ``index`` (None for no such bin)."""
        if not 0 <= index < self.bins:
            return None
        return float(0.5 * (self._edges[index] + self._edges[index + 1]))

    def bin_index(self, value: float) -> int | None:
        """The bin holding ``value`` (None for underflow, overflow and NaN)."""
        k = int(np.searchsorted(self._edges, value, side="right")) - 1
        return k if 0 <= k < self.bins and not math.isnan(value) else None

    def total_weight(self, *, include_flow: bool = False) -> float:
        """The sum of the counts (and of under- and overflow)."""
        flow = [self.underflow, self.overflow] if include_flow else []
        return exact_sum([*self._counts.tolist(), *flow])

    def scaled(self, factor: float) -> Histogram:
        """Counts and errors times ``factor`` (errors by its magnitude)."""
        flows = self._flow_squares
        squares = None if flows is None else (flows[0] * factor * factor, flows[1] * factor * factor)
        return self._with(self._counts * factor, self._errors * abs(factor), self.underflow * factor,
                          self.overflow * factor, squares, self._status)

    def normalized(self, *, include_flow: bool = False) -> Histogram:
        """Scaled to unit total weight; without ``include_flow`` the flows are dropped (0), as
        in laddu."""
        out = self.scaled(1.0 / self.total_weight(include_flow=include_flow))
        if not include_flow:
            out._underflow = out._overflow = 0.0
            out._flow_squares = None if out._flow_squares is None else (0.0, 0.0)
        return out

    def density(self, *, signed: bool = False) -> Histogram:
        """A probability density: counts over (total weight x bin width); ``signed`` keeps
        the sign of a negative total."""
        total = self.total_weight()
        scale = 1.0 / (total if signed else abs(total))
        widths = np.diff(self._edges)
        return self._with(self._counts * scale / widths, self._errors * abs(scale) / widths, 0.0, 0.0,
                          None if self._flow_squares is None else (0.0, 0.0), self._status)

    # -- filling in place (laddu's fill, merge, set_bin) ------------------------------------
    def fill(self, value: float, *, weight: float = 1.0, error: float | None = None) -> None:
        """Add ``weight`` at ``value`` (its bin, or under- or overflow), its uncertainty
        ``error`` (default ``|weight|``) added in quadrature, as laddu's ``fill``.

        Raises
        ------
        ModelError
            A non-finite value or weight, a negative or non-finite error (naming which).

        Examples
        --------
        >>> h = Histogram([1.0, 2.0], bin_edges=[0.0, 1.0, 2.0])
        >>> h.fill(0.5, weight=2.0); h.fill(2.0)
        >>> h.counts, [round(e, 6) for e in h.errors], h.overflow
        ([3.0, 2.0], [2.236068, 1.414214], 1.0)
        """
        value, weight = _finite(value, "histogram fill value"), _finite(weight, "histogram fill weight")
        spread = abs(weight) if error is None else _error(error, "histogram fill error")
        k = self.bin_index(value)
        if k is None:
            under = value < self._edges[0]
            if under:
                self._underflow += weight
            else:
                self._overflow += weight
            if self._flow_squares is not None:
                low, high = self._flow_squares
                self._flow_squares = (low + spread ** 2, high) if under else (low, high + spread ** 2)
            return
        self._counts[k] += weight
        self._errors[k] = math.hypot(self._errors[k], spread)

    def merge(self, other: Histogram) -> None:
        """Add ``other``'s counts and flows to this histogram, errors in quadrature (laddu's
        ``merge``, in place).

        Raises
        ------
        TypeError
            ``other`` is not a ``Histogram``.
        ModelError
            Different bin edges.

        Examples
        --------
        >>> h = Histogram([1.0, 2.0], bin_edges=[0.0, 1.0, 2.0])
        >>> h.merge(Histogram([4.0, 0.0], bin_edges=[0.0, 1.0, 2.0], underflow=5.0))
        >>> h.counts, [round(e, 6) for e in h.errors], h.underflow
        ([5.0, 2.0], [2.236068, 1.414214], 5.0)
        """
        if not isinstance(other, Histogram):
            raise TypeError(f"merge needs a Histogram, got {type(other).__name__}")
        if not np.array_equal(self._edges, other._edges):
            raise ModelError("histogram merge needs identical bin edges")
        self._counts = self._counts + other._counts
        self._errors = np.hypot(self._errors, other._errors)
        self._underflow += other.underflow
        self._overflow += other.overflow
        if self._flow_squares is not None and other._flow_squares is not None:
            self._flow_squares = (self._flow_squares[0] + other._flow_squares[0],
                                  self._flow_squares[1] + other._flow_squares[1])
        else:
            self._flow_squares = None

    def set_bin(self, index: int, *, count: float | None = None, error: float | None = None) -> None:
        """Set the count and/or the error of bin ``index`` (laddu's ``set_bin``).

        Examples
        --------
        >>> h = Histogram([1.0, 2.0], bin_edges=[0.0, 1.0, 2.0])
        >>> h.set_bin(1, count=10.0, error=0.5)
        >>> h.counts, h.errors
        ([1.0, 10.0], [1.0, 0.5])
        """
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < self.bins:
            raise ModelError(f"histogram bin index must be an integer in [0, {self.bins}), got {index!r}")
        if count is not None:
            self._counts[index] = _finite(count, "histogram bin count")
        if error is not None:
            self._errors[index] = _error(error, "histogram bin error")

    def _combine(self, other: Histogram, sign: float, independent: bool) -> Histogram:
        if not isinstance(other, Histogram) or not np.array_equal(self._edges, other._edges):
            raise ModelError("histograms combine only with a histogram of the same edges")
        squares = None if self._flow_squares is None or other._flow_squares is None else (
            self._flow_squares[0] + other._flow_squares[0], self._flow_squares[1] + other._flow_squares[1])
        status = "available" if independent and self._status == other._status == "available" \
            else "unavailable_covariance"
        return self._with(self._counts + sign * other._counts, np.hypot(self._errors, other._errors),
                          self.underflow + sign * other.underflow, self.overflow + sign * other.overflow,
                          squares, status)

    def add(self, other: Histogram, *, independent: bool = False) -> Histogram:
        """The sum, errors in quadrature; they stay reported (:attr:`reported_errors`) only
        when the two are declared ``independent``, as laddu's ``add``."""
        return self._combine(other, 1.0, independent)

    def subtract(self, other: Histogram, *, independent: bool = False) -> Histogram:
        """The difference, errors in quadrature (see :meth:`add`)."""
        return self._combine(other, -1.0, independent)

    def __add__(self, other: Histogram) -> Histogram:
        return self.add(other)

    def __sub__(self, other: Histogram) -> Histogram:
        return self.subtract(other)

    @property
    def underflow(self) -> float:
        """The weight below the first edge (read-only, as laddu's)."""
        return self._underflow

    @property
    def overflow(self) -> float:
        """The weight at or above the last edge (read-only, as laddu's)."""
        return self._overflow

    @property
    def reported_errors(self) -> list[float] | None:
        """The errors, or None after an ``add``/``subtract`` not declared ``independent``."""
        return self.errors if self._status == "available" else None

    @property
    def uncertainty_status(self) -> str:
        """``"available"``, or ``"unavailable_covariance"`` (laddu's status names)."""
        return self._status

    def squared_weight_constituents(self) -> tuple[list[float], float | None, float | None]:
        """Squared errors per bin, and the squared weights of under- and overflow (None
        unless filled from values), as laddu's."""
        flows = (None, None) if self._flow_squares is None else self._flow_squares
        return (self._errors ** 2).tolist(), flows[0], flows[1]

    def __mul__(self, factor: float) -> Histogram:
        return self.scaled(float(factor))

    __rmul__ = __mul__

    def to_json(self) -> str:
        """The histogram as JSON (:meth:`from_json` reads it)."""
        return _json.dumps({"bin_edges": self.bin_edges, "counts": self.counts, "errors": self.errors,
                           "underflow": self.underflow, "overflow": self.overflow})

    @staticmethod
    def from_json(json: str) -> Histogram:
        """The histogram :meth:`to_json` wrote."""
        d: dict[str, Any] = _json.loads(json)
        return Histogram(d["counts"], bin_edges=d["bin_edges"], underflow=d["underflow"],
                         overflow=d["overflow"], errors=d["errors"])

    def __repr__(self) -> str:
        return (f"Histogram({self.bins} bins in [{self.limits[0]:g}, {self.limits[1]:g}), total "
                f"{self.total_weight():g}, underflow {self.underflow:g}, overflow {self.overflow:g})")
