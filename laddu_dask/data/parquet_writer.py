"""Writing a dataset to one Parquet file, atomically.

Kept apart from :mod:`laddu_dask.data.parquet` (the reader, which builds datasets) so
that :class:`~laddu_dask.data.dataset.Dataset` can offer ``write_parquet`` without an
import circle.

Examples
--------
>>> import numpy as np, tempfile, os
>>> import laddu_dask as ld
>>> ds = ld.Dataset.from_arrays(p4s={"beam": np.ones((3, 4))})
>>> path = os.path.join(tempfile.mkdtemp(), "beam.parquet")
>>> write_parquet(ds, path)
>>> ld.read_parquet(path).n_events
3
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from laddu_dask.data.checks import check_finite
from laddu_dask.data.paths import PathArg
from laddu_dask.data.read_options import reader_options
from laddu_dask.data.schema import WEIGHT_COLUMN
from laddu_dask.data.sinks import WrittenDataset
from laddu_dask.files import atomic_path
from laddu_dask.options import Precision

__all__ = ["PRECISIONS", "write_parquet", "write_parquet_format"]

PRECISIONS = {"f64": pa.float64(), "f32": pa.float32()}


def write_parquet(dataset: WrittenDataset, path: PathArg, precision: str = "f64") -> None:
    """Write ``dataset`` (all columns and weights) to one Parquet file, atomically.

    Each partition becomes one row group, and every page carries a CRC checksum that
    :func:`read_parquet` verifies. The file is first written to a hidden temporary file
    in the same folder and then renamed over ``path``.

    Raises
    ------
    ValueError
        If ``precision`` is not ``"f64"`` or ``"f32"``; nothing is written.
    FileNotFoundError
        If the folder of ``path`` does not exist.
    UnsafeOutputError
        If ``path`` is a file the dataset reads.
    """
    precision = Precision.check(precision, "precision")
    target = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot write {target}: folder {folder!r} does not exist")
    if os.path.isdir(target):
        raise IsADirectoryError(f"cannot write Parquet file over folder {target!r}")
    ptype = PRECISIONS[precision]
    names = dataset.schema.flat_columns() + [WEIGHT_COLUMN]
    arrow_schema = pa.schema([pa.field(n, ptype, nullable=False) for n in names])
    dt = np.float32 if precision == "f32" else np.float64
    with atomic_path(target, inputs=dataset.sources) as tmp, pq.ParquetWriter(tmp, arrow_schema,
                                                   write_page_checksum=True) as writer:
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


def write_parquet_format(dataset: WrittenDataset, path: PathArg, options: Mapping[str, Any] | None,
                         chunk_size: int | None) -> None:
    """The registered ``"parquet"`` format's writer: :func:`write_parquet` with ``options`` ``precision``."""
    opts = reader_options(options, ("precision",), "parquet")
    source = dataset if chunk_size is None else dataset.with_chunk_size(chunk_size)
    write_parquet(source, path, precision=opts.get("precision", "f64"))
