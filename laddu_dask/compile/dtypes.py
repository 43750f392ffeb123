"""Precisions and their real and complex dtypes (the one place the pairing is written).

Examples
--------
>>> import numpy as np
>>> from laddu_dask.compile.dtypes import complex_dtype, real_dtype
>>> real_dtype("f32"), complex_dtype(np.float32), complex_dtype(real_dtype("f64"))
(<class 'numpy.float32'>, <class 'numpy.complex64'>, <class 'numpy.complex128'>)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laddu_dask.options import Precision

PRECISIONS = {Precision.F64.value: np.float64, Precision.F32.value: np.float32}


def real_dtype(precision: str) -> Any:
    """The NumPy real dtype of ``"f64"`` or ``"f32"``."""
    return PRECISIONS[Precision.check(precision, "precision")]


def is_single(dtype: Any) -> bool:
    """Whether a (real or complex) dtype is of single precision."""
    return np.dtype(dtype) in (np.float32, np.complex64)


def complex_dtype(dtype: Any) -> Any:
    """The complex dtype of a real (or complex) dtype's precision."""
    return np.complex64 if is_single(dtype) else np.complex128


def real_part_dtype(dtype: Any) -> Any:
    """The real dtype of a (real or complex) dtype's precision."""
    return np.float32 if is_single(dtype) else np.float64
