"""The columns a :class:`~laddu_dask.Generator` writes besides the four-vectors and weights.

* Generated scalars (laddu's ``Generator(channel, scalars={name: ScalarSource})``): every
  proposal draws each scalar's value from the partition's own scalar stream (so adding a
  scalar changes no four-vector), and its proposal weight is multiplied by the value's
  inverse density (:func:`draw_scalar`).
* The event index (laddu's ``index_column``, ``index_dtype``, ``index_start``): the output
  row ordinal plus ``index_start``, contiguous over the partitions in order
  (:class:`IndexColumn`).  Parquet files store it in ``index_dtype``; a laddu-dask
  :class:`~laddu_dask.Dataset` holds every column as float64, so the indices must stay below
  ``2**53`` to be exact there.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> values, inverse = draw_scalar(ld.ScalarSource.uniform(0.0, 2.0), np.random.default_rng(1), 3)
>>> bool(((values >= 0) & (values < 2)).all()), inverse.tolist()
(True, [2.0, 2.0, 2.0])
>>> IndexColumn.build("event", "u32", 10, events=5).values(2, 3).tolist()
[12, 13, 14]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from laddu_dask.data.schema import WEIGHT_COLUMN, p4_columns
from laddu_dask.errors import ParameterError
from laddu_dask.expr.proposals import ScalarSource

__all__ = ["IndexColumn", "check_scalars", "draw_scalar", "inverse_density_range"]

#: laddu's unsigned index dtypes, by their canonical and Rust names.
_INDEX_DTYPES = {"uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
                 "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}
#: The largest integer every smaller one of which a float64 holds exactly.
_EXACT_FLOAT = 2**53


def _histogram_parts(source: ScalarSource) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    edges, counts = np.array(source.values), np.array(source.counts)
    return edges, counts, np.diff(edges)


def draw_scalar(source: ScalarSource, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` values of ``source`` and their inverse densities (the proposal-weight factor)."""
    if source.kind == "fixed":
        return np.full(n, source.values[0]), np.ones(n)
    if source.kind == "uniform":
        low, high = source.values
        return low + rng.random(n) * (high - low), np.full(n, high - low)
    edges, counts, widths = _histogram_parts(source)
    cumulative = np.cumsum(counts)
    total = cumulative[-1]
    last = int(np.flatnonzero(counts > 0.0)[-1])
    # a bin with probability count / total (an empty bin never), then uniformly within it
    bins = np.minimum(np.searchsorted(cumulative, rng.random(n) * total, side="right"), last)
    values = edges[bins] + rng.random(n) * widths[bins]
    return values, total * widths[bins] / counts[bins]


def inverse_density_range(source: ScalarSource) -> tuple[float, float]:
    """The smallest and largest inverse density ``source`` gives a value (over its support)."""
    if source.kind == "fixed":
        return 1.0, 1.0
    if source.kind == "uniform":
        width = source.values[1] - source.values[0]
        return width, width
    _, counts, widths = _histogram_parts(source)
    keep = counts > 0.0
    inverse = counts.sum() * widths[keep] / counts[keep]
    return float(inverse.min()), float(inverse.max())


def _reserved(p4_names: Iterable[str]) -> set[str]:
    return {c for name in p4_names for c in p4_columns(name)} | {WEIGHT_COLUMN}


def check_scalars(scalars: Mapping[str, Any] | None, edge_names: Iterable[str],
                  output_names: Iterable[str]) -> dict[str, ScalarSource]:
    """The scalar sources by column name, checked (a ``ParameterError`` naming the one at fault)."""
    if scalars is None:
        return {}
    if not isinstance(scalars, Mapping):
        raise ParameterError(f"scalars must be a dict of column names to ScalarSource, got "
                             f"{type(scalars).__name__}")
    edges, reserved = set(edge_names), _reserved(output_names)
    out: dict[str, ScalarSource] = {}
    for name, source in scalars.items():
        if not isinstance(name, str) or not name or name in edges or name in reserved:
            raise ParameterError(f"scalar column name {name!r} is empty, an edge's name, or one of the "
                                 "output's four-vector or weight columns")
        if not isinstance(source, ScalarSource):
            raise ParameterError(f"scalars[{name!r}] must be a ScalarSource, got {type(source).__name__}")
        out[name] = source
    return out


def _index_dtype(dtype: Any) -> np.dtype:
    """An unsigned dtype from laddu's names (``"uint32"``, ``"u32"``) or a NumPy dtype."""
    if isinstance(dtype, str):
        if dtype in _INDEX_DTYPES:
            return np.dtype(_INDEX_DTYPES[dtype])
        try:
            kind = np.dtype(dtype).kind
        except TypeError:
            kind = "u"
        if kind == "u":  # NumPy's own spellings ("u4" is uint32 there, "u8" uint8 in laddu)
            raise ParameterError(f"index_dtype={dtype!r} is not one of laddu's unsigned index dtypes "
                                 f"({', '.join(_INDEX_DTYPES)})")
    else:
        try:
            resolved = np.dtype(dtype)
        except TypeError:
            raise ParameterError(f"index_dtype={dtype!r} is not a dtype") from None
        if resolved.kind == "u":
            return resolved
    raise ParameterError(f"index_dtype={dtype!r} must be an unsigned integer dtype")


@dataclass(frozen=True)
class IndexColumn:
    """An event-index column: its name, unsigned dtype and first index."""

    name: str
    dtype: np.dtype
    start: int

    @staticmethod
    def build(name: str | None, dtype: Any, start: Any, *, events: int, taken: Iterable[str] = ()
              ) -> IndexColumn | None:
        """The index column of a run of ``events`` events (``None`` without a name), checked
        before anything is generated: the name against the output's columns ``taken``, the
        dtype (laddu's unsigned names or a NumPy unsigned dtype) and the full index range."""
        if name is None:
            return None
        if not isinstance(name, str) or not name or name in set(taken) or name == WEIGHT_COLUMN:
            raise ParameterError(f"index_column={name!r} is empty or the name of another output column")
        resolved = _index_dtype(dtype)
        if isinstance(start, bool) or not isinstance(start, (int, np.integer)) or start < 0:
            raise ParameterError(f"index_start must be an integer >= 0, got {start!r}")
        last = int(start) + max(events, 1) - 1
        if last > np.iinfo(resolved).max:
            raise ParameterError(f"the generated index range [{start}, {last}] exceeds index_dtype "
                                 f"{resolved.name} (at most {np.iinfo(resolved).max})")
        if last >= _EXACT_FLOAT:
            raise ParameterError(f"the generated index range [{start}, {last}] reaches 2**53: a "
                                 "laddu-dask Dataset holds columns as float64, exact only below it")
        return IndexColumn(name, resolved, int(start))

    def values(self, offset: int, n: int) -> np.ndarray:
        """The indices of the ``n`` output rows from row ``offset`` on."""
        return np.arange(self.start + offset, self.start + offset + n, dtype=np.uint64).astype(self.dtype)
