"""The data of an expression graph's nodes, their interning and traversal.

:class:`Node` holds what a node is (its operation, arguments, payload and kind) and interns
nodes, so that the same operation on the same arguments is the same object;
:class:`~laddu_dask.expr.node.Expr`, the only kind of node, adds the operators and
the constructors that fold constants.  The modules that only read nodes (the JSON writer,
the printers, the tags) build on this one, below the operators.

Examples
--------
>>> import laddu_dask as ld
>>> [n.op for n in walk(ld.scalar("x") * 2.0 + 1.0)]
['column', 'const', 'mul', 'const', 'add']
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any, Union

import numpy as np

from laddu_dask.expr.ops import REAL

#: What the constructors turn into an expression (numbers become constants).
ExprLike = Union["Node", int, float, complex]

_INTERN: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_LOCK = threading.Lock()
_SERIAL = itertools.count()


class Node:
    """The data of an expression node (the base of :class:`~laddu_dask.expr.node.Expr`, whose
    docstring describes the fields ``op``, ``args``, ``attr`` and ``kind``); ``serial`` numbers
    the nodes in the order they were built, so that arguments come before their users."""

    __slots__ = ("op", "args", "attr", "kind", "serial", "__weakref__")

    op: str
    args: tuple[Node, ...]
    attr: Any
    kind: str
    serial: int

    @classmethod
    def _intern(cls, op: str, args: tuple[Node, ...], attr: Any, kind: str) -> Any:
        """The node ``(op, args, attr, kind)`` of this class: the existing one where it was built
        before, else a new one (no folding: the subclass's constructors fold)."""
        key = (op, tuple(a.serial for a in args), attr_key(attr), kind)
        with _LOCK:
            node = _INTERN.get(key)
            if node is None:
                node = object.__new__(cls)
                node.op, node.args, node.attr, node.kind = op, args, attr, kind
                node.serial = next(_SERIAL)
                _INTERN[key] = node
            return node

    def _with_args(self, args: tuple[Node, ...]) -> Node:
        """This node's operation on ``args``, built by the constructors that fold constants and
        identities (the subclass's: a node alone cannot fold)."""
        raise NotImplementedError(f"{type(self).__name__} does not build operations")

    @property
    def is_const(self) -> bool:
        """Whether this node is a constant."""
        return self.op == "const"

    @property
    def is_real(self) -> bool:
        """Whether this node is real-valued."""
        return self.kind == REAL

    def __repr__(self) -> str:
        if self.op == "const":
            return f"Expr(const {self.attr!r})"
        if self.op == "column":
            return f"Expr(column {self.attr!r})"
        if self.op == "param":
            return f"Expr(param {self.attr.name!r})"
        return f"Expr({self.op}, {len(self.args)} args, {self.kind})"

    def __bool__(self) -> bool:
        raise TypeError("an expression has no truth value; compare numbers after evaluation")


def attr_key(attr: Any) -> Any:
    """The interning key of a node's payload: floats and complex numbers by their bits."""
    if isinstance(attr, (float, np.floating)):
        return ("f", float(attr).hex())
    if isinstance(attr, (complex, np.complexfloating)):
        c = complex(attr)
        return ("c", c.real.hex(), c.imag.hex())
    return attr


def walk(root: Node) -> list[Any]:
    """All nodes below ``root`` in a deterministic topological (post-) order.

    Arguments come before the nodes that use them; ties are broken by argument
    order, so the order of first appearance is stable.
    """
    order: list[Node] = []
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if node.serial in seen:
            continue
        if expanded:
            seen.add(node.serial)
            order.append(node)
            continue
        stack.append((node, True))
        for arg in reversed(node.args):
            if arg.serial not in seen:
                stack.append((arg, False))
    return order
