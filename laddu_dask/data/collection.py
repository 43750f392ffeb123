"""The Dask collection protocol of :class:`~laddu_dask.data.dataset.Dataset`.

A dataset's Dask keys are those of :meth:`Dataset.partition_graph` with every column in
float64: key ``i`` computes partition ``i`` as an :class:`EventBatch`. ``dask.compute``
finalizes the batches into an in-memory dataset, ``dask.persist`` rebuilds a dataset on the
persisted keys (batches in memory, or the futures of a cluster, see
:func:`~laddu_dask.data.blocks.batch_origin`); both keep the partitioning, the events, the
weights, the schema, the sources and the memory policy. Dask's threaded scheduler is the
default, and the graph is not optimized (its tasks are already one per partition).

Examples
--------
>>> import dask, numpy as np, laddu_dask as ld
>>> ds = ld.Dataset.from_arrays(scalars={"x": np.arange(5.0)}, chunk_size=2)
>>> (p,) = dask.persist(ds)
>>> dask.is_dask_collection(p), [q.n_events for q in p.partitions]
(True, [2, 2, 1])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import dask.threaded
import numpy as np
from dask.base import DaskMethodsMixin, dont_optimize, tokenize
from dask.highlevelgraph import HighLevelGraph

from laddu_dask.cluster_waits import compute
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.blocks import BatchState, batch_origin
from laddu_dask.data.checks import check_dtype, resolve_columns


def _batch_column(batch: EventBatch, name: str) -> Any:
    return batch.columns[name]


def _batch_weights(batch: EventBatch) -> Any:
    return batch.weights


def _computed(results: Sequence[EventBatch], cls: type, state: BatchState, memory_policy: str,
              token: str) -> Any:
    """``dask.compute``'s finalize: the computed batches as an in-memory dataset."""
    keys = [(f"laddu-computed-{token}", i) for i in range(len(results))]
    values = dict(zip(keys, results, strict=True))
    return cls(batch_origin(values, keys, state), memory_policy=memory_policy)


def _persisted(dsk: Mapping[Any, Any], cls: type, keys: Sequence[Any], state: BatchState,
               memory_policy: str, rename: Mapping[str, str] | None = None) -> Any:
    """``dask.persist``'s rebuild: a dataset on the persisted keys (batches, or futures)."""
    if rename:
        new = [(rename.get(k[0], k[0]), *k[1:]) for k in keys]
        dsk = {n: dsk[k] if k in dsk else dsk[n] for k, n in zip(keys, new, strict=True)}
        keys = new
    return cls(batch_origin(dsk, keys, state), memory_policy=memory_policy)



class DatasetCollection(DaskMethodsMixin):
    """The Dask collection methods of :class:`~laddu_dask.data.dataset.Dataset` (see the module).

    Uses the dataset's ``partitions``, ``n_partitions``, ``_source_label()``, ``schema``, ``sources``,
    ``memory_policy``, ``chunk_size_given``, ``_origin``, ``_layout()`` and ``_collection``.
    """

    __dask_scheduler__ = staticmethod(dask.threaded.get)
    __dask_optimize__ = staticmethod(dont_optimize)
    _collection: tuple[HighLevelGraph, list[tuple[str, int]]] | None

    def partition_graph(self, columns: Sequence[str] | None = None, dtype: Any = np.float64,
                        name: str = "laddu-batch") -> tuple[HighLevelGraph, list[tuple[str, int]]]:
        """A Dask graph whose key ``i`` computes partition ``i`` as an :class:`EventBatch`.

        Only ``columns`` (all for None) and the weights are loaded, in ``dtype``. This is the
        one place a dataset's partitions become Dask tasks: :meth:`to_dask`, the Dask
        collection protocol and the runtime's preparation graphs build on it. For a dataset
        over a Dask collection the graph holds the collection's tasks, and for a persisted
        one its persisted keys (futures on a cluster), which the new keys depend on.

        Returns
        -------
        graph : dask.highlevelgraph.HighLevelGraph
        keys : list of tuple
            ``(layer name, i)`` for every partition, in order.

        Examples
        --------
        >>> import dask, numpy as np
        >>> from laddu_dask.data.dataset import Dataset
        >>> ds = Dataset.from_arrays(scalars={"x": np.arange(5.0)}, chunk_size=2)
        >>> graph, keys = ds.partition_graph(["x"])
        >>> [b.n_events for b in dask.get(graph, keys)]
        [2, 2, 1]
        """
        dt = check_dtype(dtype)
        cols = resolve_columns(self.schema, columns, self._source_label())
        layer_name = f"{name}-{tokenize(self._origin.token, self._layout(), cols, dt.str)}"
        keys = [(layer_name, i) for i in range(self.n_partitions)]
        layer = {k: p.graph_task(k, cols, dt) for k, p in zip(keys, self.partitions, strict=True)}
        deps = self._origin.graph()
        if deps is None:
            graph = HighLevelGraph.from_collections(layer_name, layer, dependencies=())
        else:
            graph = HighLevelGraph({**deps.layers, layer_name: layer},
                                   {**deps.dependencies, layer_name: set(deps.layers)})
        return graph, keys

    def to_dask(self, columns: Sequence[str] | None = None,
                dtype: Any = np.float64) -> tuple[dict[str, Any], Any]:
        """Lazy Dask arrays of the columns and weights, one chunk per partition.

        Nothing is read until computed; computing several arrays together loads
        each partition once.

        Returns
        -------
        columns : dict of str to dask.array.Array
        weights : dask.array.Array

        Examples
        --------
        >>> import numpy as np
        >>> from laddu_dask.data.dataset import Dataset
        >>> ds = Dataset.from_arrays(scalars={"x": np.arange(5.0)}, chunk_size=2)
        >>> cols, w = ds.to_dask()
        >>> cols["x"].chunks, float(w.sum().compute())
        (((2, 2, 1),), 5.0)
        """
        import dask.array as da

        dt = check_dtype(dtype)
        cols = resolve_columns(self.schema, columns, self._source_label())
        loads, keys = self.partition_graph(cols, dt, name="laddu-load")
        load_name = keys[0][0]
        token = load_name.rpartition("-")[2]
        chunks = (tuple(p.n_events for p in self.partitions),)

        def _array(name: str, getter: Any, *args: Any) -> Any:
            layer = {(name, i): (getter, key, *args) for i, key in enumerate(keys)}
            graph = HighLevelGraph.merge(
                loads, HighLevelGraph({name: layer}, {name: {load_name}})
            )
            return da.Array(graph, name, chunks=chunks, dtype=dt)

        arrays = {c: _array(f"laddu-{c}-{token}", _batch_column, c) for c in cols}
        weights = _array(f"laddu-weight-{token}", _batch_weights)
        return arrays, weights

    def _collection_graph(self) -> tuple[HighLevelGraph, list[tuple[str, int]]]:
        if self._collection is None:
            self._collection = self.partition_graph(None, np.float64, name="laddu-dataset")
        return self._collection

    def __dask_graph__(self) -> HighLevelGraph:
        return self._collection_graph()[0]

    def __dask_keys__(self) -> list[tuple[str, int]]:
        return list(self._collection_graph()[1])

    def __dask_layers__(self) -> tuple[str, ...]:
        return (self._collection_graph()[1][0][0],)

    def __dask_tokenize__(self) -> Any:
        return ("laddu_dask.Dataset", self._origin.token, self._layout())

    def _batch_state(self) -> BatchState:
        return BatchState(self.schema, self.sources, tuple(p.n_events for p in self.partitions),
                          tuple(p.source for p in self.partitions), self.chunk_size_given)

    def __dask_postcompute__(self) -> tuple[Any, tuple[Any, ...]]:
        return _computed, (type(self), self._batch_state(), self.memory_policy, tokenize(self))

    def __dask_postpersist__(self) -> tuple[Any, tuple[Any, ...]]:
        return _persisted, (type(self), self.__dask_keys__(), self._batch_state(), self.memory_policy)

    def persist(self, **kwargs: Any) -> Any:
        """The same dataset with every partition computed and held: in this process, or as
        futures on the cluster when a ``distributed.Client`` is active (as ``dask.persist``).

        Each partition is held as an :class:`EventBatch` of all columns in float64. Graphs
        built on the result (:meth:`partition_graph`) depend on the persisted keys.
        ``kwargs`` go to ``dask.persist`` (``scheduler=...``).

        Examples
        --------
        >>> import numpy as np, laddu_dask as ld
        >>> ds = ld.Dataset.from_arrays(scalars={"x": np.arange(5.0)}, chunk_size=2).persist()
        >>> ds.n_partitions, ds.sum_weights()
        (3, 5.0)
        """
        return super().persist(**kwargs)

    def compute(self, **kwargs: Any) -> Any:
        """The same dataset with every partition computed into this process (as ``dask.compute``;
        on a ``distributed`` cluster within ``laddu-dask.cluster.preparation-timeout``, with
        :class:`~laddu_dask.errors.ClusterTimeoutError` or ``SchedulerLostError``).

        Examples
        --------
        >>> import numpy as np, laddu_dask as ld
        >>> ds = ld.Dataset.from_arrays(scalars={"x": np.arange(5.0)}, chunk_size=2).compute()
        >>> [p.n_events for p in ds.partitions]
        [2, 2, 1]
        """
        return compute(self, what="computing the partitions of a dataset", **kwargs)[0]
