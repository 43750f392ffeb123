"""Events from arrays: checking the arrays a user gives, and in-memory partitions over them.

:func:`array_inputs` checks the arguments of :meth:`Dataset.from_arrays
<laddu_dask.data.dataset.Dataset.from_arrays>` and :meth:`Dataset.from_dask
<laddu_dask.data.dataset.Dataset.from_dask>` (NumPy or Dask arrays alike: names, shapes,
dtypes, lengths); :class:`ArrayOrigin` holds NumPy columns in memory and cuts them into
:class:`ArrayPartition` views.

Examples
--------
>>> import numpy as np
>>> schema, inputs = array_inputs({"k": np.ones((2, 4))}, {"s": [1.0, 2.0]}, None, as_numbers)
>>> schema.flat_columns(), [i.columns for i in inputs]
(['k_e', 'k_px', 'k_py', 'k_pz', 's'], [('k_e', 'k_px', 'k_py', 'k_pz'), ('s',)])
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from laddu_dask.data.batch import EventBatch
from laddu_dask.data.checks import cast_column, check_dtype, check_finite, resolve_columns, split_rows
from laddu_dask.data.partition import Partition
from laddu_dask.data.schema import WEIGHT_COLUMN, Schema, p4_columns
from laddu_dask.errors import DataError, SchemaError


@dataclass(frozen=True)
class ArrayInput:
    """One array a user gave: what it is, the array, and the flat columns it holds.

    ``columns`` has four names for a four-vector (its columns 0-3), one for a scalar and
    ``("weight",)`` for the weights.
    """

    label: str
    array: Any
    columns: tuple[str, ...]

    def column(self, block: Any, j: int) -> Any:
        """Column ``j`` of a block of this array (a row slice for a four-vector)."""
        return block[:, j] if len(self.columns) == 4 else block


def as_numbers(value: Any, what: str) -> np.ndarray:
    """``value`` as a NumPy array of real numbers; DataError naming ``what`` otherwise.

    Examples
    --------
    >>> as_numbers(["a"], "scalar 's'")
    Traceback (most recent call last):
    ...
    laddu_dask.errors.DataError: scalar 's' must hold real numbers, got dtype <U1
    """
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{what} is not a numeric array: {exc}") from None
    check_real(arr.dtype, what)
    return arr


def check_real(dtype: Any, what: str) -> None:
    """Raise DataError naming ``what`` unless ``dtype`` holds real numbers (bool, int, float)."""
    if np.dtype(dtype).kind not in "biuf":
        raise DataError(f"{what} must hold real numbers, got dtype {dtype}")


def array_inputs(p4s: Mapping[str, Any] | None, scalars: Mapping[str, Any] | None, weights: Any,
                 convert: Callable[[Any, str], Any], caller: str = "from_arrays",
                 ) -> tuple[Schema, list[ArrayInput]]:
    """Check the arrays of ``from_arrays``/``from_dask``; return the schema and the inputs.

    ``convert(value, what)`` turns each value into an array with ``shape``, ``ndim`` and
    ``dtype`` (a NumPy or Dask array), raising DataError naming ``what``. Lengths that
    are known (not NaN) must agree. ``caller`` names the constructor in messages.

    Raises
    ------
    DataError
        No arrays, a badly shaped or non-numeric array, or unequal lengths (naming each
        array and its length).
    SchemaError
        Clashing or empty names (e.g. a scalar called ``weight``).
    """
    p4s = dict(p4s or {})
    scalars = dict(scalars or {})
    if not p4s and not scalars:
        raise DataError(f"{caller} needs at least one four-vector (p4s) or scalar")
    for kind, names in (("four-vector", p4s), ("scalar", scalars)):
        for name in names:
            if not isinstance(name, str) or not name:
                raise SchemaError(f"{kind} names must be non-empty strings, got {name!r}")
    inputs: list[ArrayInput] = []
    for name, value in p4s.items():
        what = f"four-vector {name!r}"
        arr = convert(value, what)
        if arr.ndim != 2 or arr.shape[1] != 4:
            raise DataError(
                f"{what} must have shape (n_events, 4) with columns (E, px, py, pz), "
                f"got shape {arr.shape}"
            )
        inputs.append(ArrayInput(what, arr, tuple(p4_columns(name))))
    taken = {c for i in inputs for c in i.columns}
    for name, value in scalars.items():
        what = f"scalar {name!r}"
        arr = convert(value, what)
        if arr.ndim != 1:
            raise DataError(f"{what} must be 1-D, got shape {arr.shape}")
        if name in taken:
            raise SchemaError(f"{what} clashes with a four-vector column")
        inputs.append(ArrayInput(what, arr, (name,)))
    if weights is not None:
        arr = convert(weights, "weights")
        if arr.ndim != 1:
            raise DataError(f"weights must be 1-D, got shape {arr.shape}")
        inputs.append(ArrayInput("weights", arr, (WEIGHT_COLUMN,)))
    lengths = {i.label: i.array.shape[0] for i in inputs}
    if len({n for n in lengths.values() if not math.isnan(n)}) > 1:
        desc = ", ".join(f"{k}: {v}" for k, v in lengths.items())
        raise DataError(f"arrays have different numbers of events ({desc})")
    schema = Schema(p4s=tuple(p4s), scalars=tuple(scalars), has_weight=weights is not None)
    flat = schema.flat_columns() + ([WEIGHT_COLUMN] if weights is not None else [])
    if Schema.from_column_names(flat, "arrays") != schema:
        raise SchemaError(
            f"scalar names {list(scalars)} would be read back from Parquet as "
            "four-vector columns; pass four-vectors in p4s"
        )
    return schema, inputs


def load_columns(raw: Mapping[str, np.ndarray], weights: np.ndarray | None, columns: list[str],
                 dtype: np.dtype, n_events: int, offset: int, source: str,
                 checked: bool) -> EventBatch:
    """The batch of ``columns`` of ``raw`` (and ``weights``, 1 when None) as ``dtype`` copies.

    ``checked``: the values are known to be finite (only an overflowing cast is looked for).
    """
    out = {c: cast_column(raw[c], dtype, c, offset, source, checked) for c in columns}
    if weights is None:
        w = np.ones(n_events, dtype=dtype)
    else:
        w = cast_column(weights, dtype, WEIGHT_COLUMN, offset, source, checked)
    return EventBatch(out, w, offset=offset, source=source)


@dataclass(frozen=True, eq=False)
class ArrayPartition(Partition):
    """A partition over in-memory arrays (views into the dataset's columns)."""

    schema: Schema = field(repr=False)
    arrays: Mapping[str, np.ndarray] = field(repr=False)
    weight_array: np.ndarray | None = field(repr=False)

    def load(self, columns: Sequence[str] | None = None, dtype: Any = np.float64) -> EventBatch:
        dt = check_dtype(dtype)
        cols = resolve_columns(self.schema, columns, "arrays")
        return load_columns(self.arrays, self.weight_array, cols, dt, self.n_events, self.offset,
                            self.source, checked=True)


class ArrayOrigin:
    """Events held in memory as flat float64 columns (built by :meth:`Dataset.from_arrays`)."""

    sources: tuple[str, ...] = ("arrays",)
    has_blocks = False
    chosen_by_user = False

    def __init__(self, schema: Schema, columns: dict[str, np.ndarray],
                 weights: np.ndarray | None, n_events: int) -> None:
        self.schema = schema
        self.columns = columns
        self.weights = weights
        self.n_events = n_events
        self.token = f"arrays-{uuid.uuid4().hex}"

    @classmethod
    def from_inputs(cls, schema: Schema, inputs: list[ArrayInput]) -> ArrayOrigin:
        """Copy checked NumPy ``inputs`` into float64 columns; DataError for a non-finite value."""
        columns: dict[str, np.ndarray] = {}
        weights = None
        for inp in inputs:
            for j, col in enumerate(inp.columns):
                arr = np.array(inp.column(inp.array, j), dtype=np.float64, copy=True)
                check_finite(arr, col, 0, "arrays")
                if col == WEIGHT_COLUMN:
                    weights = arr
                else:
                    columns[col] = arr
        return cls(schema, columns, weights, int(inputs[0].array.shape[0]))

    def make_partitions(self, chunk_size: int | None) -> tuple[Partition, ...]:
        assert chunk_size is not None
        ranges = split_rows(self.n_events, chunk_size) or [(0, 0)]
        return tuple(
            ArrayPartition(
                n_events=b - a, offset=a, source=f"arrays [rows {a}:{b}]", schema=self.schema,
                arrays={k: v[a:b] for k, v in self.columns.items()},
                weight_array=None if self.weights is None else self.weights[a:b],
            )
            for a, b in ranges
        )

    def graph(self) -> None:
        return None
