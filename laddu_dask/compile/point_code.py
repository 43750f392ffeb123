"""The normalization from sufficient statistics as compiled code at K points, and its tier-0 twin.

A fit of a few thousand events spends most of an evaluation outside its kernel: the
normalization ``sum_j s_j P_j^T M_j conj(P_j)`` from sufficient statistics
(:mod:`laddu_dask.compile.normalization`) is a few dozen operations on the coefficients,
and NumPy pays a call for each.  This module prints the whole of it (the coefficients from
the parameters, the quadratic forms, and, for the gradient, the adjoints of the
coefficients and the reverse sweep to the parameters) as one function, in two dialects:

* **Numba**: a loop over the K points of a round, scalar code per point, compiled once per
  model structure (the matrices are an argument, so every bin of a binned analysis shares
  the machine code) and cached on disk (:mod:`laddu_dask.compile.kernel_cache`);
* **tier-0**: the same statements on rows of K values, through the helpers of
  :mod:`laddu_dask.compile.tier0_prelude`, which compute Numba's scalar arithmetic bit for
  bit; it runs until the Numba function is compiled.

Both read ``p`` (``(n_free, K)``, model order), ``m`` (:func:`pack`) and write ``values``
(``(K,)``) and, for ``gradient_points``, ``grads`` (``(n_free, K)``).  The quadratic forms
are written in real arithmetic, the same text in both dialects, each sum left to right: a
point's numbers are the same whichever dialect runs, and whatever K is.

Examples
--------
>>> import laddu_dask as ld
>>> from laddu_dask.compile.normalization import decompose
>>> wave = ld.polar_complex(ld.parameter("mag"), ld.parameter("phase")) * ld.scalar("x")
>>> code = point_sources(decompose(ld.CompiledModel.from_expr(wave.norm_sqr()).split))
>>> sorted(code.dims)
['gradient_points', 'value_points']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from laddu_dask.compile import tier0_prelude
from laddu_dask.compile.fused import NumbaPrinter, _const_src, _prelude_import
from laddu_dask.compile.graph import Split
from laddu_dask.compile.sweep import PythonPrinter
from laddu_dask.compile.tier0 import Tier0Printer
from laddu_dask.errors import ModelError
from laddu_dask.expr.ops import COMPLEX, REAL

if TYPE_CHECKING:
    from laddu_dask.compile.normalization import Decomposition

__all__ = ["PointSources", "backprop_sources", "pack", "point_sources", "tier0_functions"]


@dataclass(frozen=True)
class PointSources:
    """The printed normalization of one model structure.

    Attributes
    ----------
    numba : str
        The Numba module's source (``value_points`` and ``gradient_points``).
    tier0 : str
        The tier-0 twin's source (the same two functions, on rows of K values).
    tier0_consts : dict
        The tier-0 source's constants.
    dims : dict
        Each function's name and the dimensions of its arguments (float64, C-contiguous).
    """

    numba: str
    tier0: str
    tier0_consts: dict
    dims: dict[str, tuple[int, ...]]


def pack(matrices: list[np.ndarray]) -> np.ndarray:
    """The matrices ``M_j`` as the ``m`` argument: for each, every entry's real and
    imaginary part, row by row.

    Examples
    --------
    >>> pack([np.array([[1.0, 2 + 3j], [2 - 3j, 4.0]])]).tolist()
    [1.0, 0.0, 2.0, 3.0, 2.0, -3.0, 4.0, 0.0]
    """
    if not matrices:
        return np.zeros(0)
    return np.ascontiguousarray(np.concatenate(
        [np.stack([m.real, m.imag], axis=-1).ravel() for m in matrices]), dtype=np.float64)


class _Writer:
    """The statements of one dialect: ``numba`` scalar code inside the loop over points, or
    tier-0 code on rows of points."""

    def __init__(self, nodes: list, numba: bool) -> None:
        self.numba = numba
        self.pr: PythonPrinter = NumbaPrinter(nodes, "f64") if numba else Tier0Printer(nodes)
        self.indent = "        " if numba else "    "
        self.pr.indent = self.indent
        self.lines: list[str] = []

    def line(self, text: str) -> None:
        self.lines.append(self.indent + text)

    def load(self, node: Any, row: int) -> None:
        self.line(f"{self.pr.name(node)} = p[{row}, k]" if self.numba else f"{self.pr.name(node)} = p[{row}]")

    def part(self, var: str, kind: str, which: str) -> str:
        """The real or imaginary part of a variable of ``kind``."""
        if kind == REAL:
            return var if which == "real" else "0.0"
        if self.numba:
            return f"{var}.{which}"
        return self.pr.part(var, which)  # type: ignore[attr-defined]

    def seed(self, node: Any, target: str, re: str, im: str) -> None:
        """Start the adjoint ``target`` of ``node`` at ``re + i im`` (its real part, when the
        node is real)."""
        if node.kind == COMPLEX:
            self.line(f"{target} = complex({re}, {im})" if self.numba else f"{target} = ({re}, {im})")
        else:
            self.line(f"{target} = {re}")
        if not self.numba:
            self.pr.kinds[target] = node.kind  # type: ignore[attr-defined]

    def store(self, array: str, row: int | None, expr: str) -> None:
        if self.numba:
            self.line(f"{array}[{'' if row is None else f'{row}, '}k] = {expr}")
        else:
            self.line(f"{array}[{'' if row is None else row}{':' if row is None else ''}] = {expr}")


def _ordered(terms: list[str]) -> str:
    """``((t0 + t1) + t2) ...`` as text."""
    out = terms[0]
    for t in terms[1:]:
        out = f"({out} + {t})"
    return out


def _program(w: _Writer, d: Decomposition, gradient: bool) -> None:
    """The statements of ``value_points`` (or ``gradient_points``) into ``w``."""
    cs = d.coefficient_split
    free_rows = [d.free_names.index(n.attr.name) for n in cs.free]
    for node, row in zip(cs.free, free_rows, strict=True):
        w.load(node, row)
    w.lines += w.pr.forward(cs.param_nodes, w.indent)
    # each coefficient's real and imaginary parts (a constant's as literals)
    index = {n.serial: n for n in cs.nodes}
    parts: list[tuple[str, str]] = []
    nodes: list[Any] = []
    for j, expr in enumerate(d.coefficient_nodes):
        if expr.op == "const":
            v = complex(expr.attr)
            parts.append((repr(v.real), repr(v.imag)))
            nodes.append(None)
            continue
        node = index[expr.serial]
        name = w.pr.name(node)
        a, b = f"a{j}", f"b{j}"
        w.line(f"{a} = {w.part(name, node.kind, 'real')}")
        w.line(f"{b} = {w.part(name, node.kind, 'imag')}")
        parts.append((a, b))
        nodes.append(node)
    # the quadratic forms: cm_l = sum_i P_i M_il, q = Re sum_l cm_l conj(P_l), value = sum s q
    seeds: dict[int, list[tuple[str, str]]] = {}
    n_p = sum(d.sizes)
    pos = 0
    base = 0
    qs = []
    for j, size in enumerate(d.sizes):
        s = parts[n_p + j][0]
        for col in range(size):
            re_terms, im_terms = [], []
            for i in range(size):
                a, b = parts[pos + i]
                mr, mi = f"m[{base + 2 * (i * size + col)}]", f"m[{base + 2 * (i * size + col) + 1}]"
                re_terms.append(f"(({a} * {mr}) - ({b} * {mi}))")
                im_terms.append(f"(({a} * {mi}) + ({b} * {mr}))")
            w.line(f"cr{j}_{col} = {_ordered(re_terms)}")
            w.line(f"ci{j}_{col} = {_ordered(im_terms)}")
        w.line(f"q{j} = " + _ordered([f"((cr{j}_{c} * {parts[pos + c][0]}) + "
                                      f"(ci{j}_{c} * {parts[pos + c][1]}))" for c in range(size)]))
        qs.append(f"({s} * q{j})")
        if gradient:
            w.line(f"s2_{j} = (2.0 * {s})")
            for c in range(size):
                if nodes[pos + c] is not None:
                    seeds.setdefault(pos + c, []).append((f"(s2_{j} * cr{j}_{c})", f"(s2_{j} * ci{j}_{c})"))
            if nodes[n_p + j] is not None:
                seeds.setdefault(n_p + j, []).append((f"q{j}", "0.0"))
        pos += size
        base += 2 * size * size
    w.line(f"value = {_ordered(qs)}")
    w.store("values", None, "value")
    if not gradient:
        return
    # the coefficients' adjoints (conjugate convention; one node may fill several slots),
    # then one reverse sweep over the parameter-only nodes
    adjoint: dict[int, str] = {}
    by_node: dict[int, list[tuple[str, str]]] = {}
    order: list[Any] = []
    for slot, pieces in sorted(seeds.items()):
        node = nodes[slot]
        if node.serial not in by_node:
            by_node[node.serial] = []
            order.append(node)
        by_node[node.serial].extend(pieces)
    for node in order:
        pieces = by_node[node.serial]
        target = w.pr.adjoint_name(node)
        w.seed(node, target, _ordered([p[0] for p in pieces]), _ordered([p[1] for p in pieces]))
        adjoint[node.serial] = target
    pdep = {n.serial for n in cs.param_nodes + cs.free}
    w.lines += w.pr.sweep(cs.param_nodes, adjoint, lambda n: n.serial in pdep)
    _store_gradient(w, cs.free, free_rows, adjoint, len(d.free_names))


def _store_gradient(w: _Writer, free: Any, rows: list[int], adjoint: dict[int, str], n: int) -> None:
    """``grads[row] = Re(adjoint of the free node)`` for each free node, 0 for other rows."""
    done = set()
    for node, row in zip(free, rows, strict=True):
        g = adjoint.get(node.serial)
        if g is None:
            expr = "0.0"
        elif w.numba:
            expr = f"np.float64({g}.real)"
        else:
            expr = w.part(g, w.pr.kinds.get(g, REAL), "real")  # type: ignore[attr-defined]
        w.store("grads", row, expr)
        done.add(row)
    for row in range(n):
        if row not in done:
            w.store("grads", row, "0.0")


def _assemble(nodes: list, functions: dict[str, tuple[str, Any]]) -> PointSources | None:
    """The two dialects of ``functions`` (name: (argument list, ``emit(writer)``)), or
    ``None`` when an operation has no tier-0 helper."""
    numba_fns, tier0_fns = [], []
    consts_nb: dict[str, Any] = {}
    consts_t0: dict[str, Any] = {}
    try:
        for name, (args, emit) in functions.items():
            nb, t0 = _Writer(nodes, True), _Writer(nodes, False)
            emit(nb)
            emit(t0)
            numba_fns.append("\n".join([f"@_nb\ndef {name}({args}):", "    for k in range(p.shape[1]):",
                                        *nb.lines]))
            tier0_fns.append("\n".join([f"def {name}({args}):", *t0.lines]))
            consts_nb.update(nb.pr.consts)  # type: ignore[attr-defined]
            consts_t0.update(t0.pr.consts)  # type: ignore[attr-defined]
    except ModelError:
        return None
    consts = "\n".join(f"{k} = {_const_src(v)}" for k, v in sorted(consts_nb.items()))
    numba = _prelude_import() + "\n" + consts + "\n\n\n" + "\n\n\n".join(numba_fns) + "\n"
    dims = {name: tuple(1 if a in ("m", "values") else 2 for a in args.split(", "))
            for name, (args, _) in functions.items()}
    return PointSources(numba, "\n\n\n".join(tier0_fns) + "\n", consts_t0, dims)


def point_sources(d: Decomposition) -> PointSources | None:
    """The Numba and tier-0 sources of ``d``'s normalization (``value_points(p, m, values)``,
    ``gradient_points(p, m, values, grads)``), or ``None`` when an operation of its
    coefficients has no tier-0 helper or a coefficient is not a node of their graph."""
    if d.coefficient_split is None:
        return None
    index = {n.serial for n in d.coefficient_split.nodes}
    if any(e.op != "const" and e.serial not in index for e in d.coefficient_nodes):
        return None
    return _assemble(list(d.coefficient_split.nodes), {
        "value_points": ("p, m, values", lambda w: _program(w, d, False)),
        "gradient_points": ("p, m, values, grads", lambda w: _program(w, d, True)),
    })


def _backprop(w: _Writer, split: Split, boundary: list) -> None:
    """The statements of ``backprop_points``: the boundary adjoints' rows of ``totals`` through
    the parameter-only nodes to ``grads``."""
    for row, node in enumerate(split.free):
        w.load(node, row)
    w.lines += w.pr.forward(split.param_nodes, w.indent)
    adjoint: dict[int, str] = {}
    row = 0
    for b in boundary:
        target = w.pr.adjoint_name(b)
        adjoint[b.serial] = target
        at = (lambda r: f"totals[{r}, k]") if w.numba else (lambda r: f"totals[{r}]")
        w.seed(b, target, at(row), at(row + 1))
        row += 2 if b.kind == COMPLEX else 1
    pdep = {n.serial for n in split.param_nodes + split.free}
    w.lines += w.pr.sweep(split.param_nodes, adjoint, lambda n: n.serial in pdep)
    _store_gradient(w, split.free, list(range(len(split.free))), adjoint, len(split.free))


def backprop_sources(split: Split, boundary: list) -> PointSources | None:
    """``backprop_points(p, totals, grads)``: the fused kernels' backprop
    (:func:`~laddu_dask.compile.array_code.backprop_function`, batched) in both dialects, or
    ``None`` when an operation has no tier-0 helper."""
    return _assemble(list(split.nodes), {"backprop_points": ("p, totals, grads",
                                                             lambda w: _backprop(w, split, boundary))})


def tier0_functions(sources: PointSources) -> dict[str, Any]:
    """The tier-0 twin's functions (Python), by name."""
    namespace: dict[str, Any] = {"np": np, **sources.tier0_consts}
    namespace.update((k, v) for k, v in vars(tier0_prelude).items() if not k.startswith("__"))
    exec(compile(sources.tier0, "<laddu-dask tier-0 normalization>", "exec"), namespace)  # noqa: S102 - printed here
    return {k: namespace[k] for k in sources.dims}
