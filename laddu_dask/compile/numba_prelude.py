"""The Numba prelude of the fused kernels: helpers the printed kernels call.

Its text is loaded once per process as a module of the kernel cache folder
(:func:`laddu_dask.compile.fused.prelude`, named by a digest of this text), so that
Numba compiles these helpers once per machine, not once per model; every generated
kernel module imports them from that module by its name.  Numba's disk cache keys a
kernel's machine code (which holds the helpers' code inlined) by the kernel module's
own file, so the name of the prelude module, written into every kernel's source, makes a
changed prelude a different kernel file.  It is not imported by the library as
``laddu_dask.compile.numba_prelude``; linters and the tests read it as the module it is.
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
def _two_sum(s, x):
    # Knuth's TwoSum: s + x = t + e exactly
    t = s + x
    b = t - s
    return t, (s - (t - b)) + (x - b)


@_nb
def _accumulate(row, m, lane, q, r):
    # one block of one row into its lane (a row of ``lanes``): exact high parts and bounded
    # low parts, TwoSum into lane[0:2] (high) and lane[2:4] (low); lane[4] collects an
    # explicit error bound of the low sums and lane[5] the magnitudes the cascades add.
    # (No integer argument: Numba would compile one copy per literal it is called with.)
    big = _absmax(row, m)
    if big == 0.0:
        return
    if not (big < 2.0**1000):  # inf, nan or near overflow: no certificate, the exact path decides
        lane[4] = np.inf
        for k in range(m):
            lane[0] += row[k]
        return
    e = math.frexp(big)[1] + math.frexp(float(m))[1] + 1
    sigma = math.ldexp(1.0, e)
    _split(row, m, sigma, q, r)
    hi, lo = _sums(q, r, m)
    t, err = _two_sum(lane[0], hi)
    lane[1] += err
    lane[0] = t
    t, err = _two_sum(lane[2], lo)
    lane[3] += err
    lane[2] = t
    lane[4] += (m * m) * _U2 * sigma * 2.0
    lane[5] += abs(hi) + abs(lo)


@_nb
def _cdiv(a, z):
    # a / z for complex z through one real division (a may be real or complex)
    zr = z.real
    zi = z.imag
    f = 1.0 / (zr * zr + zi * zi)
    return a * complex(zr * f, -zi * f)
