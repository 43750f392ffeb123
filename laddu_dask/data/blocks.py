"""Partitions computed from a Dask graph: a Dask collection's blocks, or persisted batches.

A :class:`BlockOrigin` holds a Dask graph and, for each of its blocks, the keys that
compute it and its number of rows; a :class:`BlockReader` turns a computed block (a
pandas DataFrame, NumPy blocks, an awkward array, an :class:`EventBatch`) into columns.
Each :class:`BlockPartition` (a block, or rows of one when a chunk size splits it) loads in
two ways that give the same batch:

- inside a larger graph, as a task on its block's keys (:meth:`BlockPartition.graph_task`,
  used by :meth:`Dataset.partition_graph <laddu_dask.data.dataset.Dataset.partition_graph>`),
  so the collection's own tasks run on the scheduler in use;
- on its own (:meth:`BlockPartition.load`), by computing only its block's part of the
  graph with Dask's synchronous scheduler, in whatever thread or worker task calls it.

A persisted block held by a distributed cluster is a future: its partition waits for it
(at most ``laddu-dask.cluster.preparation-timeout``) and fetches it.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.data.batch import EventBatch
>>> batches = [EventBatch({"x": np.arange(3.0)}, np.ones(3)), EventBatch({"x": np.ones(2)}, np.ones(2))]
>>> origin = batch_origin({("b", 0): batches[0], ("b", 1): batches[1]}, [("b", 0), ("b", 1)],
...                       BatchState(Schema((), ("x",), False), ("arrays",), (3, 2), ("a", "b"), False))
>>> [(p.n_events, p.offset, p.source) for p in origin.make_partitions(2)]
[(2, 0, 'a [rows 0:2]'), (1, 2, 'a [rows 2:3]'), (2, 3, 'b')]
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
from dask._task_spec import List, Task, TaskRef, convert_legacy_graph
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph
from dask.local import get_sync
from dask.optimization import cull

from laddu_dask.cluster_waits import gather
from laddu_dask.data.arrays import load_columns
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.checks import check_dtype, resolve_columns, split_rows
from laddu_dask.data.partition import Partition
from laddu_dask.data.schema import WEIGHT_COLUMN, Schema
from laddu_dask.errors import ClusterError, DataError

#: Held while a collection's unknown block lengths are counted (once, whichever thread asks).
_COUNTING = threading.RLock()


class BlockReader(Protocol):
    """Turns a computed block into flat columns.

    Attributes
    ----------
    checked : bool
        Whether the values are known to be finite (persisted batches) or must be checked.
    """

    checked: bool

    def length(self, value: Any) -> int:
        """Rows of the block ``value``."""
        ...

    def columns(self, value: Any, names: list[str], piece: Piece) -> dict[str, np.ndarray]:
        """1-D NumPy numbers of every column in ``names`` for the whole block.

        Raises DataError naming the column, ``piece.source`` and the event of a missing value.
        """
        ...


@dataclass(frozen=True)
class Piece:
    """Rows ``start:stop`` of block ``index`` (``rows`` rows, from ``block``) of a Dask-backed dataset
    (``rows`` and ``stop`` None: the whole block, of a length learned when it is read)."""

    index: int
    rows: int | None
    start: int
    stop: int | None
    offset: int
    source: str
    block: str
    schema: Schema = field(repr=False)

    @property
    def block_offset(self) -> int:
        """Global index of the block's first row."""
        return self.offset - self.start


def read_piece(reader: BlockReader, value: Any, columns: list[str], dtype: np.dtype,
               piece: Piece) -> EventBatch:
    """The batch of ``columns`` (and the weights) of ``piece``, from its computed block ``value``.

    Raises
    ------
    DataError
        The block has another number of rows than the dataset was built with (naming it),
        or a value is missing or not finite (naming the column and event).
    """
    rows = reader.length(value)
    if piece.rows is None:  # a whole block of unknown length (BlockOrigin.load_block): learned here
        piece = replace(piece, rows=rows, stop=rows)
    elif rows != piece.rows:
        raise DataError(
            f"{piece.block} has {rows} rows, but the dataset was built for {piece.rows}: the "
            "collection changed since, or the lengths given to from_dask are wrong"
        )
    names = columns + ([WEIGHT_COLUMN] if piece.schema.has_weight else [])
    raw = reader.columns(value, names, piece)
    rows_of = slice(piece.start, piece.stop)
    weights = raw[WEIGHT_COLUMN][rows_of] if piece.schema.has_weight else None
    return load_columns({c: raw[c][rows_of] for c in columns}, weights, columns, dtype,
                        piece.stop - piece.start, piece.offset, piece.source, reader.checked)


def _wait(future: Any, piece: Piece) -> Any:
    """The value of a distributed future, waiting at most the preparation timeout."""
    if future.client is None:  # unpickled where no client was current (in an actor, say)
        from distributed import get_client

        try:
            future.bind_client(get_client())
        except ValueError:
            raise ClusterError(
                f"the persisted {piece.block} is held by a cluster, but no distributed client "
                "or worker is reachable here to fetch it"
            ) from None
    return gather(future.client, future, f"fetching the persisted {piece.block} (key {future.key!r})")


def _is_future(value: Any) -> bool:
    return isinstance(value, TaskRef) and hasattr(value, "result")


@dataclass(frozen=True, eq=False)
class BlockPartition(Partition):
    """Rows of one block of a Dask graph; loads by computing that block alone.

    ``graph`` holds only the tasks (or the persisted value) of this block, so a partition
    pickles small and computes nothing else.
    """

    piece: Piece = field(repr=False)
    inputs: Any = field(repr=False)
    reader: BlockReader = field(repr=False)
    graph: Mapping[Any, Any] = field(repr=False)

    @property
    def read_bytes(self) -> int:
        """Peak bytes a load holds besides its arrays: the computed block, every column of it in
        8 bytes a value (0 for a persisted block, which is held anyway)."""
        if self.reader.checked:
            return 0
        schema = self.piece.schema
        return self.piece.rows * 8 * (len(schema.flat_columns()) + len(schema.non_numeric) + 1)

    def load(self, columns: Sequence[str] | None = None, dtype: Any = np.float64) -> EventBatch:
        """Load the events (see :meth:`Partition.load`), computing only this block's graph.

        Raises
        ------
        ClusterTimeoutError
            A persisted block on a cluster did not arrive within
            ``laddu-dask.cluster.preparation-timeout``.
        ClusterError
            A persisted block is held by a cluster no client here can reach.
        """
        dt = check_dtype(dtype)
        cols = resolve_columns(self.piece.schema, columns, self.source)
        return read_piece(self.reader, self._compute(), cols, dt, self.piece)

    def _compute(self) -> Any:
        if not isinstance(self.inputs, list) and _is_future(self.graph.get(self.inputs)):
            return _wait(self.graph[self.inputs], self.piece)
        if isinstance(self.inputs, list):
            return list(get_sync(self.graph, self.inputs))
        return get_sync(self.graph, self.inputs)

    def graph_task(self, key: Any, columns: list[str], dtype: np.dtype) -> Task:
        """A task on the keys of this partition's block in its origin's graph."""
        return Task(key, read_piece, self.reader, _refs(self.inputs), columns, dtype, self.piece)


def _refs(inputs: Any) -> Any:
    """References to a block's key, or to its keys (one per array)."""
    return List(*map(TaskRef, inputs)) if isinstance(inputs, list) else TaskRef(inputs)


def _flat(inputs: Any) -> list[Any]:
    return list(inputs) if isinstance(inputs, list) else [inputs]


class BlockOrigin:
    """Events in the blocks of a Dask graph (see the module docstring).

    Parameters
    ----------
    schema : Schema
    sources : tuple of str
        What the graph is, for messages (``("dask DataFrame 'read_parquet-1f2e'",)``).
    graph : HighLevelGraph
        The collection's graph.
    inputs : list
        Per block, the key computing it, or a list of keys (one per array).
    lengths : sequence of int or None
        Rows per block; ``None``: unknown until first needed, when ``count()`` gives them
        (one pass over the blocks; :attr:`lengths_known` says whether that happened).
    reader : BlockReader
    token : str
    labels : sequence of str, optional
        Per block, where its rows come from (default: ``"<source> partition <i>"``); a
        partition that is part of a block adds its rows (``"... [rows 0:1000]"``).
    chosen_by_user : bool
        Whether the blocks are a partitioning the user chose (a Dask collection's are).
    """

    has_blocks = True

    def __init__(self, schema: Schema, sources: tuple[str, ...], graph: HighLevelGraph,
                 inputs: list[Any], lengths: Sequence[int] | None, reader: BlockReader, token: str,
                 labels: Sequence[str] | None = None, chosen_by_user: bool = True,
                 count: Callable[[], Sequence[int]] | None = None) -> None:
        self.schema = schema
        self.sources = tuple(sources)
        self._graph = graph
        self.inputs = list(inputs)
        if lengths is None and count is None:
            raise ValueError("a BlockOrigin without lengths needs count()")
        self._lengths = None if lengths is None else tuple(int(n) for n in lengths)
        self._count = count
        self.reader = reader
        self.token = token
        self.labels = tuple(labels) if labels is not None else tuple(
            f"{self.sources[0]} partition {i}" for i in range(len(self.inputs)))
        self.chosen_by_user = chosen_by_user
        self._tasks: dict[Any, Any] | None = None

    def __dask_tokenize__(self) -> tuple[str, str]:
        """The collection's token (what a task holding the origin is named by; Dask would
        otherwise walk the whole graph)."""
        return type(self).__name__, self.token

    @property
    def lengths_known(self) -> bool:
        """Whether the rows of every block are known (given, or counted already)."""
        return self._lengths is not None

    @property
    def lengths(self) -> tuple[int, ...]:
        """Rows per block (counted now, once, when they were not known)."""
        if self._lengths is None:
            with _COUNTING:
                if self._lengths is None:
                    self._lengths = tuple(int(n) for n in self._count())  # type: ignore[misc]
        return self._lengths

    @property
    def n_events(self) -> int:
        return sum(self.lengths)

    def graph(self) -> HighLevelGraph:
        return self._graph

    def _block_graph(self, inputs: Any) -> dict[Any, Any]:
        """The tasks (or persisted values) that compute one block, and nothing else."""
        if self._tasks is None:
            tasks = dict(self._graph)
            persisted = any(_is_future(v) for v in tasks.values())
            self._tasks = tasks if persisted else convert_legacy_graph(tasks)
        keys = _flat(inputs)
        if all(_is_future(self._tasks[k]) for k in keys):
            return {k: self._tasks[k] for k in keys}
        return cull(self._tasks, keys)[0]

    def learn_lengths(self, lengths: Sequence[int]) -> None:
        """Record the rows of every block, learned by reading them all (:meth:`load_block`).

        Raises
        ------
        DataError
            Another number of blocks, or lengths that contradict those known already.
        """
        learned = tuple(int(n) for n in lengths)
        if len(learned) != len(self.inputs) or min(learned, default=0) < 0:
            raise DataError(f"{self.sources[0]} has {len(self.inputs)} blocks; learned lengths "
                            f"{learned} do not fit them")
        with _COUNTING:
            if self._lengths is not None and self._lengths != learned:
                raise DataError(f"{self.sources[0]} changed: its blocks have {learned} rows, where "
                                f"{self._lengths} were counted before")
            self._lengths = learned

    def load_block(self, i: int, columns: list[str], dtype: np.dtype) -> EventBatch:
        """Block ``i`` whole, computing only its graph, its rows learned from the computed
        block (whether or not :attr:`lengths` are known).

        Its events are numbered from 0, and an error names its rows within the block: a
        caller that needs the event's index in the whole dataset loads the partition again
        once the lengths are known (what a preparation that learns them does on failure).
        """
        piece = self._whole(i)
        part = BlockPartition(n_events=0, offset=0, source=piece.source, piece=piece, inputs=self.inputs[i],
                              reader=self.reader, graph=self._block_graph(self.inputs[i]))
        return read_piece(self.reader, part._compute(), columns, dtype, piece)

    def _whole(self, i: int) -> Piece:
        return Piece(i, None, 0, None, 0, self.labels[i], self.labels[i], self.schema)

    def whole_block_graph(self, columns: list[str], dtype: np.dtype, name: str
                          ) -> tuple[HighLevelGraph, list[tuple[str, int]]]:
        """The graph whose key ``i`` is :meth:`load_block` of block ``i`` (on the collection's
        own graph, as :meth:`Dataset.partition_graph` for known lengths)."""
        layer = f"{name}-{tokenize(self.token, columns, np.dtype(dtype).str)}"
        tasks = {(layer, i): Task((layer, i), read_piece, self.reader, _refs(inputs), columns, dtype,
                                  self._whole(i))
                 for i, inputs in enumerate(self.inputs)}
        graph = self._graph
        layers, deps = {**graph.layers, layer: tasks}, {**graph.dependencies, layer: set(graph.layers)}
        return HighLevelGraph(layers, deps), list(tasks)

    def make_partitions(self, chunk_size: int | None) -> tuple[Partition, ...]:
        parts: list[Partition] = []
        offset = 0
        for i, (inputs, rows) in enumerate(zip(self.inputs, self.lengths, strict=True)):
            graph = self._block_graph(inputs)
            for a, b in split_rows(rows, chunk_size or max(rows, 1)) or [(0, 0)]:
                block = self.labels[i]
                label = block if (a, b) == (0, rows) else f"{block} [rows {a}:{b}]"
                piece = Piece(i, rows, a, b, offset + a, label, block, self.schema)
                parts.append(BlockPartition(n_events=b - a, offset=offset + a, source=label,
                                            piece=piece, inputs=inputs, reader=self.reader,
                                            graph=graph))
            offset += rows
        return tuple(parts)


# ----------------------------------------------------------------------------- persisted


class BatchReader:
    """Reads :class:`EventBatch` blocks (a persisted or computed dataset's)."""

    checked = True

    def length(self, value: EventBatch) -> int:
        return value.n_events

    def columns(self, value: EventBatch, names: list[str], piece: Piece) -> dict[str, np.ndarray]:
        return {n: value.weights if n == WEIGHT_COLUMN else value.columns[n] for n in names}


@dataclass(frozen=True)
class BatchState:
    """What a persisted or computed dataset keeps of the one it came from.

    Attributes
    ----------
    schema, sources
        As the original's.
    lengths : tuple of int
        Events per partition.
    labels : tuple of str
        Each partition's source (file and rows), for messages.
    chosen_by_user : bool
        Whether the original's partitioning was the user's choice.
    """

    schema: Schema
    sources: tuple[str, ...]
    lengths: tuple[int, ...]
    labels: tuple[str, ...]
    chosen_by_user: bool


def batch_origin(values: Mapping[Any, Any], keys: Sequence[Any], state: BatchState) -> BlockOrigin:
    """An origin of :class:`EventBatch` blocks: ``values[key]`` is a batch or a future of one.

    The graph is one layer named after the keys, holding ``values``, so graphs built on the
    new dataset depend on those keys (on a cluster: on the futures the cluster holds).
    """
    keys = list(keys)
    names = {k[0] if isinstance(k, tuple) else k for k in keys}
    layer = names.pop() if len(names) == 1 else f"laddu-batches-{tokenize(keys)}"
    graph = HighLevelGraph({layer: {k: values[k] for k in keys}}, {layer: set()})
    return BlockOrigin(state.schema, state.sources, graph, keys, state.lengths, BatchReader(),
                       token=f"batches-{tokenize(layer, keys)}",
                       labels=state.labels,
                       chosen_by_user=state.chosen_by_user)
