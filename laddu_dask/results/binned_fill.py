"""Exact per-bin sums of many weighted quantities over joint axis grids, one Dask task per
partition (the engine of :class:`~laddu_dask.results.yield_projection.YieldProjection`).

A partition's task evaluates the axis expressions, assigns every event a row-major flat
bin of each requested grid (``[low, high)``, the last edge outside; a non-finite
coordinate is counted, not binned), evaluates each model selection at every point (the
fitted point and an ensemble's draws, from one preparation), and returns, per grid and
bin, the exact partial sums (:class:`~laddu_dask.runtime.grouped.GroupedPartials`) of the
rows

``w, 1, w^2``, then for every selection ``w I(p_0) ... w I(p_K), (w I(p_0))^2`` and, when asked,
``w dI/dp_j`` at ``p_0`` for each of its parameters.

The partitions' sums merge exactly, so every bin is the correctly rounded sum whatever the
partitioning.  Rows are built and summed a block at a time, so a large ensemble does not
hold all its per-event rows at once.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> ds = ld.Dataset.from_arrays(scalars={"x": np.array([0.1, 0.6, 0.7, 2.0])}, weights=[1.0, 2.0, 3.0, 4.0])
>>> fill = fill_grids(ld.Execution(), ds, [[ld.Axis(ld.scalar("x"), edges=[0.0, 0.5, 1.0])]], [])
>>> fill.sums[0].tolist(), fill.out_of_range
([[1.0, 1.0, 1.0], [5.0, 2.0, 13.0]], [1])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.compile.dtypes import real_dtype
from laddu_dask.compile.selection import expression_values
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.dataset import Dataset
from laddu_dask.results.binned import Axis
from laddu_dask.results.events import host, intensity, prepare
from laddu_dask.runtime.grouped import GroupedPartials
from laddu_dask.runtime.reducer import Params, PartitionReducer

#: The rows every fill sums first: ``w``, ``1`` (the events) and ``w^2``.
BASE_ROWS = 3
#: Rows summed together (bounds the per-event memory of a partition's task).
_ROW_BLOCK = 32


@dataclass(frozen=True)
class Evaluation:
    """One model selection of a fill: its reducer, its points, and whether to sum the
    gradient rows at the first point."""

    reducer: PartitionReducer
    points: tuple[Params, ...]
    with_gradient: bool

    @property
    def rows(self) -> int:
        """How many rows this selection adds."""
        return len(self.points) + 1 + (self.reducer.n_params if self.with_gradient else 0)


@dataclass
class GridFill:
    """The merged fill of one dataset: per grid, a ``(bins, rows)`` array of sums, and the
    events with a non-finite coordinate and those outside the grid."""

    sums: list[np.ndarray]
    nonfinite: list[int]
    out_of_range: list[int]


def _flat_bins(coordinates: list[np.ndarray], grids: Sequence[Sequence[tuple[int, np.ndarray]]],
               n: int) -> tuple[list[np.ndarray], list[int], list[int]]:
    """Every event's flat bin in each grid (-1: none), and the counts of non-finite and
    out-of-range events."""
    flats, nonfinite, outside = [], [], []
    for grid in grids:
        flat = np.zeros(n, dtype=np.int64)
        ok = np.ones(n, dtype=bool)
        bad = np.zeros(n, dtype=bool)
        for column, edges in grid:
            x = coordinates[column]
            bad |= ~np.isfinite(x)
            k = np.searchsorted(edges, x, side="right") - 1
            ok &= (k >= 0) & (k < len(edges) - 1)
            flat = flat * (len(edges) - 1) + np.clip(k, 0, len(edges) - 2)
        ok &= ~bad
        flats.append(np.where(ok, flat, -1))
        nonfinite.append(int(bad.sum()))
        outside.append(int((~ok & ~bad).sum()))
    return flats, nonfinite, outside


def _rows(batch: EventBatch, evaluations: Sequence[Evaluation]) -> Iterator[np.ndarray]:
    """The partition's rows (see the module docstring), one at a time."""
    w = host(batch.weights)
    yield w
    yield np.ones_like(w)
    yield w * w
    for ev in evaluations:
        part = prepare(batch, ev.reducer)
        first = None
        for params in ev.points:
            row = w * intensity(part, ev.reducer, params)
            first = row if first is None else first
            yield row
        yield first * first
        if ev.with_gradient:
            with ev.reducer.device_context():
                _, grads = ev.reducer.compiled.values_and_vjp(part.cache, ev.points[0].values, part.weights,
                                                             part.n, ev.reducer.precision)
            yield from (host(g) for g in grads)


def _blocks(rows: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
    block: list[np.ndarray] = []
    for row in rows:
        block.append(row)
        if len(block) == _ROW_BLOCK:
            yield np.stack(block)
            block = []
    if block:
        yield np.stack(block)


def _fill(batch: EventBatch, axes: list[Any], grids: list, shapes: list[tuple[int, int]],
          evaluations: tuple[Evaluation, ...]) -> tuple:
    """One partition's task: per grid, the :class:`GroupedPartials` of its bins, and the
    diagnostic counts."""
    n = batch.n_events
    coordinates = [np.broadcast_to(host(expression_values(a, batch.columns, n=n)), (n,)) for a in axes]
    flats, nonfinite, outside = _flat_bins(coordinates, grids, n)
    pieces: list[list[GroupedPartials]] = [[] for _ in grids]
    first = 0
    for block in _blocks(_rows(batch, evaluations)):
        for flat, shape, out in zip(flats, shapes, pieces, strict=True):
            out.append(GroupedPartials.from_terms(flat, block, shape, first_row=first))
        first += block.shape[0]
    merged = [GroupedPartials.merge(p, shape) for p, shape in zip(pieces, shapes, strict=True)]
    return merged, nonfinite, outside


def _merge(shapes: list[tuple[int, int]], *parts: tuple) -> GridFill:
    sums = [GroupedPartials.merge([p[0][g] for p in parts], shape).to_floats()
            for g, shape in enumerate(shapes)]
    return GridFill(sums, [sum(p[1][g] for p in parts) for g in range(len(shapes))],
                    [sum(p[2][g] for p in parts) for g in range(len(shapes))])


def fill_layer(dataset: Dataset, grids: Sequence[Sequence[Axis]], evaluations: Sequence[Evaluation],
               tag: str) -> tuple[HighLevelGraph, tuple]:
    """The graph of one dataset's fill and the key of its merged :class:`GridFill`."""
    exprs: list[Any] = []
    spec = []
    for grid in grids:
        cells = []
        for axis in grid:
            at = next((i for i, e in enumerate(exprs) if e is axis.expr), None)  # hash-consed
            if at is None:
                exprs.append(axis.expr)
                at = len(exprs) - 1
            cells.append((at, np.asarray(axis.edges)))
        spec.append(cells)
    columns = [c for e in exprs for c in CompiledModel.from_expr(e).columns]
    columns += [c for ev in evaluations for c in ev.reducer.compiled.columns]
    columns = list(dict.fromkeys(columns))
    dataset.schema.require(columns, ", ".join(dataset.sources))
    precision = evaluations[0].reducer.precision if evaluations else "f64"
    loads, keys = dataset.partition_graph(columns, real_dtype(precision), name="laddu-binned-load")
    rows = BASE_ROWS + sum(ev.rows for ev in evaluations)
    shapes = [(int(np.prod([a.bins for a in grid])), rows) for grid in grids]
    token = tokenize(keys[0][0] if keys else tag, [id(e) for e in exprs],
                     [[c[1].tolist() for c in g] for g in spec],
                     [(id(ev.reducer), [p.values for p in ev.points], ev.with_gradient)
                      for ev in evaluations])
    name = f"laddu-binned-{tag}-{token}"
    evs = tuple(evaluations)
    layer: dict[Any, Any] = {(name, i): (_fill, key, exprs, spec, shapes, evs) for i, key in enumerate(keys)}
    out = (f"{name}-merged", 0)
    layer[out] = (_merge, shapes, *[(name, i) for i in range(len(keys))])
    return HighLevelGraph.merge(loads, HighLevelGraph({name: layer}, {name: set(loads.layers)})), out


def fill_grids(execution: Any, dataset: Dataset, grids: Sequence[Sequence[Axis]],
               evaluations: Sequence[Evaluation], tag: str = "fill") -> GridFill:
    """Fill one dataset (one round of the execution); see :func:`fill_layer`."""
    graph, key = fill_layer(dataset, grids, evaluations, tag)
    return execution.get(graph, [key], progress="binned sums")[0]
