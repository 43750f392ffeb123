"""Writing a dataset: laddu's ``write_to`` a sink, and ``write_parquet`` / ``write_root``.

:class:`DatasetWriting` is the part of :class:`~laddu_dask.Dataset` that writes its
events: through a registered format (:mod:`~laddu_dask.data.registry`) for
:meth:`~DatasetWriting.write_to`, or directly as one Parquet file or ROOT tree.  Every
write is atomic (:mod:`laddu_dask.files`): a failed one leaves nothing behind and
replaces nothing a user made.

Examples
--------
>>> import os, tempfile
>>> import numpy as np
>>> import laddu_dask as ld
>>> path = os.path.join(tempfile.mkdtemp(), "x.parquet")
>>> ld.Dataset.from_arrays(scalars={"x": np.arange(3.0)}).write_parquet(path)
>>> ld.read_parquet(path).n_events
3
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from laddu_dask.data.checks import check_execution
from laddu_dask.data.parquet_writer import write_parquet
from laddu_dask.data.registry import format_named
from laddu_dask.data.root_writer import write_root
from laddu_dask.data.sinks import FormatSink, ParquetSink, RootSink, WriteResult

__all__ = ["DatasetWriting"]


class DatasetWriting:
    """The writers of :class:`~laddu_dask.Dataset` (a mixin: the dataset is ``self``)."""

    def write_to(self, sink: ParquetSink | RootSink | FormatSink, *, output: str | None = None,
                 chunk_size: int | None = None, execution: Any = None) -> WriteResult:
        """Write every event to ``sink`` (laddu's ``Dataset.write_to``): a
        :class:`~laddu_dask.ParquetSink`, :class:`~laddu_dask.RootSink` or a format's
        :class:`~laddu_dask.io.FormatSink`, atomically, through the registered format.

        Parameters
        ----------
        sink : ParquetSink, RootSink or FormatSink
            The format, path and precision (or a format's options).
        output : {"auto", "single", "sharded"}, optional
            One file at the sink's path (``"auto"``, ``"single"``), or laddu's shard of rank
            0 of 1 (``NAME.rank00000-of00001.EXT``, or ``PATH/part-rank00000-of00001.EXT``
            for a path without a suffix).
        chunk_size : int, optional
            Events per write (a Parquet row group; default: the dataset's partitions).
        execution : Execution, optional
            Accepted for laddu's signature (writing runs in this process).

        Returns
        -------
        WriteResult
            The file written and its event count (``paths``, ``counts``, ``events``).

        Raises
        ------
        TypeError, ValueError
            Another kind of sink, or a bad keyword (naming it: ``output``, ``chunk_size``).

        Examples
        --------
        >>> import os, tempfile
        >>> import numpy as np
        >>> import laddu_dask as ld
        >>> ds = ld.Dataset.from_arrays(scalars={"x": np.arange(3.0)})
        >>> result = ds.write_to(ld.ParquetSink(os.path.join(tempfile.mkdtemp(), "x.parquet")))
        >>> result.counts, result.events
        ([3], 3)
        """
        check_execution(execution, "write_to")
        if isinstance(sink, FormatSink):
            return sink.format.write(self, sink.target, options=sink.options,  # type: ignore[attr-defined]
                                     output=sink.output if output is None else output,
                                     chunk_size=sink.chunk_size if chunk_size is None else chunk_size,
                                     execution=execution)
        if not isinstance(sink, (ParquetSink, RootSink)):
            raise TypeError(f"write_to needs a ParquetSink, RootSink or FormatSink, got "
                            f"{type(sink).__name__}")
        if isinstance(sink, ParquetSink):
            name, options = "parquet", {"precision": sink.precision}
        else:
            name, options = "root", {"tree": sink.tree, "precision": sink.precision}
        return format_named(name).write(self, sink.path, options=options, output=output,  # type: ignore[arg-type]
                                        chunk_size=chunk_size, execution=execution)

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
        write_parquet(self, path, precision=precision)

    def write_root(self, path: str | os.PathLike[str], tree: str = "tree",
                   precision: str | None = None, amptools: Sequence[str] | None = None) -> None:
        """Write every column and the weights to one ROOT TTree, atomically (through uproot).

        Parameters
        ----------
        path : path-like
            Output file; written to a temporary file in the same folder, then renamed.
        tree : str, default "tree"
            The TTree's name.
        precision : {"f64", "f32"}, optional
            Storage precision (``"f64"``; ``"f32"`` with ``amptools``).
        amptools : sequence of str, optional
            Write the AmpTools flat-tree convention: the four-vectors' names, the beam's
            first (see :func:`~laddu_dask.data.root_writer.write_root`).

        Raises
        ------
        ValueError
            A bad ``precision`` or ``tree`` (nothing is written).
        SchemaError
            ``amptools`` does not name exactly the dataset's four-vectors.
        """
        write_root(self, path, tree=tree, precision=precision, amptools=amptools)
