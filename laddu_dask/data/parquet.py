"""Read and write event samples as Parquet files in laddu's column convention.

Only metadata is read by :func:`read_parquet`; each partition later reads just
the row groups that cover its rows, and just the columns asked for.

Examples
--------
>>> import numpy as np, os, tempfile
>>> from laddu_dask.data.dataset import Dataset
>>> from laddu_dask.data.parquet import read_parquet
>>> ds = Dataset.from_arrays(p4s={"beam": np.tile([8.5, 0, 0, 8.5], (5, 1))})
>>> path = os.path.join(tempfile.mkdtemp(), "beam.parquet")
>>> ds.write_parquet(path)
>>> read_parquet(path, chunk_size=2).n_partitions
3
"""

from __future__ import annotations

import bisect
import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from dask.base import tokenize

from laddu_dask.data.batch import EventBatch
from laddu_dask.data.dataset import (
    Dataset,
    Partition,
    check_dtype,
    check_finite,
    check_memory_policy,
    resolve_chunk_size,
    resolve_columns,
    split_rows,
)
from laddu_dask.data.schema import P4_COMPONENTS, WEIGHT_COLUMN, Schema
from laddu_dask.errors import DataError, SchemaError
from laddu_dask.files import atomic_path

PRECISIONS = {"f64": pa.float64(), "f32": pa.float32()}
"""Storage precisions accepted by :func:`write_parquet`."""

PathArg = str | os.PathLike[str]


# ----------------------------------------------------------------------------- paths


def expand_paths(path: PathArg | Sequence[PathArg]) -> list[str]:
    """Resolve a file, folder (its ``*.parquet``, sorted), glob, or a list of these.

    Raises
    ------
    FileNotFoundError
        Naming the pattern, folder or file that matched nothing.

    Examples
    --------
    >>> expand_paths("/no/such/*.parquet")
    Traceback (most recent call last):
    ...
    FileNotFoundError: no files match '/no/such/*.parquet'
    """
    items = [path] if isinstance(path, str | os.PathLike) else list(path)
    if not items:
        raise FileNotFoundError("no Parquet paths given (empty list)")
    files: list[str] = []
    for item in items:
        p = os.path.expanduser(os.fspath(item))
        if glob.has_magic(p):
            found = sorted(f for f in glob.glob(p, recursive=True) if os.path.isfile(f))
            if not found:
                raise FileNotFoundError(f"no files match {p!r}")
            files.extend(found)
        elif os.path.isdir(p):
            found = sorted(
                os.path.join(p, f) for f in os.listdir(p)
                if f.endswith(".parquet") and os.path.isfile(os.path.join(p, f))
            )
            if not found:
                raise FileNotFoundError(f"folder {p!r} holds no *.parquet files")
            files.extend(found)
        elif os.path.isfile(p):
            files.append(p)
        else:
            raise FileNotFoundError(f"no such Parquet file or folder: {p!r}")
    return files


# ----------------------------------------------------------------------------- metadata


def _is_numeric(t: pa.DataType) -> bool:
    return pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_boolean(t)


def _schema_of(path: str, arrow_schema: pa.Schema) -> Schema:
    """Schema of one file; non-numeric columns are ignored unless they look like data."""
    numeric = [f.name for f in arrow_schema if _is_numeric(f.type)]
    component_heads = {
        f.name.rpartition("_")[0] for f in arrow_schema
        if f.name.rpartition("_")[2] in P4_COMPONENTS and _is_numeric(f.type)
    }
    for f in arrow_schema:
        if _is_numeric(f.type):
            continue
        head, _, tail = f.name.rpartition("_")
        if f.name == WEIGHT_COLUMN or (tail in P4_COMPONENTS and head in component_heads):
            raise SchemaError(
                f"column {f.name!r} in {path} has type {f.type}; expected a number"
            )
    return Schema.from_column_names(numeric, path)


@dataclass(frozen=True)
class _FileInfo:
    path: str
    n_rows: int
    row_group_rows: tuple[int, ...]


def _inspect(path: str) -> tuple[_FileInfo, Schema]:
    try:
        with pq.ParquetFile(path) as f:
            md = f.metadata
            arrow_schema = f.schema_arrow
            rg = tuple(md.row_group(i).num_rows for i in range(md.num_row_groups))
    except pa.ArrowException as exc:
        raise DataError(f"{path} is not a readable Parquet file: {exc}") from None
    return _FileInfo(path, int(md.num_rows), rg), _schema_of(path, arrow_schema)


def _describe_difference(a: Schema, b: Schema) -> str:
    ca = set(a.columns()) | ({WEIGHT_COLUMN} if a.has_weight else set())
    cb = set(b.columns()) | ({WEIGHT_COLUMN} if b.has_weight else set())
    parts = []
    if ca - cb:
        parts.append(f"only the first has {sorted(ca - cb)}")
    if cb - ca:
        parts.append(f"only the second has {sorted(cb - ca)}")
    return "; ".join(parts)


# ----------------------------------------------------------------------------- partitions


@dataclass(frozen=True)
class ParquetPartition(Partition):
    """Rows ``start:stop`` of one Parquet file, read through the row groups covering them."""

    path: str
    start: int
    row_groups: tuple[int, ...]
    skip: int
    schema: Schema = field(repr=False)
    group_rows: int = 0

    @property
    def read_rows(self) -> int:
        """Rows of the row groups read to load this partition (they are decoded whole)."""
        return max(self.group_rows, self.n_events)

    def load(self, columns: Sequence[str] | None = None, dtype: Any = np.float64) -> EventBatch:
        dt = check_dtype(dtype)
        cols = resolve_columns(self.schema, columns, self.path)
        read = cols + ([WEIGHT_COLUMN] if self.schema.has_weight else [])
        out = {c: np.empty(0, dtype=dt) for c in cols}
        weights = np.ones(self.n_events, dtype=dt)
        if read and self.n_events:
            try:
                with pq.ParquetFile(self.path) as f:
                    table = f.read_row_groups(list(self.row_groups), columns=read,
                                              use_threads=False)
            except pa.ArrowException as exc:
                raise DataError(f"cannot read {self.source}: {exc}") from None
            table = table.slice(self.skip, self.n_events)
            if table.num_rows != self.n_events:
                raise DataError(
                    f"{self.path} changed since it was opened: expected {self.n_events} rows "
                    f"at {self.source}, found {table.num_rows}"
                )
            for c in read:
                arr = self._convert(table.column(c), c, dt)
                if c == WEIGHT_COLUMN:
                    weights = arr
                else:
                    out[c] = arr
            del table
            # Arrow's allocator keeps freed row groups cached; give them back, so that a
            # streamed dataset stays within its memory budget
            pa.default_memory_pool().release_unused()
        return EventBatch(out, weights, offset=self.offset, source=self.source)

    def _convert(self, chunked: pa.ChunkedArray, name: str, dt: np.dtype) -> np.ndarray:
        if chunked.null_count:
            i = pc.index(pc.is_null(chunked), True).as_py()
            raise DataError(
                f"column {name!r} has a missing (null) value at event {self.offset + i} "
                f"({self.source})"
            )
        raw = chunked.to_numpy()
        with np.errstate(over="ignore"):
            arr = np.array(raw, dtype=dt, copy=True, order="C")
        check_finite(arr, name, self.offset, self.source,
                     original=raw if raw.dtype.kind == "f" and raw.dtype != dt else None)
        return arr


class ParquetOrigin:
    """Parquet files with one schema; cuts each file into partitions of rows."""

    def __init__(self, files: Sequence[_FileInfo], schema: Schema) -> None:
        self.files = tuple(files)
        self.schema = schema
        self.sources = tuple(f.path for f in self.files)
        self.n_events = sum(f.n_rows for f in self.files)
        stats = []
        for f in self.files:
            st = os.stat(f.path)
            stats.append((os.path.abspath(f.path), st.st_size, st.st_mtime_ns, f.n_rows))
        self.token = "parquet-" + tokenize(stats)

    def make_partitions(self, chunk_size: int) -> tuple[Partition, ...]:
        parts: list[Partition] = []
        offset = 0
        for f in self.files:
            starts = [0]
            for n in f.row_group_rows:
                starts.append(starts[-1] + n)
            for a, b in split_rows(f.n_rows, chunk_size):
                first = bisect.bisect_right(starts, a) - 1
                last = bisect.bisect_left(starts, b) - 1
                parts.append(ParquetPartition(
                    n_events=b - a, offset=offset + a, source=f"{f.path} [rows {a}:{b}]",
                    path=f.path, start=a, row_groups=tuple(range(first, last + 1)),
                    skip=a - starts[first], schema=self.schema,
                    group_rows=starts[last + 1] - starts[first],
                ))
            offset += f.n_rows
        if not parts:
            f = self.files[0]
            parts.append(ParquetPartition(
                n_events=0, offset=0, source=f"{f.path} [rows 0:0]", path=f.path, start=0,
                row_groups=(), skip=0, schema=self.schema,
            ))
        return tuple(parts)


# ----------------------------------------------------------------------------- API


def read_parquet(path: PathArg | Sequence[PathArg], chunk_size: int | None = None,
                 memory_policy: str = "fastest") -> Dataset:
    """Open Parquet event files lazily as a :class:`Dataset`.

    Parameters
    ----------
    path : path-like or sequence of path-like
        A file, a folder (every ``*.parquet`` in it, sorted), a glob pattern such
        as ``"accmc/*.parquet"``, or a list of these.
    chunk_size : int, optional
        Maximum events per partition (default ``DEFAULT_CHUNK_SIZE``); partitions
        never span two files.
    memory_policy : {"fastest", "resident", "streaming"}
        Hint for the runtime.

    Raises
    ------
    FileNotFoundError
        A path or pattern matched no file.
    DataError
        A file is not Parquet (naming it).
    SchemaError
        Files disagree on their columns (naming both), or a four-vector is incomplete.
    ValueError
        Bad ``chunk_size`` or ``memory_policy``.

    Examples
    --------
    >>> ds = read_parquet("accmc/*.parquet", chunk_size=100_000)  # doctest: +SKIP
    """
    check_memory_policy(memory_policy)
    resolve_chunk_size(chunk_size)  # validate before touching any file
    files = expand_paths(path)
    infos: list[_FileInfo] = []
    schema: Schema | None = None
    for p in files:
        info, s = _inspect(p)
        if schema is None:
            schema = s
        elif s != schema and (set(s.p4s) != set(schema.p4s)
                              or set(s.scalars) != set(schema.scalars)
                              or s.has_weight != schema.has_weight):
            raise SchemaError(
                f"{infos[0].path} and {p} have different columns "
                f"({_describe_difference(schema, s)})"
            )
        infos.append(info)
    assert schema is not None
    return Dataset(ParquetOrigin(infos, schema), chunk_size=chunk_size,
                   memory_policy=memory_policy)


def write_parquet(dataset: Dataset, path: PathArg, precision: str = "f64") -> None:
    """Write ``dataset`` (all columns and weights) to one Parquet file, atomically.

    Each partition becomes one row group. The file is first written to a hidden
    temporary file in the same folder and then renamed over ``path``.

    Raises
    ------
    ValueError
        If ``precision`` is not ``"f64"`` or ``"f32"``; nothing is written.
    FileNotFoundError
        If the folder of ``path`` does not exist.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be 'f64' or 'f32', got {precision!r}")
    target = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot write {target}: folder {folder!r} does not exist")
    if os.path.isdir(target):
        raise IsADirectoryError(f"cannot write Parquet file over folder {target!r}")
    ptype = PRECISIONS[precision]
    names = dataset.schema.columns() + [WEIGHT_COLUMN]
    arrow_schema = pa.schema([pa.field(n, ptype, nullable=False) for n in names])
    dt = np.float32 if precision == "f32" else np.float64
    with atomic_path(target) as tmp, pq.ParquetWriter(tmp, arrow_schema) as writer:
        for batch in dataset.iter_batches(None, np.float64):
            arrays = [batch.columns[n] for n in names[:-1]] + [batch.weights]
            stored = []
            for n, a in zip(names, arrays, strict=True):
                with np.errstate(over="ignore"):
                    b = a.astype(dt, copy=False)
                if b is not a:
                    check_finite(b, n, batch.offset, batch.source, original=a)
                stored.append(pa.array(b, type=ptype))
            writer.write_table(pa.Table.from_arrays(stored, schema=arrow_schema))
