"""What a reducer works on: a prepared partition, and a parameter point.

:class:`PreparedPartition` holds one partition's cached event-only columns and weights,
with the offset of its first event and its source, so that an error names the event;
Dask sizes it by its arrays (managed memory on a worker).  :class:`Params` is one
parameter point as it travels in task graphs and worker calls (its array alone is
pickled).

Examples
--------
>>> import numpy as np
>>> part = PreparedPartition([np.zeros(4)], np.ones(4), 4, 100, "x.parquet")
>>> part.nbytes, Params((1.0, 2.0)).array.tolist()
(64, [1.0, 2.0])
"""

from __future__ import annotations

from typing import Any

import numpy as np
from dask.sizeof import sizeof

__all__ = ["Params", "PreparedPartition"]


class PreparedPartition:
    """The cached event-only columns and weights of one partition."""

    __slots__ = ("cache", "weights", "n", "offset", "source")

    def __init__(self, cache: list, weights: Any, n: int, offset: int, source: str) -> None:
        self.cache = cache
        self.weights = weights
        self.n = n
        self.offset = offset
        self.source = source

    @property
    def nbytes(self) -> int:
        """Bytes held."""
        return int(sum(c.nbytes for c in self.cache) + self.weights.nbytes)


@sizeof.register(PreparedPartition)
def _sizeof_prepared(part: PreparedPartition) -> int:
    """Dask's size of a prepared partition (managed memory on a worker): its arrays' bytes."""
    return part.nbytes + 64 * (len(part.cache) + 2)


class Params:
    """A parameter point travelling in a task graph (opaque to Dask's graph parsing)."""

    __slots__ = ("_values", "array")

    def __init__(self, values: tuple) -> None:
        self._values = values
        self.array = np.array(values, dtype=type(values[0]) if values else np.float64)

    @property
    def values(self) -> tuple:
        """The values as a tuple of scalars (what the array kernels take), built on first use:
        the fused kernels read :attr:`array` only."""
        if self._values is None:
            self._values = tuple(self.array)
        return self._values

    @classmethod
    def trusted(cls, array: np.ndarray) -> Params:
        """A point wrapping ``array`` (1-D, of its precision's dtype) without a copy: for
        arrays that were checked and that nobody mutates while the point is in use."""
        out = cls.__new__(cls)
        out.array = array
        out._values = None
        return out

    def __reduce__(self) -> tuple:
        # the array alone travels (its values are rebuilt from it): a point is pickled on
        # every cluster evaluation, and a tuple of NumPy scalars costs several times more
        return _params_from_bytes, (self.array.tobytes(), self.array.dtype.str)

    @classmethod
    def from_array(cls, array: np.ndarray) -> Params:
        """A point from a 1-D array of its precision's dtype (copied)."""
        out = cls.__new__(cls)
        out.array = array.copy()
        out._values = None
        return out


def _params_from_bytes(raw: bytes, dtype: str) -> Params:
    """The point :meth:`Params.__reduce__` pickled: its array's bytes and dtype."""
    return Params.from_array(np.frombuffer(raw, dtype=dtype))
