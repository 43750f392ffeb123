"""laddu's ``io.convert``: from one format to another through bounded batches, never over a file.

Examples
--------
>>> import laddu_dask as ld
>>> ld.io.convert is convert
True
"""

from __future__ import annotations

import os
from typing import Any

from laddu_dask.budgets import MemoryBudget
from laddu_dask.data.checks import check_execution
from laddu_dask.data.formats import FormatSpec, check_chunk, check_output_keyword
from laddu_dask.data.read_options import check_memory
from laddu_dask.data.sinks import WriteResult, output_paths
from laddu_dask.errors import UnsafeOutputError

__all__ = ["convert"]


def convert(source: Any, target: str | os.PathLike[str], *, reader: FormatSpec, writer: FormatSpec,
            read_options: Any = None, write_options: Any = None, output: str = "auto",
            chunk_size: int | None = None, memory: MemoryBudget | int | str | None = None,
            execution: Any = None) -> WriteResult:
    """Read ``source`` with ``reader`` and write it with ``writer`` to ``target``, batch by batch.

    Never replaces a file: an existing ``target`` (or shard) is an error, raised like every
    check of the arguments before anything is read or written; the output appears only when
    complete (a failure mid-way leaves nothing at ``target``).

    Parameters
    ----------
    source : object
        What ``reader`` reads (a path for laddu-dask's formats).
    target : path-like
        The output file (``output="sharded"``: laddu's shard name of rank 0 of 1).
    reader, writer : FormatSpec
        The formats (``ld.io.formats()["parquet"]``, a user's spec, ...).
    read_options, write_options : object, optional
        Their options.
    output : {"auto", "single", "sharded"}
    chunk_size : int, optional
        Events per batch (default 65,536).
    memory : MemoryBudget, int or str, optional
        The host budget of the read.
    execution : Execution, optional
        Accepted for laddu's signature.

    Returns
    -------
    WriteResult

    Raises
    ------
    TypeError
        ``reader`` or ``writer`` is not a FormatSpec (naming the keyword), or cannot read or write.
    UnsafeOutputError
        ``target`` exists (naming it); laddu's ``convert`` would replace it.
    ValueError, BudgetError
        A bad ``output``, ``chunk_size`` or ``memory``.

    Examples
    --------
    >>> import os, tempfile
    >>> import laddu_dask as ld
    >>> here = tempfile.mkdtemp()
    >>> src, dst = os.path.join(here, "a.parquet"), os.path.join(here, "a.root")
    >>> _ = ld.Dataset.from_arrays(scalars={"x": [1.0, 2.0]}).write_to(ld.ParquetSink(src))
    >>> fmt = ld.io.formats()
    >>> ld.io.convert(src, dst, reader=fmt["parquet"], writer=fmt["root"]).events
    2
    >>> ld.io.convert(src, dst, reader=fmt["parquet"], writer=fmt["root"])
    Traceback (most recent call last):
    ...
    laddu_dask.errors.UnsafeOutputError: convert refuses to replace .../a.root: it exists; ...
    """
    for spec, keyword in ((reader, "reader"), (writer, "writer")):
        if not isinstance(spec, FormatSpec):
            raise TypeError(f"convert({keyword}=) must be a laddu_dask.io.FormatSpec, got "
                            f"{type(spec).__name__}")
    reader._check_reader()
    writer._check_writer()
    out, chunk = check_output_keyword(output), check_chunk(chunk_size)
    check_memory(memory)
    check_execution(execution, "convert")
    path = output_paths(target, out, "." + writer.extension)
    if os.path.lexists(path):
        raise UnsafeOutputError(f"convert refuses to replace {path}: it exists; remove it or choose another "
                                "target (laddu-dask never overwrites a file when converting)")
    dataset = reader.read(source, options=read_options, memory=memory)
    return writer.write(dataset, target, options=write_options, output=out, chunk_size=chunk)
