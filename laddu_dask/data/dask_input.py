"""Dask collections as event data: what :meth:`Dataset.from_dask` accepts, checked lazily.

Three kinds of collection become a :class:`~laddu_dask.data.blocks.BlockOrigin`, one block
per partition or chunk, computing nothing:

- a ``dask.dataframe.DataFrame`` in laddu's column convention, read by :class:`FrameReader`;
- Dask arrays shaped like :meth:`Dataset.from_arrays`' arguments, read by :class:`ArraysReader`;
- a dask-awkward record array of flat fields (``uproot.dask``), read by :class:`FrameReader`
  like a frame; flat dask-awkward arrays may also stand for Dask arrays among the arrays.

Their dtypes and names are checked from Dask's metadata now; each block when it loads,
against that schema (:func:`~laddu_dask.data.checks.block_numbers`: real numbers of the
declared shape, no nulls, finite), with the errors files get.

Examples
--------
>>> import dask.array as da
>>> origin = dask_origin(scalars={"s": da.arange(5.0, chunks=2)})
>>> origin.lengths, origin.sources
((2, 2, 1), ('dask arrays',))
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from dask._task_spec import List, Task, TaskRef
from dask.base import is_dask_collection, tokenize
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph

from laddu_dask.cluster_waits import compute
from laddu_dask.data.arrays import ArrayInput, array_inputs, as_numbers, check_real
from laddu_dask.data.blocks import BlockOrigin, Piece
from laddu_dask.data.checks import block_numbers
from laddu_dask.data.schema import Schema
from laddu_dask.errors import DataError

_KEYWORDS = ("p4s", "scalars", "weights")


def _module(obj: Any) -> str:
    return type(obj).__module__


def _is_frame(obj: Any) -> bool:
    if not _module(obj).startswith("dask.dataframe"):
        return False
    import dask.dataframe as dd

    return isinstance(obj, dd.DataFrame)


def _is_awkward(obj: Any) -> bool:
    return _module(obj).startswith("dask_awkward")


def _is_array(obj: Any) -> bool:
    return isinstance(obj, _FlatAwkward) or (_module(obj).startswith("dask.array")
                                             and is_dask_collection(obj))


def _numbers(values: Any, name: str, piece: Piece) -> np.ndarray:
    """A computed block's column checked against the schema (:func:`block_numbers`)."""
    return block_numbers(values, name, piece.rows, piece.block_offset, piece.block)


# ----------------------------------------------------------------------------- readers


def _awkward_numbers(field: Any, name: str, piece: Piece) -> np.ndarray:
    """A flat awkward array's values as NumPy numbers; DataError for a missing one, or
    for values that are not flat numbers (strings, lists, records)."""
    import awkward as ak

    try:
        values = ak.to_numpy(field, allow_missing=True)
    except (TypeError, ValueError) as exc:
        raise DataError(f"column {name!r} of {piece.block} is not a flat column of numbers "
                        f"(type {ak.type(field)}): {exc}") from None
    return _numbers(values, name, piece)


@dataclass(frozen=True)
class _FlatAwkward:
    """A flat dask-awkward array of numbers, seen as a 1-D Dask array (chunks from divisions)."""

    array: Any
    dtype: np.dtype
    ndim = 1

    @property
    def chunks(self) -> tuple[tuple[float, ...]]:
        a = self.array
        if a.known_divisions:
            return (tuple(int(n) for n in np.diff(a.divisions)),)
        return ((math.nan,) * a.npartitions,)

    @property
    def shape(self) -> tuple[float]:
        return (sum(self.chunks[0]),)

    def __dask_graph__(self) -> HighLevelGraph:
        return self.array.__dask_graph__()

    def __dask_keys__(self) -> list[Any]:
        return self.array.__dask_keys__()


def _numeric_form(form: Any) -> bool:
    """Whether an awkward form is flat numbers (perhaps with missing values): bool, int, float."""
    if type(form).__name__ in ("IndexedOptionForm", "ByteMaskedForm", "BitMaskedForm", "UnmaskedForm"):
        form = form.content
    return (type(form).__name__ == "NumpyForm" and not form.inner_shape
            and np.dtype(form.primitive).kind in "biuf")


@dataclass(frozen=True)
class FrameReader:
    """Reads the pandas DataFrames (or awkward record arrays) a collection's partitions compute to."""

    checked = False

    def length(self, value: Any) -> int:
        return len(value)

    def columns(self, value: Any, names: list[str], piece: Piece) -> dict[str, np.ndarray]:
        have = getattr(value, "columns" if hasattr(value, "iloc") else "fields", None)
        if have is None:
            raise DataError(f"{piece.block} computed a {type(value).__name__}, not the table of "
                            "columns its metadata declares")
        lost = [name for name in names if name not in have]
        if lost:
            raise DataError(f"{piece.block} computed no column(s) {lost}, which its metadata "
                            "declares")
        if not hasattr(value, "iloc"):
            return {name: _awkward_numbers(value[name], name, piece) for name in names}
        out = {}
        for name in names:
            series = value[name]
            if isinstance(series.dtype, np.dtype):
                out[name] = _numbers(series.to_numpy(), name, piece)
                continue
            # an extension dtype (nullable, Arrow, categorical, string): nulls as None
            kind = getattr(series.dtype, "kind", "O")
            if kind in "biuf" and not series.hasnans:
                values = series.to_numpy(dtype=series.dtype.numpy_dtype)
            else:
                values = series.to_numpy(dtype=object, na_value=None)
            out[name] = _numbers(values, name, piece)
        return out


@dataclass(frozen=True)
class ArraysReader:
    """Reads the blocks of several Dask arrays (one per input, in order) as flat columns.

    ``columns[k]`` names the flat columns of input ``k``: four for a four-vector (its
    columns 0-3), one for a 1-D array.
    """

    columns_of: tuple[tuple[str, ...], ...]
    labels: tuple[str, ...] = ()
    checked = False

    def length(self, value: Sequence[Any]) -> int:
        return len(value[0])

    def columns(self, value: Sequence[Any], names: list[str], piece: Piece) -> dict[str, np.ndarray]:
        where = {c: (k, j) for k, cols in enumerate(self.columns_of) for j, c in enumerate(cols)}
        out = {}
        for name in names:
            k, j = where[name]
            block = value[k]
            if len(self.columns_of[k]) == 4:
                shape = np.shape(block)
                if shape != (piece.rows, 4):
                    label = self.labels[k] if self.labels else f"the four-vector of {name!r}"
                    raise DataError(
                        f"{label} (column {name!r}) computed a block of shape {shape} in "
                        f"{piece.block}, where ({piece.rows}, 4) was declared (E, px, py, pz)"
                    )
                block = np.asarray(block)[:, j]
            out[name] = _numbers(block, name, piece)
        return out


# ----------------------------------------------------------------------------- lengths


def _count_lengths(graph: HighLevelGraph, inputs: list[Any], length: Callable[[Any], int],
                   token: str) -> tuple[int, ...]:
    """Rows of every block, counted by computing the blocks once (``lengths=True``)."""

    name = f"laddu-lengths-{token}"
    layer = {}
    for i, inp in enumerate(inputs):
        refs = List(*map(TaskRef, inp)) if isinstance(inp, list) else TaskRef(inp)
        layer[(name, i)] = Task((name, i), length, refs)
    full = HighLevelGraph({**graph.layers, name: layer}, {**graph.dependencies, name: set(graph.layers)})
    return tuple(int(n) for n in compute(*[Delayed(k, full, layer=name) for k in layer],
                                         what="the lengths of the blocks of a Dask collection"))


def _resolve_lengths(given: Sequence[int] | bool | None, known: tuple[int, ...] | None,
                     label: str, count: Callable[[], tuple[int, ...]], n_blocks: int
                     ) -> tuple[int, ...] | None:
    """The rows per block: counted now (``True``), given, as Dask knows them, or ``None``:
    unknown, to be counted when first needed."""
    if given is True:
        return count()
    if given is None or given is False:
        return known
    lengths = list(given)
    if len(lengths) != n_blocks or not all(
            isinstance(n, int | np.integer) and not isinstance(n, bool) and n >= 0 for n in lengths):
        raise DataError(
            f"lengths must hold one non-negative integer per partition of {label} "
            f"({n_blocks}), got {given!r}"
        )
    if known is not None and tuple(lengths) != known:
        raise DataError(f"lengths={tuple(lengths)} contradict the lengths Dask knows for {label}: {known}")
    return tuple(int(n) for n in lengths)


def _frame_lengths(frame: Any) -> tuple[int, ...] | None:
    """Partition lengths Dask knows without computing (statistics, from_pandas), else None."""
    try:
        from dask.dataframe.dask_expr._expr import Lengths, Literal

        expr = Lengths(frame.expr).optimize(fuse=False)
    except Exception:  # noqa: BLE001 - an expression Dask cannot simplify: the lengths are unknown
        return None
    if isinstance(expr, Literal) and len(expr.value) == frame.npartitions:
        return tuple(int(n) for n in expr.value)
    return None


# ----------------------------------------------------------------------------- origins


def _as_graph(collection: Any) -> HighLevelGraph:
    graph = collection.__dask_graph__()
    if isinstance(graph, HighLevelGraph):
        return graph
    return HighLevelGraph.from_collections(f"laddu-input-{tokenize(collection)}", dict(graph), ())


def _frame_origin(frame: Any, lengths: Sequence[int] | bool | None) -> BlockOrigin:
    import pandas as pd

    label = f"dask DataFrame {frame._name!r}"
    typed = [(name, str(dtype), bool(pd.api.types.is_numeric_dtype(dtype)
                                     and not pd.api.types.is_complex_dtype(dtype)))
             for name, dtype in frame.dtypes.items()]
    schema = Schema.from_typed_columns(typed, label)
    graph = _as_graph(frame)
    inputs = list(frame.__dask_keys__())
    token = f"frame-{tokenize(frame)}"
    reader = FrameReader()
    count = functools.partial(_count_lengths, graph, inputs, reader.length, token)
    n = _resolve_lengths(lengths, _frame_lengths(frame), label, count, len(inputs))
    return BlockOrigin(schema, (label,), graph, inputs, n, reader, token,
                       labels=[f"{label} partition {i}" for i in range(len(inputs))], count=count)


def _dask_array(value: Any, what: str) -> Any:
    """A Dask array of real numbers from a Dask, dask-awkward or NumPy value (NumPy stays)."""
    if _is_array(value):
        check_real(value.dtype, what)
        return value
    if _is_awkward(value):
        form = value.form
        if not _numeric_form(form):
            raise DataError(f"{what} must be a flat dask-awkward array of numbers, got type {form.type}")
        return _FlatAwkward(value, np.dtype(getattr(form, "content", form).primitive))
    if is_dask_collection(value):
        raise DataError(f"{what} must be a Dask array, got {type(value).__name__}")
    return as_numbers(value, what)


def _chunk_like(inputs: list[ArrayInput], label: str) -> tuple[list[ArrayInput], tuple[float, ...]]:
    """Check the Dask arrays' chunks line up along the events; chunk NumPy arrays the same way."""
    import dask.array as da

    lazy = [i for i in inputs if _is_array(i.array)]
    ref = lazy[0]
    chunks = ref.array.chunks[0]
    for inp in lazy:
        if inp.array.ndim == 2 and len(inp.array.chunks[1]) != 1:
            raise DataError(
                f"{inp.label} is chunked along its components (chunks {inp.array.chunks}); "
                "chunk it along the events only, e.g. with .rechunk({1: 4})"
            )
        if inp.array.chunks[0] != chunks:
            raise DataError(
                f"the chunks of {label} along the events do not line up: {ref.label} has "
                f"{chunks}, {inp.label} has {inp.array.chunks[0]}; rechunk them alike "
                "(a.rechunk({0: b.chunks[0]}))"
            )
    out = []
    for inp in inputs:
        if not _is_array(inp.array):
            if any(math.isnan(c) for c in chunks):
                raise DataError(f"{inp.label} is a NumPy array but the Dask arrays' chunks are "
                                "unknown; call .compute_chunk_sizes() on them first")
            arr = da.from_array(inp.array, chunks=(chunks, *inp.array.shape[1:]))
            inp = ArrayInput(inp.label, arr, inp.columns)
        out.append(inp)
    return out, chunks


def _block_keys(array: Any) -> list[Any]:
    keys = array.__dask_keys__()
    return [k[0] if array.ndim == 2 else k for k in keys]


def _arrays_origin(schema: Schema, inputs: list[ArrayInput], label: str, token: str,
                   lengths: Sequence[int] | bool | None) -> BlockOrigin:
    inputs, chunks = _chunk_like(inputs, label)
    graph = HighLevelGraph.merge(*[i.array.__dask_graph__() for i in inputs])
    per_array = [_block_keys(i.array) for i in inputs]
    blocks = [list(keys) for keys in zip(*per_array, strict=True)]
    reader = ArraysReader(tuple(i.columns for i in inputs), tuple(i.label for i in inputs))
    known = None if any(math.isnan(c) for c in chunks) else tuple(int(c) for c in chunks)
    count = functools.partial(_count_lengths, graph, blocks, reader.length, token)
    n = _resolve_lengths(lengths, known, label, count, len(blocks))
    return BlockOrigin(schema, (label,), graph, blocks, n, reader, token,
                       labels=[f"{label} chunk {i}" for i in range(len(blocks))], count=count)


def _awkward_origin(array: Any, lengths: Sequence[int] | bool | None) -> BlockOrigin:
    label = f"dask-awkward array {array.name!r}"
    if not array.fields:
        raise TypeError(f"{label} has no fields: pass a record array (as uproot.dask gives), or "
                        "flat arrays as p4s=, scalars= or weights=")
    typed = [(name, str(array.form.content(name).type), _numeric_form(array.form.content(name)))
             for name in array.fields]
    schema = Schema.from_typed_columns(typed, label)
    graph = _as_graph(array)
    inputs = list(array.__dask_keys__())
    token = f"awkward-{tokenize(array)}"
    reader = FrameReader()
    known = tuple(int(n) for n in np.diff(array.divisions)) if array.known_divisions else None
    count = functools.partial(_count_lengths, graph, inputs, reader.length, token)
    n = _resolve_lengths(lengths, known, label, count, len(inputs))
    return BlockOrigin(schema, (label,), graph, inputs, n, reader, token,
                       labels=[f"{label} partition {i}" for i in range(len(inputs))], count=count)


def dask_origin(obj: Any = None, *, p4s: Mapping[str, Any] | None = None,
                scalars: Mapping[str, Any] | None = None, weights: Any = None,
                lengths: Sequence[int] | bool | None = None) -> BlockOrigin:
    """The origin of :meth:`Dataset.from_dask` (see there for the arguments and errors).

    ``obj`` may also be a mapping with the keys ``p4s``, ``scalars`` and ``weights``.
    """
    if isinstance(obj, Mapping):
        unknown = sorted(set(obj) - set(_KEYWORDS))
        if unknown:
            raise TypeError(f"a mapping given to from_dask takes the keys {list(_KEYWORDS)}, "
                            f"got {unknown}")
        if p4s is not None or scalars is not None or weights is not None:
            raise TypeError("give the arrays either as a mapping or as keywords, not both")
        p4s, scalars, weights = (obj.get(k) for k in _KEYWORDS)
        obj = None
    if obj is None:
        schema, inputs = array_inputs(p4s, scalars, weights, _dask_array, caller="from_dask")
        if not any(_is_array(i.array) for i in inputs):
            raise TypeError("from_dask needs at least one Dask array; use from_arrays for NumPy arrays")
        token = f"arrays-{tokenize(*[i.array for i in inputs])}"
        return _arrays_origin(schema, inputs, "dask arrays", token, lengths)
    if p4s is not None or scalars is not None or weights is not None:
        raise TypeError("give either a Dask DataFrame (or dask-awkward array) or p4s=/scalars=/weights=")
    if _is_frame(obj):
        return _frame_origin(obj, lengths)
    if _is_awkward(obj):
        return _awkward_origin(obj, lengths)
    if _is_array(obj):
        raise TypeError("pass Dask arrays as from_dask(p4s=..., scalars=..., weights=...)")
    hint = " (for Parquet files use read_parquet)" if isinstance(obj, str) else ""
    raise TypeError(
        "a Dataset is made from a Dask DataFrame, a dask-awkward record array or Dask arrays "
        f"(Dataset.from_dask), NumPy arrays (Dataset.from_arrays) or files (read_parquet); got "
        f"{type(obj).__name__}{hint}"
    )
