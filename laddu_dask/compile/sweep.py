"""The walk and the reverse sweep every printer shares.

A :class:`Printer` knows how one backend spells the operations of the spec
(:mod:`laddu_dask.expr.ops`) and a line of its language; everything else is here, once:
the names of a graph's nodes (``v<i>`` for values, ``g<i>`` for adjoints, in the order
of the compiled graph), the forward expression of a node, the printing of a derivative
rule's terms, and the reverse sweep that accumulates adjoints from the rules.

Examples
--------
>>> import laddu_dask as ld
>>> from laddu_dask.compile.array_code import ArrayPrinter
>>> x, a = ld.scalar("x"), ld.parameter("a")
>>> node = x * a
>>> p = ArrayPrinter([x, a, node])
>>> p.value(node)
'(v0 * v1)'
>>> p.sweep([node], {node.serial: "g"}, lambda n: n is a)
['    g1 = (g * v0)']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr.node import Expr
from laddu_dask.expr.ops import COMPLEX, REAL, SPEC, Term


class Printer:
    """One backend's spelling of the spec; subclasses say how constants, forms and
    adjoint lines are written.

    Parameters
    ----------
    nodes : sequence of Expr
        The graph in topological order (a node's position names it).
    """

    backend = "?"

    def __init__(self, nodes: Sequence[Expr]) -> None:
        self.index = {n.serial: i for i, n in enumerate(nodes)}

    # -- names ----------------------------------------------------------------------------
    def name(self, node: Expr) -> str:
        """How a node's value is written."""
        return self.constant(node) if node.op == "const" else f"v{self.index[node.serial]}"

    def adjoint_name(self, node: Expr) -> str:
        """The variable of a node's adjoint."""
        return f"g{self.index[node.serial]}"

    def constant(self, node: Expr) -> str:
        """How a constant is written."""
        raise NotImplementedError

    # -- spelling -------------------------------------------------------------------------
    def form(self, op: str, kinds: tuple[str, ...], forward: bool) -> str | None:
        """The template of an operation for operands of these kinds (``None``: none)."""
        raise NotImplementedError

    def number(self, value: int | float | complex) -> str:
        """A number of a derivative rule."""
        return repr(value)

    def apply(self, op: str, args: Sequence[str], kinds: Sequence[str], attr: Any = None,
              forward: bool = False) -> str:
        """The expression ``op(*args)``."""
        template = self.form(op, tuple(kinds), forward)
        if template is None:
            raise ModelError(f"operation {op!r} has no {self.backend} spelling; give one to "
                             "register_operation")
        return template.format(*args, attr=attr)

    def value(self, node: Expr) -> str:
        """The forward expression of an operation node."""
        return self.apply(node.op, [self.name(a) for a in node.args], [a.kind for a in node.args],
                          node.attr, forward=True)

    def term(self, t: Term, leaves: Mapping[str, str]) -> str:
        """A derivative rule's term, its symbols written as ``leaves`` says."""
        if t.op == "symbol":
            return leaves[t.attr]
        if t.op == "number":
            return self.number(t.attr)
        return self.apply(t.op, [self.term(a, leaves) for a in t.args], [a.kind for a in t.args], t.attr)

    # -- lines ----------------------------------------------------------------------------
    def assign(self, node: Expr, indent: str = "    ") -> str:
        """The line computing a node's value."""
        raise NotImplementedError

    def accumulate(self, arg: Expr, target: str, src: str, kind: str, first: bool) -> str:
        """The line that starts (``first``) or adds to the adjoint ``target`` of ``arg`` the
        contribution ``src`` of kind ``kind``."""
        raise NotImplementedError

    def forward(self, nodes: Sequence[Expr], indent: str = "    ") -> list[str]:
        """The lines computing ``nodes`` in order."""
        return [self.assign(n, indent) for n in nodes]

    def sweep(self, nodes: Sequence[Expr], adjoint: dict[int, str],
              include: Callable[[Expr], bool]) -> list[str]:
        """The lines of one reverse sweep over ``nodes`` (topological order; it runs from the
        last).

        ``adjoint`` maps serials to the adjoints known so far (the seeds) and receives every
        adjoint the sweep creates; ``include`` says whether an argument's adjoint is wanted.
        """
        lines: list[str] = []
        for node in reversed(nodes):
            g = adjoint.get(node.serial)
            if g is None:
                continue
            constants = tuple(a.attr if a.op == "const" else None for a in node.args)
            terms = SPEC[node.op].rule(tuple(a.kind for a in node.args), node.attr, constants)
            leaves = {f"x{i}": self.name(a) for i, a in enumerate(node.args)}
            leaves.update(w=self.name(node), g=g)
            for arg, t in zip(node.args, terms):
                if t is None or not include(arg):
                    continue
                first = arg.serial not in adjoint
                if first:
                    adjoint[arg.serial] = self.adjoint_name(arg)
                lines.append(self.accumulate(arg, adjoint[arg.serial], self.term(t, leaves), t.kind, first))
        return lines


class PythonPrinter(Printer):
    """Shared by the printers of Python source (array code, Numba)."""

    indent = "    "

    def assign(self, node: Expr, indent: str = "    ") -> str:
        return f"{indent}{self.name(node)} = {self.value(node)}"

    def accumulate(self, arg: Expr, target: str, src: str, kind: str, first: bool) -> str:
        if arg.kind == REAL and kind == COMPLEX:
            src = self.apply("real", [src], [COMPLEX])
        return f"{self.indent}{target} = {src}" if first else f"{self.indent}{target} = {target} + {src}"
