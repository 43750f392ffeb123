"""A block of events held as flat column arrays (NumPy on CPU, CuPy on GPU).

Examples
--------
>>> import numpy as np
>>> from laddu_dask.data.batch import EventBatch
>>> b = EventBatch({"s": np.array([1.0, 2.0])}, weights=np.ones(2))
>>> b.n_events, b.xp.__name__
(2, 'numpy')
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from laddu_dask.arrays import array_module
from laddu_dask.data.schema import p4_columns
from laddu_dask.errors import DataError, SchemaError


def _length(array: Any) -> int:
    shape = getattr(array, "shape", None)
    if shape is None or len(shape) != 1:
        raise DataError(f"event arrays must be 1-D, got shape {shape}")
    return int(shape[0])


@dataclass
class EventBatch:
    """Events of one partition: flat columns and weights.

    Parameters
    ----------
    columns : dict of str to array
        Flat column name (``beam_px``, ``pol``, ...) to a 1-D float array.
    weights : array
        1-D array of event weights.
    offset : int, default 0
        Global index of the first event in its dataset (for error messages).
    source : str, default "arrays"
        Where the events came from (file path and row range), for error messages.

    Examples
    --------
    >>> import numpy as np
    >>> cols = {f"k_{c}": np.array([1.0, 2.0]) for c in ("e", "px", "py", "pz")}
    >>> b = EventBatch(cols, np.ones(2), offset=10)
    >>> [float(a[0]) for a in b.p4("k")]
    [1.0, 1.0, 1.0, 1.0]
    """

    columns: dict[str, Any]
    weights: Any
    offset: int = 0
    source: str = field(default="arrays")

    def __post_init__(self) -> None:
        n = _length(self.weights)
        for name, arr in self.columns.items():
            m = _length(arr)
            if m != n:
                raise DataError(
                    f"column {name!r} has {m} events but the weights have {n} ({self.source})"
                )

    @property
    def n_events(self) -> int:
        """Number of events in the batch."""
        return int(self.weights.shape[0])

    def __len__(self) -> int:
        return self.n_events

    @property
    def length(self) -> int:
        """Number of events (laddu's ``EventBatch.length``)."""
        return self.n_events

    @property
    def p4s(self) -> dict[str, Any]:
        """Four-vector name to its ``(n, 4)`` array of ``(E, px, py, pz)`` (laddu's ``p4s``).

        Examples
        --------
        >>> import numpy as np
        >>> cols = {f"k_{c}": np.array([4.0 - i]) for i, c in enumerate(("e", "px", "py", "pz"))}
        >>> EventBatch({**cols, "s": np.zeros(1)}, np.ones(1)).p4s["k"].tolist()
        [[4.0, 3.0, 2.0, 1.0]]
        """
        xp = self.xp
        return {name: xp.stack([self.columns[c] for c in p4_columns(name)], axis=1)
                for name in self._p4_names()}

    @property
    def scalars(self) -> dict[str, Any]:
        """Scalar name to its values: the columns of no four-vector (laddu's ``scalars``)."""
        taken = {c for name in self._p4_names() for c in p4_columns(name)}
        return {c: a for c, a in self.columns.items() if c not in taken}

    def _p4_names(self) -> list[str]:
        return [c[:-2] for c in self.columns if c.endswith("_e")
                and all(x in self.columns for x in p4_columns(c[:-2]))]

    @property
    def xp(self) -> ModuleType:
        """Array module of the batch's arrays (``numpy`` or ``cupy``)."""
        return array_module(self.weights)

    @property
    def nbytes(self) -> int:
        """Bytes held by the columns and weights."""
        return int(self.weights.nbytes) + sum(int(a.nbytes) for a in self.columns.values())

    def column(self, name: str) -> Any:
        """Return one flat column; :class:`SchemaError` if it was not loaded.

        Examples
        --------
        >>> import numpy as np
        >>> EventBatch({"s": np.zeros(1)}, np.ones(1)).column("s").shape
        (1,)
        """
        try:
            return self.columns[name]
        except KeyError:
            loaded = ", ".join(repr(c) for c in self.columns) or "none"
            raise SchemaError(
                f"column {name!r} is not in this batch of {self.source} "
                f"(loaded columns: {loaded})"
            ) from None

    def p4(self, name: str) -> tuple[Any, Any, Any, Any]:
        """Return the ``(e, px, py, pz)`` arrays of four-vector ``name``."""
        e, px, py, pz = (self.column(c) for c in p4_columns(name))
        return e, px, py, pz

    def map_arrays(self, fn: Callable[[Any], Any]) -> EventBatch:
        """Return a batch with ``fn`` applied to every array (e.g. ``cupy.asarray``).

        Examples
        --------
        >>> import numpy as np
        >>> b = EventBatch({"s": np.ones(2)}, np.ones(2)).map_arrays(lambda a: a * 2)
        >>> float(b.weights.sum())
        4.0
        """
        cols = {k: fn(v) for k, v in self.columns.items()}
        return EventBatch(cols, fn(self.weights), offset=self.offset, source=self.source)

    def slice(self, start: int, stop: int) -> EventBatch:
        """Return events ``start:stop`` (local indices) as a batch sharing memory.

        Examples
        --------
        >>> import numpy as np
        >>> b = EventBatch({"s": np.arange(5.0)}, np.ones(5), offset=100).slice(2, 4)
        >>> b.offset, b.n_events
        (102, 2)
        """
        start, stop, _ = slice(start, stop).indices(self.n_events)
        stop = max(stop, start)
        cols = {k: v[start:stop] for k, v in self.columns.items()}
        return EventBatch(
            cols, self.weights[start:stop], offset=self.offset + start, source=self.source
        )


class BatchIterator:
    """A closeable iterator over a dataset's batches (laddu's ``BatchIterator``), loading one
    partition at a time; also a context manager, which closes it on exit.

    Examples
    --------
    >>> import numpy as np
    >>> import laddu_dask as ld
    >>> with ld.Dataset.from_arrays(scalars={"x": np.arange(5.0)}).batches(chunk_size=2) as it:
    ...     [len(b.weights) for b in it]
    [2, 2, 1]
    """

    def __init__(self, batches: Iterator[EventBatch]) -> None:
        self._batches: Iterator[EventBatch] | None = batches

    def __iter__(self) -> BatchIterator:
        return self

    def __next__(self) -> EventBatch:
        if self._batches is None:
            raise RuntimeError("batch iterator is closed")  # laddu's error after close()
        return next(self._batches)

    def close(self) -> None:
        """Stop: no further batch is read."""
        batches, self._batches = self._batches, None
        close = getattr(batches, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> BatchIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
