"""Array modules and dtypes: which module owns an array, and the real/complex dtype pairing.

The bottom layer every other one uses (it imports NumPy only, and CuPy only when an
array is CuPy's), so that the pairing of precisions and the choice of NumPy or CuPy are
written once.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.arrays import array_module, complex_dtype, real_part_dtype
>>> array_module(np.zeros(3)).__name__, complex_dtype(np.float32), real_part_dtype(np.complex128)
('numpy', <class 'numpy.complex64'>, <class 'numpy.float64'>)
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

__all__ = ["all_finite", "array_module", "complex_dtype", "is_single", "real_part_dtype"]


def array_module(*values: Any) -> ModuleType:
    """``cupy`` if any argument is a CuPy array, else ``numpy``."""
    for v in values:
        if type(v).__module__.startswith("cupy"):
            import cupy

            return cupy
    return np


def is_single(dtype: Any) -> bool:
    """Whether a (real or complex) dtype is of single precision."""
    return np.dtype(dtype) in (np.float32, np.complex64)


def complex_dtype(dtype: Any) -> Any:
    """The complex dtype of a real (or complex) dtype's precision."""
    return np.complex64 if is_single(dtype) else np.complex128


def real_part_dtype(dtype: Any) -> Any:
    """The real dtype of a (real or complex) dtype's precision."""
    return np.float32 if is_single(dtype) else np.float64


def all_finite(values: np.ndarray) -> bool:
    """Whether every element of a small 1-D real NumPy array is finite (``np.isfinite(values).all()``).

    The sum of the elements as Python floats (which overflow to infinity without a warning
    and carry NaN along) is finite only when every element is; where it is not (an element
    is not finite, or the sum overflows), the elementwise check decides.  For a gradient's
    few numbers this is several times cheaper than the ufunc and its reduction.

    Examples
    --------
    >>> all_finite(np.array([1.0, -2.0])), all_finite(np.array([1e308, 1e308]))
    (True, True)
    >>> all_finite(np.array([np.nan, 1.0])), all_finite(np.array([np.inf, -np.inf]))
    (False, False)
    """
    if math.isfinite(sum(values.tolist())):
        return True
    return bool(np.isfinite(values).all())
