"""The array-code printer (NumPy or CuPy): whole-array kernels and the per-evaluation code.

From a split model graph it prints three Python functions, compiled once per model:

``event_kernel(cols, xp)``
    the event-only part: columns in, the cache arrays out;
``value_kernel(cache, p, n, xp)``
    the parameter-dependent part: the value of every event;
``vjp_kernel(cache, p, n, seed, xp)``
    the value and, by one reverse sweep, ``Re(adjoint)`` of every free parameter per
    event, for a seed given as an array or a function of the value.

Each line of a kernel is one whole-array operation on the columns of a partition;
nothing is interpreted node by node per event.  Nodes that depend on parameters only
are computed once per call as NumPy scalars.  The same printer writes the NumPy code run
once per evaluation by the other backends: :func:`backprop_function` (the chain rule
through the parameter-only part, from the boundary adjoints the fused and CUDA kernels
sum) and :func:`parameter_function` (the coefficients of the sufficient statistics).
All of it runs in one namespace, :func:`run`.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> from laddu_dask.compile.array_code import generate
>>> from laddu_dask.compile.graph import split
>>> x, a = ld.scalar("x"), ld.parameter("a")
>>> k = generate(split(x * a))
>>> cache = k.event_kernel({"x": np.array([1.0, 2.0])}, np)
>>> k.value_kernel(cache, (3.0,), 2, np)
array([3., 6.])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from laddu_dask.compile.dtypes import complex_dtype, real_part_dtype
from laddu_dask.compile.graph import Split
from laddu_dask.compile.sweep import PythonPrinter
from laddu_dask.expr.graph import walk
from laddu_dask.expr.node import Expr
from laddu_dask.expr.ops import COMPLEX, REAL, SPEC, array_namespace


class ArrayPrinter(PythonPrinter):
    """Array code: the spec's ``value`` templates, with ``module`` (``xp`` or ``np``) for ``xp``.

    Constants are names (``k<i>``) of :attr:`consts`, the namespace the code runs in.
    """

    backend = "array"

    def __init__(self, nodes: Sequence[Expr], module: str = "xp",
                 consts: dict[str, Any] | None = None) -> None:
        super().__init__(nodes)
        self.module = module
        self.consts: dict[str, Any] = {} if consts is None else consts

    def constant(self, node: Expr) -> str:
        key = f"k{self.index[node.serial]}"
        v = node.attr
        self.consts[key] = complex(v) if isinstance(v, complex) else float(v)
        return key

    def form(self, op: str, kinds: tuple[str, ...], forward: bool) -> str:
        template = SPEC[op].value
        return template if self.module == "xp" else template.replace("xp.", f"{self.module}.")


def run(source: str, names: dict[str, Any], filename: str) -> dict[str, Any]:
    """Execute printed array code in the spec's namespace plus ``names``; its globals."""
    namespace = array_namespace()
    namespace.update(names)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - printed from the spec
    return namespace


def broadcast(value: Any, n: int, xp: Any, dtype: Any = None) -> Any:
    """An ``(n,)`` array of ``value`` (returned as it is when it already is one); ``dtype``
    ``None``: the value's own."""
    if getattr(value, "shape", ()) == (n,):
        return value
    return xp.full(n, value, dtype=dtype)


def _scalar_dtype(value: Any, p: Any) -> Any:
    real = np.float32 if len(p) and isinstance(p[0], np.float32) else np.float64
    return complex_dtype(real) if np.iscomplexobj(value) else real


def _real_dtype(value: Any) -> Any:
    return real_part_dtype(getattr(value, "dtype", np.float64))


@dataclass(frozen=True)
class Kernels:
    """The generated functions of one model and their source."""

    event_kernel: Callable[..., tuple]
    value_kernel: Callable[..., Any]
    vjp_kernel: Callable[..., tuple]
    source: str


def generate(split: Split) -> Kernels:
    """Print and compile the array kernels of a split model (see the module docstring)."""
    pr = ArrayPrinter(split.nodes)
    scalar = ArrayPrinter(split.nodes, "np", pr.consts)  # parameter-only nodes: NumPy scalars
    cache_pos = {n.serial: j for j, n in enumerate(split.cache)}
    free_pos = {n.serial: j for j, n in enumerate(split.free)}

    # -- event kernel -------------------------------------------------------------
    ev = ["def event_kernel(cols, xp):"]
    last_use: dict[int, int] = {}
    for i, node in enumerate(split.event_nodes):
        for a in node.args:
            last_use[a.serial] = i
    keep = {n.serial for n in split.cache}
    for i, node in enumerate(split.event_nodes):
        if node.op == "column":
            ev.append(f"    {pr.name(node)} = cols[{node.attr!r}]")
        else:
            ev.append(pr.assign(node))
        # free temporaries after their last use: the peak stays a few arrays, not the graph
        dead = [
            pr.name(a) for a in dict.fromkeys(node.args)
            if a.op != "const" and last_use.get(a.serial) == i and a.serial not in keep
        ]
        if dead:
            ev.append(f"    del {', '.join(dead)}")
    ev.append("    return (" + "".join(f"{pr.name(n)}, " for n in split.cache) + ")")

    # -- forward part shared by value and vjp ------------------------------------------
    fwd = [f"    {pr.name(n)} = cache[{cache_pos[n.serial]}]" for n in split.cache]
    fwd += [f"    {pr.name(n)} = p[{free_pos[n.serial]}]" for n in split.free]
    fwd += scalar.forward(split.param_nodes) + pr.forward(split.mixed_nodes)
    root = pr.name(split.root)
    fwd.append(f"    value = _broadcast({root}, n, xp, _scalar_dtype({root}, p))")

    val = ["def value_kernel(cache, p, n, xp):", *fwd, "    return value"]

    # -- reverse sweep ----------------------------------------------------------------
    rev = ["def vjp_kernel(cache, p, n, seed, xp):", *fwd]
    rev.append("    seed = seed(value) if callable(seed) else seed")
    pdep = split.param_dependent()
    adjoint: dict[int, str] = {}
    if split.root.serial in pdep:
        adjoint[split.root.serial] = "g_root"
        # a real root keeps the real part of a complex seed: d Re(conj(s) v) = Re(s) dv
        rev.append("    g_root = seed" + (".real" if split.root.kind == REAL else ""))
    order = sorted(split.mixed_nodes + split.param_nodes, key=lambda n: pr.index[n.serial])
    rev += pr.sweep(order, adjoint, lambda n: n.serial in pdep)
    grads = [
        f"_broadcast(xp.real({adjoint[n.serial]}), n, xp, _real_dtype(value))" if n.serial in adjoint
        else "xp.zeros(n, dtype=_real_dtype(value))"
        for n in split.free
    ]
    rev.append("    return value, [" + ", ".join(grads) + "]")

    source = "\n".join(ev + [""] + val + [""] + rev) + "\n"
    names = {"_broadcast": broadcast, "_scalar_dtype": _scalar_dtype, "_real_dtype": _real_dtype,
             **pr.consts}
    ns = run(source, names, "<laddu_dask generated kernels>")
    return Kernels(ns["event_kernel"], ns["value_kernel"], ns["vjp_kernel"], source)


def backprop_function(split: Split, boundary: Sequence[Expr], batched: bool = False) -> tuple[Callable, str]:
    """``backprop(p, totals) -> gradient`` over the parameter-only nodes, and its source.

    ``totals`` holds the summed adjoints of the boundary nodes (a complex node's real and
    imaginary parts in two rows, :func:`~laddu_dask.compile.graph.boundary_rows`); ``p``
    the free parameters as float64.  ``batched``: ``p`` is ``(n_free, K)`` and ``totals``
    ``(rows, K)``, K points at once, and the gradient ``(n_free, K)``; each column is the
    same elementwise arithmetic whatever K is.
    """
    pr = ArrayPrinter(split.nodes, "np")
    free_pos = {n.serial: j for j, n in enumerate(split.free)}
    lines = ["def backprop(p, totals):"]
    lines += [f"    {pr.name(n)} = p[{free_pos[n.serial]}]" if batched else
              f"    {pr.name(n)} = np.float64(p[{free_pos[n.serial]}])" for n in split.free]
    lines += pr.forward(split.param_nodes)
    adjoint: dict[int, str] = {}
    row = 0
    for b in boundary:
        target = pr.adjoint_name(b)
        adjoint[b.serial] = target
        if b.kind == COMPLEX:
            pair = f"totals[{row}], totals[{row + 1}]"
            lines.append(f"    {target} = _complex({pair})" if batched else f"    {target} = complex({pair})")
            row += 2
        else:
            lines.append(f"    {target} = totals[{row}]")
            row += 1
    pdep = {n.serial for n in split.param_nodes + split.free}
    lines += pr.sweep(split.param_nodes, adjoint, lambda n: n.serial in pdep)
    if batched:
        grads = [f"np.real({adjoint[n.serial]})" if n.serial in adjoint else "0.0" for n in split.free]
        lines.append("    return np.array(np.broadcast_arrays(" + ", ".join(grads) +
                     ", p[0]), dtype=np.float64)[:-1]")
    else:
        grads = [f"float(({adjoint[n.serial]}).real)" if n.serial in adjoint else "0.0" for n in split.free]
        lines.append("    return np.array([" + ", ".join(grads) + "], dtype=np.float64)")
    source = "\n".join(lines) + "\n"
    return run(source, pr.consts, "<laddu_dask backprop>")["backprop"], source


def parameter_function(exprs: Sequence[Expr], free_names: Sequence[str],
                       batched: bool = False) -> Callable[[Any], list]:
    """``f(p) -> [value of each expression]`` for parameter-only expressions, ``p`` float64
    values of ``free_names`` (``batched``: rows of K values each, and each value is K
    values, or one when it does not depend on the parameters)."""
    order: list[Expr] = []
    seen: set[int] = set()
    for e in exprs:
        for n in walk(e):
            if n.serial not in seen:
                seen.add(n.serial)
                order.append(n)
    pr = ArrayPrinter(order, "np")
    free = list(free_names)
    lines = ["def parameters(p):"]
    for n in order:
        if n.op == "param":
            lines.append(f"    {pr.name(n)} = p[{free.index(n.attr.name)}]" if batched else
                         f"    {pr.name(n)} = np.float64(p[{free.index(n.attr.name)}])")
        elif n.op not in ("const", "column"):
            lines.append(pr.assign(n))
    lines.append("    return [" + ", ".join(pr.name(e) for e in exprs) + "]")
    return run("\n".join(lines) + "\n", pr.consts, "<laddu_dask parameters>")["parameters"]
