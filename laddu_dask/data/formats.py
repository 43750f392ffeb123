"""File formats as objects: laddu's ``io.FormatSpec``, and :func:`register_format` to name one.

A :class:`FormatSpec` is a format's callbacks (laddu's plug-in API): ``describe(source, *,
options)`` returns a :class:`~laddu_dask.io.SourceInfo`; ``read_batches(source, *, options,
plan)`` a fresh iterable of batches for a :class:`~laddu_dask.io.ReadPlan`;
``write_batches(target, batches, *, options, schema, plan)`` writes a stream of batches. A
spec reads (:meth:`~FormatSpec.read`, :meth:`~FormatSpec.source`), writes
(:meth:`~FormatSpec.write`, :meth:`~FormatSpec.sink`) and checks its declared native
partitioning (:meth:`~FormatSpec.check_partitioning`). laddu-dask's own Parquet and ROOT
readers are specs too, registered as ``"parquet"`` and ``"root"``, which ``read_parquet``,
``read_root``, ``ParquetSource``, ``RootSource`` and ``ParquetSink``/``RootSink`` go through;
:func:`register_format` adds a user's, and :func:`read` picks one by a path's suffix.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> def describe(source, *, options):
...     return ld.io.SourceInfo(ld.io.Schema(scalars=["x"]), length=source)
>>> def read_batches(source, *, options, plan):
...     rows = np.arange(float(source))
...     for a in range(0, source, plan.chunk_size):
...         yield ld.io.EventBatch(scalars={"x": rows[a:a + plan.chunk_size]})
>>> counter = ld.io.FormatSpec(name="counter", describe=describe, read_batches=read_batches)
>>> counter.read(4).column("x").tolist()
[0.0, 1.0, 2.0, 3.0]
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from laddu_dask.budgets import MemoryBudget
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.batch_origin import BatchOrigin, as_batch, read_plan_batches
from laddu_dask.data.checks import DEFAULT_CHUNK_SIZE, check_execution, resolve_chunk_size
from laddu_dask.data.dataset import Dataset
from laddu_dask.data.plans import ReadPlan, SourceInfo, WritePlan, assigned_rows, check_partitionings
from laddu_dask.data.read_options import check_cache, check_memory
from laddu_dask.data.registry import format_for, format_named, store
from laddu_dask.data.sinks import FormatSink, WriteResult, output_paths
from laddu_dask.data.sources import FormatSource
from laddu_dask.errors import DataError
from laddu_dask.files import atomic_path

__all__ = ["WRITE_CHUNK_SIZE", "FormatSpec", "check_chunk", "check_output_keyword", "read", "register_format"]

#: Events per batch a writer receives when no ``chunk_size`` is given (laddu's).
WRITE_CHUNK_SIZE = 65_536

Opener = Callable[[Any, Any], Any]  # (source, options) -> a dataset origin
Writer = Callable[[Dataset, Path, Any, "int | None"], None]  # (dataset, path, options, chunk_size)


def _callable(value: Any, keyword: str) -> Any:
    if value is not None and not callable(value):
        raise TypeError(f"FormatSpec({keyword}=) must be callable, got {type(value).__name__}")
    return value


def check_chunk(chunk_size: Any) -> int | None:
    """laddu's optional ``chunk_size=`` of a write: None or a positive int (ValueError)."""
    return None if chunk_size is None else resolve_chunk_size(chunk_size)


def check_output_keyword(output: Any) -> str:
    """laddu's ``output=``: ``"auto"``, ``"single"`` or ``"sharded"`` (TypeError, ValueError)."""
    output_paths(".", output, "")  # the one check of laddu's output= (TypeError, ValueError)
    return "auto" if output is None else output


def _call_reader(read_batches: Callable[..., Iterable[Any]], source: Any, options: Any,
                 plan: ReadPlan) -> Iterable[Any]:
    return read_batches(source, options=options, plan=plan)


def _origin_reader(origin: Any, plan: ReadPlan) -> Iterator[EventBatch]:
    """A built-in format's events for a contiguous ``plan``; ``row_ids`` are the events' indices."""
    if plan.partitioning != "contiguous":
        raise ValueError(f"laddu-dask's own formats read contiguous plans, not {plan.partitioning!r}")
    rows = assigned_rows(origin.n_events, plan.rank, plan.nranks, "contiguous")
    for part in Dataset(origin, chunk_size=plan.chunk_size or DEFAULT_CHUNK_SIZE).partitions:
        a, b = max(rows.start, part.offset), min(rows.stop, part.offset + part.n_events)
        if b > a:
            batch = part.load().slice(a - part.offset, b - part.offset)
            batch.row_ids = list(range(a, b))
            yield batch


class FormatSpec:
    """A file format's callbacks (laddu's ``io.FormatSpec``), to read and write datasets.

    Parameters
    ----------
    name : str
        The format's name (in messages, and its key in the registry).
    describe : callable, optional
        ``describe(source, *, options) -> SourceInfo``: the source's schema and length.
        Without it, the first batch of a traversal gives the schema, and one traversal counts.
    read_batches : callable, optional
        ``read_batches(source, *, options, plan) -> iterable of EventBatch`` (or laddu's
        dictionaries), fresh on every call, no batch larger than ``plan.chunk_size``.
    write_batches : callable, optional
        ``write_batches(target, batches, *, options, schema, plan)``: write the stream to
        ``target`` (a hidden temporary file beside the output, renamed over it on success).
    extension : str, default "dat"
        The suffix of a sharded output's files.
    native_partitioning : iterable of {"contiguous", "rows", "file_groups"}, optional
        The plans of several ranks ``read_batches`` honours (a promise that
        :meth:`check_partitioning` tests). With ``"contiguous"`` and a known length, a
        dataset's partitions each read their own rank, in parallel.

    Raises
    ------
    ValueError
        No name, or neither a reader nor a writer; an unknown partitioning strategy.
    TypeError
        A callback that is not callable, or a name or extension that is not a str.

    Examples
    --------
    >>> spec = FormatSpec(name="toy", write_batches=lambda target, batches, **kw: None)
    >>> spec.name, spec.native_partitioning
    ('toy', [])
    """

    def __init__(self, *, name: str, describe: Callable[..., SourceInfo] | None = None,
                 read_batches: Callable[..., Iterable[Any]] | None = None,
                 write_batches: Callable[..., None] | None = None, extension: str = "dat",
                 native_partitioning: Iterable[str] | None = None) -> None:
        if not isinstance(name, str) or not isinstance(extension, str):
            raise TypeError("FormatSpec(name=, extension=) must be str")
        if not name or (read_batches is None and write_batches is None):
            raise ValueError("a format needs a name and a reader or writer (read_batches= or write_batches=)")
        self._name, self._extension = name, extension.lstrip(".")
        self._describe = _callable(describe, "describe")
        self._read_batches = _callable(read_batches, "read_batches")
        self._write_batches = _callable(write_batches, "write_batches")
        self._native = check_partitionings(native_partitioning, f"FormatSpec({name!r}).native_partitioning")
        self._open: Opener | None = None
        self._writer: Writer | None = None

    @classmethod
    def _builtin(cls, name: str, *, open: Opener, write: Writer, extension: str) -> FormatSpec:
        """One of laddu-dask's own formats: its reader opens a dataset origin, its writer
        writes a dataset (atomically); both natively contiguous."""
        spec = cls(name=name, write_batches=lambda *a, **k: None, extension=extension,
                   native_partitioning=["contiguous"])
        spec._write_batches = None
        spec._open, spec._writer = open, write
        return spec

    # -- what it is ----------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The format's name."""
        return self._name

    @property
    def native_partitioning(self) -> list[str]:
        """The partitioning strategies its reader honours natively."""
        return list(self._native)

    @property
    def extension(self) -> str:
        """The suffix of its sharded output files (without the dot)."""
        return self._extension

    def __repr__(self) -> str:
        return f"<FormatSpec {self._name!r}>"

    def _where(self, source: Any) -> str:
        return f"format {self._name!r} source {source!r}"

    def _check_reader(self) -> None:
        if self._open is None and self._read_batches is None:
            raise TypeError(f"format {self._name!r} cannot read: it has no read_batches")

    def _check_writer(self) -> None:
        if self._writer is None and self._write_batches is None:
            raise TypeError(f"format {self._name!r} cannot write: it has no write_batches")

    # -- reading -------------------------------------------------------------------------

    def _origin(self, source: Any, options: Any) -> Any:
        self._check_reader()
        if self._open is not None:
            return self._open(source, options)
        where = self._where(source)
        read = functools.partial(_call_reader, self._read_batches, source, options)
        if self._describe is not None:
            info = self._describe(source, options=options)
            if not isinstance(info, SourceInfo):
                raise TypeError(f"{where}: describe returned a {type(info).__name__}, not a "
                                "laddu_dask.io.SourceInfo")
            schema, length = info.schema, info.length
        else:
            first = next(iter(read(ReadPlan(0, 1, DEFAULT_CHUNK_SIZE, "contiguous"))), None)
            if first is None:
                raise DataError(f"{where} has no describe and yielded no batch: its fields are unknown")
            schema, length = as_batch(first, where).schema, None
        return BatchOrigin(read, schema, length, where, native="contiguous" in self._native)

    def _reader(self, source: Any, options: Any) -> tuple[Any, Callable[[ReadPlan], Iterable[Any]]]:
        """The source's origin and a reader of its events for any plan."""
        origin = self._origin(source, options)
        if self._open is not None:
            return origin, functools.partial(_origin_reader, origin)
        return origin, origin.read

    def source(self, source: Any, *, options: Any = None, memory: MemoryBudget | int | str | None = None,
               cache: str = "fastest", execution: Any = None) -> FormatSource:
        """Open ``source`` now (its schema and length) as a :class:`~laddu_dask.io.FormatSource`.

        Raises
        ------
        TypeError
            The format has no reader; ``describe`` returns no SourceInfo.
        ValueError, BudgetError
            A bad ``cache`` or ``memory``.
        """
        return self._bound(source, options, memory, cache, execution, None)

    def _bound(self, source: Any, options: Any, memory: Any, cache: Any, execution: Any,
               chunk_size: int | None) -> FormatSource:
        policy = check_cache(cache, None)
        budget = check_memory(memory)
        check_execution(execution, f"format {self._name!r}")
        return FormatSource(self, source, options, self._origin(source, options), policy, budget, chunk_size)

    def read(self, source: Any, *, options: Any = None, memory: MemoryBudget | int | str | None = None,
             cache: str = "fastest", execution: Any = None) -> Dataset:
        """A :class:`~laddu_dask.Dataset` of ``source``: ``Dataset(self.source(source, ...))``."""
        return Dataset(self.source(source, options=options, memory=memory, cache=cache, execution=execution))

    # -- writing -------------------------------------------------------------------------

    def sink(self, target: str | os.PathLike[str], *, options: Any = None, output: str = "auto",
             chunk_size: int | None = None, execution: Any = None) -> FormatSink:
        """Bind an output for ``Dataset.write_to(sink)`` (laddu's ``io.FormatSink``); checked now."""
        self._check_writer()
        check_execution(execution, f"format {self._name!r}")
        return FormatSink(self, target, options, check_output_keyword(output), check_chunk(chunk_size))

    def write(self, dataset: Dataset, target: str | os.PathLike[str], *, options: Any = None,
              output: str = "auto", chunk_size: int | None = None, execution: Any = None) -> WriteResult:
        """Write every event of ``dataset`` to ``target``; the file appears only when complete.

        Parameters
        ----------
        dataset : Dataset
        target : path-like
            The file (``output="sharded"``: laddu's shard name of rank 0 of 1).
        options : object, optional
            The writer's options.
        output : {"auto", "single", "sharded"}
        chunk_size : int, optional
            Events per batch given to the writer (default 65,536).
        execution : Execution, optional
            Accepted for laddu's signature.

        Returns
        -------
        WriteResult

        Raises
        ------
        TypeError
            ``dataset`` is no Dataset, or the format has no writer.
        ValueError
            A bad ``output`` or ``chunk_size``.
        """
        if not isinstance(dataset, Dataset):
            raise TypeError(f"format {self._name!r}.write takes a Dataset, got {type(dataset).__name__}")
        self._check_writer()
        out, chunk = check_output_keyword(output), check_chunk(chunk_size)
        check_execution(execution, f"format {self._name!r}")
        path = output_paths(target, out, "." + self._extension)
        path.parent.mkdir(parents=True, exist_ok=True)
        if self._writer is not None:
            self._writer(dataset, path, options, chunk)
        else:
            plan = WritePlan(rank=0, nranks=1, chunk_size=chunk or WRITE_CHUNK_SIZE,
                             output="sharded" if out == "sharded" else "single", partitioning="contiguous")
            with atomic_path(path, inputs=dataset.sources) as tmp, \
                    dataset.batches(chunk_size=plan.chunk_size) as batches:
                self._write_batches(Path(tmp), _marked(batches, dataset.schema.has_weight), options=options,
                                    schema=dataset.schema, plan=plan)
        return WriteResult([path], [dataset.n_events])

    # -- checking ------------------------------------------------------------------------

    def check_partitioning(self, source: Any, *, options: Any = None, nranks: int = 3,
                           chunk_size: int = 1024) -> None:
        """Check each declared native strategy against a serial traversal of ``source``.

        Every strategy's ranks ``0 .. nranks - 1`` must together give every event of the
        serial traversal exactly once, bitwise equal (fields and weights). Events are matched
        by their ``row_ids`` where a batch has them (``"file_groups"`` needs them), else by
        the strategy's assignment (:func:`~laddu_dask.data.plans.assigned_rows`). A local
        test: it reads the source ``nranks + 1`` times and holds it in memory.

        Raises
        ------
        DataError
            Naming the strategy, rank and event that is missing, repeated or different.
        ValueError
            ``nranks`` or ``chunk_size`` is not a positive integer.
        """
        for value, keyword in ((nranks, "nranks"), (chunk_size, "chunk_size")):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"check_partitioning({keyword}=) must be a positive int, got {value!r}")
        origin, read = self._reader(source, options)
        where = self._where(source)
        serial_plan = ReadPlan(0, 1, chunk_size, "contiguous")
        serial = _rows(read_plan_batches(read, origin.schema, serial_plan, where))
        n = len(serial)
        for strategy in self._native:
            seen: dict[int, int] = {}
            for rank in range(nranks):
                plan = ReadPlan(rank, nranks, chunk_size, strategy)
                rows = _rows(read_plan_batches(read, origin.schema, plan, where))
                ids = [i for i, _ in rows]
                if any(i is None for i in ids):
                    if strategy == "file_groups":
                        raise DataError(f"{where}: file_groups partition rank {rank} gave batches without "
                                        "row_ids, which file_groups needs to place its events")
                    ids = list(assigned_rows(n, rank, nranks, strategy))
                    if len(ids) != len(rows):
                        raise DataError(f"{where}: {strategy} partition rank {rank} of {nranks} gave "
                                        f"{len(rows)} events; its assignment holds {len(ids)}")
                for i, (_, values) in zip(ids, rows, strict=True):
                    if not 0 <= i < n:
                        raise DataError(f"{where}: {strategy} partition rank {rank} gave event {i}, "
                                        f"outside the serial traversal's {n}")
                    if i in seen:
                        raise DataError(f"{where}: {strategy} partition ranks {seen[i]} and {rank} both "
                                        f"gave event {i}")
                    if values != serial[i][1]:
                        raise DataError(f"{where}: {strategy} partition rank {rank} disagrees with "
                                        f"serial event {i}")
                    seen[i] = rank
            if len(seen) != n:
                missing = sorted(set(range(n)) - set(seen))
                raise DataError(f"{where}: {strategy} partitions of {nranks} ranks miss "
                                f"{len(missing)} event(s), first {missing[0]}")


def _rows(batches: Iterable[EventBatch]) -> list[tuple[int | None, bytes]]:
    """Each event as ``(row id or None, its fields' and weight's bytes)``, in stream order."""
    out: list[tuple[int | None, bytes]] = []
    for b in batches:
        table = np.column_stack([*(np.asarray(a, np.float64) for a in b.columns.values()),
                                 np.asarray(b.weights, np.float64)])
        ids = b.row_ids if b.row_ids is not None else [None] * b.n_events
        out.extend((i, row.tobytes()) for i, row in zip(ids, table, strict=True))
    return out


def _marked(batches: Iterable[EventBatch], weighted: bool) -> Iterator[EventBatch]:
    for b in batches:
        b.weighted = weighted
        yield b


def _suffixes(suffixes: Any, name: str) -> tuple[str, ...]:
    if isinstance(suffixes, str):
        suffixes = [suffixes]
    out = []
    for s in suffixes:
        if not isinstance(s, str) or not s.startswith(".") or len(s) < 2:
            raise ValueError(f"register_format({name!r}): a suffix is a str such as '.parquet', got {s!r}")
        out.append(s.lower())
    return tuple(out)


def register_format(spec: FormatSpec, *, suffixes: str | Iterable[str] = (),
                    replace: bool = False) -> FormatSpec:
    """Register ``spec`` under its name, and for the path suffixes given.

    Parameters
    ----------
    spec : FormatSpec
        The format (its :attr:`~FormatSpec.name` is the key).
    suffixes : str or sequence of str
        Path suffixes (``".toy"``, case-insensitive) that :func:`read` and
        :func:`~laddu_dask.io.format_for` map to it.
    replace : bool
        Allow replacing a registered format of the same name, or taking another's suffix.

    Returns
    -------
    FormatSpec
        ``spec``.

    Raises
    ------
    TypeError
        ``spec`` is not a FormatSpec.
    ValueError
        The name or a suffix is taken (naming it and its format) and ``replace`` is false;
        a malformed suffix.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> spec = ld.io.FormatSpec(name="doc-toy", write_batches=lambda *a, **k: None)
    >>> ld.io.register_format(spec, suffixes=".doctoy") is ld.io.format_for("a.DOCTOY")
    True
    >>> ld.io.unregister_format("doc-toy")
    """
    if not isinstance(spec, FormatSpec):
        raise TypeError(f"register_format takes a laddu_dask.io.FormatSpec, got {type(spec).__name__}")
    store(spec, _suffixes(suffixes, spec.name), bool(replace))
    return spec


def read(path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *,
         format: str | FormatSpec | None = None, options: Any = None,
         memory: MemoryBudget | int | str | None = None, cache: str = "fastest",
         chunk_size: int | None = None) -> Dataset:
    """Read ``path`` with a registered format: the one named by ``format``, else the one of the
    (first) path's suffix; a folder, or a path without a suffix, is read as Parquet.

    Parameters
    ----------
    path : path-like or sequence of path-like
        What the format reads (files, folders, patterns).
    format : str or FormatSpec, optional
        A registered format's name, or a format.
    options : object, optional
        The format's reader options (for ``"parquet"``: ``read_parquet``'s keywords).
    memory, cache
        The dataset's budget and cache policy.
    chunk_size : int, optional
        Events per partition.

    Raises
    ------
    ValueError
        No format of the name ``format``, or none for the path's suffix (naming it); a bad
        ``chunk_size``.

    Examples
    --------
    >>> import os, tempfile
    >>> import laddu_dask as ld
    >>> here = tempfile.mkdtemp()
    >>> path, other = os.path.join(here, "x.parquet"), os.path.join(here, "y.pq")
    >>> for p in (path, other):
    ...     _ = ld.Dataset.from_arrays(scalars={"x": [1.0, 2.0]}).write_to(ld.ParquetSink(p))
    >>> ld.io.read(path).column("x").tolist(), ld.io.read([path, other], chunk_size=1).n_partitions
    ([1.0, 2.0], 4)
    """
    first = path[0] if isinstance(path, Sequence) and not isinstance(path, str) and path else path
    if isinstance(format, FormatSpec):
        spec = format
    elif format is not None:
        spec = format_named(format)
    else:
        text = os.fspath(first)  # type: ignore[arg-type]
        plain = os.path.isdir(text) or not Path(text).suffix  # a folder or a pattern such as data/*
        spec = format_named("parquet") if plain else format_for(text)
    source = list(path) if isinstance(path, Sequence) and not isinstance(path, str) else path
    return Dataset(spec._bound(source, options, memory, cache, None, check_chunk(chunk_size)))
