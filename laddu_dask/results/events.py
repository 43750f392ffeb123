"""Per-event weights and intensities of a model, computed where the partitions live.

Each partition of a dataset becomes one Dask task (on top of
:meth:`~laddu_dask.Dataset.partition_graph`, so only the columns the model reads are
loaded): it prepares the partition, evaluates the model at one parameter point and
returns a ``(2, n)`` block, the weights ``w I`` and the intensities ``I``.  The graph runs
on the execution's scheduler (the cluster's workers with a client; locally Dask's
threaded scheduler) and comes back as NumPy arrays, or stays lazy as Dask arrays with one
chunk per partition.  :func:`weight_square_sum` is a sample's ``sum w^2`` (the variance
of its yield), summed exactly.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> from laddu_dask.runtime.prepared import PreparedModel
>>> model = ld.Model(ld.parameter("a", initial=2.0) * ld.scalar("x"))
>>> events = ld.Dataset.from_arrays(scalars={"x": np.array([1.0, 3.0])}, weights=[1.0, 0.5])
>>> pm = PreparedModel.prepare(model, ld.Execution())
>>> w, i = event_arrays(ld.Execution(), pm, events, [2.0])
>>> w.tolist(), i.tolist()
([2.0, 3.0], [2.0, 6.0])
>>> weight_square_sum(ld.Execution(), events)
1.25
"""

from __future__ import annotations

from typing import Any

import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from laddu_dask.compile.dtypes import real_dtype
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.dataset import Dataset
from laddu_dask.errors import NonFiniteError
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.partition import Params, PreparedPartition
from laddu_dask.runtime.preparation import prepare_batch
from laddu_dask.runtime.prepared import PreparedModel
from laddu_dask.runtime.reducer import PartitionReducer
from laddu_dask.runtime.reduction import object_token
from laddu_dask.sums import ExactPartials


def host(array: Any) -> np.ndarray:
    """A (CuPy or NumPy) array as a host float64 NumPy array (the real part)."""
    return np.asarray(np.real(array.get() if hasattr(array, "get") else array), dtype=np.float64)


def prepare(batch: EventBatch, reducer: PartitionReducer) -> PreparedPartition:
    """One partition prepared for ``reducer`` (its event-only part, on its device)."""
    return prepare_batch(reducer.compiled, batch, reducer.precision, reducer.device, reducer.gpu)


def intensity(part: PreparedPartition, reducer: PartitionReducer, params: Params) -> np.ndarray:
    """``I`` of every event of a prepared partition at one point (host, float64).

    Raises
    ------
    NonFiniteError
        For a non-finite intensity, naming the event.
    """
    values = host(reducer.values(part, params))
    if not np.isfinite(values).all():
        i = int(np.argmin(np.isfinite(values)))
        raise NonFiniteError(f"the intensity of event {part.offset + i} of {part.source} is "
                             f"{float(values[i])!r}")
    return values


def _block(batch: EventBatch, reducer: PartitionReducer, params: Params,
           rows: tuple[int, ...] = (0, 1)) -> np.ndarray:
    """The ``rows`` of ``[w I, I]`` of one partition (host NumPy arrays, float64)."""
    values = intensity(prepare(batch, reducer), reducer, params)
    both = (host(batch.weights) * values, values)
    return np.stack([both[r] for r in rows])


def _row(block: np.ndarray, row: int) -> np.ndarray:
    return block[row]


def _merge(*parts: ExactPartials) -> float:
    return float(ExactPartials.merge(list(parts)).to_floats()[0])


def _blocks(pm: PreparedModel, dataset: Dataset, params: Any,
            rows: tuple[int, ...] = (0, 1)) -> tuple[HighLevelGraph, list]:
    """The graph whose keys are each partition's block at ``params``: the ``rows`` of
    ``[w I, I]``."""
    point = pm._params(params)
    loads, load_keys = dataset.partition_graph(pm.compiled.columns, real_dtype(pm.precision),
                                               name="laddu-project-load")
    token = tokenize(load_keys[0][0], object_token(pm), point.values, rows)
    name = f"laddu-project-{token}"
    layer = {(name, i): (_block, key, pm.reducer, point, rows) for i, key in enumerate(load_keys)}
    graph = HighLevelGraph.merge(loads, HighLevelGraph({name: layer}, {name: set(loads.layers)}))
    return graph, [(name, i) for i in range(len(load_keys))]


def event_arrays(execution: Execution, pm: PreparedModel, dataset: Dataset, params: Any,
                 dask: bool = False, rows: tuple[int, ...] = (0, 1)) -> tuple[Any, ...]:
    """Weights ``w I`` and intensities ``I`` of every event of ``dataset`` at ``params``
    (``rows``: both, ``(0,)`` the weights only, ``(1,)`` the intensities only: a partition's
    task then returns only what is kept).

    Parameters
    ----------
    execution : Execution
        Where the partitions' tasks run (ignored with ``dask=True``: the caller computes).
    pm : PreparedModel
        The model (its precision and device).
    dataset : Dataset
        The events; one task per partition.
    params : sequence or mapping
        A point in ``pm.parameter_names`` order (or by name).
    dask : bool
        Return lazy :class:`dask.array.Array` objects, one chunk per partition.

    Returns
    -------
    tuple of numpy.ndarray or dask.array.Array
        The ``rows`` asked for (weights, intensities), float64, in dataset order.
    """
    if dataset.n_partitions == 0:
        if dask:
            import dask.array as da

            return tuple(da.from_array(np.zeros(0)) for _ in rows)
        return tuple(np.zeros(0) for _ in rows)
    graph, keys = _blocks(pm, dataset, params, rows)
    if dask:
        import dask.array as da

        chunks = (tuple(p.n_events for p in dataset.partitions),)
        out = []
        for at, row in enumerate(rows):
            name = f"{keys[0][0]}-{('weights', 'intensities')[row]}"
            layer = {(name, i): (_row, key, at) for i, key in enumerate(keys)}
            g = HighLevelGraph.merge(graph, HighLevelGraph({name: layer}, {name: {keys[0][0]}}))
            out.append(da.Array(g, name, chunks=chunks, dtype=np.float64))
        return tuple(out)
    blocks = execution.get(graph, keys, progress="projection")
    return tuple(np.concatenate([b[at] for b in blocks]) for at in range(len(rows)))


def _weight_squares(batch: EventBatch) -> ExactPartials:
    w = batch.weights.get() if hasattr(batch.weights, "get") else batch.weights
    w = np.asarray(w, dtype=np.float64)
    return ExactPartials.from_terms(w * w)


def weight_square_sum(execution: Execution, dataset: Dataset) -> float:
    """``sum w^2`` over ``dataset`` (the variance of its yield ``sum w``), exactly, one task
    per partition; ``n_events`` for an unweighted one."""
    if not dataset.schema.has_weight:
        return float(dataset.n_events)
    if dataset.n_partitions == 0:
        return 0.0
    loads, keys = dataset.partition_graph([], np.float64, name="laddu-weight-squares-load")
    name = f"laddu-weight-squares-{keys[0][0].rpartition('-')[2]}"
    layer: dict[Any, Any] = {(name, i): (_weight_squares, key) for i, key in enumerate(keys)}
    layer[(f"{name}-total", 0)] = (_merge, *[(name, i) for i in range(len(keys))])
    g = HighLevelGraph.merge(loads, HighLevelGraph({name: layer}, {name: set(loads.layers)}))
    return execution.get(g, [(f"{name}-total", 0)])[0]
