"""The Numba prelude of the fused kernels: helpers the printed kernels call.

This file is the head of every generated kernel module (:mod:`laddu_dask.compile.fused`
prints the model's functions below its text), so that Numba's disk cache, which keys a
module's machine code by that module's own file, holds all of the code it runs.  It is
not imported by the library; linters and the tests read it as the module it is.
"""

import math

import numba
import numpy as np

_nb = numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")


@_nb
def _nsq(z):
    return z.real * z.real + z.imag * z.imag


@_nb
def _cplx(a, b):
    return complex(a, b)


_fm = numba.njit(cache=True, nogil=True, fastmath={"reassoc", "nsz"}, error_model="numpy")
_U2 = 2.0**-106


@_fm
def _absmax(x, m):
    # exact in any order (max), so reassociation only lets it vectorise
    out = 0.0
    for k in range(m):
        a = abs(x[k])
        out = a if a > out else out
    return out


@_nb
def _split(x, m, sigma, q, r):
    # Rump's ExtractScalar: q on the grid of ulp(sigma), r = x - q, both exact
    for k in range(m):
        t = (sigma + x[k]) - sigma
        q[k] = t
        r[k] = x[k] - t


@_fm
def _sums(q, r, m):
    # the q sum is exact in any order (a grid sum far below 2**53 grid steps); the r sum's
    # rounding is bounded by the caller
    hi = 0.0
    lo = 0.0
    for k in range(m):
        hi += q[k]
        lo += r[k]
    return hi, lo


@_nb
def _add_pair(lanes, j, col, x):
    s = lanes[j, col]
    t = s + x
    b = t - s
    lanes[j, col + 1] += (s - (t - b)) + (x - b)
    lanes[j, col] = t


@_nb
def _accumulate(row, m, lanes, j, q, r):
    # one block of one row: exact high parts and bounded low parts, then TwoSum into
    # lanes[j, 0:2] (high) and lanes[j, 2:4] (low); lanes[j, 4] collects an explicit error
    # bound of the low sums and lanes[j, 5] the magnitudes the cascades add
    big = _absmax(row, m)
    if big == 0.0:
        return
    if not (big < 2.0**1000):  # inf, nan or near overflow: no certificate, the exact path decides
        lanes[j, 4] = np.inf
        for k in range(m):
            lanes[j, 0] += row[k]
        return
    e = math.frexp(big)[1] + math.frexp(float(m))[1] + 1
    sigma = math.ldexp(1.0, e)
    _split(row, m, sigma, q, r)
    hi, lo = _sums(q, r, m)
    _add_pair(lanes, j, 0, hi)
    _add_pair(lanes, j, 2, lo)
    lanes[j, 4] += (m * m) * _U2 * sigma * 2.0
    lanes[j, 5] += abs(hi) + abs(lo)


@_nb
def _cdiv(a, z):
    # a / z for complex z through one real division (a may be real or complex)
    zr = z.real
    zi = z.imag
    f = 1.0 / (zr * zr + zi * zi)
    return a * complex(zr * f, -zi * f)
