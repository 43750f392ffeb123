"""``CompiledModel``: a model's parameter layout, split graph and generated kernels.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> a = ld.parameter("a", initial=2.0)
>>> cm = ld.CompiledModel.from_expr((x.sin() * a).norm_sqr())
>>> cm.parameter_names, cm.columns
(['a'], ['x'])
>>> cache = cm.event_cache({"x": np.array([0.5])})
>>> float(cm.values(cache, [2.0])[0]) == float((np.sin(0.5) * 2.0) ** 2)
True
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

import numpy as np

from laddu_dask.compile.array_code import Kernels, broadcast, generate
from laddu_dask.compile.dtypes import complex_dtype, real_dtype
from laddu_dask.compile.graph import Split, split
from laddu_dask.compile.layout import ParameterValues, resolve_parameters
from laddu_dask.expr.arrayfuncs import array_module
from laddu_dask.expr.model import Model
from laddu_dask.expr.node import Expr
from laddu_dask.expr.ops import COMPLEX

__all__ = ["CompiledModel", "real_dtype"]

_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class CompiledModel:
    """A model compiled to array kernels.

    Use :meth:`from_expr`.  The compiled model is immutable and shared: compiling
    one expression twice returns the same object.

    Attributes
    ----------
    model : Model
        The model (parameters, columns).
    parameter_names : list of str
        The free parameters, in the order of parameter vectors.
    columns : list of str
        The event columns the event-only part reads.
    split : Split
        The classified graph.
    kernels : Kernels
        The generated functions (``kernels.source`` holds their source).
    """

    def __init__(self, model: Model) -> None:
        self.model = model
        self.split: Split = split(model.expr)
        self.kernels: Kernels = generate(self.split)
        self.parameter_names: list[str] = [n.attr.name for n in self.split.free]
        self.columns: list[str] = self.split.columns
        self.cache_kinds: list[str] = [n.kind for n in self.split.cache]
        self._decomposition: Any = False

    @property
    def decomposition(self) -> Any:
        """The model as ``sum_j |sum_k P_jk E_jk|^2``, or ``None`` (computed once).

        See :mod:`laddu_dask.compile.normalization`.
        """
        if self._decomposition is False:
            from laddu_dask.compile.normalization import decompose

            self._decomposition = decompose(self.split)
        return self._decomposition

    @classmethod
    def from_expr(cls, expr: Expr | Model) -> CompiledModel:
        """Compile an expression or a :class:`Model` (cached per expression)."""
        model = expr if isinstance(expr, Model) else Model(expr)
        root = model.expr
        hit = _COMPILED.get(root)
        if hit is None:
            hit = cls(model)
            _COMPILED[root] = hit
        return hit

    def __repr__(self) -> str:
        return (
            f"CompiledModel({len(self.parameter_names)} free parameters, "
            f"{len(self.split.event_nodes)} event-only nodes, {len(self.split.cache)} cached, "
            f"{len(self.split.mixed_nodes)} parameter-dependent per event)"
        )

    # -- layout -------------------------------------------------------------------
    def parameter_vector(self, params: ParameterValues, precision: str = "f64") -> tuple:
        """Parameter values in layout order as scalars of the requested precision.

        Accepts a sequence in :attr:`parameter_names` order or a mapping by name.
        """
        values = resolve_parameters(self.parameter_names, params)
        return tuple(np.array(values, dtype=real_dtype(precision)))

    def cache_bytes_per_event(self, precision: str = "f64") -> int:
        """Bytes one event's cached event-only values take (weights not included)."""
        size = np.dtype(real_dtype(precision)).itemsize
        return sum(2 * size if k == COMPLEX else size for k in self.cache_kinds)

    # -- evaluation ---------------------------------------------------------------------
    def event_cache(self, columns: Mapping[str, Any], precision: str = "f64") -> list:
        """Evaluate the event-only part on a batch of columns.

        Every cached array is contiguous, of length ``n`` and of the requested precision.
        """
        dt = real_dtype(precision)
        n = len(next(iter(columns.values()))) if columns else 0
        xp = array_module(*columns.values())
        cols = {k: xp.ascontiguousarray(v, dtype=dt) for k, v in columns.items()}
        with np.errstate(all="ignore"):
            raw = self.kernels.event_kernel(cols, xp)
        out = []
        for value, kind in zip(raw, self.cache_kinds):
            cdt = complex_dtype(dt) if kind == COMPLEX else dt
            a = broadcast(value, n, xp, cdt)
            out.append(a if a.dtype == cdt else a.astype(cdt))
        return out

    def values(self, cache: list, params: ParameterValues, n: int | None = None,
               precision: str = "f64") -> Any:
        """Per-event values of the model from a prepared cache."""
        p = params if isinstance(params, tuple) else self.parameter_vector(params, precision)
        n = _length(cache, n)
        xp = array_module(*cache)
        with np.errstate(all="ignore"):
            return self.kernels.value_kernel(cache, p, n, xp)

    def values_and_vjp(self, cache: list, params: ParameterValues, seed: Any,
                       n: int | None = None, precision: str = "f64") -> tuple[Any, list]:
        """Values and ``Re(adjoint)`` per event and free parameter for a seed.

        ``seed`` is an array, a number or a function of the values; the adjoints are
        ``d Re(conj(seed) * value) / d p`` per event.
        """
        p = params if isinstance(params, tuple) else self.parameter_vector(params, precision)
        n = _length(cache, n)
        xp = array_module(*cache)
        with np.errstate(all="ignore"):
            return self.kernels.vjp_kernel(cache, p, n, seed, xp)

    def values_and_jacobian(self, cache: list, params: ParameterValues, n: int | None = None,
                            precision: str = "f64") -> tuple[Any, Any]:
        """Values ``(n,)`` and complex derivatives ``(n, n_free)`` d value / d p per event."""
        value, re_part = self.values_and_vjp(cache, params, 1.0, n, precision)
        xp = array_module(value)
        k = len(self.parameter_names)
        jac = xp.zeros((len(value), k), dtype=complex_dtype(value.dtype))
        for j, g in enumerate(re_part):
            jac[:, j].real = g
        if self.split.root.kind == COMPLEX:
            _, im_part = self.values_and_vjp(cache, params, 1j, n, precision)
            for j, g in enumerate(im_part):
                jac[:, j].imag = g
        return value, jac


def _length(cache: list, n: int | None) -> int:
    if n is not None:
        return n
    if not cache:
        raise ValueError("a model without event columns needs the event count n")
    return len(cache[0])

