"""Files behind fsspec URLs (``s3://``, ``gs://``, ``memory://``, ``file://``) for pyarrow.

A path with a protocol (``"s3://bucket/data/*.parquet"``) is resolved by fsspec (the
filesystem Dask uses, configured by ``storage_options``) and read by pyarrow through
``pyarrow.fs.PyFileSystem(FSSpecHandler(fs))``; a plain path stays a local file. Folders
and glob patterns work as they do locally. The filesystem object travels with each
partition to the workers (fsspec filesystems pickle).

Examples
--------
>>> import fsspec, pyarrow as pa, pyarrow.parquet as pq
>>> fs = fsspec.filesystem("memory")
>>> with fs.open("/fs-doc/a.parquet", "wb") as f:
...     pq.write_table(pa.table({"x": [1.0]}), f)
>>> expand_url("memory://fs-doc/*.parquet")
['memory:///fs-doc/a.parquet']
>>> is_url("memory://fs-doc"), is_url("/tmp/x.parquet")
(True, False)
"""

from __future__ import annotations

import datetime
import glob
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)

FORMATS = {".parquet": "Parquet", ".root": "ROOT"}
"""The file suffixes a folder is searched for, and the format's name in messages."""


def is_url(path: str) -> bool:
    """Whether ``path`` names a file through a protocol (``s3://...``, chained ``a::b``)."""
    return "://" in path or "::" in path


def filesystem(url: str, storage_options: Mapping[str, Any] | None = None) -> tuple[Any, str]:
    """The fsspec filesystem of ``url`` and the path within it."""
    import fsspec

    return fsspec.core.url_to_fs(url, **dict(storage_options or {}))


def expand_url(url: str, storage_options: Mapping[str, Any] | None = None,
               suffix: str = ".parquet") -> list[str]:
    """The files one URL names: itself, a folder's ``*SUFFIX`` (sorted), or a glob's matches.

    Raises FileNotFoundError naming the URL when it matches nothing.
    """
    fs, path = filesystem(url, storage_options)
    if fs.isdir(path):
        found = sorted(f["name"] for f in fs.ls(path, detail=True)
                       if f["type"] == "file" and f["name"].endswith(suffix))
        if not found:
            raise FileNotFoundError(f"folder {url!r} holds no *{suffix} files")
    elif fs.isfile(path):
        found = [path]
    elif glob.has_magic(path):
        found = sorted(f for f in fs.glob(path) if fs.isfile(f))
        if not found:
            raise FileNotFoundError(f"no files match {url!r}")
    else:
        raise FileNotFoundError(f"no such {FORMATS[suffix]} file or folder: {url!r}")
    return [fs.unstrip_protocol(f) for f in found]


def open_input(path: str, fs: Any = None) -> pa.NativeFile:
    """Open ``path`` for random access: a local file, or a file of the fsspec filesystem ``fs``."""
    if fs is None:
        return pa.OSFile(path)
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    return PyFileSystem(FSSpecHandler(fs)).open_input_file(fs._strip_protocol(path))


def modified_ns(fs: Any, path: str) -> int:
    """Modification time of ``path`` on ``fs`` in nanoseconds since the epoch; 0 if it has none.

    Filesystems without modification times (fsspec raises NotImplementedError) give 0:
    the identity check of such files relies on their size and Parquet footer alone.
    """
    try:
        when = fs.modified(fs._strip_protocol(path))
    except (NotImplementedError, KeyError):
        return 0
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return (when - _EPOCH) // datetime.timedelta(microseconds=1) * 1000
