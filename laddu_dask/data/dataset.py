"""Event datasets split into partitions that load lazily as :class:`EventBatch`; Dask collections.

A :class:`Dataset` is an immutable view of event columns (from NumPy arrays, Parquet
files or a Dask collection) cut into partitions. Each :class:`Partition` knows how to
load its events, and only the columns asked for. A dataset is itself a Dask collection
whose keys compute its partitions' batches: ``dask.persist(ds)`` holds them in memory (on
a cluster, as futures), ``dask.compute(ds)`` brings them into the process, and
:meth:`Dataset.to_dask` exposes the columns as Dask arrays, one chunk per partition.

Examples
--------
>>> import dask, numpy as np
>>> from laddu_dask.data.dataset import Dataset
>>> ds = Dataset.from_arrays(p4s={"beam": np.tile([8.5, 0, 0, 8.5], (10, 1))},
...                          scalars={"pol": np.linspace(0, 1, 10)}, chunk_size=4)
>>> ds.n_events, ds.n_partitions, [p.n_events for p in ds.partitions]
(10, 3, [4, 4, 2])
>>> float(ds.load_partition(1, ["pol"]).columns["pol"][0])
0.4444444444444444
>>> dask.is_dask_collection(ds), ds.persist().n_partitions
(True, 3)
"""

from __future__ import annotations

import html
import numbers
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from dask.base import is_dask_collection, tokenize
from dask.highlevelgraph import HighLevelGraph

from laddu_dask.data.arrays import ArrayOrigin, ArrayPartition, array_inputs, as_numbers
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.checks import (
    DEFAULT_CHUNK_SIZE,
    MEMORY_POLICIES,
    check_dtype,
    check_memory_policy,
    configured_chunk_size,
    resolve_chunk_size,
    resolve_columns,
)
from laddu_dask.data.collection import DatasetCollection
from laddu_dask.data.dask_input import dask_origin
from laddu_dask.data.operations import DatasetOperations
from laddu_dask.data.parquet_writer import write_parquet
from laddu_dask.data.partition import DataOrigin, Partition
from laddu_dask.data.root_writer import write_root
from laddu_dask.data.schema import Schema
from laddu_dask.data.weights import exact_weight_sum
from laddu_dask.views import Raw, bytes_text, key_values

__all__ = ["DEFAULT_CHUNK_SIZE", "MEMORY_POLICIES", "ArrayPartition", "DataOrigin", "Dataset",
           "Partition"]


# ----------------------------------------------------------------------------- helpers


def _batch_column(batch: EventBatch, name: str) -> Any:
    return batch.columns[name]


def _batch_weights(batch: EventBatch) -> Any:
    return batch.weights


def _is_origin(obj: Any) -> bool:
    return hasattr(obj, "make_partitions") and hasattr(obj, "schema")


def _holds_dask(*groups: Any) -> bool:
    values = [v for g in groups if isinstance(g, Mapping) for v in g.values()]
    values += [g for g in groups if g is not None and not isinstance(g, Mapping)]
    return any(is_dask_collection(v) for v in values)


# ----------------------------------------------------------------------------- dataset


class Dataset(DatasetCollection, DatasetOperations):
    """Weighted events in partitions, from arrays, Parquet files or a Dask collection.

    Build one with :meth:`from_arrays`, :meth:`from_dask` or
    :func:`laddu_dask.data.parquet.read_parquet`; ``Dataset(ddf)`` is
    ``Dataset.from_dask(ddf)``.

    A dataset is a Dask collection (``dask.is_dask_collection(ds)`` is true) whose key
    ``i`` computes partition ``i`` as an :class:`EventBatch` of every column in float64:
    :meth:`persist` (and ``dask.persist``) returns a dataset whose partitions are held in
    memory, or as futures on a cluster when a ``distributed.Client`` is active;
    :meth:`compute` (and ``dask.compute``) returns one whose partitions are in this
    process. Both keep the partitioning, the events, the weights and the schema.

    Attributes
    ----------
    schema : Schema
        Four-vectors, scalars and whether weights are stored.
    partitions : tuple of Partition
        The event blocks, in order; never spanning two files or two blocks of a Dask
        collection.
    memory_policy : str
        ``"resident"``, ``"streaming"`` or ``"fastest"`` (a hint to the runtime).
    memory : MemoryBudget or None
        The host budget this dataset was read with (laddu's ``memory=``); a preparation
        keeps within it as well as within the execution's.
    chunk_size : int
        Maximum events per partition (resolved).
    chunk_size_given : bool
        Whether the user chose the partitioning (a ``chunk_size``, the Dask config's
        ``laddu-dask.chunk-size``, or a Dask collection's partitions); otherwise the
        runtime may re-partition for speed.
    sources : tuple of str
        File paths, ``("arrays",)`` or the Dask collection's name.

    Examples
    --------
    >>> import numpy as np
    >>> ds = Dataset.from_arrays(scalars={"x": np.arange(5.0)}, weights=[1, 2, 3, 4, 5.5])
    >>> ds.sum_weights()
    15.5
    """

    def __init__(self, origin: DataOrigin | Any, chunk_size: int | None = None,
                 memory_policy: str = "fastest", memory: Any = None) -> None:
        self.memory_policy = check_memory_policy(memory_policy)
        self.memory = memory  # a read's own host budget (laddu's memory=), or None
        if not _is_origin(origin):
            origin = dask_origin(origin)
        self._origin: DataOrigin = origin
        if chunk_size is None and not origin.has_blocks:
            chunk_size = configured_chunk_size()
        chosen = None if chunk_size is None else resolve_chunk_size(chunk_size)
        self._chunk_arg = chosen
        self.chunk_size_given = chosen is not None or origin.chosen_by_user
        if chosen is None and not origin.has_blocks:
            chosen = DEFAULT_CHUNK_SIZE
        self.schema: Schema = origin.schema
        self.sources: tuple[str, ...] = tuple(origin.sources)
        self.partitions: tuple[Partition, ...] = tuple(origin.make_partitions(chosen))
        self.chunk_size = chosen or max([1, *(p.n_events for p in self.partitions)])
        self._sum_weights: float | None = None
        self._collection: tuple[HighLevelGraph, list[tuple[str, int]]] | None = None

    # -- construction ------------------------------------------------------------------

    @classmethod
    def from_arrays(cls, p4s: Mapping[str, Any] | None = None,
                    scalars: Mapping[str, Any] | None = None, weights: Any = None,
                    chunk_size: int | None = None, memory_policy: str = "fastest") -> Dataset:
        """Build a dataset from in-memory arrays (copied; validated now), or from Dask arrays.

        Given any Dask array, this is :meth:`from_dask` with the same arrays (NumPy arrays
        among them are chunked like the Dask ones): nothing is computed, and a
        ``chunk_size`` only splits the Dask chunks further.

        Parameters
        ----------
        p4s : dict of str to array of shape (n, 4), optional
            Four-vectors as ``(E, px, py, pz)`` rows.
        scalars : dict of str to array of shape (n,), optional
            Scalar columns.
        weights : array of shape (n,), optional
            Event weights (1 when omitted).
        chunk_size : int, optional
            Events per partition (default: the Dask config's ``laddu-dask.chunk-size``,
            else :data:`DEFAULT_CHUNK_SIZE`).
        memory_policy : {"fastest", "resident", "streaming"}
            Hint for the runtime.

        Raises
        ------
        DataError
            Non-numeric or badly shaped arrays, unequal lengths (naming each array and
            its length), or a non-finite value (naming the column and event index).
        SchemaError
            Clashing names (e.g. a scalar called ``weight``).
        ValueError
            Bad ``chunk_size`` or ``memory_policy``.

        Examples
        --------
        >>> import numpy as np
        >>> ds = Dataset.from_arrays(p4s={"k": np.ones((3, 4))})
        >>> ds.schema.flat_columns()
        ['k_e', 'k_px', 'k_py', 'k_pz']
        """
        check_memory_policy(memory_policy)
        resolve_chunk_size(chunk_size)  # validate now; None stays 'not chosen by the user'
        if _holds_dask(p4s, scalars, weights):
            ds = cls.from_dask(p4s=p4s, scalars=scalars, weights=weights, memory_policy=memory_policy)
            return ds if chunk_size is None else ds.with_chunk_size(chunk_size)
        schema, inputs = array_inputs(p4s, scalars, weights, as_numbers)
        return cls(ArrayOrigin.from_inputs(schema, inputs), chunk_size=chunk_size,
                   memory_policy=memory_policy)

    @classmethod
    def from_dask(cls, obj: Any = None, *, p4s: Mapping[str, Any] | None = None,
                  scalars: Mapping[str, Any] | None = None, weights: Any = None,
                  lengths: Sequence[int] | bool | None = None,
                  memory_policy: str = "fastest") -> Dataset:
        """A dataset over a Dask collection: one partition per partition (or chunk) of it.

        Nothing is computed or read now: each partition later computes only its part of
        the collection's graph, and graphs built on the dataset (:meth:`partition_graph`,
        :meth:`persist`) run the collection's own tasks on the scheduler in use. The
        runtime keeps this partitioning (:attr:`chunk_size_given` is true).

        Parameters
        ----------
        obj : dask.dataframe.DataFrame or dask_awkward.Array, optional
            Columns in laddu's convention (``NAME_e, NAME_px, NAME_py, NAME_pz`` per
            four-vector, scalars, an optional ``weight``), as from
            ``dd.read_parquet(...)`` of a laddu file, or a record array of flat fields as
            ``uproot.dask(...)`` gives. Columns of integers or booleans are numbers;
            others (strings, objects, dates) are kept as not numeric, as in files.
        p4s, scalars, weights : mappings of Dask arrays, and a Dask array, optional
            Instead of ``obj``: the arguments of :meth:`from_arrays` as Dask arrays (or
            flat dask-awkward arrays), whose chunks along the events must agree; a
            four-vector ``(n, 4)`` is chunked along the events only.
        lengths : sequence of int or True, optional
            Rows per partition when Dask does not know them (a frame after a filter or
            ``map_partitions``, an array with unknown chunks): the numbers, or True to
            count them now (one pass over the collection, like Dask's
            ``to_dask_array(lengths=True)``). Without it such a collection is an error,
            since a dataset must know its events. Dask knows the lengths of
            ``dd.read_parquet`` (from the files' metadata), ``dd.from_pandas``, column
            selections and element-wise operations on these, Dask arrays with known
            chunks, and ``uproot.dask`` arrays.
        memory_policy : {"fastest", "resident", "streaming"}
            Hint for the runtime.

        Raises
        ------
        SchemaError
            A partial four-vector, or a non-numeric weight or four-vector column (naming it).
        DataError
            Chunks that do not line up (naming the arrays and their chunks), a
            four-vector chunked along its components, non-numeric arrays, or unknown
            lengths without ``lengths`` (naming the collection and what to do). When a
            partition loads (before any result): a block that computes to other values
            than its metadata declares (complex numbers, strings, a missing column, a
            null, another shape or width), naming the column and the partition.
        TypeError
            ``obj`` is not a Dask DataFrame or dask-awkward record array.

        Examples
        --------
        >>> import dask.array as da
        >>> ds = Dataset.from_dask(p4s={"k": da.ones((10, 4), chunks=(4, 4))},
        ...                        scalars={"s": da.zeros(10, chunks=4)})
        >>> ds.n_partitions, [p.n_events for p in ds.partitions], ds.chunk_size_given
        (3, [4, 4, 2], True)
        """
        check_memory_policy(memory_policy)
        origin = dask_origin(obj, p4s=p4s, scalars=scalars, weights=weights, lengths=lengths)
        return cls(origin, memory_policy=memory_policy)

    def with_chunk_size(self, chunk_size: int | None) -> Dataset:
        """Return the same events re-partitioned into blocks of ``chunk_size``.

        A dataset over a Dask collection (or persisted) only splits its blocks: partitions
        never span two of them, and None gives the blocks back.

        Examples
        --------
        >>> import numpy as np
        >>> Dataset.from_arrays(scalars={"x": np.zeros(7)}).with_chunk_size(3).n_partitions
        3
        """
        return Dataset(self._origin, chunk_size=chunk_size, memory_policy=self.memory_policy,
                       memory=self.memory)

    def with_memory_policy(self, memory_policy: str) -> Dataset:
        """Return the same dataset with another memory policy."""
        return Dataset(self._origin, chunk_size=self._chunk_arg, memory_policy=memory_policy,
                       memory=self.memory)

    # -- sizes -------------------------------------------------------------------------

    @property
    def n_events(self) -> int:
        """Total number of events."""
        return sum(p.n_events for p in self.partitions)

    @property
    def n_partitions(self) -> int:
        """Number of partitions."""
        return len(self.partitions)

    def __len__(self) -> int:
        return self.n_events

    def estimate_nbytes(self, columns: Sequence[str] | None = None,
                        dtype: Any = np.float64) -> int:
        """Bytes that loading ``columns`` (all for None) plus weights takes for every event."""
        cols = resolve_columns(self.schema, columns, self._source_label())
        return self.n_events * (len(cols) + 1) * check_dtype(dtype).itemsize

    def _source_label(self) -> str:
        if len(self.sources) == 1:
            return self.sources[0]
        return f"{self.sources[0]} (and {len(self.sources) - 1} more files)"

    def _layout(self) -> tuple[tuple[int, int], ...]:
        return tuple((p.offset, p.n_events) for p in self.partitions)

    # -- data access -------------------------------------------------------------------

    def load_partition(self, i: int, columns: Sequence[str] | None = None,
                       dtype: Any = np.float64) -> EventBatch:
        """Load partition ``i`` (only ``columns``, all for None, plus weights)."""
        n = self.n_partitions
        if isinstance(i, bool) or not isinstance(i, numbers.Integral) or not -n <= i < n:
            raise IndexError(f"partition index {i!r} out of range for {n} partitions")
        return self.partitions[i].load(columns, dtype)

    def iter_batches(self, columns: Sequence[str] | None = None,
                     dtype: Any = np.float64) -> Iterator[EventBatch]:
        """Yield every partition's batch in order, loading one at a time."""
        for p in self.partitions:
            yield p.load(columns, dtype)

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

    def sum_weights(self, num_workers: int | None = None) -> float:
        """Exact sum of the weights (equal to ``math.fsum`` of all of them).

        Parameters
        ----------
        num_workers : int, optional
            Read at most this many partitions at once, on Dask's threaded scheduler
            (a streamed dataset's memory plan; by default Dask's scheduler and its
            thread count).

        Raises
        ------
        NonFiniteError
            The sum overflows the float range.

        Examples
        --------
        >>> import numpy as np
        >>> ds = Dataset.from_arrays(scalars={"x": np.zeros(3)}, weights=[1e16, 1.0, -1e16])
        >>> ds.sum_weights()
        1.0
        """
        if self._sum_weights is None:
            if not self.schema.has_weight:
                self._sum_weights = float(self.n_events)
            else:
                loads = None
                if self._origin.graph() is not None:  # a Dask collection's blocks, or persisted
                    loads = self.partition_graph([], np.float64, name="laddu-weights")
                self._sum_weights = exact_weight_sum(self.partitions, loads, num_workers,
                                                     self._source_label())
        return self._sum_weights

    def write_parquet(self, path: str | os.PathLike[str], precision: str = "f64") -> None:
        """Write every column and the weights to one Parquet file, atomically.

        Parameters
        ----------
        path : path-like
            Output file; written to a temporary file in the same folder, then renamed.
        precision : {"f64", "f32"}
            Storage precision.

        Raises
        ------
        ValueError
            If ``precision`` is not ``"f64"`` or ``"f32"`` (nothing is written).
        """
        write_parquet(self, path, precision=precision)

    def write_root(self, path: str | os.PathLike[str], tree: str = "tree",
                   precision: str | None = None, amptools: Sequence[str] | None = None) -> None:
        """Write every column and the weights to one ROOT TTree, atomically (through uproot).

        Parameters
        ----------
        path : path-like
            Output file; written to a temporary file in the same folder, then renamed.
        tree : str, default "tree"
            The TTree's name.
        precision : {"f64", "f32"}, optional
            Storage precision (``"f64"``; ``"f32"`` with ``amptools``).
        amptools : sequence of str, optional
            Write the AmpTools flat-tree convention: the four-vectors' names, the beam's
            first (see :func:`~laddu_dask.data.root_writer.write_root`).

        Raises
        ------
        ValueError
            A bad ``precision`` or ``tree`` (nothing is written).
        SchemaError
            ``amptools`` does not name exactly the dataset's four-vectors.
        """
        write_root(self, path, tree=tree, precision=precision, amptools=amptools)

    # -- display -----------------------------------------------------------------------

    def __repr__(self) -> str:
        s = self.schema
        p4 = ", ".join(s.p4s) or "-"
        sc = ", ".join(s.scalars) or "-"
        return (
            f"<Dataset: {self.n_events:,} events in {self.n_partitions} "
            f"partition{'' if self.n_partitions == 1 else 's'}; "
            f"p4s: {p4}; scalars: {sc}; weights: {'stored' if s.has_weight else 'all 1'}; "
            f"memory_policy={self.memory_policy!r}; source: {self._source_label()}>"
        )

    def _repr_html_(self) -> str:
        s = self.schema
        shown = list(self.sources[:3])
        if len(self.sources) > 3:
            shown.append(f"... and {len(self.sources) - 3} more")
        rows = [
            ("Events", f"{self.n_events:,}"),
            ("Partitions", f"{self.n_partitions} (chunk size {self.chunk_size:,})"),
            ("Four-vectors", ", ".join(s.p4s) or "none"),
            ("Scalars", ", ".join(s.scalars) or "none"),
            ("Weights", "stored" if s.has_weight else "none (all 1)"),
            ("Size loaded (f64)", bytes_text(self.estimate_nbytes())),
            ("Memory policy", self.memory_policy),
            ("Sources", Raw("<br>".join(html.escape(x) for x in shown))),
        ]
        return key_values(rows, caption="laddu_dask Dataset")
