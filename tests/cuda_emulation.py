"""A host emulation of the printed CUDA source (tests and dry runs without a GPU).

:func:`host_emulation_source` wraps the per-event device functions and the compensated
sums of a :class:`~laddu_dask.compile.cuda.CudaSource` in a small C++ harness;
:class:`HostEmulation` compiles it with g++ and runs it through ``ctypes``, so the printed
arithmetic is checked against the CPU kernels on a machine without a GPU.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from laddu_dask.compile.cuda import CudaCompileError, CudaSource
from laddu_dask.compile.dtypes import complex_dtype
from laddu_dask.compile.plan import transform_code
from laddu_dask.expr.ops import COMPLEX

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
            dt = complex_dtype(self.real) if kind == COMPLEX else self.real
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
            ptrs, w.ctypes.data_as(ct.c_void_p), ct.c_longlong(n), transform_code(transform),
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
            ptrs, w.ctypes.data_as(ct.c_void_p), ct.c_longlong(w.shape[0]), transform_code(transform),
            p.ctypes.data_as(ct.c_void_p), int(with_gradient), int(threads),
            out.ctypes.data_as(ct.c_void_p))
        return out, int(bad)

    def values(self, cache: Sequence[np.ndarray], params: Any, n: int) -> np.ndarray:
        """The model value of every event."""
        ct = self._ctypes
        ptrs, p, _keep = self._args(cache, params)
        out = np.zeros(n, dtype=complex_dtype(self.real) if self.src.root_kind == COMPLEX else self.real)
        getattr(self._lib, self.src.prefix + "host_values")(
            ptrs, ct.c_longlong(n), p.ctypes.data_as(ct.c_void_p), out.ctypes.data_as(ct.c_void_p))
        return out
