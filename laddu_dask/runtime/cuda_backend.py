"""The CUDA launcher: the printed CUDA kernels of a model, compiled and run with CuPy.

:mod:`laddu_dask.compile.cuda` prints the source; :class:`CudaKernels` compiles it with
NVRTC (``cupy.RawModule``) on first use on each device, checks and passes the arguments
each kernel declares, sizes the grid, and decodes what the merge kernel returns
(:class:`GpuPartials`).  Nothing here needs a GPU until a launch.

Examples
--------
>>> import laddu_dask as ld
>>> from laddu_dask.runtime.cuda_backend import cuda_kernels
>>> cm = ld.CompiledModel.from_expr((ld.parameter("a") * ld.scalar("x")).norm_sqr())
>>> cuda_kernels(cm.split, "f64").rows(True)
2
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from laddu_dask.compile.array_code import backprop_function
from laddu_dask.compile.cuda import (
    DEFAULT_OPTIONS,
    MAX_BLOCK,
    CudaCompileError,
    generate_cuda_source,
)
from laddu_dask.compile.dtypes import complex_dtype, real_dtype
from laddu_dask.compile.graph import Split
from laddu_dask.compile.plan import transform_code
from laddu_dask.errors import DataError, ParameterError
from laddu_dask.expr.ops import COMPLEX

__all__ = ["DEFAULT_BLOCK", "CudaKernels", "GpuPartials", "cuda_kernels"]

#: Threads per block of the kernels (a multiple of the warp size, at most MAX_BLOCK).
DEFAULT_BLOCK = 256


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
        self.real = real_dtype(precision)
        self.complex = complex_dtype(self.real)
        self.backprop, _ = backprop_function(split, self.source.boundary)
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
        code = transform_code(transform)
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
        code = transform_code(transform)
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
