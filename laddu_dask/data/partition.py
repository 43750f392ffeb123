"""What every dataset is made of: partitions that load themselves, from an origin of events.

A :class:`Partition` is a contiguous block of events that loads as an
:class:`~laddu_dask.data.batch.EventBatch`; a :class:`DataOrigin` (arrays, Parquet files,
a Dask collection, persisted batches) cuts its events into partitions and says which Dask
graph, if any, their tasks depend on.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.data.dataset import Dataset
>>> part = Dataset.from_arrays(scalars={"x": np.arange(4.0)}, chunk_size=3).partitions[1]
>>> isinstance(part, Partition), part.n_events, part.offset
(True, 1, 3)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from dask._task_spec import Task
from dask.highlevelgraph import HighLevelGraph

from laddu_dask.data.batch import EventBatch
from laddu_dask.data.checks import check_dtype, resolve_columns
from laddu_dask.data.schema import WEIGHT_COLUMN, Schema


@dataclass(frozen=True)
class Partition(ABC):
    """A contiguous block of events of a dataset that can load itself.

    Partitions pickle (they travel to Dask workers) and load anywhere: in the client, on
    the local thread pool, or inside a task on a worker.

    Attributes
    ----------
    n_events : int
        Events in the partition.
    offset : int
        Global index of its first event within the dataset.
    source : str
        Where its events come from (file path and row range), for messages.
    """

    n_events: int
    offset: int
    source: str

    @property
    def decoded_rows(self) -> int:
        """Rows of one column decoded at once while loading (a Parquet row group; else 0)."""
        return 0

    @property
    def read_bytes(self) -> int:
        """Peak bytes a load holds besides the arrays it returns (decoding; 0 for arrays)."""
        return 0

    @abstractmethod
    def load(self, columns: Sequence[str] | None = None, dtype: Any = np.float64) -> EventBatch:
        """Load the events: only ``columns`` (all for None) plus the weights.

        Values come back as contiguous, writable arrays of ``dtype`` (float64 or
        float32), checked to be finite.

        Raises
        ------
        SchemaError
            If a requested column does not exist.
        DataError
            If a loaded value is missing or not finite (naming column, source, event).
        """

    def graph_task(self, key: Any, columns: list[str], dtype: np.dtype) -> Task:
        """The Dask task ``key`` that loads this partition (``columns`` already checked).

        A partition of a Dask collection returns a task on the keys of its origin's
        graph (see :meth:`DataOrigin.graph`); others load themselves.
        """
        return Task(key, self.load, columns, dtype)


def load_from_file(part: Partition, schema: Schema, columns: Sequence[str] | None, dtype: Any,
                   where: str, read: Callable[[list[str], np.dtype], dict[str, np.ndarray]]
                   ) -> EventBatch:
    """:meth:`Partition.load` of a partition of a file: ``read(names, dtype)`` reads the columns.

    ``columns`` are checked against ``schema`` (a SchemaError names ``where``); ``read`` is
    called, for a partition with events, with them and ``weight`` if the file stores it.
    """
    dt = check_dtype(dtype)
    cols = resolve_columns(schema, columns, where)
    if not part.n_events:
        return EventBatch({c: np.empty(0, dtype=dt) for c in cols}, np.ones(0, dtype=dt),
                          offset=part.offset, source=part.source)
    arrays = read(cols + ([WEIGHT_COLUMN] if schema.has_weight else []), dt)
    weights = arrays.pop(WEIGHT_COLUMN, None)
    if weights is None:
        weights = np.ones(part.n_events, dtype=dt)
    return EventBatch(arrays, weights, offset=part.offset, source=part.source)


class DataOrigin(Protocol):
    """Where a dataset's events live; makes partitions for a chunk size.

    Attributes
    ----------
    schema : Schema
    sources : tuple of str
        Files, ``("arrays",)`` or the Dask collection's name, for messages.
    n_events : int
    token : str
        Identifies the events (part of every Dask key built on them).
    has_blocks : bool
        Whether the events come in blocks of their own (a Dask collection's partitions,
        persisted batches): ``make_partitions(None)`` keeps them, and a chunk size only
        splits them further. Otherwise a chunk size is always given.
    chosen_by_user : bool
        Whether those blocks are a partitioning the user chose (the runtime keeps it).
    """

    schema: Schema
    sources: tuple[str, ...]
    n_events: int
    token: str
    has_blocks: bool
    chosen_by_user: bool

    def make_partitions(self, chunk_size: int | None) -> tuple[Partition, ...]: ...

    def graph(self) -> HighLevelGraph | None:
        """The Dask graph the partitions' tasks depend on (None: they load themselves)."""
        ...
