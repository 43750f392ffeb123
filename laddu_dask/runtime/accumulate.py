"""Certified fast sums: the runtime's partial sums with an error bound.

The exact representation of partial sums, :class:`~laddu_dask.sums.ExactPartials`, and
the generic chunk / combine / aggregate reduction live in :mod:`laddu_dask.sums` (the
base); they are imported here, so ``laddu_dask.runtime.accumulate`` still names them.

:class:`CertifiedPartials` is the runtime's other form: rows of a few doubles whose exact
sums are the partial sums, with an error bound, as the fused kernels return them; it
certifies the correctly rounded result or asks for an exact redo (:class:`Uncertified`).

Examples
--------
>>> import numpy as np
>>> p = CertifiedPartials(np.array([[1e16, 1.0, -1e16]]), np.array([0.0]))
>>> CertifiedPartials.merge([p, CertifiedPartials.exact(ExactPartials.from_terms([2.0]))]).certified_floats()
array([3.])
"""

from __future__ import annotations

import math

import numpy as np

from laddu_dask.sums import FIXED_SCALE_BITS, ExactPartials, exact_sum, fsum_rows, work_bytes

__all__ = ["FIXED_SCALE_BITS", "CertifiedPartials", "ExactPartials", "Uncertified", "exact_sum",
           "fsum_rows", "work_bytes"]


class Uncertified(Exception):
    """The fast sums of an evaluation could not be certified; redo it exactly."""


class CertifiedPartials:
    """Partial sums held exactly as a few doubles per quantity, with an error bound.

    ``terms[k]`` is a short row of doubles whose *exact* sum is partial sum ``k``;
    merging concatenates rows (no rounding), and the final value of a row is its
    correctly rounded sum (:func:`fsum_rows`).

    The fused kernels split each block of terms into parts summed exactly and parts
    whose rounding they bound, accumulate the block sums with TwoSum cascades, and
    return the (sum, compensation) pairs with an explicit error bound.  When
    the exact sum rounds to the same double at both ends of the bound, the result is
    certified: it equals the correctly rounded sum of the terms (``math.fsum``),
    whatever the partitioning.  Otherwise the evaluation is redone exactly.
    """

    __slots__ = ("terms", "bound")

    #: Width past which merged rows are compressed back to an exact expansion.
    MAX_WIDTH = 512

    def __init__(self, terms: np.ndarray, bound: np.ndarray) -> None:
        self.terms = terms
        self.bound = bound

    def __reduce__(self) -> tuple:
        # a worker's reply carries these on every cluster evaluation: the constructor's
        # arguments pickle faster than the slots' state
        return CertifiedPartials, (self.terms, self.bound)

    @classmethod
    def exact(cls, partials: ExactPartials) -> CertifiedPartials:
        """Exact partials (no error bound)."""
        return cls(partials.to_expansion(), np.zeros(len(partials)))

    @staticmethod
    def merge(parts: list[CertifiedPartials]) -> CertifiedPartials:
        """Exact merge of the sums; the bounds add (rounded up).  One part is its own merge."""
        if len(parts) == 1:
            return parts[0]
        terms = np.concatenate([p.terms for p in parts], axis=1)
        if terms.shape[1] > CertifiedPartials.MAX_WIDTH:
            terms = ExactPartials.from_terms(terms).to_expansion()
        bound = parts[0].bound
        for p in parts[1:]:  # a few parts: plain additions beat building a 2-D array
            bound = bound + p.bound
        return CertifiedPartials(terms, bound * (1.0 + 1e-12))

    #: Widths up to which :meth:`compact` leaves rows as they are (a partition's own rows).
    COMPACT_WIDTH = 4
    #: The longest expansion :meth:`compact` writes a row as (past it the row stays as it is).
    MAX_EXPANSION = 8

    def compact(self) -> CertifiedPartials:
        """The same exact sums with each row rewritten as a short expansion (the bounds as they
        are), so that what a worker sends does not grow with the partitions it merged.

        A row's expansion is its :func:`math.fsum` (the correctly rounded exact sum), then the
        ``fsum`` of what that leaves, and so on until nothing is left: the terms' exact sum is
        kept, and a few doubles carry it (its bits rarely span more than two).  Rows that are
        not finite, or would need more than :attr:`MAX_EXPANSION` doubles, keep all their
        terms (:meth:`certified_floats` then decides on them as before).

        Examples
        --------
        >>> p = CertifiedPartials(np.array([[1e16, 1.0, -1e16, 2.0**-60, 3.0, 0.5]]), np.array([0.0]))
        >>> p.compact().terms.tolist()
        [[4.5, 8.673617379884035e-19]]
        """
        if self.terms.shape[1] <= self.COMPACT_WIDTH:
            return self
        rows = []
        try:
            for row in self.terms.tolist():
                expansion: list[float] = []
                left = math.fsum(row)
                while left != 0.0:
                    if not math.isfinite(left) or len(expansion) == self.MAX_EXPANSION:
                        return self
                    expansion.append(left)
                    left = math.fsum([*row, *(-e for e in expansion)])
                rows.append(expansion)
        except (OverflowError, ValueError):  # an intermediate overflow, inf - inf
            return self
        terms = np.zeros((len(rows), max(1, *map(len, rows)) if rows else 1))
        for k, expansion in enumerate(rows):
            terms[k, :len(expansion)] = expansion
        return CertifiedPartials(terms, self.bound)

    def certified_floats(self) -> np.ndarray:
        """The correctly rounded sums, or :class:`Uncertified`.

        Fast sums that are not finite are not certified either: the exact per-event
        terms then say which event, or that the exact sum overflows.
        """
        fast = self._certified_fast()
        if fast is not None:
            return fast
        values = fsum_rows(self.terms)
        if not np.any(self.bound):
            return values
        if not (np.all(np.isfinite(self.bound)) and np.all(np.isfinite(values))):
            raise Uncertified("a sum or a magnitude sum is not finite")
        lower = fsum_rows(np.hstack([self.terms, -self.bound[:, None]]))
        upper = fsum_rows(np.hstack([self.terms, self.bound[:, None]]))
        if not np.array_equal(lower, upper):
            raise Uncertified("a fast sum lies too close to a rounding boundary")
        return values

    def _certified_fast(self) -> np.ndarray | None:
        """:meth:`certified_floats` for the common case, in plain :func:`math.fsum` calls on
        lists (an evaluation's fixed cost is mostly NumPy's per-call overhead on these few
        numbers).  ``None`` where a term is not finite or a sum overflows: the general
        path then decides, with the same result."""
        rows, bound = self.terms.tolist(), self.bound.tolist()
        try:
            values = [math.fsum(row) for row in rows]
            if not all(map(math.isfinite, values)) or not all(map(math.isfinite, bound)):
                return None
            if not any(bound):
                return np.array(values)
            for row, b in zip(rows, bound):
                if math.fsum([*row, -b]) != math.fsum([*row, b]):
                    raise Uncertified("a fast sum lies too close to a rounding boundary")
        except (OverflowError, ValueError):
            return None
        return np.array(values)
