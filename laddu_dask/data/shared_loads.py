"""Parent partitions read once for all the selections of them that are prepared together.

The bins of one ``bin_by`` are lazy selections of the same dataset: each bin's preparation
loads every parent partition and keeps its own rows, so preparing 30 bins reads the source
files 30 times.  Inside :func:`shared_parent_loads` (a binned analysis holds it while it
prepares its bins) the first load of a parent partition's columns is kept and every other
selection of that partition reuses it, up to a byte limit (past it, loads are not kept and
read as before), with the values of the expression the selections compare (the bins'
mass, say), evaluated once per partition.  Only reading and evaluating are shared: each
selection still keeps its own rows of the same float64 batch, so every prepared number is
bitwise what it is without.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> ds = ld.Dataset.from_arrays(scalars={"x": np.arange(6.0)}, chunk_size=3)
>>> bins = ds.bin_by(ld.scalar("x"), bins=ld.Bin([0, 2, 4, 6]))
>>> with shared_parent_loads(10**6) as kept:
...     cols = [b.dataset.column("x").tolist() for b in bins]
...     n_kept = kept.batches
>>> cols, n_kept  # two parent partitions, each read once for the three bins
([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], 2)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from laddu_dask.data.batch import EventBatch

__all__ = ["SharedLoads", "expression_memo", "parent_batch", "shared_parent_loads"]


class SharedLoads:
    """The parent batches kept while :func:`shared_parent_loads` is active (process-wide:
    the preparation tasks run on the local scheduler's threads).

    Attributes
    ----------
    batches : int
        How many parent batches are kept.
    nbytes : int
        Their bytes.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        self.limit = 0
        self.kept: dict[tuple[int, tuple[str, ...]], tuple[Any, EventBatch]] = {}
        self.memos: dict[int, dict[int, Any]] = {}  # by kept batch: its expressions' values
        self.nbytes = 0

    @property
    def batches(self) -> int:
        return len(self.kept)

    def load(self, parent: Any, columns: Sequence[str]) -> EventBatch:
        """``parent.load(columns, float64)``, from the kept batches when active."""
        if not self.users:
            return parent.load(columns, np.float64)
        key = (id(parent), tuple(columns))
        with self.lock:
            hit = self.kept.get(key)
        if hit is not None:
            return hit[1]
        batch = parent.load(columns, np.float64)
        size = int(batch.weights.nbytes + sum(np.asarray(c).nbytes for c in batch.columns.values()))
        with self.lock:
            if self.users and key not in self.kept and self.nbytes + size <= self.limit:
                self.kept[key] = (parent, batch)  # the parent too: its id stays its own
                self.memos[id(batch)] = {}
                self.nbytes += size
        return batch

    def memo(self, batch: EventBatch) -> dict[int, Any] | None:
        """The expression values kept with ``batch`` (None when it is not a kept batch): a
        selection's compared expression is evaluated once per partition for all the bins."""
        return self.memos.get(id(batch)) if self.users else None


_SHARED = SharedLoads()


def expression_memo(batch: EventBatch) -> dict[int, Any] | None:
    """The values of expressions on ``batch`` kept with it (see :meth:`SharedLoads.memo`)."""
    return _SHARED.memo(batch)


def parent_batch(parent: Any, columns: Sequence[str]) -> EventBatch:
    """A selection's parent partition loaded (``columns``, float64), shared while
    :func:`shared_parent_loads` is active."""
    return _SHARED.load(parent, columns)


@contextmanager
def shared_parent_loads(limit_bytes: int) -> Iterator[SharedLoads]:
    """Keep parent partitions loaded by selections, at most ``limit_bytes`` of them, until
    the block ends (nested or concurrent blocks share one store, freed when the last ends)."""
    with _SHARED.lock:
        _SHARED.users += 1
        _SHARED.limit = max(_SHARED.limit, int(limit_bytes))
    try:
        yield _SHARED
    finally:
        with _SHARED.lock:
            _SHARED.users -= 1
            if not _SHARED.users:
                _SHARED.kept.clear()
                _SHARED.memos.clear()
                _SHARED.nbytes = 0
                _SHARED.limit = 0
