"""Generated CUDA kernels: one pass over a partition on the GPU per evaluation.

From the same split graph as the CPU fused kernels (:mod:`laddu_dask.compile.fused`)
this module generates CUDA C++ source, compiled at run time by CuPy
(``cupy.RawModule``, NVRTC) or ahead of time by ``nvcc`` (:func:`compile_with_nvcc`,
used by the tests so that a syntax or type error fails without a GPU).

Kernels (``PREFIX`` is empty unless several models share one translation unit):

``PREFIXvalue_sum`` / ``PREFIXgradient_sum``
    a grid-stride loop over events: the parameter-dependent part of the model, the
    reduction transform ``w t(Re v)`` and, for the gradient, one reverse sweep that
    yields the adjoints of the *boundary* nodes (the parameter-only values the
    per-event part reads; the same rows as the CPU fused kernels).  Each thread
    accumulates its terms with TwoSum in double precision (also in ``f32`` mode),
    each block merges its threads' (sum, compensation) pairs in shared memory and
    writes one (sum, compensation, magnitude) triple per row;
``laddu_merge_blocks``
    merges the block triples of every row the same way and returns ``3 K + 1``
    doubles: per row the (sum, compensation) pair and an error bound, then the first
    event whose value is not finite or a positive transform rejected (or ``-1``);
``PREFIXvalue_terms`` / ``PREFIXgradient_terms``
    the same per-event terms written out (``K x n`` doubles), the exact fallback;
``PREFIXvalues``
    the model value per event.

Design
------
* Cached columns are separate device arrays; a complex column is interleaved
  (re, im) pairs, exactly CuPy's ``complex128``/``complex64`` layout, read as a
  16-byte (8-byte in ``f32``) aligned struct ``cplx``.  Free parameters are passed
  by value as kernel arguments (no host-to-device copy per call); parameter-only
  nodes are recomputed by every thread (they are few and cheap).
* Complex arithmetic is a small struct with overloaded operators and inline
  functions (``ld_exp``, ``ld_log``, ``ld_pow``, ...), so the gradient rules of
  :mod:`laddu_dask.compile.gradient` are translated from their source strings by
  walking their Python syntax tree.  Complex division takes one reciprocal, as the
  CPU fused kernels do.  Constants are exact hexadecimal literals.
* The kernels are compiled with ``--fmad=false`` by default, so products and sums
  round exactly as in the CPU kernels.
* Sums are certified like the CPU ones.  Each thread keeps a two-level expansion
  ``(s, c)`` updated by TwoSum at both levels (exact); the remainder the second level
  drops is exactly known and its magnitude is summed, rounding upwards
  (``__dadd_ru``), into ``bound``; block and grid merges do the same.  So
  ``exact sum in [s + c - bound, s + c + bound]``, with ``bound == 0`` whenever no
  second-level addition rounded (typical for ``f32`` terms, whose exact sums often
  fall on a rounding tie).  The runtime's ``CertifiedPartials(terms, bound)`` takes
  the pairs as exact terms; an evaluation whose bound straddles a rounding boundary
  (or that is not finite) is redone exactly from the per-event terms.

Examples
--------
>>> import laddu_dask as ld
>>> from laddu_dask.compile.cuda import generate_cuda_source
>>> cm = ld.CompiledModel.from_expr((ld.parameter("a") * ld.scalar("x") + 1.0).norm_sqr())
>>> src = generate_cuda_source(cm.split, "f64")
>>> src.kernels["gradient_sum"], src.rows
('gradient_sum', 2)
>>> "0x1p+0" in src.text
True
"""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from laddu_dask.compile.fused import TRANSFORM_CODES, _backprop_source, boundary_rows
from laddu_dask.compile.gradient import reverse_sweep
from laddu_dask.compile.graph import Split
from laddu_dask.errors import DataError, LadduDaskError, ModelError, ParameterError
from laddu_dask.expr.node import Expr
from laddu_dask.expr.ops import COMPLEX

_AST_LOCK = threading.Lock()

__all__ = [
    "DEFAULT_BLOCK",
    "DEFAULT_OPTIONS",
    "CudaCompileError",
    "CudaKernels",
    "CudaSource",
    "GpuPartials",
    "HostEmulation",
    "combine_sources",
    "compile_with_nvcc",
    "cuda_kernels",
    "generate_cuda_source",
    "host_emulation_source",
]

#: Threads per block of the kernels (a multiple of the warp size, at most MAX_BLOCK).
DEFAULT_BLOCK = 256

#: Largest block the kernels are compiled for (``__launch_bounds__``): up to 255
#: registers per thread stay available to models with many gradient rows.
MAX_BLOCK = 256

#: Compiler options shared by NVRTC (CuPy) and nvcc: C++17 (hex float literals) and
#: no contraction of products and sums into fused multiply-adds.
DEFAULT_OPTIONS = ("--std=c++17", "--fmad=false")

#: Kernel roles of a model (the merge kernel is shared: :data:`MERGE_KERNEL`).
ROLES = ("value_sum", "gradient_sum", "value_terms", "gradient_terms", "values")
MERGE_KERNEL = "laddu_merge_blocks"

#: Most free parameters passed by value (32 KiB of kernel arguments on sm_70+).
MAX_PARAMS = 2048


class CudaCompileError(LadduDaskError, RuntimeError):
    """nvcc (or NVRTC) rejected generated CUDA source; the message holds its log."""


# ---------------------------------------------------------------------------------------
# literals and the prelude
# ---------------------------------------------------------------------------------------
def _hex(x: float) -> str:
    """Shortest exact hexadecimal spelling of a finite double."""
    h = float(x).hex()  # e.g. -0x1.8000000000000p+3
    sign = "-" if h.startswith("-") else ""
    mant, exp = h.lstrip("-").split("p")
    mant = mant.rstrip("0").rstrip(".")
    return f"{sign}{mant}p{exp}"


def real_literal(x: float, f32: bool) -> str:
    """An exact C++ literal of ``x`` (rounded to float32 first in ``f32`` mode).

    Examples
    --------
    >>> real_literal(1.5, False), real_literal(-0.1, True)
    ('0x1.8p+0', '(-0x1.99999ap-4f)')
    """
    v = float(np.float32(x)) if f32 else float(x)
    if v != v:
        return "ld_nan()"
    if v in (float("inf"), float("-inf")):
        return "ld_inf()" if v > 0 else "(-ld_inf())"
    text = _hex(v) + ("f" if f32 else "")
    return f"({text})" if text.startswith("-") else text


def _complex_literal(z: complex, f32: bool) -> str:
    return f"ld_c({real_literal(z.real, f32)}, {real_literal(z.imag, f32)})"


_REAL_FUNCS = {  # name in the prelude -> (double, float) device function
    "sin": ("sin", "sinf"), "cos": ("cos", "cosf"), "tan": ("tan", "tanf"),
    "exp": ("exp", "expf"), "log": ("log", "logf"), "sqrt": ("sqrt", "sqrtf"),
    "fabs": ("fabs", "fabsf"), "atan2": ("atan2", "atan2f"), "pow": ("pow", "powf"),
    "hypot": ("hypot", "hypotf"), "sinh": ("sinh", "sinhf"), "cosh": ("cosh", "coshf"),
    "floor": ("floor", "floorf"), "copysign": ("copysign", "copysignf"),
}

_PRELUDE = r"""// laddu-dask generated CUDA kernels, precision @PRECISION@
#ifndef LADDU_HOST_EMULATION
#pragma nv_diag_suppress 177
#endif
typedef @REAL@ real_t;
struct __align__(@ALIGN@) cplx { real_t re; real_t im; };
#define LD_FN static __device__ __forceinline__

@REALFUNCS@
LD_FN real_t ld_nan() { return @NAN@; }
LD_FN real_t ld_inf() { return @INF@; }
LD_FN cplx ld_c(real_t a, real_t b) { cplx z; z.re = a; z.im = b; return z; }
LD_FN cplx ld_to_c(real_t a) { return ld_c(a, (real_t)0); }
LD_FN cplx ld_to_c(cplx a) { return a; }
LD_FN real_t ld_re(real_t a) { return a; }
LD_FN real_t ld_re(cplx a) { return a.re; }
LD_FN real_t ld_im(real_t a) { return (real_t)0; }
LD_FN real_t ld_im(cplx a) { return a.im; }
LD_FN real_t ld_conj(real_t a) { return a; }
LD_FN cplx ld_conj(cplx a) { return ld_c(a.re, -a.im); }
LD_FN cplx operator-(cplx a) { return ld_c(-a.re, -a.im); }
LD_FN cplx operator+(cplx a, cplx b) { return ld_c(a.re + b.re, a.im + b.im); }
LD_FN cplx operator+(cplx a, real_t b) { return ld_c(a.re + b, a.im); }
LD_FN cplx operator+(real_t a, cplx b) { return ld_c(a + b.re, b.im); }
LD_FN cplx operator-(cplx a, cplx b) { return ld_c(a.re - b.re, a.im - b.im); }
LD_FN cplx operator-(cplx a, real_t b) { return ld_c(a.re - b, a.im); }
LD_FN cplx operator-(real_t a, cplx b) { return ld_c(a - b.re, -b.im); }
LD_FN cplx operator*(cplx a, cplx b) {
    return ld_c(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
LD_FN cplx operator*(cplx a, real_t b) { return ld_c(a.re * b, a.im * b); }
LD_FN cplx operator*(real_t a, cplx b) { return ld_c(a * b.re, a * b.im); }
// one reciprocal per complex quotient, as the CPU fused kernels
LD_FN cplx ld_recip_conj(cplx b) {
    const real_t f = (real_t)1 / (b.re * b.re + b.im * b.im);
    return ld_c(b.re * f, -b.im * f);
}
LD_FN cplx operator/(cplx a, cplx b) { return a * ld_recip_conj(b); }
LD_FN cplx operator/(real_t a, cplx b) { return a * ld_recip_conj(b); }
LD_FN cplx operator/(cplx a, real_t b) { return ld_c(a.re / b, a.im / b); }

LD_FN real_t ld_nsq(real_t a) { return a * a; }
LD_FN real_t ld_nsq(cplx a) { return a.re * a.re + a.im * a.im; }
LD_FN real_t ld_abs(real_t a) { return ld_fabs(a); }
LD_FN real_t ld_abs(cplx a) { return ld_hypot(a.re, a.im); }
LD_FN real_t ld_sign(real_t a) { return a > (real_t)0 ? (real_t)1 : (a < (real_t)0 ? (real_t)-1 : a); }
LD_FN real_t ld_atan2(real_t y, real_t x) { return ld_real_atan2(y, x); }
LD_FN real_t ld_sin(real_t a) { return ld_real_sin(a); }
LD_FN real_t ld_cos(real_t a) { return ld_real_cos(a); }
LD_FN real_t ld_tan(real_t a) { return ld_real_tan(a); }
LD_FN real_t ld_exp(real_t a) { return ld_real_exp(a); }
LD_FN real_t ld_log(real_t a) { return ld_real_log(a); }
LD_FN real_t ld_sqrt(real_t a) { return ld_real_sqrt(a); }
LD_FN cplx ld_exp(cplx a) {
    const real_t e = ld_real_exp(a.re);
    return ld_c(e * ld_real_cos(a.im), e * ld_real_sin(a.im));
}
LD_FN cplx ld_log(cplx a) { return ld_c(ld_real_log(ld_hypot(a.re, a.im)), ld_real_atan2(a.im, a.re)); }
LD_FN cplx ld_sqrt(cplx a) {
    // principal root, C99 branch cut (the sign of a zero imaginary part is kept)
    if (a.re == (real_t)0 && a.im == (real_t)0) return ld_c((real_t)0, a.im);
    const real_t t = ld_real_sqrt((ld_fabs(a.re) + ld_hypot(a.re, a.im)) * @HALF@);
    if (a.re >= (real_t)0) return ld_c(t, a.im / (t + t));
    return ld_c(ld_fabs(a.im) / (t + t), ld_copysign(t, a.im));
}
LD_FN cplx ld_sin(cplx a) {
    return ld_c(ld_real_sin(a.re) * ld_cosh(a.im), ld_real_cos(a.re) * ld_sinh(a.im));
}
LD_FN cplx ld_cos(cplx a) {
    return ld_c(ld_real_cos(a.re) * ld_cosh(a.im), -(ld_real_sin(a.re) * ld_sinh(a.im)));
}
LD_FN cplx ld_tan(cplx a) {
    // tan(x + iy) = (sin 2x + i sinh 2y) / (cos 2x + cosh 2y); far from the real axis
    // the imaginary part is +-1 to working precision and cosh would overflow
    const real_t x2 = a.re + a.re;
    if (ld_fabs(a.im) > (real_t)20) {
        const real_t q = ld_real_exp(-ld_fabs(a.im + a.im));
        return ld_c((real_t)2 * ld_real_sin(x2) * q, ld_copysign((real_t)1, a.im));
    }
    const real_t y2 = a.im + a.im;
    const real_t d = ld_real_cos(x2) + ld_cosh(y2);
    return ld_c(ld_real_sin(x2) / d, ld_sinh(y2) / d);
}
template <class T> LD_FN T ld_powi_by_squaring(T x, int n, T one) {
    // repeated squaring: x**2 is x*x, x**-1 is 1/x (NumPy's small-integer powers)
    unsigned int m = n < 0 ? (unsigned int)(-n) : (unsigned int)n;
    T r = one;
    T b = x;
    while (m) {
        if (m & 1u) r = r * b;
        m >>= 1;
        if (m) b = b * b;
    }
    return n < 0 ? (real_t)1 / r : r;
}
LD_FN real_t ld_powi(real_t x, int n) { return ld_powi_by_squaring(x, n, (real_t)1); }
LD_FN cplx ld_powi(cplx x, int n) { return ld_powi_by_squaring(x, n, ld_c((real_t)1, (real_t)0)); }
LD_FN real_t ld_pow(real_t a, real_t b) { return ld_real_pow(a, b); }
LD_FN cplx ld_pow(cplx a, cplx b) {
    // NumPy's complex power: small integer exponents by multiplication, 0**b for b > 0
    if (b.im == (real_t)0 && b.re == ld_floor(b.re) && ld_fabs(b.re) < (real_t)100)
        return ld_powi(a, (int)b.re);
    if (a.re == (real_t)0 && a.im == (real_t)0) {
        if (b.re > (real_t)0 && b.im == (real_t)0) return ld_c((real_t)0, (real_t)0);
        return ld_c(ld_nan(), ld_nan());
    }
    return ld_exp(b * ld_log(a));
}
LD_FN cplx ld_pow(cplx a, real_t b) { return ld_pow(a, ld_to_c(b)); }
LD_FN cplx ld_pow(real_t a, cplx b) { return ld_pow(ld_to_c(a), b); }

// ---- compensated sums (always in double) ----------------------------------------------
// A (s, e, b) triple: s + e is the sum so far up to at most b.  Every step is a TwoSum
// (exact); what the second level drops is summed in magnitude, rounding upwards, into b,
// so b is zero while no second-level addition rounds.
LD_FN void ld_two_sum(double a, double b, double& s, double& r) {
    s = a + b;
    const double z = s - a;
    r = (a - (s - z)) + (b - z);  // a + b == s + r exactly
}
LD_FN void ld_acc(double& s, double& e, double& b, double x) {
    double t, err, f, r;
    ld_two_sum(s, x, t, err);
    ld_two_sum(e, err, f, r);
    s = t;
    e = f;
    b = __dadd_ru(b, ld_fabs_d(r));
}
LD_FN void ld_merge(double& s, double& e, double& b, double s2, double e2, double b2) {
    double t, err, c, r1, d, r2;
    ld_two_sum(s, s2, t, err);
    ld_two_sum(e, e2, c, r1);
    ld_two_sum(c, err, d, r2);
    s = t;
    e = d;
    b = __dadd_ru(__dadd_ru(b, b2), __dadd_ru(ld_fabs_d(r1), ld_fabs_d(r2)));
}

#ifndef LADDU_HOST_EMULATION
LD_FN void ld_warp_merge(double& s, double& e, double& b) {
    for (int off = 16; off > 0; off >>= 1) {
        const double s2 = __shfl_down_sync(0xffffffffu, s, off);
        const double e2 = __shfl_down_sync(0xffffffffu, e, off);
        const double b2 = __shfl_down_sync(0xffffffffu, b, off);
        ld_merge(s, e, b, s2, e2, b2);
    }
}
// merge the triples of a block (blockDim.x a multiple of 32); the result is in thread 0
LD_FN void ld_block_merge(double& s, double& e, double& b) {
    __shared__ double sh[96];
    ld_warp_merge(s, e, b);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    if (lane == 0) { sh[3 * warp] = s; sh[3 * warp + 1] = e; sh[3 * warp + 2] = b; }
    __syncthreads();
    if (warp == 0) {
        const int nw = (int)(blockDim.x >> 5);
        if (lane < nw) { s = sh[3 * lane]; e = sh[3 * lane + 1]; b = sh[3 * lane + 2]; }
        else { s = 0; e = 0; b = 0; }
        ld_warp_merge(s, e, b);
    }
    __syncthreads();
}
LD_FN void ld_store(double* __restrict__ partial, int row, double s, double e, double b) {
    ld_block_merge(s, e, b);
    if (threadIdx.x == 0) {
        double* o = partial + 3 * ((long long)row * gridDim.x + blockIdx.x);
        o[0] = s; o[1] = e; o[2] = b;
    }
}
LD_FN void ld_reject(unsigned long long* bad, long long i) {
    atomicMax(bad, ~(unsigned long long)i);  // the largest complement is the first event
}

// partial: rows x nblocks x 3 block triples -> out: rows x (s, e, bound), then the first
// rejected event (-1 for none); one block per row
extern "C" __global__ void laddu_merge_blocks(const double* __restrict__ partial,
        const long long nblocks, const int rows, const unsigned long long* __restrict__ bad,
        double* __restrict__ out) {
    const int row = blockIdx.x;
    double s = 0, e = 0, b = 0;
    for (long long j = threadIdx.x; j < nblocks; j += blockDim.x) {
        const double* q = partial + 3 * ((long long)row * nblocks + j);
        ld_merge(s, e, b, q[0], q[1], q[2]);
    }
    ld_block_merge(s, e, b);
    if (threadIdx.x == 0) {
        out[3 * row] = s;
        out[3 * row + 1] = e;
        out[3 * row + 2] = b;
        if (row == 0) {
            const unsigned long long v = *bad;
            out[3 * rows] = v == 0ull ? (double)-1 : (double)(~v);
        }
    }
}
#endif
"""


def _prelude(precision: str) -> str:
    f32 = precision == "f32"
    funcs = [
        f"LD_FN real_t ld_{'real_' if name in _WRAPPED else ''}{name}"
        f"({', '.join(f'real_t {a}' for a in _ARGS.get(name, 'x'))}) "
        f"{{ return {pair[1 if f32 else 0]}({', '.join(_ARGS.get(name, 'x'))}); }}"
        for name, pair in _REAL_FUNCS.items()
    ]
    funcs.append("LD_FN double ld_fabs_d(double x) { return fabs(x); }")
    nan = "__int_as_float(0x7fc00000)" if f32 else "__longlong_as_double(0x7ff8000000000000ll)"
    inf = "__int_as_float(0x7f800000)" if f32 else "__longlong_as_double(0x7ff0000000000000ll)"
    return (
        _PRELUDE.replace("@PRECISION@", precision)
        .replace("@REAL@", "float" if f32 else "double")
        .replace("@ALIGN@", "8" if f32 else "16")
        .replace("@REALFUNCS@", "\n".join(funcs))
        .replace("@NAN@", nan)
        .replace("@INF@", inf)
        .replace("@HALF@", real_literal(0.5, f32))
    )


_WRAPPED = {"sin", "cos", "tan", "exp", "log", "sqrt", "atan2", "pow"}
_ARGS = {"atan2": "yx", "pow": "ab", "hypot": "ab", "copysign": "ab"}


# ---------------------------------------------------------------------------------------
# expressions
# ---------------------------------------------------------------------------------------
#: Forward templates; C++ overloads pick the real or the complex version by type.
CUDA_TEMPLATES = {
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "div": "({0} / {1})",
    "neg": "(-{0})",
    "powi": "ld_powi({0}, {attr})",
    "pow": "ld_pow({0}, {1})",
    "sin": "ld_sin({0})",
    "cos": "ld_cos({0})",
    "tan": "ld_tan({0})",
    "exp": "ld_exp({0})",
    "log": "ld_log({0})",
    "sqrt": "ld_sqrt({0})",
    "abs": "ld_abs({0})",
    "conj": "ld_conj({0})",
    "real": "ld_re({0})",
    "imag": "ld_im({0})",
    "norm_sqr": "ld_nsq({0})",
    "atan2": "ld_atan2({0}, {1})",
    "complex": "ld_c({0}, {1})",
    "to_complex": "ld_to_c({0})",
}

#: ``xp.<name>`` calls of the gradient rules and their device functions.
_CALLS = {
    "conj": "ld_conj", "real": "ld_re", "imag": "ld_im", "sign": "ld_sign",
    "power": "ld_pow", "log": "ld_log", "sin": "ld_sin", "cos": "ld_cos",
    "exp": "ld_exp", "sqrt": "ld_sqrt", "tan": "ld_tan", "abs": "ld_abs",
}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


def _int_of(node: ast.AST) -> int | None:
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def translate(src: str, names: dict[str, str], f32: bool) -> str:
    """CUDA source of a gradient rule's (array-module) Python source.

    ``names`` maps placeholder names to their CUDA spelling; other names are kept.

    Examples
    --------
    >>> translate("(g * xp.conj((v1 ** 2)) * 0.5)", {"v1": "h.v1"}, False)
    '((g * ld_conj(ld_powi(h.v1, 2))) * 0x1p-1)'
    """

    def emit(node: ast.AST) -> str:
        if isinstance(node, ast.BinOp):
            left = emit(node.left)
            if isinstance(node.op, ast.Pow):
                n = _int_of(node.right)
                if n is None:
                    raise ModelError(f"no CUDA translation of a non-integer power in {src!r}")
                return f"ld_powi({left}, {n})"
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise ModelError(f"no CUDA translation of {type(node.op).__name__} in {src!r}")
            return f"({left} {op} {emit(node.right)})"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return f"(-{emit(node.operand)})"
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                    and f.value.id == "xp" and f.attr in _CALLS and not node.keywords):
                return f"{_CALLS[f.attr]}({', '.join(emit(a) for a in node.args)})"
            raise ModelError(f"no CUDA translation of the call {ast.unparse(node)!r} in {src!r}")
        if isinstance(node, ast.Name):
            return names.get(node.id, node.id)
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, complex):
                return _complex_literal(v, f32)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return real_literal(float(v), f32)
        raise ModelError(f"no CUDA translation of {ast.unparse(node)!r} in {src!r}")

    with _AST_LOCK:  # CPython 3.11's parser is not safe to enter from two threads at once
        tree = ast.parse(src, mode="eval")
    return emit(tree.body)


# ---------------------------------------------------------------------------------------
# the generated source
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CudaSource:
    """Generated CUDA source of one model at one precision.

    Attributes
    ----------
    precision : {"f64", "f32"}
        Arithmetic of the model (sums are always accumulated in double).
    prefix : str
        Prefix of every kernel and helper name of the model.
    prelude : str
        Shared definitions (complex struct, functions, sums, the merge kernel).
    body : str
        The model's head, per-event functions and kernels.
    kernels : dict
        Role (:data:`ROLES` and ``"merge"``) -> kernel name.
    boundary : tuple of Expr
        Boundary nodes, in the order of :func:`laddu_dask.compile.fused.boundary_rows`.
    boundary_rows : tuple of int
        First row of each boundary node's adjoint sum (complex nodes take two rows).
    rows : int
        Rows of ``gradient_sum`` (``1 + boundary size``); ``value_sum`` has one.
    cache_kinds : tuple of str
        Kind of each cached column argument (``"real"`` or ``"complex"``).
    n_params : int
        Free parameters, passed by value after the other arguments.
    root_kind : str
        Kind of the model value (the ``values`` output).
    """

    precision: str
    prefix: str
    prelude: str
    body: str
    kernels: dict[str, str]
    boundary: tuple[Expr, ...]
    boundary_rows: tuple[int, ...]
    rows: int
    cache_kinds: tuple[str, ...]
    n_params: int
    root_kind: str
    digest: str = field(default="", compare=False)

    @property
    def text(self) -> str:
        """The whole translation unit."""
        return self.prelude + "\n" + self.body

    @property
    def boundary_size(self) -> int:
        """Rows of boundary adjoint sums."""
        return self.rows - 1


def combine_sources(sources: Sequence[CudaSource]) -> str:
    """One translation unit for several models of one precision (distinct prefixes)."""
    if not sources:
        raise ValueError("no CUDA sources to combine")
    precisions = {s.precision for s in sources}
    prefixes = [s.prefix for s in sources]
    if len(precisions) != 1:
        raise ValueError(f"cannot combine sources of precisions {sorted(precisions)}")
    if len(set(prefixes)) != len(prefixes):
        raise ValueError(f"combined CUDA sources need distinct prefixes, got {prefixes}")
    return sources[0].prelude + "\n" + "\n".join(s.body for s in sources)


def generate_cuda_source(split: Split, precision: str = "f64", prefix: str = "") -> CudaSource:
    """Generate the CUDA kernels of a split model.

    Parameters
    ----------
    split : Split
        The classified graph (``CompiledModel.split``); its root must depend on events
        and on free parameters, as for the CPU fused kernels.
    precision : {"f64", "f32"}
        Arithmetic of the per-event part.
    prefix : str
        Prefix of the model's kernel and helper names (a C identifier start), so that
        several models can share one translation unit (:func:`combine_sources`).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> x, a = ld.scalar("x"), ld.parameter("a")
    >>> split = ld.CompiledModel.from_expr((a * x).exp().real()).split
    >>> src = generate_cuda_source(split, "f32", prefix="m0_")
    >>> src.kernels["values"], src.cache_kinds, src.n_params
    ('m0_values', ('real',), 1)
    """
    if precision not in ("f64", "f32"):
        raise ValueError(f"precision must be 'f64' or 'f32', got {precision!r}")
    if prefix and (not prefix.replace("_", "a").isalnum() or prefix[0].isdigit()):
        raise ValueError(f"prefix must be a C identifier start, got {prefix!r}")
    mixed = {n.serial for n in split.mixed_nodes}
    if split.root.serial not in mixed:
        raise ValueError("CUDA kernels need a root that depends on events and parameters")
    if len(split.free) > MAX_PARAMS:
        raise ParameterError(f"the CUDA kernels take at most {MAX_PARAMS} free parameters, "
                             f"the model has {len(split.free)}")
    f32 = precision == "f32"
    index = {n.serial: i for i, n in enumerate(split.nodes)}
    head_nodes = [*split.free, *split.param_nodes]
    in_head = {n.serial for n in head_nodes}
    boundary, b_rows, rows = boundary_rows(split)
    P = prefix

    def ctype(node: Expr) -> str:
        return "cplx" if node.kind == COMPLEX else "real_t"

    def placeholder(node: Expr) -> str:
        return f"{'k' if node.op == 'const' else 'v'}{index[node.serial]}"

    def cname(node: Expr, event: bool) -> str:
        if node.op == "const":
            v = node.attr
            return _complex_literal(complex(v), f32) if node.kind == COMPLEX else real_literal(v, f32)
        name = f"v{index[node.serial]}"
        return f"h.{name}" if event and node.serial in in_head else name

    def line(node: Expr, event: bool, indent: str) -> str:
        args = [cname(a, event) for a in node.args]
        expr = CUDA_TEMPLATES[node.op].format(*args, attr=node.attr)
        return f"{indent}const {ctype(node)} {cname(node, False)} = {expr};"

    # -- head: free parameters and parameter-only nodes, per thread ------------------------
    head_struct = [f"struct {P}LdHead {{"]
    head_struct += [f"    {ctype(b)} v{index[b.serial]};" for b in boundary] or ["    int unused;"]
    head_struct.append("};")
    head_fn = [f"LD_FN {P}LdHead {P}ld_head(const real_t* p) {{"]
    free_pos = {n.serial: j for j, n in enumerate(split.free)}
    for node in split.free:
        head_fn.append(f"    const real_t v{index[node.serial]} = p[{free_pos[node.serial]}];")
    for node in split.param_nodes:
        head_fn.append(line(node, False, "    "))
    head_fn.append(f"    {P}LdHead h;")
    head_fn += [f"    h.v{index[b.serial]} = v{index[b.serial]};" for b in boundary]
    head_fn += ["    return h;", "}"]

    # -- per-event pieces ----------------------------------------------------------------
    col_params = [
        f"const {'cplx' if n.kind == COMPLEX else 'real_t'}* __restrict__ c{j}"
        for j, n in enumerate(split.cache)
    ]
    col_args = [f"c{j}" for j in range(len(split.cache))]
    cache_pos = {n.serial: j for j, n in enumerate(split.cache)}
    loads = [f"    const {ctype(n)} v{index[n.serial]} = c{cache_pos[n.serial]}[i];"
             for n in split.cache]
    forward = [line(n, True, "    ") for n in split.mixed_nodes]
    root = cname(split.root, True)

    names = {placeholder(n): cname(n, True) for n in split.nodes}
    sweep = ["    " + ("cplx g_root = ld_to_c(seed);" if split.root.kind == COMPLEX
                       else "real_t g_root = seed;")]
    adjoint: dict[int, str] = {split.root.serial: "g_root"}
    bset = set(b_rows)

    def accumulate(arg: Expr, target: str, src: str, _kind: str, first: bool) -> str:
        wrap = "ld_to_c" if arg.kind == COMPLEX else "ld_re"
        expr = f"{wrap}({translate(src, names, f32)})"
        return f"    {ctype(arg)} {target} = {expr};" if first else f"    {target} = {target} + {expr};"

    sweep += reverse_sweep(list(split.mixed_nodes), adjoint, placeholder,
                           lambda n: f"g{index[n.serial]}",
                           lambda n: n.serial in mixed or n.serial in bset, accumulate)
    outputs = []
    for b in boundary:
        g = adjoint.get(b.serial)
        r0 = b_rows[b.serial]
        if b.kind == COMPLEX:
            outputs.append(f"    t[{r0}] = (double)({g}.re);" if g else f"    t[{r0}] = 0;")
            outputs.append(f"    t[{r0 + 1}] = (double)({g}.im);" if g else f"    t[{r0 + 1}] = 0;")
        else:
            outputs.append(f"    t[{r0}] = (double)({g});" if g else f"    t[{r0}] = 0;")

    ev_params = ", ".join([f"const {P}LdHead& h", *col_params, "const real_t* __restrict__ w",
                           "const long long i", "const int transform"])

    def event_fn(name: str, with_gradient: bool) -> list[str]:
        k = rows if with_gradient else 1
        what = "t[0] = w t(Re v)" + (", t[1..] boundary adjoints" if with_gradient else "")
        out = [f"// terms of event i: {what}; false when the value is not finite, or not "
               "positive under a positive transform",
               f"LD_FN bool {P}ld_{name}({ev_params}, double (&t)[{k}]) {{", *loads, *forward,
               f"    const real_t r = ld_re({root});",
               "    const real_t lo = transform != 0 ? (real_t)0 : -ld_inf();",
               "    if (!(r > lo && r < ld_inf())) return false;",
               "    const real_t wi = w[i];",
               "    t[0] = transform == 2 ? (double)wi * log((double)r) : (double)wi * (double)r;"]
        if with_gradient:
            out += ["    const real_t seed = transform == 2 ? wi / r : wi;", *sweep, *outputs]
        out += ["    return true;", "}"]
        return out

    value_fn = [f"LD_FN {ctype(split.root)} {P}ld_value({', '.join([f'const {P}LdHead& h', *col_params])}, "
                "const long long i) {", *loads, *forward, f"    return {root};", "}"]

    n_params = len(split.free)
    p_params = [f"const real_t p{j}" for j in range(n_params)]
    p_setup = [f"    const real_t p[{max(n_params, 1)}] = {{"
               + ", ".join(f"p{j}" for j in range(n_params)) + "};",
               f"    const {P}LdHead h = {P}ld_head(p);"]
    grid_loop = ("    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;"
                 " i += (long long)blockDim.x * gridDim.x) {")

    def kernel(role: str, extra: list[str], body: list[str]) -> list[str]:
        sig = ", ".join([*col_params, *extra, *p_params])
        return [f'extern "C" __global__ void __launch_bounds__({MAX_BLOCK}) {P}{role}({sig}) {{',
                *p_setup, *body, "}"]

    def sum_kernel(role: str, k: int, event: str) -> list[str]:
        body = [f"    double s{j} = 0, e{j} = 0, b{j} = 0;" for j in range(k)]
        body += [grid_loop, f"        double t[{k}];",
                 f"        if (!{P}ld_{event}(h, {', '.join(col_args + ['w', 'i', 'transform'])}, t)) {{",
                 "            ld_reject(bad, i);", "            continue;", "        }"]
        body += [f"        ld_acc(s{j}, e{j}, b{j}, t[{j}]);" for j in range(k)]
        body += ["    }"]
        body += [f"    ld_store(partial, {j}, s{j}, e{j}, b{j});" for j in range(k)]
        extra = ["const real_t* __restrict__ w", "const long long n", "const int transform",
                 "double* __restrict__ partial", "unsigned long long* __restrict__ bad"]
        return kernel(role, extra, body)

    def terms_kernel(role: str, k: int, event: str) -> list[str]:
        body = [grid_loop, f"        double t[{k}];",
                f"        if (!{P}ld_{event}(h, {', '.join(col_args + ['w', 'i', 'transform'])}, t)) {{",
                "            ld_reject(bad, i);",
                f"            for (int j = 0; j < {k}; ++j) t[j] = 0;", "        }",
                *[f"        out[{j}ll * n + i] = t[{j}];" for j in range(k)], "    }"]
        extra = ["const real_t* __restrict__ w", "const long long n", "const int transform",
                 "double* __restrict__ out", "unsigned long long* __restrict__ bad"]
        return kernel(role, extra, body)

    values_kernel = kernel(
        "values", ["const long long n", f"{ctype(split.root)}* __restrict__ out"],
        [grid_loop, f"        out[i] = {P}ld_value(h, {', '.join(col_args + ['i'])});", "    }"])

    body = [
        f"// ---- model {P or '(no prefix)'}: {len(split.cache)} cached columns, "
        f"{len(split.param_nodes)} parameter-only nodes, {len(split.mixed_nodes)} per-event nodes, "
        f"{rows} gradient rows",
        *head_struct, *head_fn, *value_fn,
        *event_fn("value_event", False), *event_fn("gradient_event", True),
        "#ifndef LADDU_HOST_EMULATION",
        *sum_kernel("value_sum", 1, "value_event"),
        *sum_kernel("gradient_sum", rows, "gradient_event"),
        *terms_kernel("value_terms", 1, "value_event"),
        *terms_kernel("gradient_terms", rows, "gradient_event"),
        *values_kernel,
        "#endif",
    ]
    text = "\n".join(body) + "\n"
    prelude = _prelude(precision)
    kernels = {role: P + role for role in ROLES}
    kernels["merge"] = MERGE_KERNEL
    digest = hashlib.sha256((prelude + text).encode()).hexdigest()[:24]
    return CudaSource(
        precision=precision, prefix=P, prelude=prelude, body=text, kernels=kernels,
        boundary=tuple(boundary), boundary_rows=tuple(b_rows[b.serial] for b in boundary),
        rows=rows, cache_kinds=tuple(n.kind for n in split.cache), n_params=n_params,
        root_kind=split.root.kind, digest=digest,
    )


# ---------------------------------------------------------------------------------------
# ahead-of-time compilation (tests, dry runs) and a host emulation of the event code
# ---------------------------------------------------------------------------------------
def compile_with_nvcc(source: str, arch: str = "sm_90", *, output: str | os.PathLike | None = None,
                      ptx: bool = False, options: Sequence[str] = DEFAULT_OPTIONS,
                      nvcc: str | None = None) -> Path:
    """Compile CUDA source with ``nvcc`` (device code only) and return the output file.

    Parameters
    ----------
    source : str
        A translation unit (:attr:`CudaSource.text` or :func:`combine_sources`).
    arch : str
        ``-arch`` of nvcc (``sm_90`` for H100/H200).
    output : path, optional
        The cubin (or PTX) to write; a temporary directory's file by default.
    ptx : bool
        Emit PTX instead of a cubin.
    options : sequence of str
        Further nvcc options (default :data:`DEFAULT_OPTIONS`).
    nvcc : str, optional
        The compiler (default ``nvcc`` on ``PATH``).

    Raises
    ------
    CudaCompileError
        nvcc is missing or rejects the source (its log is in the message).
    """
    exe = shutil.which(nvcc or "nvcc")
    if exe is None:
        raise CudaCompileError(f"{nvcc or 'nvcc'} not found; install the CUDA toolkit to compile kernels")
    folder = Path(tempfile.mkdtemp(prefix="laddu_dask_cuda_"))
    cu = folder / "kernels.cu"
    cu.write_text(source)
    out = Path(output) if output is not None else folder / ("kernels.ptx" if ptx else "kernels.cubin")
    cmd = [exe, f"-arch={arch}", "--ptx" if ptx else "--cubin", *options, "-o", str(out), str(cu)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CudaCompileError(
            f"nvcc failed ({' '.join(cmd)}), exit {proc.returncode}:\n{proc.stderr}{proc.stdout}"
        )
    return out


_HOST_SHIM = r"""// host emulation of the generated event code (tests): not for production
#define LADDU_HOST_EMULATION 1
#include <math.h>
#include <string.h>
#define __device__
#define __forceinline__ inline
#define __align__(n) alignas(n)
static inline double __dadd_ru(double a, double b) {  // a + b rounded upwards
    const double s = a + b, z = s - a, r = (a - (s - z)) + (b - z);
    return r > 0 ? nextafter(s, INFINITY) : s;
}
static inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
static inline double __longlong_as_double(long long x) { double f; memcpy(&f, &x, 8); return f; }
"""


def host_emulation_source(src: CudaSource) -> str:
    """C++ source running ``src``'s per-event code and sums on the host (for tests).

    Compile with ``g++ -std=c++17 -O1 -ffp-contract=off -shared -fPIC``; it exports
    ``PREFIXhost_terms(cols, w, n, transform, p, with_gradient, out)`` (``K x n``
    terms, returns the first rejected event or -1), ``PREFIXhost_values(cols, n, p, out)``
    and ``PREFIXhost_sum(cols, w, n, transform, p, with_gradient, threads, out)``,
    which accumulates like ``threads`` GPU threads and merges them pairwise into
    ``(s, e, bound)`` per row.  ``cols`` is an array of pointers to the cached columns.
    """
    P = src.prefix
    k_all = src.rows
    casts = ", ".join(
        f"(const {'cplx' if k == COMPLEX else 'real_t'}*)cols[{j}]" for j, k in enumerate(src.cache_kinds)
    )
    root_t = "cplx" if src.root_kind == COMPLEX else "real_t"
    sep = ", " if casts else ""
    harness = f"""
#include <vector>
template <int K, bool G>
static long long {P}host_run(const void* const* cols, const real_t* w, long long n, int transform,
                             const real_t* p, int threads, double* terms, double* sums) {{
    const {P}LdHead h = {P}ld_head(p);
    long long first = -1;
    std::vector<double> acc(3 * (size_t)K * threads, 0.0);
    for (long long i = 0; i < n; ++i) {{
        double t[K];
        bool ok;
        if constexpr (G) ok = {P}ld_gradient_event(h{sep}{casts}, w, i, transform, t);
        else ok = {P}ld_value_event(h{sep}{casts}, w, i, transform, t);
        if (!ok) {{
            if (first < 0) first = i;
            for (int j = 0; j < K; ++j) t[j] = 0.0;
        }}
        if (terms) for (int j = 0; j < K; ++j) terms[j * n + i] = t[j];
        if (sums && ok) {{
            double* a = &acc[3 * (size_t)K * (i % threads)];
            for (int j = 0; j < K; ++j) ld_acc(a[3 * j], a[3 * j + 1], a[3 * j + 2], t[j]);
        }}
    }}
    if (sums) {{
        for (int width = 1; width < threads; width *= 2)
            for (int th = 0; th + width < threads; th += 2 * width) {{
                double* a = &acc[3 * (size_t)K * th];
                double* b = &acc[3 * (size_t)K * (th + width)];
                for (int j = 0; j < K; ++j)
                    ld_merge(a[3 * j], a[3 * j + 1], a[3 * j + 2], b[3 * j], b[3 * j + 1], b[3 * j + 2]);
            }}
        for (int j = 0; j < K; ++j) {{
            sums[3 * j] = acc[3 * j];
            sums[3 * j + 1] = acc[3 * j + 1];
            sums[3 * j + 2] = acc[3 * j + 2];
        }}
    }}
    return first;
}}
extern "C" long long {P}host_terms(const void* const* cols, const real_t* w, long long n, int transform,
                                   const real_t* p, int with_gradient, double* out) {{
    return with_gradient ? {P}host_run<{k_all}, true>(cols, w, n, transform, p, 1, out, nullptr)
                         : {P}host_run<1, false>(cols, w, n, transform, p, 1, out, nullptr);
}}
extern "C" long long {P}host_sum(const void* const* cols, const real_t* w, long long n, int transform,
                                 const real_t* p, int with_gradient, int threads, double* out) {{
    return with_gradient ? {P}host_run<{k_all}, true>(cols, w, n, transform, p, threads, nullptr, out)
                         : {P}host_run<1, false>(cols, w, n, transform, p, threads, nullptr, out);
}}
extern "C" void {P}host_values(const void* const* cols, long long n, const real_t* p, void* out) {{
    const {P}LdHead h = {P}ld_head(p);
    for (long long i = 0; i < n; ++i) (({root_t}*)out)[i] = {P}ld_value(h{sep}{casts}, i);
}}
"""
    return _HOST_SHIM + src.text + harness


class HostEmulation:
    """The generated per-event code and sums compiled for the host with a C++ compiler.

    A check of the generated arithmetic on machines without a GPU (tests, dry runs):
    the same device functions run through :func:`host_emulation_source`.

    Parameters
    ----------
    src : CudaSource
        The generated source.
    folder : path, optional
        Where to build (a temporary directory by default).
    cxx : str
        The C++ compiler (``g++``).

    Raises
    ------
    CudaCompileError
        The compiler is missing or rejects the source.
    """

    def __init__(self, src: CudaSource, folder: str | os.PathLike | None = None,
                 cxx: str = "g++") -> None:
        import ctypes

        exe = shutil.which(cxx)
        if exe is None:
            raise CudaCompileError(f"{cxx} not found on PATH; the host emulation needs a C++ compiler")
        folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="laddu_dask_emu_"))
        cpp = folder / f"{src.prefix or 'model'}_{src.precision}_{src.digest}.cpp"
        lib = cpp.with_suffix(".so")
        cpp.write_text(host_emulation_source(src))
        cmd = [exe, "-std=c++17", "-O1", "-ffp-contract=off", "-shared", "-fPIC", "-o", str(lib), str(cpp)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise CudaCompileError(f"{cxx} failed ({' '.join(cmd)}):\n{proc.stderr}")
        self.src = src
        self.real = np.float32 if src.precision == "f32" else np.float64
        self._lib = ctypes.CDLL(str(lib))
        self._ctypes = ctypes
        for name in ("host_terms", "host_sum"):
            getattr(self._lib, src.prefix + name).restype = ctypes.c_longlong

    def _args(self, cache: Sequence[np.ndarray], params: Any) -> tuple[Any, np.ndarray, list]:
        ct = self._ctypes
        cols = []
        for c, kind in zip(cache, self.src.cache_kinds):
            dt = (np.complex64 if self.real is np.float32 else np.complex128) if kind == COMPLEX \
                else self.real
            cols.append(np.ascontiguousarray(c, dtype=dt))
        ptrs = (ct.c_void_p * max(1, len(cols)))(*[c.ctypes.data for c in cols])
        p = np.ascontiguousarray(params, dtype=self.real)
        return ptrs, p, cols

    def terms(self, cache: Sequence[np.ndarray], weights: np.ndarray, params: Any, transform: str,
              with_gradient: bool) -> tuple[np.ndarray, int]:
        """Per-event terms ``(K, n)`` and the first rejected event (or -1)."""
        ct = self._ctypes
        ptrs, p, _keep = self._args(cache, params)
        w = np.ascontiguousarray(weights, dtype=self.real)
        n = w.shape[0]
        out = np.zeros((self.src.rows if with_gradient else 1, n))
        bad = getattr(self._lib, self.src.prefix + "host_terms")(
            ptrs, w.ctypes.data_as(ct.c_void_p), ct.c_longlong(n), _transform_code(transform),
            p.ctypes.data_as(ct.c_void_p), int(with_gradient), out.ctypes.data_as(ct.c_void_p))
        return out, int(bad)

    def sums(self, cache: Sequence[np.ndarray], weights: np.ndarray, params: Any, transform: str,
             with_gradient: bool, threads: int = 64) -> tuple[np.ndarray, int]:
        """``(K, 3)`` (sum, compensation, bound) as ``threads`` GPU threads would leave them."""
        ct = self._ctypes
        ptrs, p, _keep = self._args(cache, params)
        w = np.ascontiguousarray(weights, dtype=self.real)
        k = self.src.rows if with_gradient else 1
        out = np.zeros((k, 3))
        bad = getattr(self._lib, self.src.prefix + "host_sum")(
            ptrs, w.ctypes.data_as(ct.c_void_p), ct.c_longlong(w.shape[0]), _transform_code(transform),
            p.ctypes.data_as(ct.c_void_p), int(with_gradient), int(threads),
            out.ctypes.data_as(ct.c_void_p))
        return out, int(bad)

    def values(self, cache: Sequence[np.ndarray], params: Any, n: int) -> np.ndarray:
        """The model value of every event."""
        ct = self._ctypes
        ptrs, p, _keep = self._args(cache, params)
        cdt = np.complex64 if self.real is np.float32 else np.complex128
        out = np.zeros(n, dtype=cdt if self.src.root_kind == COMPLEX else self.real)
        getattr(self._lib, self.src.prefix + "host_values")(
            ptrs, ct.c_longlong(n), p.ctypes.data_as(ct.c_void_p), out.ctypes.data_as(ct.c_void_p))
        return out


# ---------------------------------------------------------------------------------------
# running the kernels with CuPy
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GpuPartials:
    """What one partition's reduction returns to the host.

    Attributes
    ----------
    terms : numpy.ndarray
        ``(K, 2)`` float64: per row a (sum, compensation) pair whose exact sum is the
        row's sum up to ``bound``.
    bound : numpy.ndarray
        ``(K,)`` error bounds (``inf`` when a sum is not finite).
    bad_index : int
        First event (within the partition) whose value is not finite or a positive
        transform rejected, or ``-1``.
    bad_value : float or None
        The real part of that event's value.
    """

    terms: np.ndarray
    bound: np.ndarray
    bad_index: int = -1
    bad_value: float | None = None


def _cupy() -> Any:
    try:
        import cupy
    except ImportError as err:
        raise ImportError(
            "CuPy is not installed: the GPU kernels need it (pip install cupy-cuda13x, "
            "or cupy-cuda12x for a CUDA 12 driver)"
        ) from err
    return cupy


class CudaKernels:
    """The CUDA kernels of one model at one precision, compiled lazily by CuPy.

    Parameters
    ----------
    split : Split
        The classified graph (``CompiledModel.split``).
    precision : {"f64", "f32"}
        Arithmetic of the per-event part.
    block : int
        Threads per block of the reduction kernels (a multiple of 32).
    options : sequence of str
        NVRTC options.

    Attributes
    ----------
    source : CudaSource
        The generated source.
    backprop : callable
        ``backprop(params_f64, boundary_totals) -> gradient`` (NumPy, once per evaluation).
    boundary_size : int
        Rows of boundary adjoint sums.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> cm = ld.CompiledModel.from_expr((ld.parameter("a") * ld.scalar("x")).norm_sqr())
    >>> CudaKernels(cm.split, "f64").boundary_size  # nothing is compiled yet
    1
    """

    def __init__(self, split: Split, precision: str = "f64", *, block: int = DEFAULT_BLOCK,
                 options: Sequence[str] = DEFAULT_OPTIONS) -> None:
        if block <= 0 or block % 32 or block > MAX_BLOCK:
            raise ValueError(f"block must be a positive multiple of 32 up to {MAX_BLOCK}, got {block}")
        self.split = split
        self.precision = precision
        self.block = block
        self.options = tuple(options)
        self.source = generate_cuda_source(split, precision)
        self.real = np.float32 if precision == "f32" else np.float64
        self.complex = np.complex64 if precision == "f32" else np.complex128
        bp_source, bp_consts = _backprop_source(split, list(self.source.boundary))
        from laddu_dask.expr.arrayfuncs import make_complex, norm_sqr

        namespace: dict[str, Any] = {"np": np, "xp": np, "_complex": make_complex,
                                     "_norm_sqr": norm_sqr}
        namespace.update(bp_consts)
        exec(compile(bp_source, "<laddu_dask backprop>", "exec"), namespace)  # noqa: S102
        self.backprop = namespace["backprop"]
        self._lock = threading.Lock()
        self._modules: dict[int, Any] = {}
        self._functions: dict[tuple[str, int], Any] = {}
        self._grids: dict[tuple[str, int], int] = {}

    @property
    def boundary_size(self) -> int:
        """Rows of boundary adjoint sums."""
        return self.source.boundary_size

    def rows(self, with_gradient: bool) -> int:
        """Rows one reduction returns."""
        return self.source.rows if with_gradient else 1

    # -- compilation --------------------------------------------------------------------------
    def function(self, role: str) -> Any:
        """The compiled kernel of a role on the current device (compiles on first use)."""
        cp = _cupy()
        device = cp.cuda.Device().id
        fn = self._functions.get((role, device))
        if fn is not None:
            return fn
        with self._lock:
            module = self._modules.get(device)
            if module is None:  # one module per device: a loaded kernel belongs to one context
                try:
                    module = cp.RawModule(code=self.source.text, options=self.options)
                    if hasattr(module, "compile"):  # compile now, so errors surface here
                        module.compile()
                except cp.cuda.compiler.CompileException as err:
                    raise CudaCompileError(f"NVRTC rejected the generated kernels:\n{err}") from err
                self._modules[device] = module
            fn = module.get_function(self.source.kernels[role])
            self._functions[(role, device)] = fn
        return fn

    def _grid(self, role: str, n: int) -> int:
        cp = _cupy()
        device = cp.cuda.Device().id
        cap = self._grids.get((role, device))
        if cap is None:
            sms = cp.cuda.Device().attributes["MultiProcessorCount"]
            regs = _num_regs(self.function(role))
            per_sm = max(1, min(8, 2048 // self.block, 65536 // (regs * self.block)))
            cap = sms * per_sm
            self._grids[(role, device)] = cap
        return max(1, min(cap, -(-n // self.block)))

    # -- arguments ------------------------------------------------------------------------------
    def _columns(self, cache: Sequence[Any], n: int | None) -> tuple[list, int]:
        cp = _cupy()
        kinds = self.source.cache_kinds
        if len(cache) != len(kinds):
            raise DataError(f"the model reads {len(kinds)} cached columns, got {len(cache)}")
        cols = []
        for j, (c, kind) in enumerate(zip(cache, kinds)):
            dt = self.complex if kind == COMPLEX else self.real
            if not isinstance(c, cp.ndarray):
                raise DataError(f"cached column {j} is not a CuPy array (got {type(c).__name__})")
            if c.dtype != dt or c.ndim != 1 or not c.flags.c_contiguous:
                raise DataError(f"cached column {j} must be a contiguous 1-d {np.dtype(dt).name} "
                                f"array, got {c.dtype} of shape {c.shape}")
            if n is None:
                n = int(c.shape[0])
            elif c.shape[0] != n:
                raise DataError(f"cached column {j} has {c.shape[0]} events, expected {n}")
            cols.append(c)
        return cols, int(n or 0)

    def _params(self, params: Any) -> list:
        p = np.asarray(params, dtype=self.real).ravel()
        if p.shape[0] != self.source.n_params:
            raise ParameterError(f"expected {self.source.n_params} parameter values, got {p.shape[0]}")
        return [self.real(v) for v in p]

    def _weights(self, weights: Any, n: int) -> Any:
        cp = _cupy()
        if not isinstance(weights, cp.ndarray) or weights.dtype != self.real or weights.ndim != 1 \
                or not weights.flags.c_contiguous or weights.shape[0] != n:
            raise DataError(f"weights must be a contiguous 1-d CuPy {np.dtype(self.real).name} "
                            f"array of {n} events (one per cached event), got "
                            f"{type(weights).__name__} of shape {getattr(weights, 'shape', None)}")
        return weights

    # -- launches -----------------------------------------------------------------------------
    def reduce(self, cache: Sequence[Any], weights: Any, params: Any, transform: str,
               with_gradient: bool) -> GpuPartials:
        """Compensated sums of one partition on the device.

        Parameters
        ----------
        cache : sequence of cupy.ndarray
            The cached columns (real: ``float64``/``float32``; complex: ``complex128``/
            ``complex64``), contiguous, one value per event.
        weights : cupy.ndarray
            Event weights of the kernel precision.
        params : sequence of float
            Free parameter values in layout order.
        transform : {"real", "positive_real", "log_positive_real"}
            The reduction transform.
        with_gradient : bool
            Also sum the boundary adjoints (rows 1..).

        Returns
        -------
        GpuPartials
            ``3 K + 1`` doubles cross to the host (one device-to-host copy).
        """
        cp = _cupy()
        code = _transform_code(transform)
        cols, n = self._columns(cache, None)
        w = self._weights(weights, n)
        p = self._params(params)
        k = self.rows(with_gradient)
        if n == 0:
            return GpuPartials(np.zeros((k, 2)), np.zeros(k))
        role = "gradient_sum" if with_gradient else "value_sum"
        grid = self._grid(role, n)
        partial = cp.empty(3 * k * grid, dtype=cp.float64)
        bad = cp.zeros(1, dtype=cp.uint64)
        out = cp.empty(3 * k + 1, dtype=cp.float64)
        self.function(role)((grid,), (self.block,),
                            (*cols, w, np.int64(n), np.int32(code), partial, bad, *p))
        self.function("merge")((k,), (self.block,),
                               (partial, np.int64(grid), np.int32(k), bad, out))
        host = out.get()
        triples = host[: 3 * k].reshape(k, 3)
        bound = triples[:, 2].copy()
        bound[~np.isfinite(bound) | ~np.isfinite(triples[:, :2]).all(axis=1)] = np.inf
        index = int(host[3 * k])
        value = self._bad_value(cols, p, index) if index >= 0 else None
        return GpuPartials(np.ascontiguousarray(triples[:, :2]), bound, index, value)

    def terms(self, cache: Sequence[Any], weights: Any, params: Any, transform: str,
              with_gradient: bool) -> tuple[Any, int, float | None]:
        """Per-event terms ``(K, n)`` float64 on the device (the exact fallback).

        Returns the terms, the first rejected event (or ``-1``) and its value.
        """
        cp = _cupy()
        code = _transform_code(transform)
        cols, n = self._columns(cache, None)
        w = self._weights(weights, n)
        p = self._params(params)
        k = self.rows(with_gradient)
        out = cp.zeros((k, n), dtype=cp.float64)
        if n == 0:
            return out, -1, None
        role = "gradient_terms" if with_gradient else "value_terms"
        bad = cp.zeros(1, dtype=cp.uint64)
        self.function(role)((self._grid(role, n),), (self.block,),
                            (*cols, w, np.int64(n), np.int32(code), out, bad, *p))
        v = int(bad.get()[0])
        index = -1 if v == 0 else int(~np.uint64(v))
        return out, index, (self._bad_value(cols, p, index) if index >= 0 else None)

    def values(self, cache: Sequence[Any], params: Any, n: int | None = None) -> Any:
        """The model value of every event (a CuPy array of the kernel precision)."""
        cp = _cupy()
        cols, n = self._columns(cache, n)
        p = self._params(params)
        dt = self.complex if self.source.root_kind == COMPLEX else self.real
        out = cp.empty(n, dtype=dt)
        if n:
            self.function("values")((self._grid("values", n),), (self.block,),
                                    (*cols, np.int64(n), out, *p))
        return out

    def _bad_value(self, cols: list, p: list, index: int) -> float:
        one = self.values([c[index:index + 1] for c in cols], p, 1)
        return float(np.real(one.get()[0]))


def _num_regs(fn: Any) -> int:
    """Registers per thread of a compiled kernel (64 when the driver does not say)."""
    try:
        from cupy_backends.cuda.api import driver

        return max(16, int(driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_NUM_REGS, fn.ptr)))
    except Exception:  # noqa: BLE001 - an estimate is enough to size the grid
        return 64


def _transform_code(transform: str) -> int:
    try:
        return TRANSFORM_CODES[transform]
    except KeyError:
        raise ValueError(f"unknown reduction transform {transform!r}; use one of "
                         f"{', '.join(TRANSFORM_CODES)}") from None


_KERNELS: dict[tuple[str, str], CudaKernels] = {}
_KERNELS_LOCK = threading.Lock()


def cuda_kernels(split: Split, precision: str = "f64") -> CudaKernels:
    """The (shared) :class:`CudaKernels` of a split model; nothing compiles until a launch."""
    key_src = generate_cuda_source(split, precision)
    key = (key_src.digest, precision)
    with _KERNELS_LOCK:
        hit = _KERNELS.get(key)
        if hit is None:
            hit = CudaKernels(split, precision)
            _KERNELS[key] = hit
        return hit
