"""Exact sums of many quantities in many groups at once (per-bin sums of a histogram of
weighted quantities), without a Python loop over the groups.

Each term belongs to one group (a bin; ``-1``: none) and one quantity (a row).  The terms
are split into high and low parts and binned by (group, row, sign and exponent) exactly as
:class:`~laddu_dask.sums.ExactPartials` bins them by (row, sign and exponent):
every such bin sum of at most ``2**20`` terms is exact.  When the keys span few bins (a
single group: a fit fraction's totals) the terms are summed into every bin densely, a slice
of columns at a time, with no sort and small temporaries.  The non-empty bin sums are kept as
plain doubles with their (group, row) key, an expansion whose exact sum per key is the
exact sum of that key's terms; merging concatenates (and re-bins) them, and
:meth:`GroupedPartials.to_floats` rounds each key's expansion once (:func:`math.fsum`), so
every group's sum is correctly rounded whatever the partitioning.

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

from laddu_dask.sums import _BLOCK, _HI_MASK, _NBINS, _SHIFT, _SUB, ExactPartials

__all__ = ["WORK_BYTES", "GroupedPartials"]

#: Bins (keys x sign and exponent) up to which :meth:`GroupedPartials.from_terms` sums
#: into every bin densely, a slice of columns at a time (else over the sorted distinct bins).
_DENSE_BINS = 1 << 16
#: Bytes :meth:`GroupedPartials.from_terms` holds besides its input and output on the dense
#: path: about eight arrays of a slice of terms and four of the dense bins.
WORK_BYTES = 8 * 8 * _SUB + 4 * 8 * _DENSE_BINS


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
        if groups.size and ((int(groups.max()) - int(groups.min())) * shape[1] + k) * _NBINS <= _DENSE_BINS:
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
        size = (int(offsets.max()) + k) * _NBINS
        out_keys: list[np.ndarray] = []
        out_values: list[np.ndarray] = []
        bins = [np.zeros(size), np.zeros(size)]
        step = max(1, _SUB // k)
        pending = 0  # columns in the bins: at most 2**20 terms per bin keep their sums exact
        for start in range(0, n, step):
            part = terms[:, start:start + step]
            index = offsets[None, start:start + step] + rows
            finite = np.isfinite(part)
            if not finite.all():  # non-finite terms apart, summed plainly at the end
                out_keys.append(base + index[~finite])
                out_values.append(part[~finite])
                part = np.where(finite, part, 0.0)
            bits = part.view(np.uint64)
            index = (index * _NBINS + (bits >> _SHIFT).astype(np.int64)).ravel()
            hi = (bits & _HI_MASK).view(np.float64)
            with np.errstate(over="ignore", invalid="ignore"):
                for into, w in zip(bins, (hi, part - hi), strict=True):
                    into += np.bincount(index, weights=w.ravel(), minlength=size)
            pending += part.shape[1]
            if pending + step > _BLOCK or start + step >= n:
                if not all(np.isfinite(b).all() for b in bins):  # terms above 2**1003: the slow exact path
                    keys = groups[None, :] * shape[1] + (first_row + rows)
                    return cls._binned(keys.ravel(), terms.ravel(), shape)
                for b in bins:
                    nonzero = np.flatnonzero(b)
                    out_keys.append(base + nonzero // _NBINS)
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
            bits = part.view(np.uint64)
            full = key * _NBINS + (bits >> _SHIFT).astype(np.int64)
            unique, inverse = np.unique(full, return_inverse=True)
            hi = (bits & _HI_MASK).view(np.float64)
            with np.errstate(over="ignore", invalid="ignore"):
                sums = [np.bincount(inverse, weights=w, minlength=unique.size) for w in (hi, part - hi)]
            if not all(np.isfinite(s).all() for s in sums):  # terms above 2**1003: the slow exact path
                return cls._exactly(keys, values, list(special[0]), list(special[1]), shape)
            for s in sums:
                nonzero = s != 0
                out_keys.append(unique[nonzero] // _NBINS)
                out_values.append(s[nonzero])
        return cls(np.concatenate(out_keys), np.concatenate(out_values), shape)

    @classmethod
    def _exactly(cls, keys: np.ndarray, values: np.ndarray, out_keys: list, out_values: list,
                 shape: tuple[int, int]) -> GroupedPartials:
        for key in np.unique(keys).tolist():
            expansion = ExactPartials.from_terms(values[keys == key]).to_expansion()[0]
            out_keys.append(np.full(expansion.size, key, dtype=np.int64))
            out_values.append(expansion)
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

    def to_floats(self) -> np.ndarray:
        """The correctly rounded sum of every group and quantity, shape ``shape``."""
        out = np.zeros(self.shape[0] * self.shape[1])
        order = np.argsort(self.keys, kind="stable")
        keys, values = self.keys[order], self.values[order]
        unique, starts = np.unique(keys, return_index=True)
        # no key at all (no term in any group): np.split would still give one empty chunk
        chunks = np.split(values, starts[1:]) if unique.size else []
        for key, chunk in zip(unique.tolist(), chunks, strict=True):
            if np.isfinite(chunk).all():
                try:
                    out[key] = math.fsum(chunk.tolist())
                    continue
                except OverflowError:
                    pass
            with np.errstate(invalid="ignore", over="ignore"):
                out[key] = float(ExactPartials.from_terms(chunk).to_floats()[0])
        return out.reshape(self.shape)
