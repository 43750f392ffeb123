"""Graph analysis: fixing parameters, and splitting a model into its two parts.

The *event-only* part of a model depends on event columns but not on free
parameters: it is evaluated once per partition when a dataset is prepared, and
its results that the rest of the graph needs (the *cache*) are kept.  The
*parameter-dependent* part is evaluated on every call; within it, nodes that
depend on parameters only are per-call scalars.

Examples
--------
>>> import laddu_dask as ld
>>> from laddu_dask.compile.graph import split
>>> x = ld.scalar("x")
>>> a = ld.parameter("a")
>>> parts = split((x.sin() * a).norm_sqr())
>>> [n.op for n in parts.cache]
['sin']
>>> [n.op for n in boundary(parts)]
['param']
"""

from __future__ import annotations

from dataclasses import dataclass

from laddu_dask.expr.graph import walk
from laddu_dask.expr.node import Expr, apply, constant, powi
from laddu_dask.expr.ops import COMPLEX


def fix_parameters(root: Expr) -> Expr:
    """Replace fixed parameters by constants and re-fold the graph."""
    memo: dict[int, Expr] = {}
    for node in walk(root):
        if node.op == "param":
            new = constant(node.attr.fixed) if node.attr.is_fixed else node
        elif not node.args:
            new = node
        else:
            args = tuple(memo[a.serial] for a in node.args)
            if all(a is b for a, b in zip(args, node.args)):
                new = node
            elif node.op == "powi":
                new = powi(args[0], node.attr)
            else:
                new = apply(node.op, *args, attr=node.attr)
        memo[node.serial] = new
    return memo[root.serial]


@dataclass(frozen=True)
class Split:
    """The nodes of a model, classified.

    Attributes
    ----------
    root : Expr
        The model after fixing parameters.
    nodes : tuple of Expr
        All nodes in topological order.
    event_nodes : tuple of Expr
        Event-only nodes (columns and what depends only on them), topological order.
    cache : tuple of Expr
        The event-only nodes the parameter-dependent part reads (or the root when
        the model has no free parameter).
    param_nodes : tuple of Expr
        Nodes that depend on free parameters but on no event column (per-call scalars).
    mixed_nodes : tuple of Expr
        Nodes that depend on both.
    free : tuple of Expr
        The free parameter leaves in order of first appearance.
    """

    root: Expr
    nodes: tuple[Expr, ...]
    event_nodes: tuple[Expr, ...]
    cache: tuple[Expr, ...]
    param_nodes: tuple[Expr, ...]
    mixed_nodes: tuple[Expr, ...]
    free: tuple[Expr, ...]

    @property
    def columns(self) -> list[str]:
        """Columns read by the event-only part, sorted."""
        return sorted({n.attr for n in self.event_nodes if n.op == "column"})

    def param_dependent(self) -> frozenset[int]:
        """Serials of the nodes that depend on a free parameter."""
        return frozenset(n.serial for n in self.param_nodes + self.mixed_nodes + self.free)


def split(root: Expr) -> Split:
    """Classify the nodes of ``root`` (after fixing parameters)."""
    root = fix_parameters(root)
    nodes = walk(root)
    dep: dict[int, bool] = {}
    pdep: dict[int, bool] = {}
    for n in nodes:
        if n.op == "column":
            dep[n.serial], pdep[n.serial] = True, False
        elif n.op == "param":
            dep[n.serial], pdep[n.serial] = False, True
        elif n.op == "const":
            dep[n.serial], pdep[n.serial] = False, False
        else:
            dep[n.serial] = any(dep[a.serial] for a in n.args)
            pdep[n.serial] = any(pdep[a.serial] for a in n.args)
    event_nodes = tuple(n for n in nodes if dep[n.serial] and not pdep[n.serial])
    param_nodes = tuple(
        n for n in nodes if pdep[n.serial] and not dep[n.serial] and n.op != "param"
    )
    mixed = tuple(n for n in nodes if dep[n.serial] and pdep[n.serial])
    free = tuple(n for n in nodes if n.op == "param")
    needed: set[int] = set()
    for n in mixed:
        for a in n.args:
            if dep[a.serial] and not pdep[a.serial]:
                needed.add(a.serial)
    if dep[root.serial] and not pdep[root.serial]:
        needed.add(root.serial)
    cache = tuple(n for n in event_nodes if n.serial in needed)
    return Split(root, tuple(nodes), event_nodes, cache, param_nodes, mixed, free)


def boundary(split: Split) -> list[Expr]:
    """The *boundary*: parameter-dependent, event-independent nodes that per-event nodes read.

    The fused and the CUDA kernels sum the adjoints of these nodes over the events; the
    chain rule through the parameter-only part then runs once per evaluation.
    """
    pdep_scalar = {n.serial for n in split.param_nodes + split.free}
    seen: dict[int, Expr] = {}
    for node in split.mixed_nodes:
        for a in node.args:
            if a.serial in pdep_scalar and a.serial not in seen:
                seen[a.serial] = a
    index = {n.serial: i for i, n in enumerate(split.nodes)}
    return sorted(seen.values(), key=lambda n: index[n.serial])


def boundary_rows(split: Split) -> tuple[list[Expr], dict[int, int], int]:
    """The boundary nodes, the first accumulator row of each, and the number of rows.

    Row 0 holds the value terms; a real boundary node takes one row of adjoint sums, a
    complex one two (real and imaginary parts).  Every kernel printer uses this layout.
    """
    nodes = boundary(split)
    rows: dict[int, int] = {}
    row = 1
    for b in nodes:
        rows[b.serial] = row
        row += 2 if b.kind == COMPLEX else 1
    return nodes, rows, row
