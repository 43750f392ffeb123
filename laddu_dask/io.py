"""laddu's ``io`` module: file formats' schema, write results and batches (``ld.io``).

laddu 0.28.1 keeps its format plumbing here; laddu-dask gives the names a script uses
with the same meaning: :class:`Schema` (the fields of a dataset, laddu's keywords
``p4s=``, ``scalars=``, ``weights=``), :class:`WriteResult` (what ``Dataset.write_to``
wrote), :class:`BatchIterator` (what ``Dataset.batches`` returns) and :class:`EventBatch`
(one partition's columns and weights), and, for
convenience, the readers :func:`read_parquet` and :func:`read_root` (also ``ld.read_*``).
laddu's plug-in format API (``FormatSpec``, ``FormatSource``, ``FormatSink``, ``convert``,
``ReadPlan``, ``WritePlan``, ``SourceInfo``) has no counterpart: laddu-dask reads other
formats as Dask collections (``Dataset.from_dask``), see the README's difference table.

Examples
--------
>>> import laddu_dask as ld
>>> ld.io.Schema(p4s=["beam"], weights=True).flat_columns()
['beam_e', 'beam_px', 'beam_py', 'beam_pz']
>>> ld.io.WriteResult is type(ld.Dataset.from_arrays(scalars={"x": [1.0]}).write_to(
...     ld.ParquetSink(__import__("tempfile").mktemp(suffix=".parquet"))))
True
"""

from laddu_dask.data import EventBatch, Schema, read_parquet, read_root
from laddu_dask.data.batch import BatchIterator
from laddu_dask.data.sinks import WriteResult

__all__ = ["BatchIterator", "EventBatch", "Schema", "WriteResult", "read_parquet", "read_root"]
