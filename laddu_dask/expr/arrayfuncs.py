"""Small backend-neutral array helpers shared by constant folding and kernels.

The array module (``numpy`` or ``cupy``) is taken from the arguments, so the same
function serves host and device arrays.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.expr.arrayfuncs import make_complex, norm_sqr
>>> make_complex(np.array([1.0]), np.array([2.0]))
array([1.+2.j])
>>> float(norm_sqr(3 + 4j))
25.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laddu_dask.arrays import array_module, complex_dtype

__all__ = ["array_module", "arccos_slope", "cis", "make_complex", "norm_sqr"]

#: Scalar types :func:`make_complex` builds a ``complex128`` of without array machinery.
_DOUBLE_SCALARS = frozenset({float, int, np.float64})


def make_complex(re: Any, im: Any) -> Any:
    """Build ``re + i im`` exactly (no arithmetic on the parts, so infinities survive)."""
    if type(re) in _DOUBLE_SCALARS and type(im) in _DOUBLE_SCALARS:  # parameter code: no arrays
        return np.complex128(complex(re, im))
    if (type(re) is np.ndarray and type(im) is np.ndarray and re.dtype == np.float64
            and im.dtype == np.float64 and re.shape == im.shape):  # a round's points: the common case
        out = np.empty(re.shape, dtype=np.complex128)
        out.real = re
        out.imag = im
        return out
    xp = array_module(re, im)
    shape = np.broadcast_shapes(np.shape(re), np.shape(im))
    dtypes = [x.dtype for x in (re, im) if hasattr(x, "dtype")]
    dtype = np.result_type(*dtypes) if dtypes else np.dtype(np.float64)
    cdtype = complex_dtype(dtype)
    if shape == ():
        return cdtype(complex(float(re), float(im)))
    out = xp.empty(shape, dtype=cdtype)
    out.real = re
    out.imag = im
    return out


def norm_sqr(z: Any) -> Any:
    """Return ``|z|^2`` as a real value (``z * z`` for real input)."""
    if np.iscomplexobj(z):
        re, im = z.real, z.imag
        return re * re + im * im
    return z * z


def cis(phase: Any) -> Any:
    """``cos(phase) + i sin(phase)`` of a real phase (the unit complex number).

    Examples
    --------
    >>> complex(cis(0.0))
    (1+0j)
    """
    xp = array_module(phase)
    return make_complex(xp.cos(phase), xp.sin(phase))


def arccos_slope(x: Any) -> Any:
    """The derivative of ``arccos(clip(x, -1, 1))``: ``-1 / sqrt(1 - x^2)`` inside
    ``(-1, 1)``, 0 outside (where the clipped value is constant), NaN for NaN.

    Examples
    --------
    >>> float(arccos_slope(0.0)), float(arccos_slope(2.0))
    (-1.0, 0.0)
    """
    xp = array_module(x)
    inside = ~(xp.abs(x) >= 1.0)
    safe = xp.where(inside, x, 0.0)
    return xp.where(inside, -1.0 / xp.sqrt(1.0 - safe * safe), 0.0)
