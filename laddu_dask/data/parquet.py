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
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from dask.base import is_dask_collection, tokenize

from laddu_dask.budgets import MemoryBudget
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.checks import (
    check_finite,
    check_same_columns,
    missing_value,
    resolve_chunk_size,
    split_rows,
)
from laddu_dask.data.dataset import Dataset
from laddu_dask.data.formats import FormatSpec, register_format
from laddu_dask.data.fs import filesystem, is_url, open_input
from laddu_dask.data.identity import FileIdentity
from laddu_dask.data.parquet_writer import write_parquet_format
from laddu_dask.data.partition import Partition, load_from_file
from laddu_dask.data.paths import PathArg, expand_paths
from laddu_dask.data.read_options import (
    check_cache,
    check_nulls,
    check_validate,
    reader_options,
    select_schema,
)
from laddu_dask.data.registry import format_named
from laddu_dask.data.schema import Schema
from laddu_dask.errors import DataChangedError, DataError

"""Storage precisions accepted by :func:`write_parquet`."""


# ----------------------------------------------------------------------------- metadata


_READ_ERRORS = (pa.ArrowException, OSError)
"""What pyarrow raises for unreadable, truncated or corrupt files (bad pages, bad
decompression, failed page checksums); each read turns them into a DataError naming the
file and row groups."""


def _is_numeric(t: pa.DataType) -> bool:
    """Numbers a model can use: floats, integers, booleans and decimals (read as float64)."""
    return (pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_boolean(t)
            or pa.types.is_decimal(t))


def _schema_of(path: str, arrow_schema: pa.Schema) -> Schema:
    """Schema of one file; other columns (strings, timestamps, ...) are kept as not numeric.

    A non-numeric weight or four-vector component is an error now; any other non-numeric
    column is an error only if a model needs it (see :meth:`Schema.require`).
    """
    return Schema.from_typed_columns(
        [(f.name, str(f.type), _is_numeric(f.type)) for f in arrow_schema], path)


@dataclass(frozen=True)
class _FileInfo:
    path: str
    n_rows: int
    row_group_rows: tuple[int, ...]
    identity: FileIdentity
    filesystem: Any = None


def _inspect(path: str, fs: Any = None) -> tuple[_FileInfo, Schema]:
    try:
        with open_input(path, fs) as handle:
            identity = FileIdentity.read(handle, path, fs)
            with pq.ParquetFile(handle) as f:
                md = f.metadata
                arrow_schema = f.schema_arrow
                rg = tuple(md.row_group(i).num_rows for i in range(md.num_row_groups))
    except _READ_ERRORS as exc:
        raise DataError(f"{path} is not a readable Parquet file: {exc}") from None
    return _FileInfo(path, int(md.num_rows), rg, identity, fs), _schema_of(path, arrow_schema)


def _numbers(chunked: pa.ChunkedArray) -> np.ndarray:
    """A column's values as NumPy numbers; decimals as the nearest float64.

    Arrow's decimal-to-float cast can be one unit in the last place off, so decimals
    are converted here: exactly-representable unscaled integers divided by an exact power
    of ten (one correctly rounded division), else Python's correctly rounded ``float``.
    """
    t = chunked.type
    if not pa.types.is_decimal(t):
        return chunked.to_numpy()
    if t.bit_width == 128 and t.precision <= 15 and 0 <= t.scale <= 22:
        # |unscaled| < 10**15 < 2**53 sits in the low 64 bits of each little-endian value
        low = [np.frombuffer(c.buffers()[1], "<i8")[2 * c.offset:2 * (c.offset + len(c)):2]
               for c in chunked.chunks]
        return np.concatenate([*low, np.empty(0, "<i8")]).astype(np.float64) / 10.0 ** t.scale
    return np.array([float(v) for v in chunked.to_pylist()], dtype=np.float64)


# ----------------------------------------------------------------------------- partitions


#: Bytes pyarrow reads from a file at a time while decoding a column chunk (its pages
#: stream through this buffer instead of being read whole, or pre-buffered for a table).
READ_BUFFER = 1 << 16

#: What decoding one column of a row group holds, per row: the page being decompressed,
#: the decoded values and the spare capacity of the array they grow into (Arrow's pool
#: counts 1.73 MiB for 65,536 float64 rows, 12.4 MiB for 1,000,000).
DECODE_BYTES_PER_ROW = 4 * 8

#: What a load holds besides that and the arrays it returns: the reader's buffers and
#: Parquet's allocations outside Arrow's pool (in RSS a 65,536-row column costs 4.4 MiB,
#: a 262,144-row one 10.2 MiB, a 1,000,000-row one 21.5 MiB).
READ_FIXED_BYTES = 3 * 2**20


@dataclass(frozen=True)
class ParquetPartition(Partition):
    """Rows ``start:stop`` of one Parquet file, read through the row groups covering them.

    Every load checks that the file is still the one that was opened (its size,
    modification time and footer, see :class:`~laddu_dask.data.identity.FileIdentity`)
    and verifies the page checksums the file carries.  The row groups are decoded one
    column at a time, straight into the partition's arrays, so a load holds the arrays
    it returns and one decoded column of one row group (see :attr:`decoded_rows`).
    """

    path: str
    start: int
    row_groups: tuple[int, ...]
    skip: int
    schema: Schema = field(repr=False)
    identity: FileIdentity = field(repr=False)
    group_rows: int = 0
    filesystem: Any = field(default=None, repr=False)
    nulls: str = "error"

    @property
    def decoded_rows(self) -> int:
        """Rows of the largest row group read: each column of it is decoded whole."""
        return self.group_rows

    @property
    def read_bytes(self) -> int:
        """Peak bytes a load holds besides the arrays it returns (one column decoded at a time)."""
        return READ_FIXED_BYTES + DECODE_BYTES_PER_ROW * self.group_rows

    def load(self, columns: Sequence[str] | None = None, dtype: Any = np.float64) -> EventBatch:
        """Load the events (see :meth:`Partition.load`).

        Raises
        ------
        DataChangedError
            If the file changed on disk, or is gone, since it was opened (naming it).
        DataError
            If a row group cannot be read or decoded, or fails its page checksum (naming
            the file and the row group), or a value is missing or not finite.
        """
        return load_from_file(self, self.schema, columns, dtype, self.path, self._read)

    def _read(self, columns: list[str], dt: np.dtype) -> dict[str, np.ndarray]:
        """Check the file's identity, then read ``columns`` of the partition's rows."""
        try:
            with open_input(self.path, self.filesystem) as handle:
                self.identity.check(FileIdentity.read(handle, self.path, self.filesystem), self.path)
                if not columns:
                    return {}
                with pq.ParquetFile(handle, page_checksum_verification=True, pre_buffer=False,
                                    buffer_size=READ_BUFFER) as f:
                    return self._fill(f, columns, dt)
        except FileNotFoundError:
            raise DataChangedError(
                f"{self.path} was deleted or moved since it was opened ({self.source})"
            ) from None
        except _READ_ERRORS as exc:
            raise DataError(f"cannot read {self.source}: {exc}") from None
        finally:
            # Arrow's allocator (mimalloc in the wheels) keeps the pages of freed buffers
            # cached per thread, several MiB each; give them back to the system
            pa.default_memory_pool().release_unused()

    def _fill(self, f: pq.ParquetFile, columns: list[str], dt: np.dtype) -> dict[str, np.ndarray]:
        """Decode one column of one row group at a time into the partition's arrays."""
        arrays = {c: np.empty(self.n_events, dtype=dt) for c in columns}
        stop = self.start + self.n_events
        row = self.start - self.skip  # the first row of the first row group read
        for g in self.row_groups:
            n = f.metadata.row_group(g).num_rows
            a, b = max(row, self.start), min(row + n, stop)
            for c in columns:
                try:
                    table = f.read_row_group(g, columns=[c], use_threads=False)
                except _READ_ERRORS as exc:
                    raise DataError(f"cannot read row group {g} of {self.source}: {exc}") from None
                self._convert(table.column(0).slice(a - row, b - a), c,
                              arrays[c][a - self.start:b - self.start], self.offset + a - self.start)
                del table  # free the decoded column before the next one
            row += n
        if row < stop:
            raise DataChangedError(
                f"{self.path} changed since it was opened: expected {self.n_events} rows "
                f"at {self.source}, found {max(row - self.start, 0)}"
            )
        return arrays

    def _convert(self, chunked: pa.ChunkedArray, name: str, out: np.ndarray, offset: int) -> None:
        """Check ``chunked`` (no nulls unless ``nulls="nan"``, finite) and copy it into ``out``
        (events from ``offset``); with ``nulls="nan"`` a null is read as NaN."""
        nulls = None
        if chunked.null_count:
            if self.nulls == "error":
                i = pc.index(pc.is_null(chunked), True).as_py()
                raise missing_value(name, offset + i, self.source)
            nulls = pc.is_null(chunked).to_numpy(zero_copy_only=False)
            chunked = pc.fill_null(chunked, pa.scalar(0).cast(chunked.type))
        raw = _numbers(chunked)
        with np.errstate(over="ignore"):
            np.copyto(out, raw, casting="unsafe")
        check_finite(out, name, offset, self.source,
                     original=raw if raw.dtype.kind == "f" and raw.dtype != out.dtype else None)
        if nulls is not None:
            out[nulls] = np.nan


class ParquetOrigin:
    """Parquet files with one schema; cuts each file into partitions of rows."""

    has_blocks = False
    chosen_by_user = False

    def __init__(self, files: Sequence[_FileInfo], schema: Schema, nulls: str = "error",
                 selected: bool = False) -> None:
        self.files = tuple(files)
        self.schema = schema
        self.nulls = nulls
        self.sources = tuple(f.path for f in self.files)
        self.n_events = sum(f.n_rows for f in self.files)
        # what is read from the files: the same files read otherwise are other Dask keys
        reading = () if nulls == "error" and not selected else (
            nulls, schema.p4s, schema.scalars, schema.has_weight)
        self.token = "parquet-" + tokenize(
            [(f.path if f.filesystem is not None else os.path.abspath(f.path), f.identity, f.n_rows)
             for f in self.files], *reading
        )

    def graph(self) -> None:
        return None

    def make_partitions(self, chunk_size: int | None) -> tuple[Partition, ...]:
        assert chunk_size is not None
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
                    skip=a - starts[first], schema=self.schema, identity=f.identity,
                    group_rows=max(f.row_group_rows[first:last + 1]), filesystem=f.filesystem,
                    nulls=self.nulls,
                ))
            offset += f.n_rows
        if not parts:
            f = self.files[0]
            parts.append(ParquetPartition(
                n_events=0, offset=0, source=f"{f.path} [rows 0:0]", path=f.path, start=0,
                row_groups=(), skip=0, schema=self.schema, identity=f.identity,
                filesystem=f.filesystem,
            ))
        return tuple(parts)


# ----------------------------------------------------------------------------- API


def read_parquet(path: PathArg | Sequence[PathArg], chunk_size: int | None = None,
                 memory_policy: str | None = None,
                 storage_options: Mapping[str, Any] | None = None, *,
                 memory: MemoryBudget | int | str | None = None, cache: str | None = None,
                 nulls: str = "error", validate: bool = True, schema: Schema | None = None) -> Dataset:
    """Open Parquet event files lazily as a :class:`Dataset`.

    Only the files' metadata are read now. Each file's identity (size, modification
    time, footer) is recorded, and every later read of its events checks it: a file
    rewritten on disk raises :class:`~laddu_dask.errors.DataChangedError` rather than
    changing a likelihood silently.

    Columns of floating, integer, boolean or decimal type are numbers (decimals are read
    as the nearest float64); other columns (strings, timestamps, dates) are kept in the
    schema as not numeric, and a model that needs one is told its type.

    Parameters
    ----------
    path : path-like or sequence of path-like
        A file, a folder (every ``*.parquet`` in it, sorted), a glob pattern such
        as ``"accmc/*.parquet"``, or a list of these. A path that exists is never a
        pattern (``"run[1].parquet"`` is that file). Each file may be named only once.
        fsspec URLs (``"s3://bucket/accmc/*.parquet"``, ``"memory://..."``,
        ``"file://..."``) are read through pyarrow's filesystems, folders and patterns
        included (see :mod:`laddu_dask.data.fs`).
    chunk_size : int, optional
        Maximum events per partition (default: the Dask config's
        ``laddu-dask.chunk-size``, else ``DEFAULT_CHUNK_SIZE``); partitions never span
        two files.
    memory_policy : {"fastest", "resident", "disk", "streaming"}, optional
        laddu-dask's name of ``cache`` (an alias; give one or the other).
    storage_options : dict, optional
        Options of the fsspec filesystem of URLs (credentials, endpoints), as in Dask.
    memory : MemoryBudget, int or str, optional
        laddu's host-memory budget of this dataset (``"8 GiB"``, ``"60% available"``): a
        preparation holds the dataset within it as well as within the execution's budget.
    cache : {"fastest", "resident", "disk", "streaming"}, optional
        laddu's cache policy (case-insensitive, ``"auto"`` is ``"fastest"``; default
        ``"fastest"``): keep the prepared partitions, stream them, or whichever fits.
    nulls : {"error", "nan"}
        A null value is a :class:`~laddu_dask.errors.DataError` naming its column and
        event (``"error"``), or is read as NaN (``"nan"``), as in laddu.
    validate : bool
        laddu's switch to check every matched file when the dataset is made; laddu-dask
        reads every file's metadata for its row counts, and checks them, either way.
    schema : Schema, optional
        Read only these fields (``ld.Schema(p4s=[...], scalars=[...], weights=True)``), in
        that order; without ``weights=True`` every weight is 1, as in laddu.

    Raises
    ------
    FileNotFoundError
        A path or pattern matched no file.
    DataError
        A file is not Parquet or cannot be read (naming it), or one file is named twice,
        through a pattern and its name, a link or another spelling (naming the file and
        both spellings).
    SchemaError
        Files disagree on their columns (naming both), or a four-vector is incomplete.
        A field of ``schema`` the files lack or that holds no numbers.
    ValueError
        Bad ``chunk_size``, ``cache``/``memory_policy`` (or both given, disagreeing) or ``nulls``.
    BudgetError
        A ``memory`` that is no size, or zero bytes.
    TypeError
        ``path`` is a Dask collection (use :meth:`Dataset.from_dask`); a keyword of the
        wrong type (naming it).

    Examples
    --------
    Local files and an object store (the README's tour runs the first form)::

        ds = read_parquet("accmc/*.parquet", chunk_size=100_000)
        ds = read_parquet("s3://bucket/accmc/", storage_options={"anon": True})
        ds = read_parquet("data.parquet", cache="streaming", memory="4 GiB", nulls="nan")
    """
    if is_dask_collection(path):
        raise TypeError(f"read_parquet reads files; for a Dask collection ({type(path).__name__}) "
                        "use ld.Dataset.from_dask")
    policy = check_cache(cache, memory_policy)
    resolve_chunk_size(chunk_size)  # validate before touching any file
    options = {"nulls": nulls, "validate": validate, "schema": schema, "storage_options": storage_options}
    return Dataset(format_named("parquet")._bound(path, options, memory, policy, None, chunk_size))


def _open_parquet(path: PathArg | Sequence[PathArg], options: Mapping[str, Any] | None) -> ParquetOrigin:
    """The registered ``"parquet"`` format's reader: the files' metadata, checked, as an origin.

    ``options`` holds :func:`read_parquet`'s ``nulls``, ``validate``, ``schema`` and
    ``storage_options`` (each optional).
    """
    opts = reader_options(options, ("nulls", "validate", "schema", "storage_options"), "parquet")
    nulls = check_nulls(opts.get("nulls", "error"))
    check_validate(opts.get("validate", True))
    schema, storage_options = opts.get("schema"), opts.get("storage_options")
    files = expand_paths(path, storage_options)
    infos: list[_FileInfo] = []
    found: Schema | None = None
    for p in files:
        info, s = _inspect(p, filesystem(p, storage_options)[0] if is_url(p) else None)
        if found is None:
            found = s
        else:
            check_same_columns(infos[0].path, found, p, s)
        infos.append(info)
    assert found is not None
    where = infos[0].path if len(infos) == 1 else f"{infos[0].path} (and {len(infos) - 1} more files)"
    selected = select_schema(found, schema, where)
    return ParquetOrigin(infos, selected, nulls, selected=schema is not None)


PARQUET = register_format(FormatSpec._builtin("parquet", open=_open_parquet, write=write_parquet_format,
                                              extension="parquet"),
                          suffixes=(".parquet", ".pq"))
"""laddu-dask's Parquet reader and writer, the registered format ``"parquet"``."""
