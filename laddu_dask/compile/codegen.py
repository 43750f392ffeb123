"""Generation of array kernels (NumPy or CuPy) from a split model graph.

Three Python functions are generated as source and compiled once per model:

``event_kernel(cols, xp)``
    the event-only part: columns in, the cache arrays out;
``value_kernel(cache, p, n, xp)``
    the parameter-dependent part: the value of every event;
``vjp_kernel(cache, p, n, seed, xp)``
    the value and, by one reverse sweep, ``Re(adjoint)`` of every free parameter per
    event, for a seed given as an array or a function of the value.

Each line of a kernel is one whole-array operation on the columns of a partition;
nothing is interpreted node by node per event.  Nodes that depend on parameters
only are computed once per call as NumPy scalars.  The generated source is kept on
the kernels (``kernel.source``) for inspection.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> from laddu_dask.compile.codegen import generate
>>> from laddu_dask.compile.graph import split
>>> x, a = ld.scalar("x"), ld.parameter("a")
>>> k = generate(split(x * a))
>>> cache = k.event_kernel({"x": np.array([1.0, 2.0])}, np)
>>> k.value_kernel(cache, (3.0,), 2, np)
array([3., 6.])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from laddu_dask.compile.gradient import python_accumulate, reverse_sweep
from laddu_dask.compile.graph import Split
from laddu_dask.expr.arrayfuncs import make_complex, norm_sqr
from laddu_dask.expr.node import Expr
from laddu_dask.expr.ops import OPS, REAL


@dataclass(frozen=True)
class Kernels:
    """The generated functions of one model and their source."""

    event_kernel: Callable[..., tuple]
    value_kernel: Callable[..., Any]
    vjp_kernel: Callable[..., tuple]
    source: str


def _broadcast(value: Any, n: int, xp: Any, dtype: Any) -> Any:
    """An ``(n,)`` array of ``value`` (value may already be an array)."""
    if getattr(value, "shape", ()) == (n,):
        return value
    return xp.full(n, value, dtype=dtype)


def _scalar_dtype(value: Any, p: Any) -> Any:
    real = np.float32 if len(p) and isinstance(p[0], np.float32) else np.float64
    if np.iscomplexobj(value):
        return np.complex64 if real is np.float32 else np.complex128
    return real


class _Writer:
    def __init__(self, split: Split) -> None:
        self.split = split
        self.index = {n.serial: i for i, n in enumerate(split.nodes)}
        self.consts: dict[str, Any] = {}

    def name(self, node: Expr) -> str:
        i = self.index[node.serial]
        if node.op == "const":
            key = f"k{i}"
            self.consts[key] = node.attr
            return key
        return f"v{i}"

    def line(self, node: Expr, module: str = "xp") -> str:
        args = [self.name(a) for a in node.args]
        expr = OPS[node.op].template.format(*args, attr=node.attr)
        if module != "xp":
            expr = expr.replace("xp.", f"{module}.")
        return f"    {self.name(node)} = {expr}"


def generate(split: Split) -> Kernels:
    """Generate the kernels of a split model (see the module docstring)."""
    w = _Writer(split)
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
            ev.append(f"    {w.name(node)} = cols[{node.attr!r}]")
        else:
            ev.append(w.line(node))
        # free temporaries after their last use: the peak stays a few arrays, not the graph
        dead = [
            w.name(a) for a in dict.fromkeys(node.args)
            if a.op != "const" and last_use.get(a.serial) == i and a.serial not in keep
        ]
        if dead:
            ev.append(f"    del {', '.join(dead)}")
    ev.append("    return (" + "".join(f"{w.name(n)}, " for n in split.cache) + ")")

    # -- forward part shared by value and vjp ------------------------------------------
    fwd: list[str] = []
    for node in split.cache:
        fwd.append(f"    {w.name(node)} = cache[{cache_pos[node.serial]}]")
    for node in split.free:
        fwd.append(f"    {w.name(node)} = p[{free_pos[node.serial]}]")
    for node in split.param_nodes:
        fwd.append(w.line(node, module="np"))
    for node in split.mixed_nodes:
        fwd.append(w.line(node))
    root = w.name(split.root)
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
    order = list(split.mixed_nodes) + list(split.param_nodes)
    order.sort(key=lambda n: w.index[n.serial])
    rev += reverse_sweep(order, adjoint, w.name, lambda n: f"g{w.index[n.serial]}",
                         lambda n: n.serial in pdep, python_accumulate)
    grads = []
    for node in split.free:
        g = adjoint.get(node.serial)
        grads.append(
            f"_broadcast(xp.real({g}), n, xp, _real_dtype(value))" if g else
            "xp.zeros(n, dtype=_real_dtype(value))"
        )
    rev.append("    return value, [" + ", ".join(grads) + "]")

    source = "\n".join(ev + [""] + val + [""] + rev) + "\n"
    namespace: dict[str, Any] = {
        "np": np,
        "_complex": make_complex,
        "_norm_sqr": norm_sqr,
        "_broadcast": _broadcast,
        "_scalar_dtype": _scalar_dtype,
        "_real_dtype": _real_dtype,
    }
    namespace.update({k: (complex(v) if isinstance(v, complex) else float(v)) for k, v in w.consts.items()})
    exec(compile(source, "<laddu_dask generated kernels>", "exec"), namespace)  # noqa: S102
    return Kernels(
        namespace["event_kernel"], namespace["value_kernel"], namespace["vjp_kernel"], source
    )


def _real_dtype(value: Any) -> Any:
    dt = getattr(value, "dtype", np.dtype(np.float64))
    return np.float32 if dt in (np.float32, np.complex64) else np.float64
