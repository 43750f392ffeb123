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

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from laddu_dask.arrays import array_module
from laddu_dask.data.schema import Schema, integer_dtype, p4_columns
from laddu_dask.errors import DataError, SchemaError


def _floats(value: Any, what: str, ndim: int) -> np.ndarray:
    """A copy of ``value`` as float64 of ``ndim`` dimensions (laddu's batch fields)."""
    a = np.asarray(value)
    if a.dtype.kind not in "fiub" or a.ndim != ndim or (ndim == 2 and a.shape[1] != 4):
        want = "(events, 4)" if ndim == 2 else "(events,)"
        raise DataError(f"{what} must be numbers of shape {want}, got {a.dtype} of shape {a.shape}")
    return np.array(a, dtype=np.float64)


def _exact_ints(name: str, value: Any) -> tuple[np.ndarray, str]:
    """An integer column as float64 (exactly: no value beyond 2**53) and its dtype's name."""
    a = np.asarray(value)
    kind = integer_dtype(a.dtype, name) if a.dtype.kind in "iu" else integer_dtype(str(a.dtype), name)
    if a.ndim != 1:
        raise DataError(f"column {name!r} must be one-dimensional, got shape {a.shape}")
    big = np.flatnonzero(np.abs(a.astype(np.float64)) > 2.0**53)
    if big.size:
        raise DataError(f"column {name!r} holds {a[big[0]]} at event {big[0]}, beyond 2**53: laddu-dask "
                        "keeps integer columns as float64 and would round it")
    return a.astype(np.float64), kind


def _laddu_fields(p4s: Mapping[str, Any] | None, scalars: Mapping[str, Any] | None,
                  ints: Mapping[str, Any] | None, weights: Any, length: int | None
                  ) -> tuple[dict[str, Any], Any, tuple[tuple[str, str], ...], bool]:
    """Flat float64 columns, weights, exact columns and whether weights were given."""
    cols: dict[str, np.ndarray] = {}
    for name, value in (p4s or {}).items():
        a = _floats(value, f"p4 column {name!r}", 2)
        for j, c in enumerate(p4_columns(name)):
            cols[c] = np.ascontiguousarray(a[:, j])
    for name, value in (scalars or {}).items():
        if name in cols:
            raise SchemaError(f"field {name!r} is given twice in this batch")
        cols[name] = _floats(value, f"scalar {name!r}", 1)
    exact = []
    for name, value in (ints or {}).items():
        if name in cols:
            raise SchemaError(f"field {name!r} is given twice in this batch")
        cols[name], kind = _exact_ints(name, value)
        exact.append((name, kind))
    lengths = {c: a.shape[0] for c, a in cols.items()}
    n = next(iter(lengths.values()), length if length is not None else 0)
    if length is not None and length != n:
        raise DataError(f"length={length} disagrees with the {n} events of the arrays")
    bad = {c: m for c, m in lengths.items() if m != n}
    if bad:
        raise DataError(f"batch fields have different numbers of events: {lengths}")
    weighted = weights is not None
    w = np.ones(n) if weights is None else _floats(weights, "weights", 1)
    if w.shape[0] != n:
        raise DataError(f"weights have {w.shape[0]} events but the batch's fields have {n}")
    return cols, w, tuple(exact), weighted


def _row_ids(row_ids: Sequence[int], n: int) -> list[int]:
    ids = [int(i) for i in row_ids]
    if len(ids) != n:
        raise DataError(f"row_ids holds {len(ids)} ids for a batch of {n} events")
    return ids


def _length(array: Any) -> int:
    shape = getattr(array, "shape", None)
    if shape is None or len(shape) != 1:
        raise DataError(f"event arrays must be 1-D, got shape {shape}")
    return int(shape[0])


@dataclass(init=False)
class EventBatch:
    """Events of one partition: flat columns and weights (laddu's ``io.EventBatch``).

    Two ways to make one: laddu-dask's ``EventBatch(columns, weights)`` of flat columns
    (``beam_px``, ``pol``, ...), or laddu's keywords ``EventBatch(p4s=, scalars=,
    weights=, length=, row_ids=, columns=)``, which copy the arrays into float64 (laddu's
    ``columns=`` are exact integer columns: kept as float64 scalars, their dtypes in
    :attr:`schema`). laddu's form is taken whenever one of its keywords is given or the
    weights are omitted.

    Parameters
    ----------
    columns : dict of str to array
        Flat column name to a 1-D float array (laddu's form: integer row-data columns).
    weights : array
        1-D array of event weights (laddu's form: optional, 1 when omitted).
    offset : int, default 0
        Global index of the first event in its dataset (for error messages).
    source : str, default "arrays"
        Where the events came from (file path and row range), for error messages.
    p4s, scalars : dict of str to array, optional
        laddu's four-vectors ``(n, 4)`` in ``(E, px, py, pz)`` order, and 1-D scalars.
    length : int, optional
        The number of events (needed only when there are no arrays; else checked).
    row_ids : sequence of int, optional
        The events' indices in their source (what a format's partitioning check matches).

    Raises
    ------
    DataError
        Arrays of other lengths or shapes, non-numeric values (naming the field).
    SchemaError
        A field named twice, or an integer column that is not of an integer dtype.

    Examples
    --------
    >>> import numpy as np
    >>> cols = {f"k_{c}": np.array([1.0, 2.0]) for c in ("e", "px", "py", "pz")}
    >>> b = EventBatch(cols, np.ones(2), offset=10)
    >>> [float(a[0]) for a in b.p4("k")]
    [1.0, 1.0, 1.0, 1.0]
    >>> b = EventBatch(p4s={"k": np.ones((2, 4))}, scalars={"s": [1.0, 2.0]}, row_ids=[5, 7])
    >>> b.length, b.row_ids, b.schema.p4s, b.schema.weights
    (2, [5, 7], ('k',), False)
    """

    columns: dict[str, Any]
    weights: Any
    offset: int = 0
    source: str = "arrays"
    row_ids: list[int] | None = None
    weighted: bool = True
    exact: tuple[tuple[str, str], ...] = ()

    def __init__(self, columns: dict[str, Any] | None = None, weights: Any = None, offset: int = 0,
                 source: str = "arrays", *, p4s: Mapping[str, Any] | None = None,
                 scalars: Mapping[str, Any] | None = None, length: int | None = None,
                 row_ids: Sequence[int] | None = None) -> None:
        self.offset, self.source, self.exact = offset, source, ()
        laddus = weights is None or any(x is not None for x in (p4s, scalars, length, row_ids))
        if laddus:
            columns, weights, self.exact, self.weighted = _laddu_fields(p4s, scalars, columns, weights,
                                                                        length)
        else:
            self.weighted = True
        self.columns, self.weights = columns, weights  # type: ignore[assignment]
        n = _length(self.weights)
        for name, arr in self.columns.items():
            m = _length(arr)
            if m != n:
                raise DataError(f"column {name!r} has {m} events but the weights have {n} ({self.source})")
        self.row_ids = None if row_ids is None else _row_ids(row_ids, self.n_events)

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
    def schema(self) -> Schema:
        """The batch's fields (laddu's ``EventBatch.schema``): four-vectors, scalars, integer columns.

        Examples
        --------
        >>> EventBatch(scalars={"s": [1.0]}, columns={"run": np.array([3], "i2")}).schema.columns
        {'run': 'int16'}
        """
        ints = {n for n, _ in self.exact}
        p4 = self._p4_names()
        taken = {c for name in p4 for c in p4_columns(name)} | ints
        return Schema(p4s=p4, scalars=[c for c in self.columns if c not in taken],
                      has_weight=self.weighted, exact=self.exact)

    def _like(self, columns: dict[str, Any], weights: Any, offset: int,
              row_ids: list[int] | None) -> EventBatch:
        out = EventBatch(columns, weights, offset=offset, source=self.source)
        out.row_ids, out.weighted, out.exact = row_ids, self.weighted, self.exact
        return out

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
        return self._like(cols, fn(self.weights), self.offset, self.row_ids)

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
        ids = None if self.row_ids is None else self.row_ids[start:stop]
        return self._like(cols, self.weights[start:stop], self.offset + start, ids)


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

    def __exit__(self, _ty: object = None, _value: object = None, _traceback: object = None) -> None:
        self.close()
