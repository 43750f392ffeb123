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

import functools
import numbers
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from dask.base import is_dask_collection
from dask.highlevelgraph import HighLevelGraph

from laddu_dask.data.arrays import ArrayOrigin, ArrayPartition, array_inputs, as_numbers
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.batch_origin import BatchOrigin, schema_from_mapping
from laddu_dask.data.blocks import BlockOrigin
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
from laddu_dask.data.decisions import DecisionRecord
from laddu_dask.data.display import DatasetDisplay
from laddu_dask.data.operations import DatasetOperations
from laddu_dask.data.partition import DataOrigin, Partition
from laddu_dask.data.plans import ReadPlan
from laddu_dask.data.read_options import check_cache, check_memory
from laddu_dask.data.schema import Schema
from laddu_dask.data.sources import FormatSource
from laddu_dask.data.weights import exact_weight_sum
from laddu_dask.data.writing import DatasetWriting
from laddu_dask.errors import SchemaError

__all__ = ["DEFAULT_CHUNK_SIZE", "MEMORY_POLICIES", "ArrayPartition", "DataOrigin", "Dataset",
           "Partition"]


# ----------------------------------------------------------------------------- helpers


def _factory_batches(factory: Callable[..., Iterable[Any]], plan: ReadPlan) -> Iterable[Any]:
    return factory(chunk_size=plan.chunk_size, rank=plan.rank, nranks=plan.nranks)


def _is_origin(obj: Any) -> bool:
    return hasattr(obj, "make_partitions") and hasattr(obj, "schema")


def _holds_dask(*groups: Any) -> bool:
    values = [v for g in groups if isinstance(g, Mapping) for v in g.values()]
    values += [g for g in groups if g is not None and not isinstance(g, Mapping)]
    return any(is_dask_collection(v) for v in values)


# ----------------------------------------------------------------------------- dataset


class Dataset(DatasetCollection, DatasetOperations, DatasetWriting, DatasetDisplay, DecisionRecord):
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
        ``"resident"``, ``"disk"``, ``"streaming"`` or ``"fastest"`` (a hint to the runtime).
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

    def __init__(self, origin: DataOrigin | Any = None, chunk_size: int | None = None,
                 memory_policy: str = "fastest", memory: Any = None, *, source: Any = None) -> None:
        if source is not None:
            if origin is not None:
                raise TypeError("Dataset takes one of a positional origin and source=, not both")
            if not isinstance(source, FormatSource):
                raise TypeError(f"Dataset(source=) must be a ParquetSource, RootSource or FormatSource, got "
                                f"{type(source).__name__}")
            origin = source
        if isinstance(origin, FormatSource):  # laddu's Dataset(source): an opened source's settings
            chunk_size = origin.chunk_size if chunk_size is None else chunk_size
            memory_policy, memory, origin = origin.cache, origin.memory, origin._origin
        self.memory_policy = check_memory_policy(memory_policy)
        self.memory = memory  # a read's own host budget (laddu's memory=), or None
        if origin is None:
            raise TypeError("Dataset needs a source: a ParquetSource, RootSource or FormatSource (or a Dask "
                            "collection)")
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
        self._chosen = chosen
        self._partitions: tuple[Partition, ...] | None = None
        self._chunk_size: int | None = None
        if getattr(origin, "lengths_known", True):  # else: when first needed (from_dask)
            self._make_partitions()
        self._sum_weights: float | None = None
        self._collection: tuple[HighLevelGraph, list[tuple[str, int]]] | None = None

    # -- construction ------------------------------------------------------------------

    @classmethod
    def from_arrays(cls, p4s: Mapping[str, Any] | None = None,
                    scalars: Mapping[str, Any] | None = None, weights: Any = None,
                    chunk_size: int | None = None, memory_policy: str = "fastest", *,
                    columns: Mapping[str, Any] | None = None) -> Dataset:
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
        memory_policy : {"fastest", "resident", "disk", "streaming"}
            Hint for the runtime.
        columns : dict of str to array of shape (n,), optional
            laddu's exact integer columns (8- to 64-bit, signed or not): scalars here, held
            as float64 (:meth:`column` gives them back in their dtype, and
            ``schema.columns`` names it).

        Raises
        ------
        DataError
            Non-numeric or badly shaped arrays, unequal lengths (naming each array and
            its length), or a non-finite value (naming the column and event index); an
            integer column beyond 2**53 in magnitude (float64 would round it).
        SchemaError
            Clashing names (e.g. a scalar called ``weight``); a ``columns`` array that does
            not hold integers (naming it).
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
        if columns and _holds_dask(p4s, scalars, weights, columns):
            raise TypeError("from_arrays(columns=) takes NumPy arrays, not with Dask arrays")
        if _holds_dask(p4s, scalars, weights):
            ds = cls.from_dask(p4s=p4s, scalars=scalars, weights=weights, memory_policy=memory_policy)
            return ds if chunk_size is None else ds.with_chunk_size(chunk_size)
        exact: tuple[tuple[str, str], ...] = ()
        if columns:
            ints = EventBatch(columns=dict(columns))  # checks laddu's integer columns
            if set(ints.columns) & set(scalars or {}):
                raise SchemaError(f"from_arrays: {sorted(set(ints.columns) & set(scalars or {}))} given as "
                                  "both scalars and columns")
            scalars, exact = {**(scalars or {}), **ints.columns}, ints.exact
        schema, inputs = array_inputs(p4s, scalars, weights, as_numbers)
        if exact:
            schema = replace(schema, exact=exact)
        return cls(ArrayOrigin.from_inputs(schema, inputs), chunk_size=chunk_size,
                   memory_policy=memory_policy)

    @staticmethod
    def from_batches(batch_factory: Callable[..., Iterable[Any]], *, schema: Schema | Mapping[str, Any],
                     length: int | None = None, memory: Any = None, cache: str = "fastest") -> Dataset:
        """A dataset read from a batch factory on every traversal (laddu's ``Dataset.from_batches``).

        ``batch_factory(chunk_size=, rank=, nranks=)`` returns a fresh iterable of
        :class:`~laddu_dask.io.EventBatch` (or dictionaries of ``p4s``, ``scalars`` and
        optional ``weights``), the same rows in the same order every time, no batch larger
        than ``chunk_size``. It is read serially: each partition traverses the stream up to
        its rows.

        Parameters
        ----------
        batch_factory : callable
        schema : Schema or dict
            The fields (a dict of ``p4s``, ``scalars``, optional ``columns`` and ``weights``).
        length : int, optional
            The number of events; without it one traversal counts them now.
        memory : MemoryBudget, int or str, optional
        cache : {"fastest", "resident", "disk", "streaming"}

        Raises
        ------
        TypeError
            ``batch_factory`` is not callable, or ``schema`` is neither a Schema nor a dict.
        ValueError
            A schema dict without ``p4s`` or ``scalars``; a bad ``cache``.
        SchemaError, DataError
            When read: a batch of other fields than ``schema``, a batch larger than the
            plan's ``chunk_size``, or fewer or more events than ``length``.

        Examples
        --------
        >>> import numpy as np
        >>> def factory(*, chunk_size, rank, nranks):
        ...     yield {"scalars": {"x": np.arange(3.0)}, "weights": np.full(3, 0.5)}
        >>> ds = Dataset.from_batches(factory, schema={"p4s": [], "scalars": ["x"], "weights": True})
        >>> len(ds), ds.sum_weights()
        (3, 1.5)
        """
        if not callable(batch_factory):
            raise TypeError(f"from_batches(batch_factory=) must be callable, got "
                            f"{type(batch_factory).__name__}")
        declared = schema_from_mapping(schema, "Dataset.from_batches")
        if length is not None and (isinstance(length, bool) or not isinstance(length, int) or length < 0):
            raise ValueError(f"from_batches(length=) must be a non-negative int or None, got {length!r}")
        policy, budget = check_cache(cache, None), check_memory(memory)
        read = functools.partial(_factory_batches, batch_factory)
        where = f"batch factory {getattr(batch_factory, '__name__', repr(batch_factory))}"
        origin = BatchOrigin(read, declared, length, where)
        return Dataset(origin, memory_policy=policy, memory=budget)

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
            ``to_dask_array(lengths=True)``). Without it such a collection still builds a
            dataset at once, computing nothing: its rows are learned while its first
            evaluation prepares it (each block read once, locally, in memory or past the
            budget on this machine's disk tier, or on the cluster's workers), or counted by
            one pass over its blocks at another first use (:attr:`n_events`, a partition's
            load, a streamed preparation), and
            :attr:`lengths_known` says whether that happened. Dask knows the lengths of
            ``dd.read_parquet`` (from the files' metadata), ``dd.from_pandas``, column
            selections and element-wise operations on these, Dask arrays with known
            chunks, and ``uproot.dask`` arrays.
        memory_policy : {"fastest", "resident", "disk", "streaming"}
            Hint for the runtime.

        Raises
        ------
        SchemaError
            A partial four-vector, or a non-numeric weight or four-vector column (naming it).
        DataError
            Chunks that do not line up (naming the arrays and their chunks), a
            four-vector chunked along its components, non-numeric arrays, or ``lengths``
            that are not one number per partition or contradict Dask's. When a
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

    def _make_partitions(self) -> tuple[Partition, ...]:
        parts = tuple(self._origin.make_partitions(self._chosen))
        self._chunk_size = self._chosen or max([1, *(p.n_events for p in parts)])
        self._partitions = parts
        return parts

    @property
    def partitions(self) -> tuple[Partition, ...]:
        """The partitions, in order (a Dask collection of unknown lengths counts its rows
        now, once: one pass over its blocks; see :attr:`lengths_known`)."""
        parts = self._partitions
        return self._make_partitions() if parts is None else parts

    @property
    def chunk_size(self) -> int:
        """Events per partition (the largest partition's when the partitioning is the source's)."""
        if self._chunk_size is None:
            self._make_partitions()
        return self._chunk_size  # type: ignore[return-value]

    @property
    def lengths_known(self) -> bool:
        """Whether the events of every partition are known without computing anything more: a
        dataset over a filtered Dask collection (:meth:`from_dask`) learns them while its first
        evaluation prepares it (one read of each block), or at another first use
        (:attr:`n_events`, a partition's load) by one pass over its blocks."""
        return self._partitions is not None or getattr(self._origin, "lengths_known", True)

    @property
    def blocks(self) -> Any:
        """The :class:`~laddu_dask.data.blocks.BlockOrigin` of a dataset over a Dask collection
        (its blocks, which a preparation reads whole to learn unknown lengths), else None."""
        return self._origin if isinstance(self._origin, BlockOrigin) else None

    @property
    def n_events(self) -> int:
        """Total number of events."""
        return sum(p.n_events for p in self.partitions)

    @property
    def n_partitions(self) -> int:
        """Number of partitions (one per block of a Dask collection: known before its lengths)."""
        if self._partitions is None and self._chosen is None and hasattr(self._origin, "inputs"):
            return len(self._origin.inputs)
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
