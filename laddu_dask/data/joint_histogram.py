"""N-dimensional weighted histograms of real expressions (laddu's ``JointHistogram``).

``Dataset.joint_histogram(axes, bin_edges=...)`` fills one, partition by partition, with
exact sums, so it does not depend on the partitioning. Every upper edge is exclusive and
the last one is out of range, as in laddu; an event with a non-finite axis value or weight
is counted in the diagnostics, never in a bin (it takes precedence over out-of-range).

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> ds = ld.Dataset.from_arrays(scalars={"x": np.array([0.1, 0.7, 1.0]), "y": np.array([0.2, 0.9, 0.1])})
>>> h = ds.joint_histogram([ld.scalar("x"), ld.scalar("y")], bin_edges=[[0, 0.5, 1], [0, 0.5, 1]])
>>> h.values.tolist(), h.diagnostics.out_of_range_count
([[1.0, 0.0], [0.0, 1.0]], 1)
"""

from __future__ import annotations

import json as jsonlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from laddu_dask.errors import ModelError
from laddu_dask.sums import ExactPartials, exact_sum

__all__ = ["JointHistogram", "JointHistogramDiagnostics", "joint_partials"]

AVAILABLE, UNAVAILABLE = "available", "unavailable_covariance"


@dataclass(frozen=True)
class JointHistogramDiagnostics:
    """Events left out of a joint histogram: with a non-finite axis value or weight, or out
    of range (laddu's ``JointHistogramDiagnostics``); weights of non-finite events count
    where they are finite."""

    nonfinite_count: int = 0
    nonfinite_weight: float = 0.0
    out_of_range_count: int = 0
    out_of_range_weight: float = 0.0

    def _plus(self, other: JointHistogramDiagnostics, sign: float = 1.0) -> JointHistogramDiagnostics:
        """Counts add; weights add, or subtract with the histograms' values (as laddu's)."""
        return JointHistogramDiagnostics(self.nonfinite_count + other.nonfinite_count,
                                         self.nonfinite_weight + sign * other.nonfinite_weight,
                                         self.out_of_range_count + other.out_of_range_count,
                                         self.out_of_range_weight + sign * other.out_of_range_weight)


def check_axes(bin_edges: Sequence[Sequence[float]], n_axes: int) -> list[np.ndarray]:
    """The edges of each axis, checked: one finite, strictly increasing list per axis."""
    if n_axes == 0 or len(bin_edges) != n_axes:
        raise ModelError(f"a joint histogram needs one list of bin edges per axis (at least one axis), "
                         f"got {len(bin_edges)} for {n_axes} axes")
    out = []
    for i, e in enumerate(bin_edges):
        edges = np.asarray(e, dtype=np.float64)
        if edges.ndim != 1 or edges.size < 2 or not np.isfinite(edges).all() or (np.diff(edges) <= 0).any():
            raise ModelError(f"bin edges of axis {i} must be at least two finite, strictly increasing "
                             f"numbers, got {edges.tolist()}")
        out.append(edges)
    return out


def joint_partials(values: Sequence[np.ndarray], weights: np.ndarray,
                   axes: Sequence[np.ndarray]) -> tuple[ExactPartials, int, int]:
    """The ``chunk`` step of one batch: the exact sums of the weights and squared weights
    (quantities ``2 * g`` and ``2 * g + 1``) of every flat bin ``g``, then of the events
    with a non-finite axis value or weight (their non-finite weights as 0) and of those
    out of range; and the counts of those two kinds of events."""
    finite = np.isfinite(weights)
    index = np.zeros(weights.shape, dtype=np.int64)
    inside = np.ones(weights.shape, dtype=bool)
    for x, edges in zip(values, axes, strict=True):
        finite &= np.isfinite(x)
        slot = np.searchsorted(edges, x, side="right") - 1
        inside &= (slot >= 0) & (slot < edges.size - 1)
        index = index * (edges.size - 1) + np.clip(slot, 0, edges.size - 2)
    n_bins = math.prod(e.size - 1 for e in axes)
    w = np.where(np.isfinite(weights), weights, 0.0)
    index[~inside] = n_bins + 1
    index[~finite] = n_bins  # a non-finite event is never out of range
    partials = ExactPartials.from_groups(index, np.stack([w, w * w]), n_bins + 2)
    return partials, int((~finite).sum()), int((finite & ~inside).sum())


class JointHistogram:
    """An N-dimensional weighted histogram (laddu's ``JointHistogram``): ``values`` and
    ``errors`` (``sqrt`` of the summed squared weights) are arrays of ``shape``, row-major."""

    def __init__(self, axes: Sequence[Sequence[float]], values: np.ndarray, squares: np.ndarray,
                 diagnostics: JointHistogramDiagnostics, status: str = AVAILABLE) -> None:
        self._axes = [np.asarray(a, dtype=np.float64) for a in axes]
        shape = tuple(a.size - 1 for a in self._axes)
        self._values = np.array(values, dtype=np.float64).reshape(shape)
        self._squares = np.array(squares, dtype=np.float64).reshape(shape)
        self._diagnostics, self._status = diagnostics, status

    @staticmethod
    def from_partials(axes: Sequence[np.ndarray], parts: Sequence[tuple[ExactPartials, int, int]]
                      ) -> JointHistogram:
        """The histogram of the :func:`joint_partials` of every batch (merged exactly, then
        rounded once)."""
        n = math.prod(a.size - 1 for a in axes)
        merged = ExactPartials.merge([p[0] for p in parts], k=2 * (n + 2)).to_floats().reshape(n + 2, 2)
        (nonfinite, _), (outside, _) = merged[n:].tolist()
        diagnostics = JointHistogramDiagnostics(sum(p[1] for p in parts), nonfinite,
                                                sum(p[2] for p in parts), outside)
        return JointHistogram(axes, merged[:n, 0], merged[:n, 1], diagnostics)

    @property
    def axes(self) -> list[list[float]]:
        """The bin edges of each axis."""
        return [a.tolist() for a in self._axes]

    @property
    def shape(self) -> list[int]:
        """Bins per axis."""
        return list(self._values.shape)

    @property
    def values(self) -> np.ndarray:
        """Summed weights per bin."""
        return self._values.copy()

    @property
    def errors(self) -> np.ndarray:
        """``sqrt`` of the summed squared weights per bin."""
        return np.sqrt(self._squares)

    @property
    def squared_weight_constituents(self) -> np.ndarray:
        """Summed squared weights per bin."""
        return self._squares.copy()

    @property
    def reported_errors(self) -> np.ndarray | None:
        """The errors, or None once a sum of histograms not declared independent lost them."""
        return self.errors if self._status == AVAILABLE else None

    @property
    def uncertainty_status(self) -> str:
        """``"available"``, or ``"unavailable_covariance"`` after ``add``/``subtract`` of
        histograms not declared ``independent``."""
        return self._status

    @property
    def diagnostics(self) -> JointHistogramDiagnostics:
        """Counts and weights of the events left out."""
        return self._diagnostics

    def _check(self, other: JointHistogram, what: str) -> None:
        if not isinstance(other, JointHistogram):
            raise TypeError(f"{what} needs a JointHistogram, got {type(other).__name__}")
        if len(self._axes) != len(other._axes) or not all(
                np.array_equal(a, b) for a, b in zip(self._axes, other._axes, strict=True)):
            raise ModelError(f"joint histogram {what} needs identical axes and shape")

    def merge(self, other: JointHistogram) -> None:
        """Add a histogram of other events (of the same axes) to this one, in place."""
        self._check(other, "merge")
        self._values = self._values + other._values
        self._squares = self._squares + other._squares
        self._diagnostics = self._diagnostics._plus(other._diagnostics)
        if other._status != AVAILABLE:
            self._status = other._status

    def _combine(self, other: JointHistogram, sign: float, independent: bool) -> JointHistogram:
        self._check(other, "add" if sign > 0 else "subtract")
        status = AVAILABLE if independent and AVAILABLE == self._status == other._status else UNAVAILABLE
        return JointHistogram(self._axes, self._values + sign * other._values, self._squares + other._squares,
                              self._diagnostics._plus(other._diagnostics, sign), status)

    def add(self, other: JointHistogram, *, independent: bool = False) -> JointHistogram:
        """The sum; its errors stay reported only when the two are ``independent``."""
        return self._combine(other, 1.0, independent)

    def subtract(self, other: JointHistogram, *, independent: bool = False) -> JointHistogram:
        """The difference; its errors stay reported only when the two are ``independent``."""
        return self._combine(other, -1.0, independent)

    def scaled(self, factor: float) -> JointHistogram:
        """Values and left-out weights times ``factor``, squared weights times its square."""
        f = float(factor)
        d = self._diagnostics
        diagnostics = JointHistogramDiagnostics(d.nonfinite_count, d.nonfinite_weight * f,
                                                d.out_of_range_count, d.out_of_range_weight * f)
        return JointHistogram(self._axes, self._values * f, self._squares * f * f, diagnostics, self._status)

    def __add__(self, other: JointHistogram) -> JointHistogram:
        return self.add(other)

    def __sub__(self, other: JointHistogram) -> JointHistogram:
        return self.subtract(other)

    def __mul__(self, factor: float) -> JointHistogram:
        return self.scaled(factor)

    __rmul__ = __mul__

    def to_json(self) -> str:
        """laddu's JSON form (``axes``, ``shape``, flat ``values``, ``sum_squared_weights``,
        ``diagnostics``)."""
        d = self._diagnostics
        return jsonlib.dumps({"axes": self.axes, "shape": self.shape, "values": self._values.ravel().tolist(),
                           "sum_squared_weights": self._squares.ravel().tolist(),
                           "diagnostics": {"nonfinite_count": d.nonfinite_count,
                                           "nonfinite_weight": d.nonfinite_weight,
                                           "out_of_range_count": d.out_of_range_count,
                                           "out_of_range_weight": d.out_of_range_weight}})

    @staticmethod
    def from_json(json: str) -> JointHistogram:
        """The histogram :meth:`to_json` (or laddu's) wrote."""
        d = jsonlib.loads(json)
        return JointHistogram(d["axes"], np.array(d["values"]), np.array(d["sum_squared_weights"]),
                              JointHistogramDiagnostics(**d["diagnostics"]))

    def __repr__(self) -> str:
        return f"JointHistogram(shape={self.shape}, total {exact_sum(self._values):g})"
