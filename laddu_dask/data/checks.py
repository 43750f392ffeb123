"""The checks every dataset shares: chunk sizes, memory policies, dtypes, columns, finite values.

Examples
--------
>>> from laddu_dask.data.checks import split_rows
>>> split_rows(5, 2)
[(0, 2), (2, 4), (4, 5)]
"""

from __future__ import annotations

import decimal
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask import config
from laddu_dask.data.schema import WEIGHT_COLUMN, Schema
from laddu_dask.errors import DataError, SchemaError
from laddu_dask.options import MemoryPolicy

DEFAULT_CHUNK_SIZE = 262_144
"""Events per partition when ``chunk_size`` is None."""

MEMORY_POLICIES: tuple[str, ...] = MemoryPolicy.values()
"""Allowed values of ``memory_policy``."""

_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))


# ----------------------------------------------------------------------------- checks


def check_memory_policy(memory_policy: str) -> str:
    """Return ``memory_policy`` if allowed, else raise ValueError naming the allowed values.

    Examples
    --------
    >>> check_memory_policy("streaming")
    'streaming'
    """
    return MemoryPolicy.check(memory_policy, "memory_policy")


def check_execution(execution: Any, where: str) -> None:
    """Raise TypeError unless ``execution`` is None or an :class:`~laddu_dask.Execution`.

    The data layer sits below the runtime, so an execution is recognised by what it does
    (its memory decisions and precision), not by its class.

    Examples
    --------
    >>> check_execution("cpu", "evaluate")
    Traceback (most recent call last):
    ...
    TypeError: evaluate(execution=) must be an ld.Execution or None, got str
    """
    if execution is not None and not (hasattr(execution, "memory_decisions")
                                      and hasattr(execution, "precision")):
        raise TypeError(f"{where}(execution=) must be an ld.Execution or None, "
                        f"got {type(execution).__name__}")


def resolve_chunk_size(chunk_size: int | None) -> int:
    """Return the events per partition: ``DEFAULT_CHUNK_SIZE`` for None.

    Raises ValueError unless ``chunk_size`` is None or a positive integer.

    Examples
    --------
    >>> resolve_chunk_size(None) == DEFAULT_CHUNK_SIZE, resolve_chunk_size(1000)
    (True, 1000)
    """
    if chunk_size is None:
        return DEFAULT_CHUNK_SIZE
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, numbers.Integral):
        raise ValueError(  # documented contract: a bad chunk_size is a ValueError
            f"chunk_size must be a positive integer or None, got {chunk_size!r}"
        )
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1 event, got {chunk_size}")
    return int(chunk_size)


def configured_chunk_size() -> int | None:
    """The chunk size set in Dask's config (``laddu-dask.chunk-size``), or None when unset.

    Raises ValueError naming the key unless it is None or a positive integer.

    Examples
    --------
    >>> import dask
    >>> with dask.config.set({"laddu-dask.chunk-size": 50_000}):
    ...     configured_chunk_size()
    50000
    >>> configured_chunk_size() is None
    True
    """
    value = config.get("chunk-size")
    if value is None:
        return None
    try:
        return resolve_chunk_size(value)
    except ValueError as exc:
        raise ValueError(f"Dask config 'laddu-dask.chunk-size': {exc}") from None


def check_dtype(dtype: Any) -> np.dtype:
    """Return ``np.dtype(dtype)`` if it is float64 or float32, else raise ValueError."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt not in _DTYPES:
        raise ValueError(f"dtype must be numpy.float64 or numpy.float32, got {dtype!r}")
    return dt


def check_finite(array: np.ndarray, column: str, offset: int, source: str,
                 original: np.ndarray | None = None) -> None:
    """Raise DataError naming ``column``, ``source`` and the first non-finite event.

    ``offset`` is the global index of ``array[0]``. ``original`` holds the values
    before a dtype conversion, to tell an overflow from a stored non-finite value.

    Examples
    --------
    >>> import numpy as np
    >>> check_finite(np.array([1.0, np.nan]), "beam_px", 10, "arrays")
    Traceback (most recent call last):
    ...
    laddu_dask.errors.DataError: column 'beam_px' has a non-finite value (nan) at event 11 ...
    """
    finite = np.isfinite(array)
    if finite.all():
        return
    i = int(np.argmin(finite))
    value = array[i] if original is None else original[i]
    what = f"a non-finite value ({float(value)!r})"
    if original is not None and np.isfinite(original[i]):
        what = f"a value ({float(value)!r}) that overflows {array.dtype}"
    raise DataError(f"column {column!r} has {what} at event {offset + i} ({source})")


def missing_value(column: str, event: int, source: str) -> DataError:
    """The error for a missing (null) value of ``column`` at global ``event`` of ``source``.

    One rule for every reader: a null (Parquet, a nullable pandas column, ``None`` in an
    object column, a masked awkward value) is an error naming the event; a NaN is a value,
    which :func:`check_finite` refuses as non-finite.

    Examples
    --------
    >>> missing_value("x", 3, "a.parquet")
    DataError("column 'x' has a missing (null) value at event 3 (a.parquet)")
    """
    return DataError(f"column {column!r} has a missing (null) value at event {event} ({source})")


def _is_null(value: Any) -> bool:
    return value is None or value is np.ma.masked or type(value).__name__ in ("NAType", "NaTType")


def _object_numbers(values: np.ndarray, column: str, offset: int, source: str) -> np.ndarray:
    """An object column's items as float64 (each correctly rounded, as ``float`` does)."""
    out = np.empty(len(values), dtype=np.float64)
    for i, item in enumerate(values):
        if _is_null(item):
            raise missing_value(column, offset + i, source)
        if isinstance(item, str | bytes) or not isinstance(item, numbers.Real | decimal.Decimal | np.bool_):
            raise DataError(
                f"column {column!r} holds {type(item).__name__} {item!r} at event {offset + i} "
                f"({source}), not a real number: the block computed to other values than its "
                "declared dtype"
            )
        out[i] = float(item)
    return out


def block_numbers(values: Any, column: str, rows: int, offset: int, source: str) -> np.ndarray:
    """A column of a computed block (of a Dask collection) as 1-D real NumPy numbers.

    A dataset's schema declares every column it loads real (bool, integer or float, from
    the collection's metadata); a block may compute to anything, so each is checked here
    when it is materialised: real numbers pass unchanged (:func:`cast_column` converts
    them), an object column of real numbers (``int``, ``float``, ``Decimal``) becomes
    float64 correctly rounded, a null (``None``, ``pd.NA``, a masked value) is
    :func:`missing_value`. NaN and infinities are left to :func:`check_finite`.

    Parameters
    ----------
    values : array_like
        The column's values (a masked array marks nulls).
    column, source : str
        Named in errors (``source``: the block, e.g. ``"dask DataFrame 'x' partition 1"``).
    rows : int
        Rows the block must have.
    offset : int
        Global index of the block's first row.

    Raises
    ------
    DataError
        Complex numbers, strings, dates or other objects, a null, or another shape than
        ``(rows,)``, naming ``column`` and ``source``.

    Examples
    --------
    >>> block_numbers(np.array([1 + 2j]), "x", 1, 0, "block 0")
    Traceback (most recent call last):
    ...
    laddu_dask.errors.DataError: column 'x' holds complex128 values in block 0, not real numbers: ...
    """
    mask = np.ma.getmaskarray(values) if np.ma.isMaskedArray(values) else None
    try:
        arr = np.asarray(np.ma.getdata(values) if mask is not None else values)
    except (TypeError, ValueError) as exc:
        raise DataError(f"column {column!r} of {source} is not an array of numbers: {exc}") from None
    if arr.shape != (rows,):
        raise DataError(f"column {column!r} has shape {arr.shape} in {source}, where ({rows},) "
                        "was declared")
    if mask is not None and mask.any():
        raise missing_value(column, offset + int(np.argmax(mask)), source)
    if arr.dtype.kind in "biuf":
        return arr
    if arr.dtype.kind == "O":
        return _object_numbers(arr, column, offset, source)
    raise DataError(
        f"column {column!r} holds {arr.dtype} values in {source}, not real numbers: the block "
        "computed to another dtype than its metadata declares (a complex column must be split "
        "into real and imaginary columns)"
    )


def check_same_columns(first: str, schema: Schema, path: str, other: Schema) -> None:
    """Raise SchemaError naming both files unless ``other`` has the columns of ``schema``.

    The order of the columns may differ; the four-vectors, scalars and weight may not.

    Examples
    --------
    >>> check_same_columns("a.parquet", Schema((), ("x",), False), "b.parquet",
    ...                    Schema((), ("y",), True))
    Traceback (most recent call last):
    ...
    laddu_dask.errors.SchemaError: a.parquet and b.parquet have different columns (only the first ...
    """
    if other == schema or (set(other.p4s) == set(schema.p4s)
                           and set(other.scalars) == set(schema.scalars)
                           and other.has_weight == schema.has_weight):
        return
    ca = set(schema.flat_columns()) | ({WEIGHT_COLUMN} if schema.has_weight else set())
    cb = set(other.flat_columns()) | ({WEIGHT_COLUMN} if other.has_weight else set())
    parts = []
    if ca - cb:
        parts.append(f"only the first has {sorted(ca - cb)}")
    if cb - ca:
        parts.append(f"only the second has {sorted(cb - ca)}")
    raise SchemaError(f"{first} and {path} have different columns ({'; '.join(parts)})")


def split_rows(n_rows: int, chunk_size: int) -> list[tuple[int, int]]:
    """Cut ``range(n_rows)`` into ``(start, stop)`` pieces of ``chunk_size`` (last shorter).

    Examples
    --------
    >>> split_rows(10, 4)
    [(0, 4), (4, 8), (8, 10)]
    """
    return [(s, min(s + chunk_size, n_rows)) for s in range(0, n_rows, chunk_size)]


def resolve_columns(schema: Schema, columns: Sequence[str] | None, source: str) -> list[str]:
    """Columns to load: all of ``schema`` for None, else ``columns`` less ``weight``.

    Raises SchemaError (via :meth:`Schema.require`) naming any unknown column and ``source``.
    """
    if columns is None:
        return schema.flat_columns()
    if isinstance(columns, str):
        columns = [columns]
    cols = list(dict.fromkeys(c for c in columns if c != WEIGHT_COLUMN))
    schema.require(cols, source, needed_by="load")
    return cols




def cast_column(raw: np.ndarray, dtype: np.dtype, column: str, offset: int, source: str,
                checked: bool = False) -> np.ndarray:
    """A contiguous, writable copy of the numbers ``raw`` in ``dtype``, checked to be finite.

    ``checked`` says ``raw`` is known to be finite already (then only a narrowing cast
    that overflows is looked for). Raises DataError naming ``column``, ``source`` and the
    event (``offset`` is the global index of ``raw[0]``).

    Examples
    --------
    >>> import numpy as np
    >>> cast_column(np.array([1, 2]), np.dtype("f8"), "x", 0, "arrays")
    array([1., 2.])
    >>> cast_column(np.array([1e300]), np.dtype("f4"), "x", 5, "arrays", checked=True)
    Traceback (most recent call last):
    ...
    laddu_dask.errors.DataError: column 'x' has a value (1e+300) that overflows float32 at event 5 (arrays)
    """
    with np.errstate(over="ignore", invalid="ignore"):
        arr = np.array(raw, dtype=dtype, copy=True)
    if not checked or arr.dtype != raw.dtype:
        check_finite(arr, column, offset, source, original=raw if raw.dtype != arr.dtype else None)
    return arr
