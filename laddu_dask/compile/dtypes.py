"""Precisions and their real and complex dtypes (the pairing itself is :mod:`laddu_dask.arrays`).

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

from laddu_dask.arrays import complex_dtype, is_single, real_part_dtype
from laddu_dask.options import Precision

__all__ = ["PRECISIONS", "complex_dtype", "is_single", "real_dtype", "real_part_dtype"]

PRECISIONS = {Precision.F64.value: np.float64, Precision.F32.value: np.float32}


def real_dtype(precision: str) -> Any:
    """The NumPy real dtype of ``"f64"`` or ``"f32"``."""
    return PRECISIONS[Precision.check(precision, "precision")]
