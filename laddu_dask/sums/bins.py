"""The primitives of every exact sum: terms split into exact high and low parts, binned by
key, sign and exponent into exact float64 bin sums, and those made exact integers or
rounded once.

Each float64 term is split into a high part (its top 32 significant bits) and a low part
(the other 21), both exact, binned by key (a quantity, or a group and quantity), sign and
11-bit exponent field with one ``numpy.bincount`` each: within one bin a float64 sum of up
to ``2**21`` such parts never rounds (blocks are kept to ``2**20`` terms).  The bin sums
are either added into one Python integer per key, scaled by ``2**1074`` (the float64
quantum: the fixed-point superaccumulator of :class:`~laddu_dask.sums.ExactPartials`), or
kept as plain doubles with their key (the expansions of
:class:`~laddu_dask.sums.GroupedPartials`).  Terms above ``2**1003`` (whose bin sums can
overflow) are binned scaled down by an exact power of two.  Non-finite terms are summed
apart as plain floats: a result is nan or inf exactly when a plain sum would be.

Examples
--------
>>> import numpy as np
>>> fixed, specials = keyed_sums(np.array([[1e16, 1.0, -1e16, 0.5]]), np.zeros((1, 4), np.int64), 1)
>>> round_fixed(fixed[0], 0.0), specials
(1.5, set())
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["BLOCK", "FIXED_SCALE_BITS", "NBINS", "SUB", "accumulate_bins", "as_matrix", "bin_index",
           "block_bins", "expansion", "keyed_sums", "overflowed", "part_sums", "round_fixed",
           "special_sums", "split"]

#: ``ExactPartials.fixed[k]`` is the exact sum multiplied by ``2**FIXED_SCALE_BITS``;
#: every finite float64 is an integer multiple of ``2**-1074``.
FIXED_SCALE_BITS = 1074
SCALE = 1 << FIXED_SCALE_BITS

BLOCK = 1 << 20  # terms per key whose bin sums are exact (limit is 2**21)
SUB = 1 << 15  # columns per pass, so that temporaries stay in cache
NBINS = 1 << 12  # sign bit and 11 exponent bits
_EXP_MASK = 0x7FF
_SPECIAL_FIELD = 0x7FF  # exponent field of inf and nan
_HI_MASK = np.uint64(0xFFFF_FFFF_FFE0_0000)  # keep sign, exponent, top 31 mantissa bits
_SHIFT = np.uint64(52)
_HUGE_FIELD = 2000  # exponent field from which the overflow retry scales terms down
_HUGE_SHIFT = 600  # ... by 2**-600
_HUGE_ABS = math.ldexp(1.0, _HUGE_FIELD - 1023)


def as_matrix(terms: Any) -> np.ndarray:
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


def bin_index(part: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The flat (key, sign and exponent) bin of every float64 term of ``part``, as int64;
    ``offsets`` (uint64, broadcast against ``part``) is each term's key times :data:`NBINS`."""
    index = part.view(np.uint64) >> _SHIFT
    index += offsets
    return index.view(np.int64)


def split(part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The high (top 32 significant bits) and low parts of the float64 terms ``part``, both
    exact; the low part is nan for inf and nan terms, which are handled apart."""
    hi = (part.view(np.uint64) & _HI_MASK).view(np.float64)
    return hi, part - hi


def part_sums(index: np.ndarray, part: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The sums of the high and of the low parts of the float64 terms ``part`` by bin
    ``index`` (as ``part``), ``size`` bins each: exact for at most :data:`BLOCK` terms a bin."""
    hi, lo = split(part)
    return (np.bincount(index.ravel(), weights=hi.ravel(), minlength=size),
            np.bincount(index.ravel(), weights=lo.ravel(), minlength=size))


def _scaled(part: np.ndarray) -> np.ndarray:
    """``part`` with the terms from ``2**977`` on scaled down by ``2**-600`` (exactly)."""
    return np.where(np.abs(part) >= _HUGE_ABS, part * 2.0**-_HUGE_SHIFT, part)


def block_bins(block: np.ndarray, scale_huge: bool) -> tuple[np.ndarray, np.ndarray]:
    """Exact per-(quantity, sign, exponent) sums of the high and low parts of ``block``."""
    k, n = block.shape
    size = k * NBINS
    offsets = (np.arange(k, dtype=np.uint64) * np.uint64(NBINS))[:, np.newaxis]
    hi_bins = np.zeros(size)
    lo_bins = np.zeros(size)
    with np.errstate(invalid="ignore", over="ignore"):
        for start in range(0, n, SUB):
            part = block[:, start : start + SUB]
            if part.dtype != np.float64:  # float16/32 or byte-swapped: exact conversion
                part = part.astype(np.float64)
            index = bin_index(part, offsets).ravel()
            for into, w in zip((hi_bins, lo_bins), split(_scaled(part) if scale_huge else part), strict=True):
                into += np.bincount(index, weights=w.ravel(), minlength=size)
    return hi_bins, lo_bins


def overflowed(hi_bins: np.ndarray) -> bool:
    """Whether a bin of finite terms overflowed (only possible for terms above 2**1003)."""
    finite_fields = (np.arange(hi_bins.size) & _EXP_MASK) != _SPECIAL_FIELD
    return not bool(np.isfinite(hi_bins[finite_fields]).all())


def accumulate_bins(bins: np.ndarray, fixed: list[int], specials: set[int], scale_huge: bool,
                    ids: np.ndarray | None = None) -> None:
    """Add the exact bin sums into ``fixed`` (one scaled integer per key); ``ids`` are the
    bins' flat (key, sign and exponent) indices where not their positions."""
    nonzero = np.flatnonzero(bins)
    for flat, value in zip((nonzero if ids is None else ids[nonzero]).tolist(), bins[nonzero].tolist()):
        row, column = divmod(flat, NBINS)
        field = column & _EXP_MASK
        if field == _SPECIAL_FIELD:
            specials.add(row)
            continue
        numerator, denominator = value.as_integer_ratio()
        shift = FIXED_SCALE_BITS - (denominator.bit_length() - 1)
        if scale_huge and field >= _HUGE_FIELD:
            shift += _HUGE_SHIFT
        fixed[row] += numerator << shift


def keyed_sums(matrix: np.ndarray, keys: np.ndarray, n_keys: int) -> tuple[list[int], set[int]]:
    """The exact sums, scaled by ``2**1074``, of the terms of each key (``keys`` as
    ``matrix``, below ``n_keys``) and the keys with non-finite terms, a slice at a time
    binned sparsely by (key, sign, exponent): the cost is not per key, and terms of any
    magnitude are exact."""
    fixed, specials = [0] * n_keys, set()
    with np.errstate(invalid="ignore", over="ignore"):
        for start in range(0, matrix.shape[1], SUB):
            part = matrix[:, start : start + SUB].astype(np.float64)
            offsets = (keys[:, start : start + SUB] * NBINS).view(np.uint64)
            ids, inverse = np.unique(bin_index(part, offsets), return_inverse=True)
            field = ids & _EXP_MASK
            scale_huge = bool(np.any((field >= _HUGE_FIELD) & (field != _SPECIAL_FIELD)))
            for sums in part_sums(inverse, _scaled(part) if scale_huge else part, ids.size):
                accumulate_bins(sums, fixed, specials, scale_huge, ids)
    return fixed, specials


def special_sums(k: int, specials: set[int], values_of: Callable[[int], np.ndarray]) -> list[float]:
    """The plain sums of the non-finite terms of the keys in ``specials``."""
    special = [0.0] * k
    for row in specials:
        values = values_of(row)
        with np.errstate(invalid="ignore"):
            special[row] = float(values[~np.isfinite(values)].astype(np.float64).sum())
    return special


def round_fixed(value: int, special: float) -> float:
    """The correctly rounded float of an exact sum (``value`` scaled by ``2**1074``, plus
    the plain sum ``special`` of its non-finite terms); beyond the float64 range, +-inf."""
    try:
        rounded = value / SCALE  # int / int is correctly rounded in CPython
    except OverflowError:
        rounded = math.inf if value > 0 else -math.inf
    return rounded + special


def expansion(value: int, special: float) -> list[float]:
    """Doubles whose exact sum is ``value`` scaled down by ``2**1074`` (a non-overlapping
    expansion, largest first), then ``special`` when not zero."""
    parts = []
    rest = value
    while rest:
        try:
            x = rest / SCALE
        except OverflowError:
            x = sys.float_info.max if rest > 0 else -sys.float_info.max
        parts.append(x)
        num, den = x.as_integer_ratio()
        rest -= num * (SCALE // den) if den <= SCALE else 0
        if den > SCALE:  # cannot happen: every double is a multiple of 2**-1074
            raise AssertionError("non-representable expansion part")
    if special:
        parts.append(special)
    return parts
