"""laddu's dataset operations: selections, bins, subsamples, bootstrap replicas, columns.

:class:`DatasetOperations` gives :class:`~laddu_dask.data.dataset.Dataset` laddu 0.28.1's
methods of the same names.  The ones returning datasets (``select``, ``bin_by``,
``subsample``, ``bootstrap``) are lazy views built on :mod:`laddu_dask.data.derived`: they
copy nothing and load their parent's partitions when they are loaded, so they stream
when the parent streams.  The ones returning arrays (``weights``, ``column``,
``evaluate``) read the partitions once, in order.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> ds = ld.Dataset.from_arrays(scalars={"m": np.linspace(0.5, 1.5, 11)})
>>> bins = ds.bin_by(ld.scalar("m"), bins=ld.Bin([0.5, 1.0, 1.5]))
>>> [(b.index, b.low, b.high, b.dataset.n_events) for b in bins]
[(0, 0.5, 1.0, 5), (1, 1.0, 1.5, 6)]
>>> ds.stats().events, ds.p4_names(), ds.scalar_names()
(11, [], ['m'])
"""

from __future__ import annotations

import functools
import json as jsonlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from laddu_dask.compile.selection import expression_values
from laddu_dask.data.batch import BatchIterator
from laddu_dask.data.checks import check_execution, resolve_chunk_size
from laddu_dask.data.derived import DerivedOrigin, RowRule, map_batches
from laddu_dask.data.histogram import Histogram, histogram_partials
from laddu_dask.data.joint_histogram import JointHistogram, check_axes, joint_partials
from laddu_dask.errors import ModelError
from laddu_dask.expr.graph import walk
from laddu_dask.expr.node import Expr
from laddu_dask.expr.predicate import Predicate
from laddu_dask.expr.value_type import real_valued
from laddu_dask.sums import ExactPartials

__all__ = ["Bin", "BinnedDataset", "DatasetOperations", "DatasetStats"]


class Bin:
    """One-dimensional bin edges (laddu's ``Bin``): ``N + 1`` strictly increasing finite edges.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.Bin.uniform(4, low=0.0, high=2.0).edges
    [0.0, 0.5, 1.0, 1.5, 2.0]
    """

    __slots__ = ("_edges",)

    def __init__(self, edges: Sequence[float] | np.ndarray) -> None:
        try:
            values = [float(e) for e in edges]
        except (TypeError, ValueError):
            raise ModelError(f"bin edges must be a sequence of numbers, got {edges!r}") from None
        if len(values) < 2:
            raise ModelError(f"bins need at least two edges, got {len(values)}")
        if not all(math.isfinite(v) for v in values) or any(b <= a for a, b in zip(values, values[1:])):
            raise ModelError(f"bin edges must be finite and strictly increasing, got {values}")
        self._edges = values

    @staticmethod
    def uniform(count: int, *, low: float, high: float) -> Bin:
        """``count`` equal bins from ``low`` to ``high`` (edges ``low + i (high - low) / count``)."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ModelError(f"the bin count must be a positive integer, got {count!r}")
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ModelError(f"uniform bins need finite low < high, got {low!r} and {high!r}")
        edges = [low + i * (high - low) / count for i in range(count)] + [float(high)]
        return Bin(edges)

    @property
    def edges(self) -> list[float]:
        """A copy of the edges."""
        return list(self._edges)

    def __len__(self) -> int:
        return len(self._edges) - 1

    def __repr__(self) -> str:
        return f"Bin({self._edges})"

    def to_json(self) -> str:
        """The edges as a JSON list, laddu's form (``Bin.from_json`` of either library reads it).

        Examples
        --------
        >>> import laddu_dask as ld
        >>> ld.Bin.from_json(json=ld.Bin([0.0, 0.5, 2.0]).to_json()).edges
        [0.0, 0.5, 2.0]
        """
        return jsonlib.dumps(self._edges)

    @staticmethod
    def from_json(json: str) -> Bin:
        """The bins :meth:`to_json` (or laddu's) wrote; ``ModelError`` for anything else."""
        try:
            edges = jsonlib.loads(json)
        except (TypeError, ValueError):
            raise ModelError(f"Bin.from_json needs a JSON list of edges, got {json!r}") from None
        if not isinstance(edges, list):
            raise ModelError(f"Bin.from_json needs a JSON list of edges, got {json!r}")
        return Bin(edges)


@dataclass(frozen=True)
class BinnedDataset:
    """A bin of :meth:`DatasetOperations.bin_by`: its index, edges and events (laddu's ``BinnedDataset``).

    ``low`` is inclusive and ``high`` exclusive, except in the last bin, which holds its
    upper edge too (as in laddu).
    """

    index: int
    low: float
    high: float
    dataset: Any


@dataclass(frozen=True)
class DatasetStats:
    """Event and weight totals of a dataset (laddu's ``DatasetStats``), every sum exact.

    ``effective_entries`` is ``(sum w)^2 / sum w^2``, ``None`` when ``sum w^2`` is 0;
    ``negative_weights`` is the sum of the negative weights (not above 0), as in laddu.
    """

    events: int
    sum_weights: float
    sum_squared_weights: float
    effective_entries: float | None
    positive_weights: float
    negative_weights: float


class DatasetOperations:
    """laddu's dataset methods (see the module); mixed into :class:`~laddu_dask.data.dataset.Dataset`."""

    # -- lazy views ----------------------------------------------------------------------
    def _derived(self, rule: RowRule, counts: Sequence[int] | None = None) -> Any:
        return type(self)(DerivedOrigin(self, rule, counts), memory_policy=self.memory_policy,
                          memory=self.memory)

    def select(self, predicate: Predicate, *, execution: Any = None) -> Any:
        """The events where ``predicate`` holds, lazily (laddu's ``Dataset.select``).

        Only the columns the predicate reads are loaded now, to count the events each
        partition keeps; the selection keeps its parent's partitioning and memory policy.
        ``execution`` is accepted for laddu's signature.

        Raises
        ------
        ModelError
            If ``predicate`` is not a Predicate or reads a column the dataset lacks.
        ParameterError
            If it reads a free parameter (a selection is event-only).

        Examples
        --------
        >>> import numpy as np
        >>> import laddu_dask as ld
        >>> ds = ld.Dataset.from_arrays(scalars={"t": np.array([-0.9, -0.5, -0.05, -1.2])})
        >>> ds.select(ld.Predicate.between(ld.scalar("t"), low=-1.0, high=-0.1)).column("t")
        array([-0.9, -0.5])
        """
        rule = RowRule.select(predicate)
        self.schema.require(rule.columns, self._source_label(), needed_by="the selection")
        return self._derived(rule)

    def subsample(self, fraction: float, *, seed: int = 0) -> Any:
        """Each event kept with probability ``fraction``, reproducibly (laddu's ``subsample``).

        The draw of event ``i`` depends only on ``seed`` and ``i``, so the subsample is the
        same for any partitioning.
        """
        return self._derived(RowRule.subsample(fraction, seed))

    def bootstrap(self, *, seed: int = 0) -> Any:
        """A Poisson-bootstrap replica: every weight times an independent Poisson(1) count
        (laddu's ``bootstrap``); reproducible for a seed, whatever the partitioning."""
        return self._derived(RowRule.bootstrap(seed))

    def bin_by(self, expr: Expr, *, bins: Bin | Sequence[float],
               execution: Any = None) -> list[BinnedDataset]:
        """The events in each bin of the expression ``expr`` (laddu's ``bin_by``).

        Bins are ``[low, high)``, the last ``[low, high]``; events outside the edges (or
        where ``expr`` is NaN) are in no bin.  A complex expression is binned by its real
        part, as laddu does (``Vec4.m()`` is complex: ``i sqrt(-m^2)`` when space-like).
        One pass over the columns ``expr`` reads counts every bin; each bin is a lazy
        selection of this dataset.

        Examples
        --------
        >>> import numpy as np
        >>> import laddu_dask as ld
        >>> ds = ld.Dataset.from_arrays(scalars={"x": np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 2.5])})
        >>> [b.dataset.column("x").tolist() for b in ds.bin_by(ld.scalar("x"), bins=ld.Bin([0, 1, 2]))]
        [[0.0, 0.5], [1.0, 2.0]]
        """
        if not isinstance(bins, Bin):
            bins = Bin(bins)
        if not isinstance(expr, Expr):
            raise ModelError(f"bin_by needs an expression, got {type(expr).__name__}")
        if expr.kind != "real":
            expr = expr.real()
        edges = bins.edges
        columns = [n.attr for n in _columns_of(expr)]
        self.schema.require(columns, self._source_label(), needed_by="bin_by")
        counts = map_batches(self, columns, functools.partial(_bin_counts, expr, edges))
        out = []
        for i, (low, high) in enumerate(zip(edges, edges[1:])):
            last = i == len(edges) - 2
            predicate = Predicate.between(expr, low=low, high=high, closed="both" if last else "left")
            rule = RowRule.select(predicate, label=f"bin {i} [{low:g}, {high:g}{']' if last else ')'}")
            out.append(BinnedDataset(i, low, high, self._derived(rule, [c[i] for c in counts])))
        return out

    # -- arrays --------------------------------------------------------------------------
    def weights(self) -> np.ndarray:
        """Every event weight, in order (1 where none are stored)."""
        return _concat([b.weights for b in self.iter_batches([])])

    def column(self, name: str) -> np.ndarray:
        """One flat column (``"beam_px"``, ``"pol_angle"``, ``"weight"``) of every event, in order
        (an integer column of ``from_arrays(columns=)`` in its dtype)."""
        if name == "weight":
            return self.weights()
        self.schema.require([name], self._source_label(), needed_by="column")
        values, exact = _concat([b.columns[name] for b in self.iter_batches([name])]), dict(self.schema.exact)
        return values.astype(exact[name]) if name in exact else values  # laddu's integer columns

    def evaluate(self, expr: Expr | Mapping[str, Expr], *, execution: Any = None,
                 real: bool = False) -> Any:
        """The value of a parameter-free expression (or of each of a mapping of them) for
        every event (laddu's ``Dataset.evaluate``): ``complex128`` arrays, or ``float64``
        with ``real=True``.

        ``real=True`` takes what laddu types as real (:func:`~laddu_dask.expr.value_type.
        real_valued`): columns, real constants and every function of them, such as
        ``Vec4.m()``, ``Channel.mass(...)``, ``sqrt``, ``log``, and returns the real part of
        their values (``Vec4.m()`` of a space-like vector is 0, as in laddu); an expression
        with a complex constant or operation (``cis``, a line shape, ``1j * x``) is refused.

        Parameters
        ----------
        expr : Expr or mapping of str to Expr
            One expression, or named ones (an empty mapping reads no events).
        execution : Execution, optional
            Accepted for laddu's signature (the events are read in this process).
        real : bool
            Return real values (see above).

        Raises
        ------
        ModelError
            Not an expression; a free parameter in it; ``real=True`` with a complex-typed
            expression (naming it). Checked for every expression before any event is read.
        SchemaError
            A column the dataset lacks.
        TypeError
            ``real`` is not a bool, or ``execution`` not an ``Execution``.

        Examples
        --------
        >>> import numpy as np
        >>> import laddu_dask as ld
        >>> ds = ld.Dataset.from_arrays(scalars={"x": np.array([1.0, 4.0, -4.0])})
        >>> ds.evaluate(ld.scalar("x") * 2.0, real=True)
        array([ 2.,  8., -8.])
        >>> ds.evaluate(ld.scalar("x").sqrt())  # complex, as in laddu
        array([1.+0.j, 2.+0.j, 0.+2.j])
        >>> ds.evaluate(ld.scalar("x").sqrt(), real=True)  # its real part, as in laddu
        array([1., 2., 0.])
        """
        if not isinstance(real, bool):
            raise TypeError(f"evaluate(real=) must be a bool, got {type(real).__name__}")
        check_execution(execution, "evaluate")
        named = isinstance(expr, Mapping)
        exprs = dict(expr) if named else {None: expr}
        for name, e in exprs.items():
            what = "evaluate" if name is None else f"evaluate of {name!r}"
            if not isinstance(e, Expr):
                raise ModelError(f"{what} needs an expression, got {type(e).__name__}")
            free = sorted({n.attr.name for n in walk(e) if n.op == "param" and not n.attr.is_fixed})
            if free:
                raise ModelError(f"{what}: a dataset expression cannot have free parameters "
                                 f"({', '.join(map(repr, free))}); evaluate it with ld.Model(...).evaluate")
            if real and not real_valued(e):
                raise ModelError(f"{what}(real=True) needs a real-valued expression; this one is "
                                 "complex-valued (a complex constant or operation feeds it): take .real(), "
                                 ".imag() or .norm_sqr(), or pass real=False")
        values = {name: self._values(e, real) for name, e in exprs.items()}
        return values if named else values[None]

    def _values(self, expr: Expr, real: bool) -> np.ndarray:
        columns = [n.attr for n in _columns_of(expr)]
        self.schema.require(columns, self._source_label(), needed_by="evaluate")
        parts = [np.broadcast_to(expression_values(expr, b.columns, n=b.n_events), (b.n_events,))
                 for b in self.iter_batches(columns)]
        values = _concat(parts)
        return np.real(values).astype(np.float64) if real else values.astype(np.complex128)

    def histogram(self, expr: Expr, *, bin_edges: Sequence[float], event_weights: bool = True,
                  weight: Expr | None = None, execution: Any = None) -> Histogram:
        """The weighted histogram of a real expression (laddu's ``Dataset.histogram``).

        Each event counts with its weight (1 with ``event_weights=False``) times ``weight``
        when given; bins are ``[low, high)`` and the last edge is overflow, as in laddu
        (complex expressions count by their real parts, as laddu's do).  Partitions are
        read one at a time and every bin's sum is exact, so the histogram does not depend
        on the partitioning.

        Examples
        --------
        >>> import numpy as np
        >>> import laddu_dask as ld
        >>> ds = ld.Dataset.from_arrays(scalars={"x": np.array([0.1, 0.5, 1.5, 2.0])}, weights=[1, 2, 3, 4])
        >>> h = ds.histogram(ld.scalar("x"), bin_edges=[0.0, 1.0, 2.0])
        >>> h.counts, h.overflow, [round(e, 6) for e in h.errors]
        ([3.0, 3.0], 4.0, [2.236068, 3.0])
        """
        edges = np.asarray(Bin(bin_edges).edges)
        for what, e in (("histogram", expr), ("the histogram weight", weight)):
            if e is not None and not isinstance(e, Expr):
                raise ModelError(f"{what} needs an expression, got {type(e).__name__}")
        expr = expr if expr.kind == "real" else expr.real()  # laddu histograms the real part
        if weight is not None and weight.kind != "real":
            weight = weight.real()
        exprs = [expr] if weight is None else [expr, weight]
        columns = list(dict.fromkeys(n.attr for e in exprs for n in _columns_of(e)))
        self.schema.require(columns, self._source_label(), needed_by="histogram")
        parts = []
        for b in self.iter_batches(columns):
            x, w = (np.broadcast_to(expression_values(e, b.columns, n=b.n_events), (b.n_events,)) for e in
                    (expr, weight if weight is not None else expr))
            total = b.weights if event_weights else np.ones(b.n_events)
            if weight is not None:
                total = total * w
            parts.append(histogram_partials(x, total, edges))
        return Histogram.from_partials(parts, edges)

    def joint_histogram(self, axes: Sequence[Expr], *, bin_edges: Sequence[Sequence[float]],
                        event_weights: bool = True, weight: Expr | None = None,
                        execution: Any = None) -> JointHistogram:
        """The N-dimensional weighted histogram of real expressions (laddu's
        ``Dataset.joint_histogram``): one list of edges per axis, ``[low, high)`` bins, the
        last edge out of range; each event counts with its weight (1 with
        ``event_weights=False``) times ``weight``.  Partitions are read one at a time and
        every sum is exact.

        Raises
        ------
        ModelError
            No axes, a list of edges per axis missing or not increasing, or a complex-typed
            axis or weight (laddu's ``real=True`` typing).
        """
        check_execution(execution, "joint_histogram")
        axes = list(axes)
        edges = check_axes(bin_edges, len(axes))
        exprs = [*axes, *([] if weight is None else [weight])]
        for e in exprs:
            if not isinstance(e, Expr):
                raise ModelError(f"joint_histogram needs expressions, got {type(e).__name__}")
            if not real_valued(e):
                raise ModelError("joint_histogram needs real-valued axes and weight; one is complex-valued")
        columns = list(dict.fromkeys(n.attr for e in exprs for n in _columns_of(e)))
        self.schema.require(columns, self._source_label(), needed_by="joint_histogram")
        parts = []
        for b in self.iter_batches(columns):
            x = [np.real(np.broadcast_to(expression_values(e, b.columns, n=b.n_events), (b.n_events,)))
                 for e in exprs]
            w = b.weights if event_weights else np.ones(b.n_events)
            if weight is not None:
                w = w * x.pop()
            parts.append(joint_partials(x, w, edges))
        return JointHistogram.from_partials(edges, parts)

    def stats(self) -> DatasetStats:
        """Event count and exact weight totals (laddu's ``Dataset.stats``)."""
        w = self.weights()
        terms = np.stack([w, w * w, np.where(w > 0, w, 0.0), np.where(w < 0, w, 0.0)])
        total, squares, positive, negative = ExactPartials.from_terms(terms).to_floats().tolist()
        return DatasetStats(
            events=int(w.shape[0]), sum_weights=total, sum_squared_weights=squares,
            effective_entries=total * total / squares if squares > 0 else None,
            positive_weights=positive, negative_weights=negative,
        )

    def batches(self, *, chunk_size: int | None = None, execution: Any = None) -> BatchIterator:
        """The events in batches of at most ``chunk_size`` (default: the partitions), one
        loaded at a time, as a closeable :class:`~laddu_dask.io.BatchIterator` (laddu's
        ``Dataset.batches``); each is an :class:`~laddu_dask.io.EventBatch` with its
        effective weights.

        Examples
        --------
        >>> import numpy as np
        >>> import laddu_dask as ld
        >>> ds = ld.Dataset.from_arrays(scalars={"x": np.arange(3.0)}, weights=[1.0, 2.0, 0.5])
        >>> [b.weights.tolist() for b in ds.batches(chunk_size=2)]
        [[1.0, 2.0], [0.5]]
        """
        check_execution(execution, "batches")
        source = self if chunk_size is None else self.with_chunk_size(resolve_chunk_size(chunk_size))
        return BatchIterator(source.iter_batches())

    def column_names(self) -> list[str]:
        """The scalar column names, the names :meth:`column` takes (laddu's ``column_names``)."""
        return list(self.schema.scalars)

    def p4_names(self) -> list[str]:
        """The four-vector names (laddu's ``Dataset.p4_names()``)."""
        return list(self.schema.p4s)

    def scalar_names(self) -> list[str]:
        """The scalar column names (laddu's ``Dataset.scalar_names()``)."""
        return list(self.schema.scalars)


def _columns_of(expr: Expr) -> list[Expr]:
    return [n for n in walk(expr) if n.op == "column"]


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0)


def _bin_counts(expr: Expr, edges: list[float], part: Any, batch: Any) -> list[int]:
    x = np.broadcast_to(expression_values(expr, batch.columns, n=batch.n_events), (batch.n_events,))
    counts = []
    for i, (low, high) in enumerate(zip(edges, edges[1:])):
        inside = (x >= low) & ((x <= high) if i == len(edges) - 2 else (x < high))
        counts.append(int(np.count_nonzero(inside)))
    return counts
