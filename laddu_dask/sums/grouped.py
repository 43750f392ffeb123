"""Exact sums of many quantities in many groups at once (per-bin sums of a histogram of
weighted quantities), without a Python loop over the groups: the grouped form of the exact
sums of :mod:`laddu_dask.sums`.

Each term belongs to one group (a bin; ``-1``: none) and one quantity (a row).  The terms
are split and binned by (group, row, sign and exponent) with the primitives of
:mod:`laddu_dask.sums.bins`, as :class:`~laddu_dask.sums.ExactPartials` bins them by (row,
sign and exponent): every such bin sum of at most ``2**20`` terms is exact.  When the keys
span few bins (a single group: a fit fraction's totals) the terms are summed into every bin
densely, a slice of columns at a time, with no sort and small temporaries.  The non-empty
bin sums are kept as plain doubles with their (group, row) key, an expansion whose exact
sum per key is the exact sum of that key's terms; merging concatenates (and re-bins) them,
and :meth:`GroupedPartials.to_floats` rounds each key's expansion once (:func:`math.fsum`,
or the fixed-point sum of :class:`~laddu_dask.sums.ExactPartials` where that overflows or a
term is not finite), so every group's sum is correctly rounded whatever the partitioning.
:meth:`GroupedPartials.exact_sums` gives the fixed-point form
(:meth:`ExactPartials.from_groups <laddu_dask.sums.ExactPartials.from_groups>`).

Examples
--------
>>> import numpy as np
>>> g = GroupedPartials.from_terms(np.array([0, 1, 0, -1]), np.array([[1e16, 2.0, 1.0, 5.0]]), (2, 1))
>>> h = GroupedPartials.from_terms(np.array([0]), np.array([[-1e16]]), (2, 1))
>>> GroupedPartials.merge([g, h]).to_floats().tolist()
[[1.0], [2.0]]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from laddu_dask.sums.bins import BLOCK as _BLOCK
from laddu_dask.sums.bins import (
    NBINS,
    SUB,
    bin_index,
    expansion,
    keyed_sums,
    part_sums,
    round_fixed,
    special_sums,
    split,
)

__all__ = ["WORK_BYTES", "GroupedPartials"]

#: Bins (keys x sign and exponent) up to which :meth:`GroupedPartials.from_terms` sums
#: into every bin densely, a slice of columns at a time (else over the sorted distinct bins).
_DENSE_BINS = 1 << 16
#: Bytes :meth:`GroupedPartials.from_terms` holds besides its input and output on the dense
#: path: about eight arrays of a slice of terms and four of the dense bins.
WORK_BYTES = 8 * 8 * SUB + 4 * 8 * _DENSE_BINS


@dataclass(frozen=True)
class GroupedPartials:
    """Exact sums of ``shape[1]`` quantities in each of ``shape[0]`` groups: ``values``
    whose exact sum per ``keys`` (``group * shape[1] + row``) is that group's sum of that
    quantity."""

    keys: np.ndarray  # int64
    values: np.ndarray  # float64
    shape: tuple[int, int]

    @classmethod
    def from_terms(cls, groups: np.ndarray, terms: np.ndarray, shape: tuple[int, int],
                   first_row: int = 0) -> GroupedPartials:
        """Sum ``terms`` (``(k, n)``, rows ``first_row`` .. of ``shape``) by the group of each
        column (``groups``, ``(n,)``; ``-1`` for none)."""
        terms = np.atleast_2d(np.asarray(terms, dtype=np.float64))
        groups = np.asarray(groups, dtype=np.int64)
        keep = groups >= 0
        if not keep.all():
            groups, terms = groups[keep], terms[:, keep]
        k = terms.shape[0]
        if groups.size and ((int(groups.max()) - int(groups.min())) * shape[1] + k) * NBINS <= _DENSE_BINS:
            return cls._dense(groups, terms, shape, first_row)
        rows = np.arange(first_row, first_row + k, dtype=np.int64)[:, None]
        return cls._binned((groups[None, :] * shape[1] + rows).ravel(), terms.ravel(), shape)

    @classmethod
    def _dense(cls, groups: np.ndarray, terms: np.ndarray, shape: tuple[int, int],
               first_row: int) -> GroupedPartials:
        """:meth:`from_terms` when the keys span few bins (a fit fraction's single group):
        one ``bincount`` per slice of columns into every (key, sign, exponent) bin, as
        :class:`~laddu_dask.sums.ExactPartials` bins a row's terms."""
        k, n = terms.shape
        g0 = int(groups.min())
        base = g0 * shape[1] + first_row  # the key of bin 0
        offsets, rows = (groups - g0) * shape[1], np.arange(k, dtype=np.int64)[:, None]
        size = (int(offsets.max()) + k) * NBINS
        out_keys: list[np.ndarray] = []
        out_values: list[np.ndarray] = []
        bins = [np.zeros(size), np.zeros(size)]
        step = max(1, SUB // k)
        pending = 0  # columns in the bins: at most 2**20 terms per bin keep their sums exact
        for start in range(0, n, step):
            part = terms[:, start:start + step]
            index = offsets[None, start:start + step] + rows
            finite = np.isfinite(part)
            if not finite.all():  # non-finite terms apart, summed plainly at the end
                out_keys.append(base + index[~finite])
                out_values.append(part[~finite])
                part = np.where(finite, part, 0.0)
            index = bin_index(part, (index * NBINS).view(np.uint64)).ravel()
            with np.errstate(over="ignore", invalid="ignore"):
                for into, w in zip(bins, split(part), strict=True):
                    into += np.bincount(index, weights=w.ravel(), minlength=size)
            pending += part.shape[1]
            if pending + step > _BLOCK or start + step >= n:
                if not all(np.isfinite(b).all() for b in bins):  # terms above 2**1003: the slow exact path
                    keys = groups[None, :] * shape[1] + (first_row + rows)
                    return cls._binned(keys.ravel(), terms.ravel(), shape)
                for b in bins:
                    nonzero = np.flatnonzero(b)
                    out_keys.append(base + nonzero // NBINS)
                    out_values.append(b[nonzero])
                    b[:] = 0.0
                pending = 0
        return cls(np.concatenate(out_keys), np.concatenate(out_values), shape)

    @classmethod
    def _binned(cls, keys: np.ndarray, values: np.ndarray, shape: tuple[int, int]) -> GroupedPartials:
        """Re-bin ``values`` by key and exponent: the exact bin sums of their parts."""
        finite = np.isfinite(values)
        special = [keys[~finite]], [values[~finite]]  # non-finite terms apart, summed plainly at the end
        keys, values = keys[finite], values[finite]
        out_keys, out_values = list(special[0]), list(special[1])
        for start in range(0, values.size, _BLOCK):
            part, key = values[start:start + _BLOCK], keys[start:start + _BLOCK]
            unique, inverse = np.unique(bin_index(part, (key * NBINS).view(np.uint64)), return_inverse=True)
            with np.errstate(over="ignore", invalid="ignore"):
                sums = part_sums(inverse, part, unique.size)
            if not all(np.isfinite(s).all() for s in sums):  # terms above 2**1003: the slow exact path
                return cls._exactly(keys, values, list(special[0]), list(special[1]), shape)
            for s in sums:
                nonzero = s != 0
                out_keys.append(unique[nonzero] // NBINS)
                out_values.append(s[nonzero])
        return cls(np.concatenate(out_keys), np.concatenate(out_values), shape)

    @classmethod
    def _exactly(cls, keys: np.ndarray, values: np.ndarray, out_keys: list, out_values: list,
                 shape: tuple[int, int]) -> GroupedPartials:
        """The finite ``values`` of ``keys`` as their exact sums' expansions (terms above
        ``2**1003``, whose bin sums overflow), after the ``out_keys`` and ``out_values``."""
        unique, inverse = np.unique(keys, return_inverse=True)
        fixed, _ = keyed_sums(values[np.newaxis, :], inverse.reshape(1, -1), unique.size)
        for key, value in zip(unique.tolist(), fixed, strict=True):
            parts = np.asarray(expansion(value, 0.0) or [0.0])
            out_keys.append(np.full(parts.size, key, dtype=np.int64))
            out_values.append(parts)
        return cls(np.concatenate(out_keys), np.concatenate(out_values), shape)

    @staticmethod
    def merge(parts: Sequence[GroupedPartials], shape: tuple[int, int] | None = None) -> GroupedPartials:
        """The exact sums of all ``parts`` (of one ``shape``)."""
        parts = list(parts)
        shape = parts[0].shape if parts else shape
        if shape is None or any(p.shape != shape for p in parts):
            raise ValueError("GroupedPartials merge only with partials of one shape")
        if not parts:
            return GroupedPartials(np.zeros(0, np.int64), np.zeros(0), shape)
        return GroupedPartials._binned(np.concatenate([p.keys for p in parts]),
                                       np.concatenate([p.values for p in parts]), shape)

    def _by_key(self) -> tuple[list[int], list[np.ndarray]]:
        """The keys that hold values, and each one's values."""
        order = np.argsort(self.keys, kind="stable")
        keys, values = self.keys[order], self.values[order]
        unique, starts = np.unique(keys, return_index=True)
        # no key at all (no term in any group): np.split would still give one empty chunk
        return unique.tolist(), (np.split(values, starts[1:]) if unique.size else [])

    def to_floats(self) -> np.ndarray:
        """The correctly rounded sum of every group and quantity, shape ``shape``."""
        out = np.zeros(self.shape[0] * self.shape[1])
        for key, chunk in zip(*self._by_key(), strict=True):
            if np.isfinite(chunk).all():
                try:
                    out[key] = math.fsum(chunk.tolist())
                    continue
                except OverflowError:
                    pass
            fixed, specials = keyed_sums(chunk[np.newaxis, :], np.zeros((1, chunk.size), np.int64), 1)
            out[key] = round_fixed(fixed[0], special_sums(1, specials, lambda _, c=chunk: c)[0])
        return out.reshape(self.shape)

    def exact_sums(self) -> tuple[list[int], list[float]]:
        """Every group's and quantity's exact sum of finite terms, scaled by ``2**1074``, and
        plain sum of non-finite terms, flat by key: the fixed-point form of
        :class:`~laddu_dask.sums.ExactPartials`.

        Examples
        --------
        >>> fixed, special = GroupedPartials.from_terms([1, 1], [[0.5, np.inf]], (2, 1)).exact_sums()
        >>> [f / 2**1074 for f in fixed], special
        ([0.0, 0.5], [0.0, inf])
        """
        size = self.shape[0] * self.shape[1]
        fixed, specials = keyed_sums(self.values[np.newaxis, :], self.keys.reshape(1, -1), size)
        return fixed, special_sums(size, specials, lambda key: self.values[self.keys == key])
