"""Event datasets split into partitions that load lazily as :class:`EventBatch`.

A :class:`Dataset` is an immutable view of event columns (from NumPy arrays or
Parquet files) cut into partitions of at most ``chunk_size`` events. Each
:class:`Partition` knows how to load its events, and only the columns asked for;
:meth:`Dataset.to_dask` exposes them as Dask arrays, one chunk per partition.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.data.dataset import Dataset
>>> ds = Dataset.from_arrays(p4s={"beam": np.tile([8.5, 0, 0, 8.5], (10, 1))},
...                          scalars={"pol": np.linspace(0, 1, 10)}, chunk_size=4)
>>> ds.n_events, ds.n_partitions, [p.n_events for p in ds.partitions]
(10, 3, [4, 4, 2])
>>> float(ds.load_partition(1, ["pol"]).columns["pol"][0])
0.4444444444444444
"""

from __future__ import annotations

import html
import itertools
import math
import numbers
import os
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from dask.highlevelgraph import HighLevelGraph

from laddu_dask.data.batch import EventBatch
from laddu_dask.data.schema import WEIGHT_COLUMN, Schema, p4_columns
from laddu_dask.errors import DataError, NonFiniteError, SchemaError
from laddu_dask.views import Raw, bytes_text, key_values

DEFAULT_CHUNK_SIZE = 262_144
"""Events per partition when ``chunk_size`` is None."""

MEMORY_POLICIES: tuple[str, ...] = ("resident", "streaming", "fastest")
"""Allowed values of ``memory_policy``."""

_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))


# ----------------------------------------------------------------------------- checks


def check_memory_policy(memory_policy: str) -> str:
    """Return ``memory_policy`` if allowed, else raise ValueError naming the allowed values.

    Examples
    --------
    >>> check_memory_policy("streaming")
    'streaming'
    """
    if not isinstance(memory_policy, str) or memory_policy not in MEMORY_POLICIES:
        allowed = ", ".join(repr(p) for p in MEMORY_POLICIES)
        raise ValueError(f"memory_policy must be one of {allowed}, got {memory_policy!r}")
    return memory_policy


def resolve_chunk_size(chunk_size: int | None) -> int:
    """Return the events per partition: ``DEFAULT_CHUNK_SIZE`` for None.

    Raises ValueError unless ``chunk_size`` is None or a positive integer.

    Examples
    --------
    >>> resolve_chunk_size(None) == DEFAULT_CHUNK_SIZE, resolve_chunk_size(1000)
    (True, 1000)
    """
    if chunk_size is None:
        return DEFAULT_CHUNK_SIZE
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, numbers.Integral):
        raise ValueError(  # documented contract: a bad chunk_size is a ValueError
            f"chunk_size must be a positive integer or None, got {chunk_size!r}"
        )
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1 event, got {chunk_size}")
    return int(chunk_size)


def check_dtype(dtype: Any) -> np.dtype:
    """Return ``np.dtype(dtype)`` if it is float64 or float32, else raise ValueError."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt not in _DTYPES:
        raise ValueError(f"dtype must be numpy.float64 or numpy.float32, got {dtype!r}")
    return dt


def check_finite(array: np.ndarray, column: str, offset: int, source: str,
                 original: np.ndarray | None = None) -> None:
    """Raise DataError naming ``column``, ``source`` and the first non-finite event.

    ``offset`` is the global index of ``array[0]``. ``original`` holds the values
    before a dtype conversion, to tell an overflow from a stored non-finite value.

    Examples
    --------
    >>> import numpy as np
    >>> check_finite(np.array([1.0, np.nan]), "beam_px", 10, "arrays")
    Traceback (most recent call last):
    ...
    laddu_dask.errors.DataError: column 'beam_px' has a non-finite value (nan) at event 11 ...
    """
    finite = np.isfinite(array)
    if finite.all():
        return
    i = int(np.argmin(finite))
    value = array[i] if original is None else original[i]
    what = f"a non-finite value ({float(value)!r})"
    if original is not None and np.isfinite(original[i]):
        what = f"a value ({float(value)!r}) that overflows {array.dtype}"
    raise DataError(f"column {column!r} has {what} at event {offset + i} ({source})")


def split_rows(n_rows: int, chunk_size: int) -> list[tuple[int, int]]:
    """Cut ``range(n_rows)`` into ``(start, stop)`` pieces of ``chunk_size`` (last shorter).

    Examples
    --------
    >>> split_rows(10, 4)
    [(0, 4), (4, 8), (8, 10)]
    """
    return [(s, min(s + chunk_size, n_rows)) for s in range(0, n_rows, chunk_size)]


def resolve_columns(schema: Schema, columns: Sequence[str] | None, source: str) -> list[str]:
    """Columns to load: all of ``schema`` for None, else ``columns`` less ``weight``.

    Raises SchemaError (via :meth:`Schema.require`) naming any unknown column and ``source``.
    """
    if columns is None:
        return schema.columns()
    if isinstance(columns, str):
        columns = [columns]
    cols = list(dict.fromkeys(c for c in columns if c != WEIGHT_COLUMN))
    schema.require(cols, source, needed_by="load")
    return cols


# ----------------------------------------------------------------------------- partitions


@dataclass(frozen=True)
class Partition(ABC):
    """A contiguous block of events of a dataset that can load itself.

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


@dataclass(frozen=True, eq=False)
class ArrayPartition(Partition):
    """A partition over in-memory arrays (views into the dataset's columns)."""

    schema: Schema = field(repr=False)
    arrays: Mapping[str, np.ndarray] = field(repr=False)
    weight_array: np.ndarray | None = field(repr=False)

    def load(self, columns: Sequence[str] | None = None, dtype: Any = np.float64) -> EventBatch:
        dt = check_dtype(dtype)
        cols = resolve_columns(self.schema, columns, "arrays")
        with np.errstate(over="ignore"):
            return self._load(cols, dt)

    def _load(self, cols: list[str], dt: np.dtype) -> EventBatch:
        out: dict[str, np.ndarray] = {}
        for c in cols:
            raw = self.arrays[c]
            arr = np.array(raw, dtype=dt, copy=True)
            if dt != raw.dtype:
                check_finite(arr, c, self.offset, self.source, original=raw)
            out[c] = arr
        if self.weight_array is None:
            w = np.ones(self.n_events, dtype=dt)
        else:
            w = np.array(self.weight_array, dtype=dt, copy=True)
            if dt != self.weight_array.dtype:
                check_finite(w, WEIGHT_COLUMN, self.offset, self.source, self.weight_array)
        return EventBatch(out, w, offset=self.offset, source=self.source)


class DataOrigin(Protocol):
    """Where a dataset's events live; makes partitions for a chunk size."""

    schema: Schema
    sources: tuple[str, ...]
    n_events: int
    token: str

    def make_partitions(self, chunk_size: int) -> tuple[Partition, ...]: ...


def _as_float_array(value: Any, what: str) -> np.ndarray:
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{what} is not a numeric array: {exc}") from None
    if arr.dtype.kind not in "biuf":
        raise DataError(f"{what} must hold real numbers, got dtype {arr.dtype}")
    return arr


class ArrayOrigin:
    """Events held in memory as flat float64 columns (built by :meth:`Dataset.from_arrays`)."""

    sources: tuple[str, ...] = ("arrays",)

    def __init__(self, schema: Schema, columns: dict[str, np.ndarray],
                 weights: np.ndarray | None, n_events: int) -> None:
        self.schema = schema
        self.columns = columns
        self.weights = weights
        self.n_events = n_events
        self.token = f"arrays-{uuid.uuid4().hex}"

    def make_partitions(self, chunk_size: int) -> tuple[Partition, ...]:
        ranges = split_rows(self.n_events, chunk_size) or [(0, 0)]
        return tuple(
            ArrayPartition(
                n_events=b - a, offset=a, source=f"arrays [rows {a}:{b}]", schema=self.schema,
                arrays={k: v[a:b] for k, v in self.columns.items()},
                weight_array=None if self.weights is None else self.weights[a:b],
            )
            for a, b in ranges
        )


# ----------------------------------------------------------------------------- dataset


def _exact_partials(values: np.ndarray) -> list[float]:
    """Floats whose exact sum equals the exact sum of ``values`` (repeated fsum residuals)."""
    vals = values.tolist()
    parts: list[float] = []
    while True:
        s = math.fsum(vals)
        if s == 0.0:
            return parts
        parts.append(s)
        vals.append(-s)


def _load_partials(*partitions: Partition) -> list[float]:
    """Floats whose exact sum is that of the weights of ``partitions`` (read one at a time)."""
    return [s for p in partitions for s in _exact_partials(p.load([], np.float64).weights)]


def _batch_column(batch: EventBatch, name: str) -> Any:
    return batch.columns[name]


def _batch_weights(batch: EventBatch) -> Any:
    return batch.weights


class Dataset:
    """Weighted events in partitions, from arrays or Parquet files.

    Build one with :meth:`from_arrays` or :func:`laddu_dask.data.parquet.read_parquet`.

    Attributes
    ----------
    schema : Schema
        Four-vectors, scalars and whether weights are stored.
    partitions : tuple of Partition
        The event blocks, in order; never spanning two files.
    memory_policy : str
        ``"resident"``, ``"streaming"`` or ``"fastest"`` (a hint to the runtime).
    chunk_size : int
        Maximum events per partition (resolved).
    sources : tuple of str
        File paths, or ``("arrays",)``.

    Examples
    --------
    >>> import numpy as np
    >>> ds = Dataset.from_arrays(scalars={"x": np.arange(5.0)}, weights=[1, 2, 3, 4, 5.5])
    >>> ds.sum_weights()
    15.5
    """

    def __init__(self, origin: DataOrigin, chunk_size: int | None = None,
                 memory_policy: str = "fastest") -> None:
        self._origin = origin
        self.memory_policy = check_memory_policy(memory_policy)
        self.chunk_size = resolve_chunk_size(chunk_size)
        #: whether the user chose the chunk size (else the runtime may re-partition for speed)
        self.chunk_size_given = chunk_size is not None
        self.schema: Schema = origin.schema
        self.sources: tuple[str, ...] = tuple(origin.sources)
        self.partitions: tuple[Partition, ...] = tuple(origin.make_partitions(self.chunk_size))
        self._sum_weights: float | None = None

    # -- construction ------------------------------------------------------------------

    @classmethod
    def from_arrays(cls, p4s: Mapping[str, Any] | None = None,
                    scalars: Mapping[str, Any] | None = None, weights: Any = None,
                    chunk_size: int | None = None, memory_policy: str = "fastest") -> Dataset:
        """Build a dataset from in-memory arrays (copied; validated now).

        Parameters
        ----------
        p4s : dict of str to array of shape (n, 4), optional
            Four-vectors as ``(E, px, py, pz)`` rows.
        scalars : dict of str to array of shape (n,), optional
            Scalar columns.
        weights : array of shape (n,), optional
            Event weights (1 when omitted).
        chunk_size : int, optional
            Events per partition (default :data:`DEFAULT_CHUNK_SIZE`).
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
        >>> ds.schema.columns()
        ['k_e', 'k_px', 'k_py', 'k_pz']
        """
        check_memory_policy(memory_policy)
        resolve_chunk_size(chunk_size)  # validate now; None stays 'not chosen by the user'
        p4s = dict(p4s or {})
        scalars = dict(scalars or {})
        if not p4s and not scalars:
            raise DataError("from_arrays needs at least one four-vector (p4s) or scalar")
        for kind, names in (("four-vector", p4s), ("scalar", scalars)):
            for name in names:
                if not isinstance(name, str) or not name:
                    raise SchemaError(f"{kind} names must be non-empty strings, got {name!r}")
        lengths: dict[str, int] = {}
        columns: dict[str, np.ndarray] = {}
        for name, value in p4s.items():
            arr = _as_float_array(value, f"four-vector {name!r}")
            if arr.ndim != 2 or arr.shape[1] != 4:
                raise DataError(
                    f"four-vector {name!r} must have shape (n_events, 4) with columns "
                    f"(E, px, py, pz), got shape {arr.shape}"
                )
            lengths[f"four-vector {name!r}"] = arr.shape[0]
            for j, col in enumerate(p4_columns(name)):
                columns[col] = np.array(arr[:, j], dtype=np.float64, copy=True)
        for name, value in scalars.items():
            arr = _as_float_array(value, f"scalar {name!r}")
            if arr.ndim != 1:
                raise DataError(f"scalar {name!r} must be 1-D, got shape {arr.shape}")
            lengths[f"scalar {name!r}"] = arr.shape[0]
            if name in columns:
                raise SchemaError(f"scalar {name!r} clashes with a four-vector column")
            columns[name] = np.array(arr, dtype=np.float64, copy=True)
        w = None
        if weights is not None:
            warr = _as_float_array(weights, "weights")
            if warr.ndim != 1:
                raise DataError(f"weights must be 1-D, got shape {warr.shape}")
            lengths["weights"] = warr.shape[0]
            w = np.array(warr, dtype=np.float64, copy=True)
        if len(set(lengths.values())) > 1:
            desc = ", ".join(f"{k}: {v}" for k, v in lengths.items())
            raise DataError(f"arrays have different numbers of events ({desc})")
        schema = Schema(p4s=tuple(p4s), scalars=tuple(scalars), has_weight=w is not None)
        flat = schema.columns() + ([WEIGHT_COLUMN] if w is not None else [])
        if Schema.from_column_names(flat, "arrays") != schema:
            raise SchemaError(
                f"scalar names {list(scalars)} would be read back from Parquet as "
                "four-vector columns; pass four-vectors in p4s"
            )
        for name, arr in columns.items():
            check_finite(arr, name, 0, "arrays")
        if w is not None:
            check_finite(w, WEIGHT_COLUMN, 0, "arrays")
        n = next(iter(lengths.values()))
        origin = ArrayOrigin(schema, columns, w, n)
        return cls(origin, chunk_size=chunk_size, memory_policy=memory_policy)

    def with_chunk_size(self, chunk_size: int | None) -> Dataset:
        """Return the same events re-partitioned into blocks of ``chunk_size``.

        Examples
        --------
        >>> import numpy as np
        >>> Dataset.from_arrays(scalars={"x": np.zeros(7)}).with_chunk_size(3).n_partitions
        3
        """
        return Dataset(self._origin, chunk_size=chunk_size, memory_policy=self.memory_policy)

    def with_memory_policy(self, memory_policy: str) -> Dataset:
        """Return the same dataset with another memory policy."""
        return Dataset(self._origin, chunk_size=self.chunk_size if self.chunk_size_given else None,
                       memory_policy=memory_policy)

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
        one place a dataset's partitions become Dask tasks: :meth:`to_dask` and the
        runtime's preparation graphs build on it.

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
        from dask.base import tokenize

        dt = check_dtype(dtype)
        cols = resolve_columns(self.schema, columns, self._source_label())
        layer_name = f"{name}-{tokenize(self._origin.token, self.chunk_size, cols, dt.str)}"
        layer = {(layer_name, i): (p.load, cols, dt) for i, p in enumerate(self.partitions)}
        graph = HighLevelGraph.from_collections(layer_name, layer, dependencies=())
        return graph, list(layer)

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
                import dask
                from dask import delayed

                parts = self.partitions
                bounded: dict[str, Any] = {}
                if num_workers is None:
                    tasks = [delayed(_load_partials)(p) for p in parts]
                else:  # two tasks a thread, each reading its partitions one at a time
                    bounded = {"scheduler": "threads", "num_workers": num_workers}
                    size = -(-len(parts) // (2 * num_workers))
                    tasks = [delayed(_load_partials)(*parts[a:b])
                             for a, b in split_rows(len(parts), size)]
                try:
                    partials = dask.compute(*tasks, **bounded)
                    total = math.fsum(itertools.chain.from_iterable(partials))
                except OverflowError:
                    total = math.inf
                if not math.isfinite(total):
                    raise NonFiniteError(
                        f"the weights of {self._source_label()} sum to more than the largest "
                        "double (the sum overflows)"
                    )
                self._sum_weights = total
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
        from laddu_dask.data.parquet import write_parquet

        write_parquet(self, path, precision=precision)

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
