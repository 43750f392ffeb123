"""The disk tier: prepared partitions kept on the local disk and mapped back each evaluation.

Between keeping a prepared dataset in memory (``resident``) and re-preparing it from its
source every evaluation (``streaming``) lies the local disk: under ``disk`` storage each
partition is prepared once, written to a file of its own, and read back (memory-mapped,
so the operating system's page cache serves repeated reads) by every evaluation, one
partition per thread at a time, so host memory holds only the partitions being reduced.

The files are laddu-dask's own and hold data only: a 64-byte header (:data:`MAGIC`, the
lengths of the JSON layout that follows), the layout (every array's dtype, shape and
offset, the events, their offset and their source), then the arrays' raw bytes, each at
a 64-byte boundary.  They live in a fresh folder (``0o700``) under
``laddu-dask.disk.directory``, private as the kernel cache is
(:func:`~laddu_dask.files.private_folder`), are written atomically, and are removed with
the prepared dataset (or at exit).  A file that went missing or is not the one written
(another size, another header) is prepared again from the source: a lost file costs
time, not the evaluation.  The mapping is copy-on-write, so the kernels get ordinary
writable arrays and nothing they do reaches the file.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.runtime.partition import PreparedPartition
>>> store = DiskStore.create()
>>> part = PreparedPartition([np.arange(3.0), np.array([1j, 2j, 3j])], np.ones(3), 3, 10, "x.parquet")
>>> handle = store.write(part, 0)
>>> back = handle.load()
>>> back.cache[1].tolist(), back.offset, back.source, handle.nbytes
([1j, 2j, 3j], 10, 'x.parquet', 96)
>>> store.close()
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
import struct
import tempfile
import weakref
from typing import Any

import numpy as np

from laddu_dask import config
from laddu_dask.budgets import MemoryBudget
from laddu_dask.errors import DiskTierError
from laddu_dask.files import atomic_write, private_folder
from laddu_dask.runtime.partition import PreparedPartition

__all__ = ["MAGIC", "DiskPartition", "DiskStore", "disk_budget_bytes", "disk_folder"]

#: The first bytes of every disk-tier file (format version 1).
MAGIC = b"LDPREP01"
_ALIGN = 64
_HEAD = struct.Struct("<8sQ")  # magic, layout length; padded to _ALIGN bytes
_FIX = "set the Dask config laddu-dask.disk.directory to a private folder of your own"


def disk_folder() -> str:
    """The disk tier's base folder, created private (``0o700``) if missing.

    ``laddu-dask.disk.directory`` if set, else ``laddu-dask-<user id>`` in the system's
    temporary folder.

    Raises
    ------
    DiskTierError
        The folder cannot be created, belongs to another user or may be written by others.

    Examples
    --------
    >>> os.stat(disk_folder()).st_mode & 0o077
    0
    """
    base = config.get("disk.directory")
    if base is None:
        user = os.getuid() if hasattr(os, "getuid") else "user"
        base = os.path.join(tempfile.gettempdir(), f"laddu-dask-{user}")
    return private_folder(os.path.expanduser(os.fspath(base)), "the disk tier folder",
                          "plant or swap prepared data that laddu-dask would read", _FIX, DiskTierError)


def disk_budget_bytes(folder: str | None = None) -> int | None:
    """Bytes the disk tier may fill in ``folder`` (by default :func:`disk_folder`):
    ``laddu-dask.disk.budget`` (a size, a percentage of the disk, or of its free space)
    resolved on that folder's file system; ``None`` when unlimited.

    Examples
    --------
    >>> import dask
    >>> with dask.config.set({"laddu-dask.disk.budget": "1 GiB"}):
    ...     disk_budget_bytes()
    1073741824
    """
    budget = MemoryBudget(config.get("disk.budget"))
    if not budget.needs_machine:
        return budget.resolve(0, 0)
    usage = shutil.disk_usage(folder or disk_folder())
    return budget.resolve(int(usage.total), int(usage.free))


def _aligned(nbytes: int) -> int:
    return -(-nbytes // _ALIGN) * _ALIGN


def _layout_of(part: PreparedPartition) -> dict[str, Any]:
    arrays, offset = [], 0
    for array in [*part.cache, part.weights]:
        arrays.append({"dtype": array.dtype.str, "shape": list(array.shape), "offset": offset})
        offset += _aligned(array.nbytes)
    return {"arrays": arrays, "n": part.n, "offset": part.offset, "source": part.source,
            "data_bytes": offset}


def write_file(path: str, part: PreparedPartition, index: int) -> DiskPartition:
    """Write ``part`` (partition ``index`` of its dataset) to the disk-tier file ``path``,
    atomically; returns its handle.

    Raises
    ------
    DiskTierError
        A partition not on the host, or a file that cannot be written (the message names it).
    """
    arrays = [*part.cache, part.weights]
    if not all(isinstance(a, np.ndarray) for a in arrays):
        raise DiskTierError("the disk tier keeps host (NumPy) partitions only; "
                            "use memory_policy='streaming' or 'resident' on a GPU")
    layout = _layout_of(part)
    head = json.dumps(layout).encode()
    start = _aligned(_HEAD.size + len(head))
    try:
        with atomic_write(path, "wb", fsync=False) as f:
            f.write(_HEAD.pack(MAGIC, len(head)) + head + bytes(start - _HEAD.size - len(head)))
            for array in arrays:
                data = np.ascontiguousarray(array)
                f.write(memoryview(data.reshape(-1).view(np.uint8)))
                f.write(bytes(_aligned(data.nbytes) - data.nbytes))
    except OSError as err:
        raise DiskTierError(f"cannot write the prepared partition {index} to {path}: "
                            f"{err.strerror}; free space or {_FIX}") from err
    return DiskPartition(path, index, layout, start + layout["data_bytes"],
                         int(sum(a.nbytes for a in arrays)))


class DiskPartition:
    """A prepared partition kept in a disk-tier file: where it is, and how to read it back.

    Attributes
    ----------
    path : str
        The file.
    index : int
        The partition's index in its dataset (to prepare it again if the file is lost).
    n : int
        Events.
    nbytes : int
        Bytes of its arrays (what it would hold in memory).
    size : int
        Bytes of the file.
    offset : int
        The index of its first event in its dataset.
    """

    __slots__ = ("index", "layout", "n", "nbytes", "offset", "path", "size")

    def __init__(self, path: str, index: int, layout: dict[str, Any], size: int, nbytes: int) -> None:
        self.path = path
        self.index = index
        self.layout = layout
        self.n = int(layout["n"])
        self.size = size
        self.nbytes = nbytes
        self.offset = int(layout["offset"])

    def placed_at(self, offset: int) -> DiskPartition:
        """The same file, read back as the events from ``offset`` on in its dataset (a block
        written before the lengths of those before it were known)."""
        handle = DiskPartition(self.path, self.index, self.layout, self.size, self.nbytes)
        handle.offset = int(offset)
        return handle

    def load(self) -> PreparedPartition | None:
        """The partition, its arrays mapped copy-on-write from the file; ``None`` when the
        file is missing or is not the one written (its size or header differ)."""
        try:
            with open(self.path, "rb") as f:
                if os.fstat(f.fileno()).st_size != self.size:
                    return None
                mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
        except (FileNotFoundError, ValueError):
            return None
        magic, length = _HEAD.unpack_from(mapped, 0)
        start = _aligned(_HEAD.size + length)
        if magic != MAGIC or json.loads(bytes(mapped[_HEAD.size:_HEAD.size + length])) != self.layout:
            return None
        arrays = [_array(mapped, np.dtype(a["dtype"]), a["shape"], start + a["offset"])
                  for a in self.layout["arrays"]]
        return PreparedPartition(arrays[:-1], arrays[-1], self.n, self.offset, self.layout["source"])

    def restore(self, part: PreparedPartition) -> None:
        """Write ``part`` (this partition prepared again) back to the file, when its folder
        still exists: the next evaluation maps it again instead of preparing it."""
        if os.path.isdir(os.path.dirname(self.path)):
            try:
                written = write_file(self.path, part, self.index)
            except DiskTierError:  # a full disk: the partition is prepared again next time
                return
            self.layout, self.size = written.layout, written.size  # (its offset may be the learned one)

    def __repr__(self) -> str:
        return f"DiskPartition({self.path!r}, {self.n} events, {self.size} bytes)"


def _array(mapped: mmap.mmap, dtype: np.dtype, shape: list[int], offset: int) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    if count == 0:
        return np.empty(shape, dtype)
    return np.frombuffer(mapped, dtype=dtype, count=count, offset=offset).reshape(shape)


class DiskStore:
    """A fresh private folder of disk-tier files for one prepared dataset, removed when the
    store is closed or garbage collected (or at exit)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self._finalizer = weakref.finalize(self, shutil.rmtree, folder, True)

    @classmethod
    def create(cls, name: str = "dataset") -> DiskStore:
        """A new store in :func:`disk_folder` (its folder named after ``name``).

        Raises
        ------
        DiskTierError
            The base folder is unsafe or cannot be created.
        """
        label = "".join(c if c.isalnum() else "-" for c in name)[:40]
        try:
            folder = tempfile.mkdtemp(prefix=f"{label}-", dir=disk_folder())
        except OSError as err:
            raise DiskTierError(f"cannot create a disk tier folder in {disk_folder()}: "
                                f"{err.strerror}; {_FIX}") from err
        return cls(folder)

    def write(self, part: PreparedPartition, index: int) -> DiskPartition:
        """Write ``part`` (partition ``index``) to its file, atomically; returns its handle.

        Raises
        ------
        DiskTierError
            The file cannot be written (a full disk: the message names the file).
        """
        return write_file(os.path.join(self.folder, f"part-{index:06d}.ldprep"), part, index)

    def close(self) -> None:
        """Remove the folder and its files."""
        self._finalizer()
