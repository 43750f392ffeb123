"""laddu's ``io`` module: formats as objects, their plans, schemas, batches and write results (``ld.io``).

laddu 0.28.1 keeps its format plumbing here, and laddu-dask gives the names a script uses with
the same meaning: :class:`Schema` (a dataset's fields), :class:`EventBatch` (a block of
events), :class:`BatchIterator` (what ``Dataset.batches`` returns), :class:`WriteResult`
(what a write wrote), and laddu's plug-in format API: :class:`FormatSpec` (a format's
``describe``/``read_batches``/``write_batches`` callbacks), :class:`FormatSource` and
:class:`FormatSink` (a format bound to its input or output), :class:`ReadPlan` and
:class:`WritePlan` (what a callback is asked to do), :class:`SourceInfo` (what ``describe``
says) and :func:`convert`. laddu-dask adds the registry every reader goes through:
:func:`register_format`, :func:`formats`, :func:`format_for` and :func:`read` (by a path's
suffix); laddu-dask's own Parquet and ROOT readers and writers are the registered formats
``"parquet"`` and ``"root"``. :func:`read_parquet` and :func:`read_root` are here too.

Examples
--------
>>> import laddu_dask as ld
>>> ld.io.Schema(p4s=["beam"], weights=True).flat_columns()
['beam_e', 'beam_px', 'beam_py', 'beam_pz']
>>> sorted(ld.io.formats()), ld.io.format_for("mc.root").name
(['parquet', 'root'], 'root')
"""

from laddu_dask.data import EventBatch, Schema, read_parquet, read_root
from laddu_dask.data.batch import BatchIterator
from laddu_dask.data.conversion import convert
from laddu_dask.data.formats import FormatSpec, read, register_format
from laddu_dask.data.plans import ReadPlan, SourceInfo, WritePlan
from laddu_dask.data.registry import format_for, format_named, formats, unregister_format
from laddu_dask.data.sinks import FormatSink, WriteResult
from laddu_dask.data.sources import FormatSource

__all__ = ["BatchIterator", "EventBatch", "FormatSink", "FormatSource", "FormatSpec", "ReadPlan", "Schema",
           "SourceInfo", "WritePlan", "WriteResult", "convert", "format_for", "format_named", "formats",
           "read", "read_parquet", "read_root", "register_format", "unregister_format"]
