"""Exact per-bin sums of many weighted quantities over joint axis grids, one Dask task per
partition (the engine of :class:`~laddu_dask.results.yield_projection.YieldProjection`, and,
with one grid of no axes, a single bin, of the integrals of
:mod:`~laddu_dask.results.fitted_integrals`).

A partition's task evaluates the axis expressions, assigns every event a row-major flat
bin of each requested grid (``[low, high)``, the last edge outside; a non-finite
coordinate is counted, not binned), evaluates each model selection at every point (the
fitted point and an ensemble's draws, from one preparation), and returns, per grid and
bin, the exact partial sums (:class:`~laddu_dask.sums.GroupedPartials`) of the
rows

``w, 1, w^2``, then for every selection ``w I(p_0) ... w I(p_K), (w I(p_0))^2`` and, when asked,
``w dI/dp_j`` at ``p_0`` for each of its parameters.

The partitions' sums merge exactly, so every bin is the correctly rounded sum whatever the
partitioning.  Rows are built and summed a block at a time, so a large ensemble does not
hold all its per-event rows at once, and no prepared partition outlives its task:
:func:`plan_fill` sizes the partitions for the workers and the host budget by what a task
holds (:func:`task_bytes`) and records the pass as a memory decision.

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
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from laddu_dask.cluster_waits import wait_for_workers
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.compile.dtypes import real_dtype
from laddu_dask.compile.selection import expression_values
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.dataset import Dataset
from laddu_dask.results.binned import Axis
from laddu_dask.results.events import host, intensity, prepare
from laddu_dask.runtime.memory import decide_storage, format_bytes
from laddu_dask.runtime.partition import Params
from laddu_dask.runtime.prepared import auto_chunk_size, budget_chunk
from laddu_dask.runtime.reducer import PartitionReducer
from laddu_dask.runtime.reduction import object_token
from laddu_dask.sums import GroupedPartials, combine_tree
from laddu_dask.sums.grouped import WORK_BYTES as GROUPED_WORK_BYTES

#: The rows every fill sums first: ``w``, ``1`` (the events) and ``w^2``.
BASE_ROWS = 3
#: Rows summed together (bounds the per-event memory of a partition's task).
_ROW_BLOCK = 8
#: Events of a partition whose gradients are computed together.
_EVENT_SLICE = 8192
#: The largest automatic partition of a fill: its task holds hundreds of bytes per event
#: (:func:`task_bytes`), and a few milliseconds of fixed cost are a few percent of it.
MAX_FILL_CHUNK = 1 << 16


@dataclass(frozen=True)
class Evaluation:
    """One model selection of a fill: its reducer, its points, and whether to sum the
    gradient rows at the first point."""

    reducer: PartitionReducer
    points: tuple[Params, ...]
    with_gradient: bool

    @classmethod
    def of(cls, selection: Any, points: Sequence[Any], with_gradient: bool) -> Evaluation:
        """A :class:`~laddu_dask.results.integrals.Selection` at likelihood ``points``."""
        model = selection.model
        return cls(model.reducer, tuple(model._params(selection.local(p)) for p in points), with_gradient)

    @property
    def rows(self) -> int:
        """How many rows this selection adds."""
        return len(self.points) + 1 + (self.reducer.n_params if self.with_gradient else 0)


@dataclass(frozen=True)
class EvaluationSums:
    """One evaluation's rows of one grid's table: ``values`` at every point ``(points,
    bins)``, ``squares`` (of ``w I`` at the first point, ``(bins,)``) and ``gradients``
    (``(bins, n_params)`` by the evaluation's own parameters, or ``None``)."""

    values: np.ndarray
    squares: np.ndarray
    gradients: np.ndarray | None

    @staticmethod
    def split(table: np.ndarray, evaluations: Sequence[Evaluation]) -> list[EvaluationSums]:
        """Every evaluation's rows of a ``(bins, rows)`` table (after the :data:`BASE_ROWS`)."""
        out, at = [], BASE_ROWS
        for ev in evaluations:
            k = len(ev.points)
            grads = table[:, at + k + 1:at + ev.rows] if ev.with_gradient else None
            out.append(EvaluationSums(table[:, at:at + k].T, table[:, at + k], grads))
            at += ev.rows
        return out


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
            yield from _gradient_rows(part, ev)


def _gradient_rows(part: Any, ev: Evaluation) -> np.ndarray:
    """``w dI/dp_j`` of every event at the first point, ``(n_params, n)``: the reverse sweep
    runs :data:`_EVENT_SLICE` events at a time, which bounds its temporaries."""
    out = np.empty((ev.reducer.n_params, part.n))
    compiled, params = ev.reducer.compiled, ev.points[0].values
    with ev.reducer.device_context():
        for a in range(0, part.n, _EVENT_SLICE):
            b = min(part.n, a + _EVENT_SLICE)
            _, grads = compiled.values_and_vjp([c[a:b] for c in part.cache], params, part.weights[a:b], b - a,
                                               ev.reducer.precision)
            for j, g in enumerate(grads):
                out[j, a:b] = host(g)
    return out


def _blocks(rows: Iterator[np.ndarray], n: int) -> Iterator[np.ndarray]:
    """The rows, :data:`_ROW_BLOCK` at a time, in one reused ``(rows, n)`` buffer."""
    block = np.empty((_ROW_BLOCK, n))
    k = 0
    for row in rows:
        block[k] = row
        k += 1
        if k == _ROW_BLOCK:
            yield block
            k = 0
    if k:
        yield block[:k]


def _fill(batch: EventBatch, axes: list[Any], grids: list, shapes: list[tuple[int, int]],
          evaluations: tuple[Evaluation, ...]) -> tuple:
    """One partition's task: per grid, the :class:`GroupedPartials` of its bins, and the
    diagnostic counts."""
    n = batch.n_events
    coordinates = [np.broadcast_to(host(expression_values(a, batch.columns, n=n)), (n,)) for a in axes]
    flats, nonfinite, outside = _flat_bins(coordinates, grids, n)
    pieces: list[list[GroupedPartials]] = [[] for _ in grids]
    first = 0
    for block in _blocks(_rows(batch, evaluations), n):
        for flat, shape, out in zip(flats, shapes, pieces, strict=True):
            out.append(GroupedPartials.from_terms(flat, block, shape, first_row=first))
        first += block.shape[0]
    merged = [combine_tree(p, partial(GroupedPartials.merge, shape=shape))
              for p, shape in zip(pieces, shapes, strict=True)]
    return merged, nonfinite, outside


def _merge(shapes: list[tuple[int, int]], *parts: tuple) -> GridFill:
    """The merged fill of every partition's :func:`_fill`: each grid's grouped partials
    combined exactly (the generic reduction's ``combine``) and rounded once per bin."""
    sums = [combine_tree([p[0][g] for p in parts], partial(GroupedPartials.merge, shape=shape)).to_floats()
            for g, shape in enumerate(shapes)]
    return GridFill(sums, [sum(p[1][g] for p in parts) for g in range(len(shapes))],
                    [sum(p[2][g] for p in parts) for g in range(len(shapes))])


def _axes_and_columns(dataset: Dataset, grids: Sequence[Sequence[Axis]], evaluations: Sequence[Evaluation]
                      ) -> tuple[list[Any], list, list[str]]:
    """The distinct axis expressions, each grid's ``(expression index, edges)`` cells, and
    the columns a fill reads (checked against the dataset's schema)."""
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
    return exprs, spec, columns


def fill_layer(dataset: Dataset, grids: Sequence[Sequence[Axis]], evaluations: Sequence[Evaluation],
               tag: str) -> tuple[HighLevelGraph, tuple]:
    """The graph of one dataset's fill and the key of its merged :class:`GridFill`."""
    exprs, spec, columns = _axes_and_columns(dataset, grids, evaluations)
    precision = evaluations[0].reducer.precision if evaluations else "f64"
    loads, keys = dataset.partition_graph(columns, real_dtype(precision), name="laddu-binned-load")
    rows = BASE_ROWS + sum(ev.rows for ev in evaluations)
    shapes = [(int(np.prod([a.bins for a in grid])), rows) for grid in grids]
    token = tokenize(keys[0][0] if keys else tag, [object_token(e) for e in exprs],
                     [[c[1].tolist() for c in g] for g in spec],
                     [(object_token(ev.reducer), [p.values for p in ev.points], ev.with_gradient)
                      for ev in evaluations])
    name = f"laddu-binned-{tag}-{token}"
    evs = tuple(evaluations)
    layer: dict[Any, Any] = {(name, i): (_fill, key, exprs, spec, shapes, evs) for i, key in enumerate(keys)}
    out = (f"{name}-merged", 0)
    layer[out] = (_merge, shapes, *[(name, i) for i in range(len(keys))])
    return HighLevelGraph.merge(loads, HighLevelGraph({name: layer}, {name: set(loads.layers)})), out


def task_bytes(dataset: Dataset, grids: Sequence[Sequence[Axis]], evaluations: Sequence[Evaluation]
               ) -> tuple[int, int]:
    """The bytes one partition's task of a fill holds at its peak, ``(per event, fixed)``:
    the loaded columns, the coordinates and bins, a block of rows, the largest
    evaluation's prepared cache, values and gradient rows, and, fixed, what reading a
    partition holds besides its arrays, the reverse sweep's temporaries over a slice of
    events (those of the array kernels, as :class:`~laddu_dask.runtime.prepared.PreparedModel`
    counts them) and the exact sums' work."""
    exprs, _, columns = _axes_and_columns(dataset, grids, evaluations)
    per_event = 8 * (len(columns) + 1) + 8 * len(exprs) + 26 * len(grids) + 8 * (_ROW_BLOCK + 2)
    model, sweep = 0, 0
    for ev in evaluations:
        compiled = ev.reducer.compiled
        model = max(model, compiled.cache_bytes_per_event(ev.reducer.precision) + 16
                    + (8 * ev.reducer.n_params if ev.with_gradient else 0))
        if ev.with_gradient:  # the reverse sweep over a slice of events
            nodes = len(compiled.split.mixed_nodes) + ev.reducer.n_params + 4
            sweep = max(sweep, 16 * nodes * _EVENT_SLICE)
    read = max((p.read_bytes for p in dataset.partitions), default=0)
    return per_event + model, read + sweep + GROUPED_WORK_BYTES


def plan_fill(execution: Any, dataset: Dataset, grids: Sequence[Sequence[Axis]],
              evaluations: Sequence[Evaluation], name: str) -> tuple[Dataset, int]:
    """``dataset`` partitioned for a fill of ``evaluations``, and how many of its tasks may
    run at once; the choice is recorded on ``execution`` as a ``"streaming"`` memory
    decision named ``name``.

    A fill keeps no prepared copy: each partition is prepared in its own task for every
    evaluation and dropped.  Unless the user chose a chunk size, a partition is cut for
    the execution's workers (:func:`~laddu_dask.runtime.prepared.auto_chunk_size`, at most
    :data:`MAX_FILL_CHUNK` events) and, under a host budget, to the budget by :func:`task_bytes`
    (:func:`~laddu_dask.runtime.prepared.budget_chunk`); as many tasks run at once as the
    budget holds (at least one), as when a prepared dataset streams.  The decision's
    ``estimated_bytes`` is what resident copies of every evaluation would hold.

    Raises
    ------
    BudgetError
        When one partition does not fit the host budget.
    """
    workers = execution.workers
    if not evaluations:
        return dataset, workers
    per_event, fixed = task_bytes(dataset, grids, evaluations)
    budget = execution.host_budget_bytes()
    if not dataset.chunk_size_given:
        chunk = min(auto_chunk_size(dataset.n_events, workers), MAX_FILL_CHUNK)
        if budget is not None:
            group = max((p.decoded_rows for p in dataset.partitions), default=0)
            chunk = budget_chunk(chunk, group, per_event, fixed, budget)
        dataset = dataset.with_chunk_size(chunk)
    chunk = max((p.n_events for p in dataset.partitions), default=0)
    partition_bytes = per_event * max(chunk, 1) + fixed
    if execution.client is not None:  # the budget is per worker, which runs its threads' tasks
        workers = max(1, workers // len(wait_for_workers(execution.client, f"the fill of {name!r}")))
    if budget is not None:
        workers = max(1, min(workers, budget // partition_bytes))
    resident = dataset.n_events * sum(ev.reducer.compiled.cache_bytes_per_event(ev.reducer.precision)
                                      + np.dtype(real_dtype(ev.reducer.precision)).itemsize
                                      for ev in evaluations)
    decision = decide_storage(dataset=name, policy="streaming", resident_bytes=resident,
                              partition_bytes=partition_bytes, chunk_size=chunk,
                              partitions=dataset.n_partitions, budget_bytes=budget, workers=workers)
    at_once = min(workers, max(dataset.n_partitions, 1))
    within = "" if budget is None else f", within the host budget of {format_bytes(budget)}"
    execution.record(replace(decision, reason=(
        f"streaming: one pass, each partition prepared in its task for the {len(evaluations)} "
        f"selection(s) and dropped (resident copies would hold {format_bytes(resident)}); {at_once} "
        f"chunk(s) of {chunk} events at once need {format_bytes(decision.peak_bytes)}{within}")))
    return dataset, workers


def fill_grids(execution: Any, dataset: Dataset, grids: Sequence[Sequence[Axis]],
               evaluations: Sequence[Evaluation], tag: str = "fill") -> GridFill:
    """Fill one dataset (one round of the execution; partitioned by :func:`plan_fill`);
    see :func:`fill_layer`."""
    dataset, workers = plan_fill(execution, dataset, grids, evaluations, tag)
    graph, key = fill_layer(dataset, grids, evaluations, tag)
    return execution.get(graph, [key], num_workers=workers, progress="binned sums")[0]
