"""Bound sources, what ``Dataset(source)`` takes: ``io.FormatSource``, ``ParquetSource``, ``RootSource``.

A source is a format with its input and reader options, opened when it is made (files found
and their metadata checked, a format's ``describe`` called), so a bad path or option fails
here, before any dataset exists. ``Dataset(source)`` makes the dataset; each traversal then
reads the events. ``ParquetSource`` and ``RootSource`` are the registered ``"parquet"`` and
``"root"`` formats bound to laddu's keywords.

Examples
--------
>>> import os, tempfile
>>> import numpy as np
>>> import laddu_dask as ld
>>> path = os.path.join(tempfile.mkdtemp(), "x.parquet")
>>> _ = ld.Dataset.from_arrays(scalars={"x": np.arange(3.0)}).write_to(ld.ParquetSink(path))
>>> ld.Dataset(ld.ParquetSource(path, cache="streaming")).column("x").tolist()
[0.0, 1.0, 2.0]
"""

from __future__ import annotations

import os
from typing import Any

from laddu_dask.budgets import MemoryBudget
from laddu_dask.data.registry import format_named
from laddu_dask.data.schema import Schema

__all__ = ["FormatSource", "ParquetSource", "RootSource"]


class FormatSource:
    """A format bound to its source and options (laddu's ``io.FormatSource``); opened already.

    Made by :meth:`FormatSpec.source <laddu_dask.io.FormatSpec.source>` (or as a
    :class:`ParquetSource` / :class:`RootSource`) and given to ``Dataset(source)``.

    Attributes
    ----------
    format : FormatSpec
        The format that reads it.
    source : object
        What the format reads (a path, or anything the format's callbacks take).
    options : object
        The format's reader options.
    cache : str
        The memory policy of the datasets made from it.
    memory : MemoryBudget or None
        Their host-memory budget.
    """

    def __init__(self, spec: Any, source: Any, options: Any, origin: Any, cache: str,
                 memory: MemoryBudget | None, chunk_size: int | None = None) -> None:
        self.format, self.source, self.options = spec, source, options
        self.cache, self.memory, self.chunk_size = cache, memory, chunk_size
        self._origin = origin

    def _bind(self, other: FormatSource) -> None:
        FormatSource.__init__(self, other.format, other.source, other.options, other._origin, other.cache,
                              other.memory, other.chunk_size)

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"<{name} of format {self.format.name!r}: {self.source!r}, cache={self.cache!r}>"


class ParquetSource(FormatSource):
    """Parquet files as a source (laddu's ``ParquetSource``), checked when made.

    Parameters
    ----------
    path : path-like
        A file, folder or glob, as for :func:`~laddu_dask.read_parquet`.
    memory, cache, nulls, validate, schema
        laddu's keywords, as for :func:`~laddu_dask.read_parquet`.

    Raises
    ------
    FileNotFoundError, DataError, SchemaError, ValueError, BudgetError
        As :func:`~laddu_dask.read_parquet`, now.
    """

    def __init__(self, path: str | os.PathLike[str], *, memory: MemoryBudget | int | str | None = None,
                 cache: str = "fastest", nulls: str = "error", validate: bool = True,
                 schema: Schema | None = None) -> None:
        options = {"nulls": nulls, "validate": validate, "schema": schema}
        self._bind(format_named("parquet").source(path, options=options, memory=memory, cache=cache))


class RootSource(FormatSource):
    """ROOT TTrees as a source (laddu's ``RootSource``), checked when made.

    Parameters
    ----------
    path : path-like
        A file, folder or glob, as for :func:`~laddu_dask.read_root`.
    tree, memory, cache, validate, schema
        laddu's keywords, as for :func:`~laddu_dask.read_root`.

    Raises
    ------
    FileNotFoundError, DataError, SchemaError, ValueError, BudgetError
        As :func:`~laddu_dask.read_root`, now.
    """

    def __init__(self, path: str | os.PathLike[str], *, tree: str | None = None,
                 memory: MemoryBudget | int | str | None = None, cache: str = "fastest",
                 validate: bool = True, schema: Schema | None = None) -> None:
        options = {"tree": tree, "validate": validate, "schema": schema}
        self._bind(format_named("root").source(path, options=options, memory=memory, cache=cache))
