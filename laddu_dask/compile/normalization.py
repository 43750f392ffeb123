"""Sufficient statistics of a normalization integral.

When a model is a sum of squared moduli of amplitudes that are linear in
parameter-only coefficients,

    I = sum_j s_j(p) | sum_k P_jk(p) E_jk(event) |^2,

(``s_j`` a real event-independent scale, 1 unless the model multiplies a square by one),
the weighted sum over accepted Monte Carlo is

    sum_i w_i I_i = sum_j s_j sum_{k,l} P_jk conj(P_jl) M_j,kl,
    M_j,kl = sum_i w_i E_jk,i conj(E_jl,i),

so once the Hermitian matrices ``M_j`` are summed (once per dataset) the
normalization and its gradient cost ``O(K^2)`` per evaluation instead of a pass over
the events.  :func:`decompose` finds the ``P`` and ``E`` factors by expanding sums,
products and quotients of the graph; it returns ``None`` when the model has another
form (a mass-dependent width with a free mass, say), and the event loop is used.

Examples
--------
>>> import laddu_dask as ld
>>> from laddu_dask.compile.normalization import decompose
>>> x = ld.scalar("x")
>>> c = ld.complex(ld.parameter("re"), ld.parameter("im"))
>>> d = decompose(ld.CompiledModel.from_expr((c * x + x * x).norm_sqr()).split)
>>> d.sizes
[2]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from laddu_dask.compile.array_code import Kernels, backprop_function, broadcast, generate, parameter_function
from laddu_dask.compile.graph import Split, boundary, split
from laddu_dask.expr.arrayfuncs import array_module
from laddu_dask.expr.graph import walk
from laddu_dask.expr.node import Expr, apply, column, constant

#: Most products one amplitude may expand to before the decomposition gives up.
MAX_TERMS = 64

_Pair = tuple[Expr, Expr]  # (parameter-only factor, event-only factor)


@dataclass(frozen=True)
class Decomposition:
    """A model as ``sum_j s_j |sum_k P_jk E_jk|^2``.

    Attributes
    ----------
    groups : list of list of (Expr, Expr)
        For each squared amplitude, its ``(P, E)`` pairs.
    event_split : Split
        A graph whose cache holds every event-dependent ``E`` (evaluated per partition).
    event_slots : list of list of int or complex
        Position of each ``E_jk`` in ``event_split.cache``, or its value when it is a
        constant (the amplitude has a term without event dependence).
    event_kernels : Kernels
        Generated array code of ``event_split`` (its ``event_kernel`` gives the cache).
    coefficients : callable
        ``coefficients(params) -> (list of complex arrays, real array)``: the ``P_j`` and
        the scales ``s_j``, params in model order.
    backprop : callable
        ``backprop(params, adjoints) -> gradient``, adjoints (conjugate convention) of the
        ``P`` flattened over groups, then of the ``s``, as (re, im) pairs (a list of
        floats, or an array).
    scales : list of Expr or None
        The real event-independent factor ``s_j`` of each square (``None``: 1).
    coefficient_split : Split or None
        The graph of every coefficient ``P_jk`` (then every scale ``s_j``), as complex values.
    coefficient_nodes : list of Expr
        Those coefficients' nodes in ``coefficient_split`` (constants where they are).
    free_names : list of str
        The model's free parameters, in order (the rows of a point).
    """

    groups: list[list[_Pair]]
    event_split: Split
    event_slots: list[list[int | complex]]
    event_kernels: Kernels
    coefficients: Callable[[Any], tuple[list[np.ndarray], np.ndarray]]
    backprop: Callable[[Any, Any], np.ndarray]
    scales: list[Expr | None] = field(default_factory=list)
    coefficient_split: Split | None = None
    coefficient_nodes: list[Expr] = field(default_factory=list)
    free_names: list[str] = field(default_factory=list)

    @property
    def sizes(self) -> list[int]:
        """Number of amplitude terms in each group."""
        return [len(g) for g in self.groups]

    @property
    def columns(self) -> list[str]:
        """Event columns the factors ``E`` read."""
        return self.event_split.columns

    def matrix_terms(self, columns: dict, weights: Any) -> Any:
        """Per-event terms of every ``M_j`` as real rows ``(sum_j K_j^2, n)``: each ``M_j`` is
        Hermitian, so only its upper triangle is summed, a diagonal entry ``w |E_k|^2`` as one
        real row and an entry above it, ``w E_k conj(E_l)``, as two (real, imaginary)."""
        xp = array_module(weights)
        with np.errstate(all="ignore"):
            cache = self.event_kernels.event_kernel(columns, xp)
        n = len(weights)
        cache = [broadcast(c, n, xp) for c in cache]
        rows = []
        for slots in self.event_slots:
            e = [cache[s] if isinstance(s, int) else broadcast(s, n, xp) for s in slots]
            for k in range(len(e)):
                wek = weights * e[k]
                rows.append(xp.real(wek * xp.conj(e[k])))
                for l in range(k + 1, len(e)):
                    prod = wek * xp.conj(e[l])
                    rows.append(xp.real(prod))
                    rows.append(xp.imag(prod))
        return xp.stack(rows)

    def matrices(self, totals: np.ndarray) -> list[np.ndarray]:
        """The Hermitian ``M_j`` from summed :meth:`matrix_terms` rows (the lower triangle the
        conjugate of the upper one)."""
        out, pos = [], 0
        for size in self.sizes:
            m = np.zeros((size, size), dtype=np.complex128)
            for k in range(size):
                m[k, k] = totals[pos]
                pos += 1
                for l in range(k + 1, size):
                    m[k, l] = complex(totals[pos], totals[pos + 1])
                    m[l, k] = complex(totals[pos], -totals[pos + 1])
                    pos += 2
            out.append(m)
        return out

    def value_and_gradient(self, params: Any, matrices: list[np.ndarray],
                           with_gradient: bool) -> tuple[float, np.ndarray | None]:
        """``sum_j s_j P_j^T M_j conj(P_j)`` and its gradient with respect to the parameters
        (:meth:`values_and_gradients` at one point)."""
        values, grads = self.values_and_gradients(np.asarray(params, dtype=np.float64)[None, :], matrices,
                                                  with_gradient)
        return float(values[0]), None if grads is None else grads[0]

    def values_and_gradients(self, points: np.ndarray, matrices: list[np.ndarray],
                             with_gradient: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """:meth:`value_and_gradient` at the ``(K, n)`` points at once: ``(K,)`` values and
        ``(K, n)`` gradients.  Every point's numbers are the same elementwise arithmetic, in
        the same order, whatever K is (no matrix product), so a point's result does not
        depend on the points evaluated with it."""
        params = np.ascontiguousarray(np.asarray(points, dtype=np.float64).T)  # (n, K)
        k = params.shape[1]
        coeffs, scales = self.coefficients(params)
        value: Any = 0.0
        adjoints: list[Any] = []
        squares = []
        for c, m, s in zip(coeffs, matrices, scales):
            # cm_l = sum_i c_i M_il (= M^T P), then q = sum_l cm_l conj(c_l), each sum left to
            # right over its index for every point (whole rows at once: the same elementwise
            # products and additions, whatever K is)
            cm = _ordered_sum(list(c[:, None, :] * m[:, :, None]))  # (size, K)
            q = np.real(_ordered_sum(list(cm * np.conj(c))))
            squares.append(q)
            value = value + s * q
            if with_gradient:
                g = 2.0 * s * cm  # d/dconj(P) doubled: the conjugate-convention adjoint
                for re, im in zip(np.real(g), np.imag(g)):
                    adjoints.extend((re, im))
        values = np.broadcast_to(np.asarray(value, dtype=np.float64), (k,)).copy()
        if not with_gradient:
            return values, None
        # then the scales' adjoints (real: d value / d s_j = q_j)
        for q in squares:
            adjoints.extend((q, 0.0))
        return values, np.ascontiguousarray(self.backprop(params, adjoints).T)


def _ordered_sum(terms: list[Any]) -> Any:
    """``terms[0] + terms[1] + ...``, left to right."""
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


def _classify(root: Expr) -> tuple[set[int], set[int]]:
    dep: set[int] = set()
    pdep: set[int] = set()
    for n in walk(root):
        if n.op == "column":
            dep.add(n.serial)
        elif n.op == "param":
            pdep.add(n.serial)
        elif n.args:
            if any(a.serial in dep for a in n.args):
                dep.add(n.serial)
            if any(a.serial in pdep for a in n.args):
                pdep.add(n.serial)
    return dep, pdep


def _expand(node: Expr, dep: set[int], pdep: set[int]) -> list[_Pair] | None:
    one = constant(1.0)
    if node.serial not in pdep:
        return [(one, node)]
    if node.serial not in dep:
        return [(node, one)]
    if node.op in ("add", "sub"):
        a = _expand(node.args[0], dep, pdep)
        b = _expand(node.args[1], dep, pdep)
        if a is None or b is None:
            return None
        if node.op == "sub":
            b = [(-p, e) for p, e in b]
        out = a + b
    elif node.op == "neg":
        a = _expand(node.args[0], dep, pdep)
        out = None if a is None else [(-p, e) for p, e in a]
    elif node.op == "mul":
        a = _expand(node.args[0], dep, pdep)
        b = _expand(node.args[1], dep, pdep)
        if a is None or b is None or len(a) * len(b) > MAX_TERMS:
            return None
        out = [(pa * pb, ea * eb) for pa, ea in a for pb, eb in b]
    elif node.op == "div" and node.args[1].serial not in dep:
        a = _expand(node.args[0], dep, pdep)
        out = None if a is None else [(p / node.args[1], e) for p, e in a]
    elif node.op == "div" and node.args[1].serial not in pdep:
        a = _expand(node.args[0], dep, pdep)
        out = None if a is None else [(p, e / node.args[1]) for p, e in a]
    else:
        return None
    if out is not None and len(out) > MAX_TERMS:
        return None
    return out


def _merge_same_events(pairs: list[_Pair]) -> list[_Pair]:
    """Add up the coefficients of equal event factors (hash-consing makes them identical)."""
    merged: dict[int, list] = {}
    for p, e in pairs:
        if e.serial in merged:
            merged[e.serial][0] = merged[e.serial][0] + p
        else:
            merged[e.serial] = [p, e]
    return [(p, e) for p, e in merged.values()]


def _squares(root: Expr, dep: set[int]) -> list[tuple[Expr, Expr | None]] | None:
    """The squared amplitudes of a sum of (scaled) ``norm_sqr`` terms, with their real
    event-independent scale factors (``None``: 1), or ``None``."""
    squares: list[tuple[Expr, Expr | None]] = []
    stack: list[tuple[Expr, Expr | None]] = [(root, None)]
    while stack:
        node, scale = stack.pop()
        if node.op == "add":
            stack.extend((a, scale) for a in node.args)
        elif node.op == "norm_sqr":
            squares.append((node.args[0], scale))
        elif node.op in ("mul", "div"):
            a, b = node.args
            if node.op == "mul" and a.serial not in dep:
                a, b = b, a  # the factor second
            if b.serial in dep or b.kind != "real" or a.kind != "real":
                return None
            factor = b if node.op == "mul" else 1.0 / b
            stack.append((a, factor if scale is None else scale * factor))
        else:
            return None
    return squares[::-1]


def decompose(model_split: Split) -> Decomposition | None:
    """Find ``I = sum_j s_j |sum_k P_jk E_jk|^2`` in a split model, or ``None``."""
    root = model_split.root
    dep, pdep = _classify(root)
    squares = _squares(root, dep)
    if squares is None:
        return None
    groups: list[list[_Pair]] = []
    for amp, _ in squares:
        pairs = _expand(amp, dep, pdep)
        if pairs is None:
            return None
        groups.append(_merge_same_events(pairs))
    scales = [scale for _, scale in squares]
    # (the coefficients are mostly new product nodes, outside the model's own graph)
    factors = [p for g in groups for p, _ in g] + [s for s in scales if s is not None]
    if not any(n.op == "param" for f in factors for n in walk(f)):
        return None
    free_names = [n.attr.name for n in model_split.free]

    # event factors: the cache of sum_k dummy_k * E_k holds exactly the E_k
    from laddu_dask.expr.parameter import parameter

    dummies = []
    aux = None
    for j, g in enumerate(groups):
        for k, (_, e) in enumerate(g):
            d = parameter(f"__laddu_dask_event_{j}_{k}")
            dummies.append(d)
            term = d * e.to_complex() if e.kind == "real" else d * e
            aux = term if aux is None else aux + term
    event_split = split(aux)
    cache_index = {n.serial: i for i, n in enumerate(event_split.cache)}
    event_slots = []
    for g in groups:
        slots = []
        for _, e in g:
            e_c = e.to_complex() if e.kind == "real" else e
            if e_c.serial in cache_index:
                slots.append(cache_index[e_c.serial])
            elif e_c.op == "const":  # a term of the amplitude without event dependence
                slots.append(complex(e_c.attr))
            else:
                return None
        event_slots.append(slots)

    # coefficients: the cache-free graph sum_k P_k * column_k gives their forward code and
    # (as its boundary nodes) their reverse sweep
    coeff_exprs = []
    caux = None
    for j, g in enumerate(groups):
        for k, (p, _) in enumerate(g):
            coeff_exprs.append(p)
            col = column(f"__laddu_dask_coefficient_{j}_{k}").to_complex()
            term = apply("mul", p.to_complex(), col)
            caux = term if caux is None else caux + term
    # the scales follow as further coefficients (real; a missing one is the constant 1)
    for j, s in enumerate(scales):
        s = constant(1.0) if s is None else s
        coeff_exprs.append(s)
        col = column(f"__laddu_dask_scale_{j}").to_complex()
        caux = caux + apply("mul", s.to_complex(), col)
    csplit = split(caux)
    coefficients = _coefficient_function(coeff_exprs, groups, free_names)
    backprop = _coefficient_backprop(coeff_exprs, csplit, free_names)
    return Decomposition(groups, event_split, event_slots, generate(event_split), coefficients,
                         backprop, scales, csplit, [p.to_complex() for p in coeff_exprs], free_names)


def _coefficient_function(coeff_exprs: list[Expr], groups: list[list[_Pair]],
                          free_names: list[str]
                          ) -> Callable[[Any], tuple[list[np.ndarray], np.ndarray]]:
    """Printed NumPy code evaluating every coefficient ``P_jk`` (then every scale ``s_j``)
    from the parameters: ``(n, K)`` rows of K points give ``(K,)`` values each."""
    raw = parameter_function(coeff_exprs, free_names, batched=True)
    sizes = [len(g) for g in groups]

    def coefficients(params: Any) -> tuple[list[np.ndarray], np.ndarray]:
        p = np.asarray(params, dtype=np.float64)
        values = raw(p)
        flat = np.empty((len(values), *p.shape[1:]), dtype=np.complex128)
        for row, v in zip(flat, values):
            row[...] = v  # a number or a (K,) row, broadcast
        out, pos = [], 0
        for size in sizes:
            out.append(flat[pos:pos + size])
            pos += size
        return out, flat[pos:].real.copy()

    return coefficients


def _coefficient_backprop(coeff_exprs: list[Expr], csplit: Split,
                          free_names: list[str]) -> Callable[[Any, list], np.ndarray]:
    """The gradient ``(n_free, K)`` from the coefficients' adjoints (each a ``(K,)`` row or
    a number), ``params`` ``(n_free, K)``."""
    names = [n.attr.name for n in csplit.free]
    where = [free_names.index(n) for n in names]
    nodes = boundary(csplit)
    # adjoint rows of each boundary node: every coefficient slot that is that node
    rows_of: dict[int, list[int]] = {}
    for k, p in enumerate(coeff_exprs):
        rows_of.setdefault(p.to_complex().serial, []).append(2 * k)
    inner, _ = backprop_function(csplit, nodes, batched=True)
    n_free = len(free_names)
    identity = where == list(range(n_free))

    def backprop(params: Any, adjoints: list) -> np.ndarray:
        p = np.asarray(params, dtype=np.float64)
        totals = []
        for b in nodes:
            rows = rows_of.get(b.serial)
            if rows is None:
                raise RuntimeError("internal: a coefficient boundary node has no adjoint row")
            re = _ordered_sum([0.0] + [adjoints[r] for r in rows])
            im = _ordered_sum([0.0] + [adjoints[r + 1] for r in rows])
            totals.extend([re, im] if b.kind == "complex" else [re])
        stacked = np.empty((len(totals), *p.shape[1:]), dtype=np.float64)
        for row, t in zip(stacked, totals):
            row[...] = t  # a number or a (K,) row, broadcast
        totals = stacked
        if identity:  # the coefficients depend on every free parameter, in order
            return inner(p, totals)
        g_local = inner(p[where], totals)
        out = np.zeros((n_free, p.shape[1]))
        out[where] = g_local
        return out

    return backprop
