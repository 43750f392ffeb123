"""Exact summation: one representation of exact partial sums and one generic reduction.

Every sum over events in laddu-dask is the correctly rounded exact sum of its terms (what
:func:`math.fsum` returns), the same to the last bit however the terms are partitioned and
merged: terms become :class:`ExactPartials` (one exact sum per quantity), which merge
exactly in any grouping and order and round once (:meth:`ExactPartials.to_floats`).
:func:`reduction` is ``dask.array.reduction``'s pattern: ``chunk`` maps a piece of the data
to a partial, ``combine`` merges a list of partials (``split_every`` at a time, in a tree)
and ``aggregate`` makes the result; eagerly on a list, or as the tasks of a Dask graph
(:func:`combine_tree` merges partials computed elsewhere).

How a block of terms becomes exact integers
-------------------------------------------
Each float64 term is split into a high part (its top 32 significant bits) and a low part
(the other 21), both exact, binned by quantity, sign and 11-bit exponent field with one
``numpy.bincount`` each: within one bin a float64 sum of up to ``2**21`` such parts never
rounds (blocks are kept to ``2**20`` terms).  Each non-empty bin sum is added into one
Python integer per quantity, scaled by ``2**1074`` (the float64 quantum): the fixed-point
superaccumulator.  A block with terms above ``2**1003`` (whose bin sums can overflow) is
redone with those terms scaled down by an exact power of two.  Non-finite terms are
summed apart as plain floats: a result is nan or inf exactly when a plain sum would be.

Examples
--------
>>> import math
>>> terms = [1e16, 1.0, -1e16, 1e-3]
>>> exact_sum(terms) == math.fsum(terms)
True
>>> reduction([[1e16, 1.0], [-1e16], [1e-3]], ExactPartials.from_terms, ExactPartials.merge,
...           ExactPartials.to_floats, split_every=2).tolist() == [math.fsum(terms)]
True
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

__all__ = ["FIXED_SCALE_BITS", "ExactPartials", "combine_tree", "exact_aggregate", "exact_chunk",
           "exact_sum", "fsum_rows", "merge", "reduction", "work_bytes"]

#: ``ExactPartials.fixed[k]`` is the exact sum multiplied by ``2**FIXED_SCALE_BITS``;
#: every finite float64 is an integer multiple of ``2**-1074``.
FIXED_SCALE_BITS = 1074
_SCALE = 1 << FIXED_SCALE_BITS

_BLOCK = 1 << 20  # terms per quantity whose bin sums are exact (limit is 2**21)
_SUB = 1 << 15  # columns per pass, so that temporaries stay in cache
_NBINS = 1 << 12  # sign bit and 11 exponent bits
_EXP_MASK = 0x7FF
_SPECIAL_FIELD = 0x7FF  # exponent field of inf and nan
_HI_MASK = np.uint64(0xFFFF_FFFF_FFE0_0000)  # keep sign, exponent, top 31 mantissa bits
_SHIFT = np.uint64(52)
_HUGE_FIELD = 2000  # exponent field from which the overflow retry scales terms down
_HUGE_SHIFT = 600  # ... by 2**-600
_HUGE_ABS = math.ldexp(1.0, _HUGE_FIELD - 1023)


def work_bytes(n: int) -> int:
    """Bytes :meth:`ExactPartials.from_terms` holds besides its input, per row of ``n`` terms.

    A pass over up to ``2**15`` terms at a time keeps five arrays of them (the float64
    copy of float32 terms, bit patterns, bin indices, high and low parts), and the row
    has four arrays of bins (measured: 1.07 MiB per row for large ``n``).

    Examples
    --------
    >>> work_bytes(10) < work_bytes(10**6) == work_bytes(10**7)
    True
    """
    return 5 * 8 * min(n, _SUB) + 4 * 8 * _NBINS


def _as_matrix(terms: Any) -> np.ndarray:
    """Return ``terms`` as a float array of shape (K, n) (float64 where not float16/32)."""
    if not isinstance(terms, np.ndarray) and hasattr(terms, "get"):
        terms = terms.get()  # CuPy array -> NumPy
    array = np.asarray(terms)
    if array.dtype.kind == "c":
        raise TypeError(f"terms must be real, got dtype {array.dtype}")
    if array.dtype.kind != "f" or array.dtype.itemsize > 8:
        try:
            array = array.astype(np.float64)
        except (TypeError, ValueError) as err:
            raise TypeError(f"terms must be real numbers, got dtype {array.dtype}") from err
    if array.ndim < 2:
        array = array.reshape(1, -1)
    elif array.ndim != 2:
        raise ValueError(f"terms must have shape (n,) or (K, n), got shape {array.shape}")
    return array  # float16/32/64; converted to native float64 block by block


def _block_bins(block: np.ndarray, scale_huge: bool) -> tuple[np.ndarray, np.ndarray]:
    """Exact per-(quantity, sign, exponent) sums of the high and low parts of ``block``."""
    k, n = block.shape
    size = k * _NBINS
    offsets = (np.arange(k, dtype=np.uint64) * np.uint64(_NBINS))[:, np.newaxis]
    hi_bins = np.zeros(size)
    lo_bins = np.zeros(size)
    with np.errstate(invalid="ignore", over="ignore"):
        for start in range(0, n, _SUB):
            part = block[:, start : start + _SUB]
            if part.dtype != np.float64:  # float16/32 or byte-swapped: exact conversion
                part = part.astype(np.float64)
            bits = part.view(np.uint64)
            index = bits >> _SHIFT
            index += offsets
            index = index.view(np.int64).ravel()
            if scale_huge:
                part = np.where(np.abs(part) >= _HUGE_ABS, part * 2.0**-_HUGE_SHIFT, part)
                bits = part.view(np.uint64)
            hi = (bits & _HI_MASK).view(np.float64)
            lo = part - hi  # exact; nan for inf and nan terms, which are handled apart
            hi_bins += np.bincount(index, weights=hi.ravel(), minlength=size)
            lo_bins += np.bincount(index, weights=lo.ravel(), minlength=size)
    return hi_bins, lo_bins


def _overflowed(hi_bins: np.ndarray) -> bool:
    """Whether a bin of finite terms overflowed (only possible for terms above 2**1003)."""
    finite_fields = (np.arange(hi_bins.size) & _EXP_MASK) != _SPECIAL_FIELD
    return not bool(np.isfinite(hi_bins[finite_fields]).all())


def _accumulate_bins(bins: np.ndarray, fixed: list[int], specials: set[int], scale_huge: bool,
                     ids: np.ndarray | None = None) -> None:
    """Add the exact bin sums into ``fixed`` (one scaled integer per quantity); ``ids`` are
    the bins' flat (quantity, sign and exponent) indices where not their positions."""
    nonzero = np.flatnonzero(bins)
    for flat, value in zip((nonzero if ids is None else ids[nonzero]).tolist(), bins[nonzero].tolist()):
        row, column = divmod(flat, _NBINS)
        field = column & _EXP_MASK
        if field == _SPECIAL_FIELD:
            specials.add(row)
            continue
        numerator, denominator = value.as_integer_ratio()
        shift = FIXED_SCALE_BITS - (denominator.bit_length() - 1)
        if scale_huge and field >= _HUGE_FIELD:
            shift += _HUGE_SHIFT
        fixed[row] += numerator << shift


def _keyed_sums(matrix: np.ndarray, keys: np.ndarray, n_keys: int) -> tuple[list[int], set[int]]:
    """The exact sums of the terms of each key (``keys`` as ``matrix``, below ``n_keys``), a
    slice at a time binned sparsely by (key, sign, exponent): the cost is not per key."""
    fixed, specials = [0] * n_keys, set()
    with np.errstate(invalid="ignore", over="ignore"):
        for start in range(0, matrix.shape[1], _SUB):
            part = matrix[:, start : start + _SUB].astype(np.float64).ravel()
            fields = (part.view(np.uint64) >> _SHIFT).astype(np.int64)
            ids, inverse = np.unique(keys[:, start : start + _SUB].ravel() * _NBINS + fields,
                                     return_inverse=True)
            field = fields & _EXP_MASK
            scale_huge = bool(np.any((field >= _HUGE_FIELD) & (field != _SPECIAL_FIELD)))
            if scale_huge:  # as _block_bins splits them
                part = np.where(np.abs(part) >= _HUGE_ABS, part * 2.0**-_HUGE_SHIFT, part)
            hi = (part.view(np.uint64) & _HI_MASK).view(np.float64)
            for w in (hi, part - hi):
                sums = np.bincount(inverse, weights=w, minlength=ids.size)
                _accumulate_bins(sums, fixed, specials, scale_huge, ids)
    return fixed, specials


def _special_sums(k: int, specials: set[int], values_of: Any) -> list[float]:
    """The plain sums of the non-finite terms of the quantities in ``specials``."""
    special = [0.0] * k
    for row in specials:
        values = values_of(row)
        with np.errstate(invalid="ignore"):
            special[row] = float(values[~np.isfinite(values)].astype(np.float64).sum())
    return special


@dataclass(frozen=True, eq=True)
class ExactPartials:
    """Exact partial sums of K quantities (one per value / gradient component).

    Parameters
    ----------
    fixed : tuple of int
        Exact sums of the finite terms, multiplied by ``2**1074`` (so integers).
    special : tuple of float
        Plain sums of the non-finite terms (``0.0`` when there are none).

    Notes
    -----
    Merging with ``+`` is exact, associative and commutative, so any tree
    reduction gives the same partials. Instances hold only ints and floats and
    pickle cheaply (a few hundred bytes per quantity).

    Examples
    --------
    >>> import numpy as np
    >>> p = ExactPartials.from_terms(np.array([[0.1, 0.2, 0.3], [1.0, 2.0, 3.0]]))
    >>> len(p), p.to_floats().tolist()
    (2, [0.6, 6.0])
    >>> ExactPartials.merge([p, ExactPartials.zeros(2)]) == p
    True
    """

    fixed: tuple[int, ...]
    special: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.fixed) != len(self.special):
            raise ValueError(
                f"ExactPartials needs as many special sums as fixed sums, got "
                f"{len(self.fixed)} and {len(self.special)}"
            )

    @classmethod
    def from_terms(cls, terms: Any) -> ExactPartials:
        """Sum terms exactly: shape (n,) gives K=1, shape (K, n) one sum per row.

        Parameters
        ----------
        terms : array-like
            Real numbers (float64, float32, integers; a CuPy array is copied to
            the host first). Values are converted to float64; float32 and
            float16 convert exactly.

        Examples
        --------
        >>> ExactPartials.from_terms([1e100, 1.0, -1e100]).to_floats().tolist()
        [1.0]
        """
        matrix = _as_matrix(terms)
        k, n = matrix.shape
        fixed = [0] * k
        specials: set[int] = set()
        for start in range(0, n, _BLOCK):
            block = matrix[:, start : start + _BLOCK]
            hi_bins, lo_bins = _block_bins(block, scale_huge=False)
            scale_huge = _overflowed(hi_bins)
            if scale_huge:
                hi_bins, lo_bins = _block_bins(block, scale_huge=True)
            _accumulate_bins(hi_bins, fixed, specials, scale_huge)
            _accumulate_bins(lo_bins, fixed, set(), scale_huge)
        return cls(tuple(fixed), tuple(_special_sums(k, specials, matrix.__getitem__)))

    @classmethod
    def from_groups(cls, groups: Any, terms: Any, n_groups: int) -> ExactPartials:
        """Exact sums by group: quantity ``g * K + r`` sums row ``r`` of the ``(K, n)``
        ``terms`` over the columns whose group (``groups``, shape ``(n,)``) is ``g``, for
        ``g`` in ``range(n_groups)``; a column of group ``-1`` counts nowhere.

        Examples
        --------
        >>> p = ExactPartials.from_groups([1, 0, 1, -1], [[1e16, 2.0, -1e16, 7.0]], 3)
        >>> p.to_floats().tolist()
        [2.0, 0.0, 0.0]
        """
        matrix = _as_matrix(terms)
        k, n = matrix.shape
        groups = np.asarray(groups, dtype=np.int64).ravel()
        if groups.shape != (n,) or (n and not -1 <= int(groups.min()) <= int(groups.max()) < n_groups):
            raise ValueError(f"groups must be {n} integers in [-1, {n_groups}), got shape {groups.shape}")
        matrix, groups = matrix[:, groups >= 0], groups[groups >= 0]
        keys = groups * k + np.arange(k, dtype=np.int64)[:, np.newaxis]
        fixed, specials = _keyed_sums(matrix, keys, n_groups * k)
        return cls(tuple(fixed), tuple(_special_sums(len(fixed), specials, lambda key: matrix[keys == key])))

    @classmethod
    def zeros(cls, k: int) -> ExactPartials:
        """The empty sum of ``k`` quantities.

        Examples
        --------
        >>> ExactPartials.zeros(3).to_floats().tolist()
        [0.0, 0.0, 0.0]
        """
        if k < 0:
            raise ValueError(f"number of quantities must be >= 0, got {k}")
        return cls((0,) * k, (0.0,) * k)

    def __len__(self) -> int:
        return len(self.fixed)

    def __add__(self, other: object) -> ExactPartials:
        if not isinstance(other, ExactPartials):
            return NotImplemented
        if len(other) != len(self):
            raise ValueError(f"cannot merge ExactPartials of {len(self)} and {len(other)} quantities")
        return ExactPartials(
            tuple(a + b for a, b in zip(self.fixed, other.fixed, strict=True)),
            tuple(a + b for a, b in zip(self.special, other.special, strict=True)),
        )

    def __radd__(self, other: object) -> ExactPartials:
        # Lets the built-in ``sum(parts)`` start from its integer 0.
        if isinstance(other, int) and other == 0:
            return self
        return NotImplemented

    @staticmethod
    def merge(parts: Sequence[ExactPartials], k: int | None = None) -> ExactPartials:
        """Merge partials exactly (the combine step of a tree reduction); no parts at all
        are the empty sum of ``k`` quantities, when ``k`` is given.

        Examples
        --------
        >>> a = ExactPartials.from_terms([1.0, 2.0])
        >>> ExactPartials.merge([a, a, a]).to_floats().tolist()
        [9.0]
        >>> ExactPartials.merge([], k=2).to_floats().tolist()
        [0.0, 0.0]
        """
        parts = list(parts)
        if not parts and k is not None:
            return ExactPartials.zeros(k)
        if not parts:
            raise ValueError("ExactPartials.merge needs at least one ExactPartials")
        k = len(parts[0])
        for index, part in enumerate(parts):
            if not isinstance(part, ExactPartials):
                raise TypeError(f"part {index} is a {type(part).__name__}, not ExactPartials")
            if len(part) != k:
                raise ValueError(
                    f"cannot merge ExactPartials of {k} and {len(part)} quantities (part {index})"
                )
        fixed = tuple(sum(column) for column in zip(*(p.fixed for p in parts), strict=True))
        # special sums are 0.0, +-inf or nan, whose plain sum does not depend on order
        special = tuple(sum(column, 0.0) for column in zip(*(p.special for p in parts), strict=True))
        return ExactPartials(fixed, special)

    def to_floats(self) -> np.ndarray:
        """Correctly rounded sums, shape (K,) float64.

        An exact sum beyond the float64 range gives +-inf (where :func:`math.fsum`
        raises ``OverflowError``); an exact zero gives ``+0.0``. Non-finite terms
        make the result nan or +-inf as a plain sum would.

        Examples
        --------
        >>> ExactPartials.from_terms([1e308, 1e308]).to_floats().tolist()
        [inf]
        """
        out = np.empty(len(self), dtype=np.float64)
        for row, (value, special) in enumerate(zip(self.fixed, self.special, strict=True)):
            try:
                rounded = value / _SCALE  # int / int is correctly rounded in CPython
            except OverflowError:
                rounded = math.inf if value > 0 else -math.inf
            out[row] = rounded + special
        return out

    def to_expansion(self) -> np.ndarray:
        """Rows of doubles whose exact sums are the partial sums, shape (K, m).

        Each row is a non-overlapping expansion (largest first, zero-padded) with the
        non-finite part last, so ``fsum_rows`` of it equals :meth:`to_floats`; it lets
        exact partials travel and merge as a few plain floats.

        Examples
        --------
        >>> e = ExactPartials.from_terms([1e16, 1.0, 1e-16]).to_expansion()
        >>> fsum_rows(e).tolist()  # 1e16 + 1 is a tie; the 1e-16 decides it
        [1.0000000000000002e+16]
        >>> e.shape[1] > 1  # no single double holds the exact sum
        True
        """
        rows = []
        for value, special in zip(self.fixed, self.special, strict=True):
            parts = []
            rest = value
            while rest:
                try:
                    x = rest / _SCALE
                except OverflowError:
                    x = sys.float_info.max if rest > 0 else -sys.float_info.max
                parts.append(x)
                num, den = x.as_integer_ratio()
                rest -= num * (_SCALE // den) if den <= _SCALE else 0
                if den > _SCALE:  # cannot happen: every double is a multiple of 2**-1074
                    raise AssertionError("non-representable expansion part")
            if special:
                parts.append(special)
            rows.append(parts)
        width = max((len(r) for r in rows), default=0) or 1
        out = np.zeros((len(rows), width))
        for i, r in enumerate(rows):
            out[i, : len(r)] = r
        return out

    def __repr__(self) -> str:
        return f"ExactPartials(k={len(self)}, values={self.to_floats().tolist()})"


def fsum_rows(terms: np.ndarray) -> np.ndarray:
    """Correctly rounded sum of each row of a small 2-D array (exact, like :func:`math.fsum`).

    Non-finite entries give the plain sum's nan or +-inf; an exact sum beyond the
    float64 range gives +-inf.

    Examples
    --------
    >>> import numpy as np
    >>> fsum_rows(np.array([[1e16, 1.0, -1e16, 3.0]])).tolist()
    [4.0]
    """
    out = np.empty(terms.shape[0])
    for i, row in enumerate(terms):
        if not np.all(np.isfinite(row)):
            with np.errstate(invalid="ignore"):  # inf - inf is the NaN this returns
                out[i] = float(np.sum(row))
            continue
        try:
            out[i] = math.fsum(row.tolist())
        except OverflowError:
            out[i] = ExactPartials.from_terms(row).to_floats()[0]
    return out


def exact_sum(values: Any) -> float:
    """Correctly rounded sum of all the entries of ``values`` (like :func:`math.fsum`).

    Examples
    --------
    >>> exact_sum([0.1] * 10)
    1.0
    """
    return exact_aggregate(exact_chunk(values))


Chunk = TypeVar("Chunk")
Partial = TypeVar("Partial")
Result = TypeVar("Result")


def merge(parts: Sequence[Any]) -> Any:
    """The default ``combine``: the exact merge of partials of one type (``type.merge``)."""
    return type(parts[0]).merge(parts)


def combine_tree(parts: Iterable[Partial], combine: Callable[[list[Partial]], Partial] = merge,
                 split_every: int | None = None) -> Partial:
    """Merge ``parts`` with ``combine``, ``split_every`` at a time level by level (a tree, in
    order), or all at once without ``split_every``.  One part is still combined once, and
    no part at all is ``combine([])`` (the empty sum, where ``combine`` knows its size).

    Examples
    --------
    >>> combine_tree([[1], [2], [3], [4], [5]], lambda p: [sum(x[0] for x in p)], split_every=2)
    [15]
    """
    level = list(parts)
    if split_every is None or len(level) <= 1:
        return combine(level)
    if isinstance(split_every, bool) or not isinstance(split_every, int) or split_every < 2:
        raise ValueError(f"split_every must be an integer >= 2, got {split_every!r}")
    while len(level) > 1:
        level = [combine(level[j : j + split_every]) for j in range(0, len(level), split_every)]
    return level[0]


def reduction(chunks: Iterable[Chunk], chunk: Callable[[Chunk], Partial],
              combine: Callable[[list[Partial]], Partial], aggregate: Callable[[Partial], Result], *,
              split_every: int | None = None) -> Result:
    """``aggregate(combine(...(chunk(c) for c in chunks)))``: a tree reduction, eagerly.

    Parameters
    ----------
    chunks : iterable
        The pieces of the data (partitions, batches, arrays of terms).
    chunk : callable
        One piece to its partial result (:meth:`ExactPartials.from_terms`).
    combine : callable
        A list of partials to one (:meth:`ExactPartials.merge`); exact, so the tree's shape
        does not change the result.
    aggregate : callable
        The last partial to the result (:meth:`ExactPartials.to_floats`).
    split_every : int, optional
        Partials merged per ``combine`` call (>= 2); default all at once.

    Examples
    --------
    >>> import math
    >>> terms = [1e100, 1.0, -1e100, 2.0**-60]
    >>> total = reduction([terms[:1], terms[1:3], terms[3:]], exact_chunk, ExactPartials.merge,
    ...                   exact_aggregate)
    >>> total == math.fsum(terms) == 1.0 + 2.0**-60
    True
    """
    return aggregate(combine_tree([chunk(c) for c in chunks], combine, split_every))


def exact_chunk(terms: Any) -> ExactPartials:
    """``chunk`` of an exact sum of all the entries of ``terms`` (one quantity)."""
    return ExactPartials.from_terms(_as_matrix(terms).reshape(1, -1))


def exact_aggregate(partials: ExactPartials) -> float:
    """``aggregate`` of an exact sum of one quantity: its correctly rounded float."""
    return float(partials.to_floats()[0])
