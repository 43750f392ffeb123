"""Numba's scalar arithmetic, spelled on NumPy arrays: the helpers of the tier-0 kernels.

The tier-0 kernels (:mod:`laddu_dask.compile.tier0`) evaluate a model with the fused
kernels' own statement sequence, event columns at a time, while Numba compiles the fused
kernels.  Each helper here computes, element by element, exactly what the Numba spelling
of the operation computes for one event, so that a tier-0 evaluation and a fused one give
the same bits:

* a complex value is a pair ``(re, im)`` of float64 arrays (or floats) and every complex
  operation is written in real operations, in Numba's own formulas (CPython's
  ``_Py_c_prod`` and ``_Py_c_quot``, the ``_cdiv`` of the Numba prelude, NumPy's
  ``npy_csqrt``), with a real operand promoted to ``(x, 0.0)`` where Numba promotes it;
* IEEE-exact real operations (``+ - * /``, ``sqrt``, ``abs``) are NumPy's;
* transcendental functions are the C library's, which Numba calls too: through Python's
  :mod:`math` (a thin wrapper of it) element by element, never NumPy's own SIMD versions,
  which may round differently.

A helper is named ``<op>_<kinds>`` (``r`` real, ``c`` complex, one letter per argument);
``fdiv_*`` is the forward pass's division by a complex number (the fused kernels' one
reciprocal).  An operation and kinds without a helper have no tier-0 form; a condition
where Numba would raise (a complex division by zero) raises :class:`Tier0Fallback`, and
the evaluation waits for the fused kernel instead.  ``tests/compile/test_tier0.py`` compares every
helper with Numba, bit for bit, on random and special values.

Examples
--------
>>> import numpy as np
>>> re, im = mul_cc((np.array([1.0]), np.array([2.0])), (np.array([3.0]), np.array([-1.0])))
>>> float(re[0]), float(im[0])
(5.0, 5.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

Complex = tuple[Any, Any]

#: Numba's complex square root scales its argument above this (``DBL_MAX / (1 + sqrt 2)``).
_SQRT_THRES = np.finfo(np.float64).max / (1.0 + 1.414213562373095048801688724209698079e0)


class Tier0Fallback(Exception):
    """The tier-0 kernel cannot reproduce this evaluation (Numba would raise); the fused
    kernel evaluates it instead."""


def _arr(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _each(fn: Callable[[float], float], x: Any) -> np.ndarray:
    """``fn`` element by element (the C library through :mod:`math`)."""
    a = _arr(x)
    flat = np.fromiter(map(fn, a.ravel().tolist()), dtype=np.float64, count=a.size)
    return flat.reshape(a.shape)


def _each2(fn: Callable[[float, float], float], x: Any, y: Any) -> np.ndarray:
    a, b = np.broadcast_arrays(_arr(x), _arr(y))
    flat = np.fromiter(map(fn, a.ravel().tolist(), b.ravel().tolist()), dtype=np.float64,
                       count=a.size)
    return flat.reshape(a.shape)


# -- the C library's functions, with its results where Python's math raises ---------------
def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _log(x: float) -> float:
    if x > 0.0:
        return math.log(x)
    return -math.inf if x == 0.0 else math.nan


def _trig(fn: Callable[[float], float]) -> Callable[[float], float]:
    def f(x: float) -> float:
        return fn(x) if math.isfinite(x) else math.nan

    return f


_sin, _cos, _tan = _trig(math.sin), _trig(math.cos), _trig(math.tan)


def _pow(x: float, y: float) -> float:
    try:
        return math.pow(x, y)
    except (OverflowError, ValueError, ZeroDivisionError):
        with np.errstate(all="ignore"):  # C99 Annex F special cases, as libm has them
            return float(np.power(x, y))


# -- real ----------------------------------------------------------------------------------
def powi_r(x: Any, n: int) -> Any:
    """``x ** n`` as Numba unrolls a constant integer exponent (square and multiply)."""
    e = abs(n)
    res: Any = 1.0
    val = x
    while e:
        if e & 1:
            res = res * val
        e >>= 1
        if e:
            val = val * val
    if n >= 0:
        return res
    if np.any(np.asarray(res) == 0.0):  # Numba raises ZeroDivisionError here
        raise Tier0Fallback("a negative power of zero")
    return 1.0 / res


def exp_r(x: Any) -> np.ndarray:
    return _each(_exp, x)


def log_r(x: Any) -> np.ndarray:
    return _each(_log, x)


def sin_r(x: Any) -> np.ndarray:
    return _each(_sin, x)


def cos_r(x: Any) -> np.ndarray:
    return _each(_cos, x)


def tan_r(x: Any) -> np.ndarray:
    return _each(_tan, x)


def sqrt_r(x: Any) -> np.ndarray:
    return np.sqrt(_arr(x))


def abs_r(x: Any) -> np.ndarray:
    return np.abs(_arr(x))


def pow_rr(x: Any, y: Any) -> np.ndarray:
    return _each2(_pow, x, y)


def atan2_rr(y: Any, x: Any) -> np.ndarray:
    return _each2(math.atan2, y, x)


def sign_r(x: Any) -> np.ndarray:
    a = _arr(x)
    return np.where(a == 0.0, a, np.sign(a))  # Numba's sign of a zero is that zero


def acos_r(x: Any) -> np.ndarray:
    # laddu's acos: the argument clipped to [-1, 1] (NaN stays NaN), as the Numba spelling
    a = _arr(x)
    clipped = np.where(np.abs(a) > 1.0, np.copysign(1.0, a), a)
    return _each(lambda v: math.acos(v) if not math.isnan(v) else math.nan, clipped)


def dacos_r(x: Any) -> np.ndarray:
    a = _arr(x)
    with np.errstate(all="ignore"):
        slope = -1.0 / np.sqrt(1.0 - a * a)
    return np.where(np.abs(a) >= 1.0, 0.0, slope)


def conj_r(x: Any) -> Any:
    return x


def real_r(x: Any) -> Any:
    return x


def imag_r(x: Any) -> Any:
    return np.zeros(np.shape(x))


def norm_sqr_r(x: Any) -> Any:
    return x * x + 0.0 * 0.0


def to_complex_r(x: Any) -> Complex:
    return (x, 0.0)


def complex_rr(a: Any, b: Any) -> Complex:
    return (a, b)


def cis_r(x: Any) -> Complex:
    return (cos_r(x), sin_r(x))


# -- complex arithmetic: Numba promotes a real operand to (x, 0.0) ---------------------------
def _c(x: Any) -> Complex:
    return x if isinstance(x, tuple) else (x, 0.0)


def add_cc(x: Any, y: Any) -> Complex:
    (a, b), (c, d) = _c(x), _c(y)
    return (a + c, b + d)


add_rc = add_cr = add_cc


def sub_cc(x: Any, y: Any) -> Complex:
    (a, b), (c, d) = _c(x), _c(y)
    return (a - c, b - d)


sub_rc = sub_cr = sub_cc


def mul_cc(x: Any, y: Any) -> Complex:
    # CPython's _Py_c_prod (Python < 3.14), as Numba's complex_mul
    (a, b), (c, d) = _c(x), _c(y)
    return (a * c - b * d, a * d + b * c)


mul_rc = mul_cr = mul_cc


def div_cc(x: Any, y: Any) -> Complex:
    """Numba's complex ``/`` (CPython's ``_Py_c_quot``)."""
    (ar, ai), (br, bi) = _c(x), _c(y)
    ar, ai, br, bi = np.broadcast_arrays(_arr(ar), _arr(ai), _arr(br), _arr(bi))
    abr, abi = np.abs(br), np.abs(bi)
    by_real = abr >= abi
    if np.any(by_real & (abr == 0.0)):
        raise Tier0Fallback("complex division by zero")
    with np.errstate(all="ignore"):
        ratio = np.where(by_real, bi / br, br / bi)
        denom = np.where(by_real, br + bi * ratio, br * ratio + bi)
        re = np.where(by_real, (ar + ai * ratio) / denom, (ar * ratio + ai) / denom)
        im = np.where(by_real, (ai - ar * ratio) / denom, (ai * ratio - ar) / denom)
    nan = ~by_real & ~(abi >= abr)  # a NaN in the divisor
    if np.any(nan):
        re = np.where(nan, np.nan, re)
        im = np.where(nan, np.nan, im)
    return (re, im)


div_rc = div_cr = div_cc


def fdiv_cc(x: Any, z: Any) -> Complex:
    """The forward pass's ``x / z`` for complex ``z``: the Numba prelude's ``_cdiv`` (one real
    reciprocal, then a complex product)."""
    zr, zi = z
    f = 1.0 / (zr * zr + zi * zi)
    return mul_cc(x, (zr * f, -zi * f))


fdiv_rc = fdiv_cc


def neg_c(x: Complex) -> Complex:
    return (-x[0], -x[1])


def conj_c(x: Complex) -> Complex:
    return (x[0], -x[1])


def real_c(x: Complex) -> Any:
    return x[0]


def imag_c(x: Complex) -> Any:
    return x[1]


def norm_sqr_c(x: Complex) -> Any:
    return x[0] * x[0] + x[1] * x[1]


def abs_c(x: Complex) -> np.ndarray:
    return np.hypot(_arr(x[0]), _arr(x[1]))


def powi_c(x: Complex, n: int) -> Complex:
    # Numba computes z ** 2 as z * z and every other power through cpow (no tier-0 form)
    if n != 2:
        raise Tier0Fallback(f"a complex power {n} (Numba's cpow)")
    return mul_cc(x, x)


def _csqrt(a: float, b: float) -> tuple[float, float]:
    # NumPy's npy_csqrt as Numba writes it (cmathimpl.sqrt_impl)
    if a == 0.0 and b == 0.0:
        return (abs(b), b)
    if math.isinf(b):
        return (abs(b), b)
    if math.isnan(a):
        return (a, a)
    if math.isinf(a):
        if a < 0.0:
            return (abs(b - b), math.copysign(a, b))
        return (a, math.copysign(b - b, b))
    scale = abs(a) >= _SQRT_THRES or abs(b) >= _SQRT_THRES
    if scale:
        a *= 0.25
        b *= 0.25
    if a >= 0:
        t = math.sqrt((a + float(np.hypot(a, b))) * 0.5)
        real, imag = t, b / (2 * t)
    else:
        t = math.sqrt((-a + float(np.hypot(a, b))) * 0.5)
        real, imag = abs(b) / (2 * t), math.copysign(t, b)
    return (real * 2, imag) if scale else (real, imag)


def sqrt_c(x: Complex) -> Complex:
    a, b = np.broadcast_arrays(_arr(x[0]), _arr(x[1]))
    try:
        pairs = [_csqrt(p, q) for p, q in zip(a.ravel().tolist(), b.ravel().tolist())]
    except ZeroDivisionError:  # an underflowing square root: Numba raises too
        raise Tier0Fallback("a complex square root divided by zero") from None
    re = np.array([p[0] for p in pairs], dtype=np.float64).reshape(a.shape)
    im = np.array([p[1] for p in pairs], dtype=np.float64).reshape(a.shape)
    return (re, im)
