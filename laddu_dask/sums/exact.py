"""Exact partial sums of K quantities: :class:`ExactPartials`, the fixed-point form of every
exact sum, and the ``chunk`` and ``aggregate`` of a sum of all the entries of an array.

A block of terms becomes one exact Python integer per quantity, scaled by ``2**1074``
(the float64 quantum), from the exact bin sums of :mod:`laddu_dask.sums.bins`: a block
with terms above ``2**1003`` (whose bin sums can overflow) is redone with those terms
scaled down by an exact power of two.  Grouped terms are binned as
:class:`~laddu_dask.sums.grouped.GroupedPartials` and made exact integers from there
(:meth:`ExactPartials.from_groups`).

Examples
--------
>>> a = ExactPartials.from_terms([[1e100, 2.0], [0.5, 0.25]])
>>> ExactPartials.merge([a, ExactPartials.from_terms([[-1e100], [1.0]])]).to_floats().tolist()
[2.0, 1.75]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from laddu_dask.sums.bins import (
    BLOCK,
    FIXED_SCALE_BITS,
    NBINS,
    SUB,
    accumulate_bins,
    as_matrix,
    block_bins,
    expansion,
    overflowed,
    round_fixed,
    special_sums,
)
from laddu_dask.sums.grouped import GroupedPartials

__all__ = ["FIXED_SCALE_BITS", "ExactPartials", "exact_aggregate", "exact_chunk", "exact_sum", "fsum_rows",
           "work_bytes"]


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
    return 5 * 8 * min(n, SUB) + 4 * 8 * NBINS


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
        matrix = as_matrix(terms)
        k, n = matrix.shape
        fixed = [0] * k
        specials: set[int] = set()
        for start in range(0, n, BLOCK):
            block = matrix[:, start : start + BLOCK]
            hi_bins, lo_bins = block_bins(block, scale_huge=False)
            scale_huge = overflowed(hi_bins)
            if scale_huge:
                hi_bins, lo_bins = block_bins(block, scale_huge=True)
            accumulate_bins(hi_bins, fixed, specials, scale_huge)
            accumulate_bins(lo_bins, fixed, set(), scale_huge)
        return cls(tuple(fixed), tuple(special_sums(k, specials, matrix.__getitem__)))

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
        matrix = as_matrix(terms)
        k, n = matrix.shape
        groups = np.asarray(groups, dtype=np.int64).ravel()
        if groups.shape != (n,) or (n and not -1 <= int(groups.min()) <= int(groups.max()) < n_groups):
            raise ValueError(f"groups must be {n} integers in [-1, {n_groups}), got shape {groups.shape}")
        fixed, special = GroupedPartials.from_terms(groups, matrix, (n_groups, k)).exact_sums()
        return cls(tuple(fixed), tuple(special))

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
            out[row] = round_fixed(value, special)
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
        rows = [expansion(value, special) for value, special in zip(self.fixed, self.special, strict=True)]
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


def exact_chunk(terms: Any) -> ExactPartials:
    """``chunk`` of an exact sum of all the entries of ``terms`` (one quantity)."""
    return ExactPartials.from_terms(as_matrix(terms).reshape(1, -1))


def exact_aggregate(partials: ExactPartials) -> float:
    """``aggregate`` of an exact sum of one quantity: its correctly rounded float."""
    return float(partials.to_floats()[0])
