"""laddu's file destinations: ``Dataset.write_to(ParquetSink(path))``, ``RootSink(path, tree=)``.

A sink says where and how a dataset is written; :meth:`Dataset.write_to
<laddu_dask.data.operations.DatasetOperations.write_to>` writes it (atomically, as
``write_parquet`` and ``write_root`` do).

Examples
--------
>>> import os, tempfile
>>> import numpy as np
>>> import laddu_dask as ld
>>> path = os.path.join(tempfile.mkdtemp(), "events.parquet")
>>> ds = ld.Dataset.from_arrays(scalars={"x": np.arange(3.0)})
>>> ds.write_to(ld.ParquetSink(path, precision="f32")).events
3
>>> ld.read_parquet(path).column("x").tolist()
[0.0, 1.0, 2.0]
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from laddu_dask.data.batch import EventBatch
from laddu_dask.data.schema import Schema
from laddu_dask.options import Precision

__all__ = ["OUTPUTS", "FormatSink", "ParquetSink", "RootSink", "WriteResult", "WrittenDataset",
           "output_paths"]

#: laddu's ``output=`` of ``Dataset.write_to``: ``"auto"`` and ``"single"`` write one file,
#: ``"sharded"`` one file per rank (laddu-dask is one rank).
OUTPUTS = ("auto", "single", "sharded")


@dataclass(frozen=True)
class ParquetSink:
    """Write a dataset as one Parquet file (laddu's ``ParquetSink``), in ``precision``."""

    path: str | os.PathLike[str]
    precision: str = "f64"

    def __init__(self, path: str | os.PathLike[str], *, precision: str = "f64") -> None:
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "precision", Precision.check(precision, "precision"))


@dataclass(frozen=True)
class RootSink:
    """Write a dataset as a ROOT TTree ``tree`` (laddu's ``RootSink``), in ``precision``."""

    path: str | os.PathLike[str]
    tree: str = "tree"
    precision: str = "f64"

    def __init__(self, path: str | os.PathLike[str], *, tree: str = "tree", precision: str = "f64") -> None:
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "tree", tree)
        object.__setattr__(self, "precision", Precision.check(precision, "precision"))


@dataclass(frozen=True)
class WriteResult:
    """What :meth:`Dataset.write_to <laddu_dask.data.operations.DatasetOperations.write_to>`
    wrote (laddu's ``WriteResult``): the files, and the events in each, in rank order.

    Examples
    --------
    >>> from pathlib import Path
    >>> r = WriteResult([Path("a.parquet")], [3])
    >>> r.paths, r.counts, r.events
    ([PosixPath('a.parquet')], [3], 3)
    """

    paths: list[Path]
    counts: list[int]

    @property
    def events(self) -> int:
        """Events written, in all files."""
        return sum(self.counts)


def output_paths(path: str | os.PathLike[str], output: str | None, extension: str) -> Path:
    """The file ``write_to`` writes for laddu's ``output=`` (one rank: rank 0 of 1).

    ``"sharded"`` names the shard as laddu does: ``NAME.rank00000-of00001.EXT`` beside a
    path with a suffix, ``PATH/part-rank00000-of00001.EXT`` in a folder otherwise.

    Raises
    ------
    TypeError
        ``output`` is not a string.
    ValueError
        ``output`` is not ``"auto"``, ``"single"`` or ``"sharded"``.

    Examples
    --------
    >>> output_paths("out/events.parquet", "sharded", ".parquet").as_posix()
    'out/events.rank00000-of00001.parquet'
    >>> output_paths("out/shards", "sharded", ".root").as_posix()
    'out/shards/part-rank00000-of00001.root'
    """
    if output is not None and not isinstance(output, str):
        raise TypeError(f"output must be a str ('auto', 'single' or 'sharded'), got {type(output).__name__}")
    if output not in (None, *OUTPUTS):
        raise ValueError(f"output must be 'auto', 'single' or 'sharded', got {output!r}")
    target = Path(path)
    if output != "sharded":
        return target
    shard = "rank00000-of00001"
    if target.suffix:
        return target.with_name(f"{target.stem}.{shard}{target.suffix}")
    return target / f"part-{shard}{extension}"


class FormatSink:
    """A format bound to its output and options (laddu's ``io.FormatSink``), what
    ``Dataset.write_to(sink)`` takes; made by :meth:`FormatSpec.sink <laddu_dask.io.FormatSpec.sink>`.

    Attributes
    ----------
    format : FormatSpec
    target : path-like
    options : object
        The format's writer options.
    output : str
        ``"auto"``, ``"single"`` or ``"sharded"``.
    chunk_size : int or None
        Events per batch given to the writer.
    """

    def __init__(self, spec: object, target: str | os.PathLike[str], options: object, output: str,
                 chunk_size: int | None) -> None:
        self.format, self.target, self.options = spec, target, options
        self.output, self.chunk_size = output, chunk_size

    def __repr__(self) -> str:
        return f"<FormatSink of format {getattr(self.format, 'name', '?')!r}: {os.fspath(self.target)!r}>"


class WrittenDataset(Protocol):
    """What the writers (:mod:`~laddu_dask.data.parquet_writer`, :mod:`~laddu_dask.data.root_writer`)
    read of a :class:`~laddu_dask.Dataset`: the dataset calls them for its ``write_*`` methods,
    so its module sits above theirs."""

    schema: Schema
    sources: tuple[str, ...]

    def iter_batches(self, columns: Sequence[str] | None = None, dtype: Any = ...) -> Iterator[EventBatch]:
        """Every partition's batch in order."""
        ...

    def with_chunk_size(self, chunk_size: int | None) -> WrittenDataset:
        """The same events in blocks of ``chunk_size``."""
        ...
