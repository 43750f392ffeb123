"""The identity of a Parquet or ROOT file as it was opened, checked again at every read.

A streamed dataset reads its files again at every evaluation, and a cluster worker may
read them long after :func:`~laddu_dask.data.parquet.read_parquet` opened them. A file
rewritten in between (even with the same number of rows) would silently change the
likelihood, or mix new per-event terms with a weight sum cached from the old file.
:class:`FileIdentity` records a file's size, its modification time in nanoseconds and a
hash of its Parquet footer (the bytes that hold every row group's offsets, sizes and
column statistics); :meth:`FileIdentity.check` compares them with the file being read
and raises :class:`~laddu_dask.errors.DataChangedError` naming the file and what changed.

It costs one ``fstat`` and one read of the footer (a few kilobytes, already in the page
cache) per read. A file behind an fsspec URL (see :mod:`laddu_dask.data.fs`) is checked the
same way, its size and modification time asked of its filesystem (one metadata request,
``fs.modified``); a filesystem without modification times (fsspec raises
NotImplementedError) records 0, and such a file is checked by its size and footer alone.

A rewrite that keeps the size, restores the modification time and leaves
the footer byte for byte the same (same sizes and same column minima and maxima) is not
detected; no cheap check can tell it from the original.

Examples
--------
>>> import os, tempfile
>>> import pyarrow as pa, pyarrow.parquet as pq
>>> from laddu_dask.data.identity import FileIdentity
>>> path = os.path.join(tempfile.mkdtemp(), "x.parquet")
>>> pq.write_table(pa.table({"x": [1.0, 2.0]}), path)
>>> with pa.OSFile(path) as f:
...     before = FileIdentity.read(f, path)
>>> pq.write_table(pa.table({"x": [1.0, 3.0]}), path)
>>> with pa.OSFile(path) as f:
...     before.check(FileIdentity.read(f, path), path)
Traceback (most recent call last):
...
laddu_dask.errors.DataChangedError: .../x.parquet changed on disk since it was opened ...
"""

from __future__ import annotations

import datetime
import hashlib
import os
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from laddu_dask.data.fs import modified_ns
from laddu_dask.errors import DataChangedError

_MAGIC = b"PAR1"
_TAIL = 8  # footer length (4 bytes, little endian) and the magic
_ROOT_HEADER = 100  # a ROOT file's header: its first record (fBEGIN) starts at byte 100

#: What the hash covers, and the reader that opens the file again, for each format.
_FORMATS = {
    "Parquet": ("its Parquet footer (row-group sizes, column statistics) differs", "read_parquet"),
    "ROOT": ("its ROOT file header (UUID, end of file, free segments, streamers) differs",
             "read_root"),
}


def _when(ns: int) -> str:
    stamp = datetime.datetime.fromtimestamp(ns // 1_000_000_000, datetime.UTC)
    return f"{stamp:%Y-%m-%d %H:%M:%S}.{ns % 1_000_000_000:09d} UTC"


@dataclass(frozen=True)
class FileIdentity:
    """Size, modification time and footer (or header) hash of one Parquet (or ROOT) file.

    Attributes
    ----------
    size : int
        Bytes.
    mtime_ns : int
        Modification time, nanoseconds since the epoch (0 where the filesystem has none).
    footer : str
        BLAKE2b hash of the Parquet footer (file metadata) bytes, or of a ROOT file's
        header; empty without one.
    kind : {"Parquet", "ROOT"}
        The file's format.
    """

    size: int
    mtime_ns: int
    footer: str
    kind: str = "Parquet"

    @classmethod
    def read(cls, handle: pa.NativeFile, path: str, fs: Any = None,
             kind: str = "Parquet") -> FileIdentity:
        """The identity of the open file ``handle`` (opened from ``path``, on the fsspec
        filesystem ``fs``, or locally for None), a ``kind`` file.

        ``footer`` is empty when the file does not end in a Parquet footer (pyarrow then
        says why when it opens the file).
        """
        if fs is None:
            st = os.fstat(handle.fileno())
            size, mtime_ns = st.st_size, st.st_mtime_ns
        else:
            size, mtime_ns = handle.size(), modified_ns(fs, path)
        footer = ""
        if kind == "ROOT":
            data = handle.read_at(min(size, _ROOT_HEADER), 0)
            footer = hashlib.blake2b(data, digest_size=16).hexdigest()
            return cls(size, mtime_ns, footer, kind)
        tail = handle.read_at(_TAIL, size - _TAIL) if size >= _TAIL + len(_MAGIC) else b""
        length = int.from_bytes(tail[:4], "little") if tail[4:] == _MAGIC else 0
        if 0 < length <= size - _TAIL - len(_MAGIC):
            data = handle.read_at(length, size - _TAIL - length)
            footer = hashlib.blake2b(data, digest_size=16).hexdigest()
        return cls(size, mtime_ns, footer, kind)

    def check(self, now: FileIdentity, path: str) -> None:
        """Raise :class:`DataChangedError` naming ``path`` and what differs from ``now``."""
        if now == self:
            return
        changes = []
        if now.size != self.size:
            changes.append(f"size {self.size} -> {now.size} bytes")
        if now.mtime_ns != self.mtime_ns:
            changes.append(f"modified {_when(self.mtime_ns)} -> {_when(now.mtime_ns)}")
        what, reader = _FORMATS[self.kind]
        if now.footer != self.footer:
            changes.append(what)
        raise DataChangedError(
            f"{path} changed on disk since it was opened ({'; '.join(changes)}); its events "
            f"would no longer match the ones already used. Open it again with {reader} "
            "and build the likelihood anew"
        )
