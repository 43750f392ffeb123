"""Which real expressions are non-negative for every event by construction.

``sqrt`` and ``log`` of such an expression stay real, where laddu's complex value is real
anyway; the rule is structural (constants, squares, moduli, exponentials, and sums,
products, quotients and square roots of such), never a look at the data.

Examples
--------
>>> import laddu_dask as ld
>>> is_nonnegative(ld.scalar("x").abs() * 2.0)
True
"""

from __future__ import annotations

from typing import Any, Protocol

from laddu_dask.expr.ops import REAL

__all__ = ["is_nonnegative"]


class Node(Protocol):
    """What the rule reads of an expression node (a :class:`~laddu_dask.Expr`, whose
    ``sqrt`` and ``log`` use the rule, so that this module sits below theirs)."""

    op: str
    args: tuple[Node, ...]
    attr: Any
    kind: str
    serial: int

_NONNEGATIVE_OPS = ("abs", "norm_sqr", "exp")
_CLOSED_OPS = ("add", "mul", "div", "sqrt")  # non-negative arguments give a non-negative result


def is_nonnegative(node: Node) -> bool:
    """Whether a real expression is non-negative (or NaN) for every event by construction.

    True for non-negative constants, ``x * x``, even powers, moduli, ``norm_sqr``,
    exponentials, and sums, products, quotients and square roots of such expressions.
    ``sqrt`` and ``log`` use it to stay real where laddu's complex value is real anyway.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> x = ld.scalar("x")
    >>> is_nonnegative(x * x + 2.0), is_nonnegative(x - 1.0)
    (True, False)
    """
    memo: dict[int, bool] = {}

    def check(n: Node) -> bool:
        hit = memo.get(n.serial)
        if hit is None:
            hit = memo[n.serial] = _nonnegative_node(n, check)
        return hit

    return node.kind == REAL and check(node)


def _nonnegative_node(n: Node, check) -> bool:
    if n.kind != REAL:
        return False
    if n.op == "tag":  # a projection tag is the value of its argument
        return check(n.args[0])
    if n.op == "const":
        return not n.attr < 0.0
    if n.op in _NONNEGATIVE_OPS:
        return True
    if n.op == "mul" and n.args[0] is n.args[1]:
        return True
    if n.op == "powi":
        return n.attr % 2 == 0 or check(n.args[0])
    if n.op in _CLOSED_OPS:
        return all(check(a) for a in n.args)
    return False
