"""Tier-0 kernels: the fused kernels' per-event terms, computed by NumPy while Numba compiles.

A model's first evaluation used to wait for Numba to compile its fused kernels (seconds
for a line-shape model, more for a K-matrix).  The tier-0 kernel removes that wait: it is
printed from the same split graph, the same walk and the same reverse sweep as the fused
``value_terms`` / ``gradient_terms`` (:mod:`laddu_dask.compile.fused`), but each statement
runs on a block of events at once, through the helpers of
:mod:`laddu_dask.compile.tier0_prelude`, which compute what Numba's scalar code computes,
bit for bit.  Its per-event terms are therefore the fused kernel's own, and so are the
exact sums and the gradient: which kernel served an evaluation never changes a result.
It needs no compilation (it is Python source executed once), and runs several times
slower than the fused kernel, so the runtime uses it only until the fused kernel is ready
(:class:`laddu_dask.runtime.reducer.PartitionReducer`).

A model with an operation (or operand kinds) that has no tier-0 helper, or a kernel in
float32, has no tier-0 kernel (:func:`tier0_kernel` returns ``None``); its first
evaluation waits for Numba as before.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> from laddu_dask.compile.tier0 import tier0_kernel
>>> x, a = ld.scalar("x"), ld.parameter("a")
>>> k = tier0_kernel(ld.CompiledModel.from_expr((a * x + 1.0).norm_sqr()).split)
>>> out, bad, _ = k(np.array([1.0, 2.0]), np.ones(2), np.array([0.5]), 0, True)
>>> out.tolist(), bad
([[2.25, 4.0], [3.0, 8.0]], -1)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from laddu_dask.compile import tier0_prelude as prelude
from laddu_dask.compile.graph import Split, boundary_rows
from laddu_dask.compile.sweep import PythonPrinter
from laddu_dask.errors import ModelError
from laddu_dask.expr.node import Expr
from laddu_dask.expr.ops import COMPLEX, REAL, SPEC, Term

__all__ = ["BLOCK", "Tier0Printer", "generate_tier0_source", "tier0_kernel"]

#: Events per block of a tier-0 evaluation (a block's temporaries stay in cache).
BLOCK = 16384

#: Operations whose real form is the spec's array template (IEEE-exact in NumPy as in Numba).
_EXACT_REAL = frozenset({"add", "sub", "mul", "div", "neg"})


class Tier0Printer(PythonPrinter):
    """The fused kernels' statements as calls of the tier-0 helpers.

    A complex value is a pair of arrays, so the printer tracks the kind every variable has
    in the Numba kernel (an adjoint's kind is that of its last contribution, as Numba's
    SSA types it) and picks the helper for the operands' actual kinds.
    """

    backend = "tier-0"
    indent = "        "

    def __init__(self, nodes: list[Expr]) -> None:
        super().__init__(nodes)
        self.consts: dict[str, Any] = {}
        self.kinds: dict[str, str] = {}
        self.last_kind = REAL

    def name(self, node: Expr) -> str:
        code = super().name(node)
        self.kinds[code] = node.kind
        return code

    def constant(self, node: Expr) -> str:
        key = f"k{self.index[node.serial]}"
        v = node.attr
        self.consts[key] = (float(v.real), float(v.imag)) if isinstance(v, complex) else float(v)
        return key

    def number(self, value: int | float | complex) -> str:
        if isinstance(value, complex):
            return f"({value.real!r}, {value.imag!r})"
        return repr(value)

    def form(self, op: str, kinds: tuple[str, ...], forward: bool) -> str | None:
        letters = "".join("c" if k == COMPLEX else "r" for k in kinds)
        if op in _EXACT_REAL and COMPLEX not in kinds:
            return SPEC[op].value
        helper = f"fdiv_{letters}" if (op == "div" and forward and kinds[1] == COMPLEX) else f"{op}_{letters}"
        if not hasattr(prelude, helper):
            return None
        args = ", ".join(f"{{{i}}}" for i in range(len(kinds)))
        return f"{helper}({args}, {{attr}})" if op == "powi" else f"{helper}({args})"

    def apply(self, op: str, args, kinds, attr: Any = None, forward: bool = False) -> str:
        if op == "powi" and COMPLEX in kinds and attr != 2:  # Numba's cpow: no tier-0 form
            raise ModelError(f"a complex power {attr} has no {self.backend} spelling")
        return super().apply(op, args, kinds, attr, forward)

    def term(self, t: Term, leaves: dict[str, str]) -> str:
        code, self.last_kind = self._term(t, leaves)
        return code

    def _term(self, t: Term, leaves: dict[str, str]) -> tuple[str, str]:
        if t.op == "symbol":
            var = leaves[t.attr]
            return var, self.kinds.get(var, t.kind)
        if t.op == "number":
            return self.number(t.attr), COMPLEX if isinstance(t.attr, complex) else REAL
        parts = [self._term(a, leaves) for a in t.args]
        kinds = tuple(k for _, k in parts)
        return self.apply(t.op, [c for c, _ in parts], kinds, t.attr), SPEC[t.op].kind(kinds)

    def accumulate(self, arg: Expr, target: str, src: str, kind: str, first: bool) -> str:
        kind = self.last_kind  # the actual kind of ``src``, not the rule's
        if arg.kind == REAL and kind == COMPLEX:
            src, kind = self.apply("real", [src], [COMPLEX]), REAL
        if first:
            self.kinds[target] = kind
            return f"{self.indent}{target} = {src}"
        prev = self.kinds[target]
        self.kinds[target] = COMPLEX if COMPLEX in (prev, kind) else REAL
        return f"{self.indent}{target} = {self.apply('add', [target, src], [prev, kind])}"

    def part(self, var: str, which: str) -> str:
        """The real or imaginary part of a variable, by its actual kind."""
        return self.apply(which, [var], [self.kinds.get(var, REAL)])


def generate_tier0_source(split: Split) -> tuple[str, dict[str, Any]]:
    """The tier-0 kernel's source (a function ``terms``) and its constants.

    Raises
    ------
    ModelError
        An operation of the model has no tier-0 helper.
    """
    if split.root.serial not in {n.serial for n in split.mixed_nodes}:
        raise ModelError("a tier-0 kernel needs a root that depends on events and parameters")
    pr = Tier0Printer(list(split.nodes))
    boundary, b_rows, rows = boundary_rows(split)
    cache_args = [f"c{j}" for j in range(len(split.cache))]
    free_pos = {n.serial: j for j, n in enumerate(split.free)}

    lines = [f"def terms({', '.join(cache_args)}, w, p, transform, with_gradient):"]
    for node in split.free:
        lines.append(f"    {pr.name(node)} = p[{free_pos[node.serial]}:{free_pos[node.serial] + 1}]")
    lines += [pr.assign(n, "    ") for n in split.param_nodes]
    for j, node in enumerate(split.cache):
        if node.kind == COMPLEX:
            lines.append(f"    c{j}r, c{j}i = c{j}.real, c{j}.imag")
    lines += [
        "    n = w.shape[0]",
        f"    out = np.zeros(({rows} if with_gradient else 1, n))",
        "    lo = -np.inf if transform == 0 else 0.0",
        f"    for start in range(0, n, {BLOCK}):",
        f"        s = slice(start, min(start + {BLOCK}, n))",
    ]
    for j, node in enumerate(split.cache):
        load = f"(c{j}r[s], c{j}i[s])" if node.kind == COMPLEX else f"c{j}[s]"
        lines.append(f"        {pr.name(node)} = {load}")
    lines += pr.forward(split.mixed_nodes, "        ")
    root = pr.name(split.root)
    rv = root if split.root.kind == REAL else pr.part(root, "real")
    lines += [
        f"        r = np.broadcast_to(np.asarray({rv}, dtype=np.float64), (s.stop - start,))",
        "        ok = (r > lo) & (r < np.inf)",
        "        if not ok.all():",
        "            k = int(np.argmin(ok))",
        "            return out, start + k, float(r[k])",
        "        wi = w[s]",
        "        if transform == 2:",
        "            seed = wi / r",
        "            r = log_r(r)",
        "        else:",
        "            seed = wi",
        "        out[0, s] = wi * r",
        "        if not with_gradient:",
        "            continue",
        "        g_root = seed",
    ]
    mixed = {n.serial for n in split.mixed_nodes}
    adjoint: dict[int, str] = {split.root.serial: "g_root"}
    pr.kinds["g_root"] = REAL
    lines += pr.sweep(split.mixed_nodes, adjoint, lambda nd: nd.serial in mixed or nd.serial in b_rows)
    for b in boundary:
        g = adjoint.get(b.serial)
        if g is None:
            continue
        r0 = b_rows[b.serial]
        if b.kind == COMPLEX:
            lines.append(f"        out[{r0}, s] = {pr.part(g, 'real')}")
            lines.append(f"        out[{r0 + 1}, s] = {pr.part(g, 'imag')}")
        else:
            lines.append(f"        out[{r0}, s] = {g}")
    lines.append("    return out, -1, 0.0")
    return "\n".join(lines) + "\n", pr.consts


def tier0_kernel(split: Split, precision: str = "f64") -> Callable[..., tuple] | None:
    """The tier-0 kernel of a split model, or ``None`` when it has none (float32, or an
    operation without a tier-0 helper).

    The kernel is ``terms(cache_0, ..., cache_m, weights, params, transform,
    with_gradient) -> (out, bad_index, bad_value)``: ``out`` the rows the fused
    ``gradient_terms`` (or ``value_terms``) writes, ``bad_index`` ``-1`` or the first event
    whose value the transform rejects.  It raises
    :class:`~laddu_dask.compile.tier0_prelude.Tier0Fallback` where Numba would raise.
    """
    if precision != "f64":
        return None
    try:
        source, consts = generate_tier0_source(split)
    except ModelError:
        return None
    namespace: dict[str, Any] = {"np": np, **consts}
    namespace.update((k, v) for k, v in vars(prelude).items() if not k.startswith("__"))
    code = compile(source, "<laddu-dask tier-0 kernel>", "exec")
    exec(code, namespace)  # noqa: S102 - source printed here from the model's graph
    fn = namespace["terms"]
    fn.source = source  # type: ignore[attr-defined]
    return fn
