"""The Numba printer: fused CPU kernels, one compiled pass over a partition per evaluation.

From the split graph of a model this module prints Numba source (the operations in the
spellings of the spec, :mod:`laddu_dask.expr.ops`, below the text of
:mod:`laddu_dask.compile.numba_prelude`), compiled once and cached on disk by
:mod:`laddu_dask.compile.kernel_cache` (a second process loads the machine code instead
of recompiling).  Its main functions:

``value_sum``
    for every event: the parameter-dependent part, the reduction transform
    ``w t(Re v)``, and a compensated (TwoSum) accumulation of the terms;
``gradient_sum``
    the same plus one reverse sweep per event, accumulating the adjoints of the
    *boundary* nodes (the parameter-only values the per-event part reads).

No per-node temporary array is materialised.  Nodes that depend on parameters only
are evaluated once per call, and their contribution to the gradient is applied once
per evaluation to the merged boundary sums by :attr:`FusedKernels.backprop` (the
chain rule is linear in the adjoints), so the work per event does not grow with the
parameter-only part of the model.

Each partition returns its (sum, compensation) pairs; they are merged exactly
across partitions.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> from laddu_dask.compile.fused import fused_kernels
>>> x, a = ld.scalar("x"), ld.parameter("a")
>>> cm = ld.CompiledModel.from_expr((a * x + 1.0).norm_sqr())
>>> fk = fused_kernels(cm.split, "f64")
>>> fk.boundary_size
1
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from laddu_dask.compile.array_code import backprop_function
from laddu_dask.compile.graph import Split, boundary_rows
from laddu_dask.compile.kernel_cache import load_module
from laddu_dask.compile.plan import TRANSFORM_CODES
from laddu_dask.compile.sweep import PythonPrinter
from laddu_dask.expr.node import Expr
from laddu_dask.expr.ops import COMPLEX, REAL, SPEC

__all__ = ["BLOCK", "TRANSFORM_CODES", "FusedKernels", "NumbaPrinter", "fused_kernels",
           "generate_fused_source", "kernel_signature"]

#: Events per block of the fused sums (the buffer of one block stays in L1/L2).
BLOCK = 512

#: The helpers every kernel module imports: :mod:`laddu_dask.compile.numba_prelude`'s text.
PRELUDE = (Path(__file__).parent / "numba_prelude.py").read_text()


def prelude() -> Any:
    """The prelude's module in the kernel cache folder (loaded once per process; Numba
    compiles its helpers once per machine and shares them between all models)."""
    return load_module(PRELUDE, "prelude")


def _prelude_import() -> str:
    """The head of a kernel module: the prelude's names, imported from its module."""
    mod = prelude()
    names = sorted(n for n, v in vars(mod).items()
                   if n.startswith("_") and not n.startswith("__") and not isinstance(v, type(np)))
    return f"import math\n\nimport numpy as np\n\nfrom {mod.__name__} import {', '.join(names)}\n"


@dataclass(frozen=True)
class FusedKernels:
    """The compiled fused kernels of one model at one precision.

    Attributes
    ----------
    value_sum, gradient_sum : callable
        ``f(cache_0, ..., cache_m, weights, params, transform, acc, bad) -> bad_index``;
        ``acc`` is a ``(K, 5)`` float64 array receiving two (sum, compensation) pairs
        whose exact total is the row's sum up to the error bound in the last
        column: row 0 the terms ``w t(Re v)``, rows 1.. the
        boundary adjoints (gradient only).  ``bad_index`` is ``-1``, or the first event whose
        value is not finite or is not positive under a positive transform (its value is put
        in ``bad[0]``).
    value_terms, gradient_terms : callable
        The same per-event terms written to ``out`` (``(K, n)``) instead of summed,
        for the exact path.
    values : callable
        ``values(cache_0, ..., cache_m, params, out)``: the model value per event.
    backprop : callable
        ``backprop(params, boundary_totals) -> gradient`` (NumPy, once per evaluation
        round): ``params`` ``(n, K)`` and ``boundary_totals`` ``(rows, K)``, K points at once,
        the gradients ``(n, K)``; each column is the same arithmetic whatever K is.
    boundary_size : int
        Rows of boundary adjoint sums (a complex boundary node takes two).
    source : str
        The generated source.
    cache_kinds, precision : tuple of str, str
        The kinds of the cache columns and the kernel precision (the argument types).
    module_source : str
        The source of the kernel module (what :func:`load_module` was given).
    """

    value_sum: Callable[..., int]
    gradient_sum: Callable[..., int]
    value_terms: Callable[..., int]
    gradient_terms: Callable[..., int]
    values: Callable[..., None]
    backprop: Callable[..., np.ndarray]
    boundary_size: int
    source: str
    cache_kinds: tuple[str, ...] = ()
    precision: str = "f64"
    module_source: str = ""

    def signature(self, with_gradient: bool) -> tuple:
        """Numba's argument types of :attr:`gradient_sum` (or :attr:`value_sum`) as the
        runtime calls it (:func:`kernel_signature`)."""
        return kernel_signature(self.precision, self.cache_kinds)

    def on_disk(self, with_gradient: bool) -> bool:
        """Whether Numba's disk cache holds machine code of the blocked sum (so that
        :meth:`compile_ahead` loads instead of compiling); ``False`` when unknown."""
        fn = self.gradient_sum if with_gradient else self.value_sum
        try:
            index = fn._cache._cache_file._index_path  # Numba's index of the cached overloads
        except AttributeError:
            return False
        return os.path.exists(index)

    def compile_ahead(self, with_gradient: bool) -> bool:
        """Compile (or load from Numba's disk cache) the blocked sum an evaluation calls,
        before the first call needs it; ``False`` when it was ready already.

        Examples
        --------
        >>> import laddu_dask as ld
        >>> x, a = ld.scalar("x"), ld.parameter("a")
        >>> fk = fused_kernels(ld.CompiledModel.from_expr((a * x).norm_sqr()).split)
        >>> len(fk.signature(False))  # x, weights, parameters, transform, acc, bad
        6
        """
        fn = self.gradient_sum if with_gradient else self.value_sum
        sig = self.signature(with_gradient)
        if sig in fn.overloads:
            return False
        fn.compile(sig)
        return True


def kernel_signature(precision: str, cache_kinds: tuple[str, ...]) -> tuple:
    """Numba's argument types of a blocked sum as the runtime calls it: C-contiguous caches,
    weights and parameters of the kernel precision, the transform code, and the float64
    ``acc`` and ``bad`` arrays."""
    from numba import types

    real = types.float32 if precision == "f32" else types.float64
    cplx = types.complex64 if precision == "f32" else types.complex128
    caches = [types.Array(cplx if k == COMPLEX else real, 1, "C") for k in cache_kinds]
    return (*caches, types.Array(real, 1, "C"), types.Array(real, 1, "C"), types.int64,
            types.Array(types.float64, 2, "C"), types.Array(types.float64, 1, "C"))


class NumbaPrinter(PythonPrinter):
    """Scalar Numba source: the spec's Numba spellings; constants are module-level names
    of the kernel precision (exact hexadecimal literals)."""

    backend = "Numba"
    indent = "        "  # the reverse sweep runs inside the loop over events

    def __init__(self, nodes: list[Expr], precision: str) -> None:
        super().__init__(nodes)
        self.consts: dict[str, Any] = {}
        self.f32 = precision == "f32"

    def constant(self, node: Expr) -> str:
        key = f"k{self.index[node.serial]}"
        v = node.attr
        if isinstance(v, complex):
            self.consts[key] = np.complex64(v) if self.f32 else complex(v)
        else:
            self.consts[key] = np.float32(v) if self.f32 else float(v)
        return key

    def form(self, op: str, kinds: tuple[str, ...], forward: bool) -> str | None:
        return SPEC[op].numba_form(kinds, forward)


def generate_fused_source(split: Split, precision: str = "f64") -> tuple[str, dict, list[Expr]]:
    """Numba source of the fused kernels, their constants, and the boundary nodes."""
    if split.root.serial not in {n.serial for n in split.mixed_nodes}:
        raise ValueError("fused kernels need a root that depends on events and parameters")
    nm = NumbaPrinter(list(split.nodes), precision)
    boundary, b_rows, row = boundary_rows(split)
    cache_args = [f"c{j}" for j in range(len(split.cache))]
    cache_pos = {n.serial: j for j, n in enumerate(split.cache)}
    free_pos = {n.serial: j for j, n in enumerate(split.free)}
    root = nm.name(split.root)
    real_root = split.root.kind == REAL
    cast = "np.float32" if precision == "f32" else "np.float64"

    head: list[str] = []
    for node in split.free:
        head.append(f"    {nm.name(node)} = p[{free_pos[node.serial]}]")
    for node in split.param_nodes:
        head.append(nm.assign(node, "    "))
    loads = [f"        {nm.name(n)} = c{cache_pos[n.serial]}[i]" for n in split.cache]
    forward = nm.forward(split.mixed_nodes, "        ")
    rv = root if real_root else f"{root}.real"

    # The value is rounded to the kernel precision (Numba promotes some f32 intermediates to
    # f64), then the transform, the term and the seed are computed in f64: the same
    # arithmetic in the blocked sums, the exact-path terms and ``values``, so which path
    # runs never changes a result.
    value = f"np.float64({cast}({rv}))"
    # every transform needs a finite value, the positive ones a positive value: one test per
    # event, ``lo < r < inf`` (branch-free over a block in the blocked sums, which look for
    # the first bad event only in a block that fails)
    lowest = "    lo = -np.inf if transform == 0 else 0.0"

    def term(emit) -> list[str]:
        return [
            f"        r = {value}",
            "        if not (r > lo and r < np.inf):",
            "            bad[0] = r",
            "            return i",
            "        wi = np.float64(w[i])",
            "        if transform == 2:",
            "            seed = wi / r",
            "            r = np.log(r)",
            "        else:",
            "            seed = wi",
            emit(0, "wi * r"),
        ]

    # reverse sweep over per-event nodes, accumulating boundary adjoints
    mixed = {n.serial for n in split.mixed_nodes}
    bset = set(b_rows)
    sweep: list[str] = [f"        g_root = {cast}(seed)"]
    adjoint: dict[int, str] = {split.root.serial: "g_root"}
    sweep += nm.sweep(split.mixed_nodes, adjoint, lambda n: n.serial in mixed or n.serial in bset)

    def rev(emit) -> list[str]:
        out = list(sweep)
        for b in boundary:
            g = adjoint.get(b.serial)
            r0 = b_rows[b.serial]
            if g is None:
                continue
            if b.kind == COMPLEX:
                out.append(emit(r0, f"np.float64({g}.real)"))
                out.append(emit(r0 + 1, f"np.float64({g}.imag)"))
            else:
                out.append(emit(r0, f"np.float64({g})"))
        return out

    def out_emit(j: int, x: str) -> str:
        return f"        out[{j}, i] = {x}"

    def function(name: str, body: list[str]) -> str:
        sig = ", ".join(cache_args + ["w", "p", "transform", "out", "bad"])
        lines = [f"@_nb\ndef {name}({sig}):", *head, lowest, "    for i in range(w.shape[0]):",
                 *loads, *forward, *body, "    return -1"]
        return "\n".join(lines)

    def blocked(name: str, with_gradient: bool) -> str:
        """Blocks of events: an elementwise (vectorisable) pass over slices of the
        columns fills buffer rows with the values and boundary adjoints, then the rows
        are checked, transformed and accumulated."""
        rows = row if with_gradient else 1
        sig = ", ".join(cache_args + ["w", "p", "transform", "acc", "bad"])
        lines = [f"@_nb\ndef {name}({sig}):", *head, lowest,
                 "    n = w.shape[0]",
                 "    log_t = transform == 2",
                 f"    buf = np.empty(({rows}, BLOCK))",
                 f"    lanes = np.zeros(({rows}, 6))",
                 "    qbuf = np.empty(BLOCK)",
                 "    tbuf = np.empty(BLOCK)",
                 "    rbuf = np.empty(BLOCK)",
                 "    blocks = 0",
                 *[f"    row{j} = buf[{j}]" for j in range(rows)],
                 "    for start in range(0, n, BLOCK):",
                 "        stop = min(start + BLOCK, n)",
                 "        bw_ = w[start:stop]",
                 *[f"        b{a} = {a}[start:stop]" for a in cache_args]]
        block_loads = [f"            {nm.name(nd)} = bc{cache_pos[nd.serial]}[k]" for nd in split.cache]
        body = ["    " + x for x in forward] + [f"            r = {value}", "            row0[k] = r"]
        # one copy of the sweep for every transform: the seed is w / r under the log
        # transform and w / 1.0 (exactly w) otherwise
        lines.append("        for k in range(bw_.shape[0]):")
        lines += block_loads + body
        if with_gradient:
            lines += ["            wi = np.float64(bw_[k])",
                      "            seed = wi / (r if log_t else 1.0)"]
            lines += ["    " + x for x in rev(lambda j, x: f"        row{j}[k] = {x}")]
        lines += [
            "        m = bw_.shape[0]",
            "        ok = True",
            "        if transform == 2:",
            "            for k in range(m):",
            "                r = row0[k]",
            "                ok &= (r > lo) & (r < np.inf)",
            "                tbuf[k] = np.float64(bw_[k]) * np.log(r)",
            "        else:",
            "            for k in range(m):",
            "                r = row0[k]",
            "                ok &= (r > lo) & (r < np.inf)",
            "                tbuf[k] = np.float64(bw_[k]) * r",
            "        if not ok:",
            "            for k in range(m):",
            "                if not (row0[k] > lo and row0[k] < np.inf):",
            "                    bad[0] = np.float64(row0[k])",
            "                    return start + k",
            "        _accumulate(tbuf, m, lanes[0], qbuf, rbuf)",
            f"        for j in range(1, {rows}):",
            "            _accumulate(buf[j], m, lanes[j], qbuf, rbuf)",
            "        blocks += 1",
            "    # TwoSum cascades over 2 * blocks values: error <= 2 (2 blocks u)^2 sum|values|",
            "    cascade = 2.0 * (2.0 * blocks) ** 2 * _U2 * 1.01",
            "    for j in range(lanes.shape[0]):",
            "        acc[j, 0] = lanes[j, 0]",
            "        acc[j, 1] = lanes[j, 1]",
            "        acc[j, 2] = lanes[j, 2]",
            "        acc[j, 3] = lanes[j, 3]",
            "        acc[j, 4] = (lanes[j, 4] + cascade * lanes[j, 5]) * 1.01",
            "    return -1",
        ]
        return "\n".join(lines)

    values_fn = "\n".join([
        "@_nb\ndef values(" + ", ".join(cache_args + ["p", "out"]) + "):", *head,
        "    for i in range(out.shape[0]):", *loads, *forward, f"        out[i] = {root}",
    ])
    functions = [
        blocked("value_sum", False),
        blocked("gradient_sum", True),
        function("value_terms", term(out_emit)),
        function("gradient_terms", term(out_emit) + rev(out_emit)),
        values_fn,
    ]
    consts = "\n".join(f"{k} = {_const_src(v)}" for k, v in sorted(nm.consts.items()))
    consts += f"\nBLOCK = {BLOCK}"
    source = _prelude_import() + "\n" + consts + "\n\n\n" + "\n\n\n".join(functions) + "\n"
    return source, nm.consts, boundary


def _const_src(v: Any) -> str:
    if isinstance(v, np.float32):
        return f"np.float32(float.fromhex({float(v).hex()!r}))"
    if isinstance(v, np.complex64):
        c = complex(v)
        return f"np.complex64(complex(float.fromhex({c.real.hex()!r}), float.fromhex({c.imag.hex()!r})))"
    if isinstance(v, complex):
        return f"complex(float.fromhex({v.real.hex()!r}), float.fromhex({v.imag.hex()!r}))"
    return f"float.fromhex({float(v).hex()!r})"


def fused_kernels(split: Split, precision: str = "f64") -> FusedKernels:
    """Generate, compile (or load from the disk cache) the fused kernels of ``split``."""
    source, _, boundary = generate_fused_source(split, precision)
    mod = load_module(source)
    backprop, bp_source = backprop_function(split, boundary, batched=True)
    size = sum(2 if b.kind == COMPLEX else 1 for b in boundary)
    return FusedKernels(mod.value_sum, mod.gradient_sum, mod.value_terms, mod.gradient_terms,
                        mod.values, backprop, size, source + "\n\n" + bp_source,
                        tuple(n.kind for n in split.cache), precision, source)
