"""Predicates: boolean conditions on events, built by comparing expressions (laddu's ``Predicate``).

``mass < 0.9``, ``(mass < 0.9) | (mass > 1.1)``, ``~(t >= -0.5)`` and
``Predicate.between(x, low=a, high=b, closed="left")`` are symbolic: nothing is evaluated
until a selection applies them to a batch of events
(:func:`laddu_dask.compile.selection.predicate_mask`).  Comparisons need real values, as
in laddu: a real expression, or one laddu counts as real though its value may be complex
(``Vec4.m()``, ``x.sqrt()``, ``x.log()`` of real ``x`` and arithmetic on them), whose real
part is compared (a spacelike ``m()``, ``i sqrt(-m^2)``, compares as 0).

``==`` and ``!=`` give predicates too; their truth value (``bool``) is whether the two
sides are the same node, so interned expressions still work as dictionary keys and in
``in`` tests.  Other predicates have no truth value.

Examples
--------
>>> import laddu_dask as ld
>>> mass = ld.scalar("mass")
>>> sideband = (mass < 0.9) | (mass > 1.1)
>>> sideband
Predicate(((mass < 0.9) | (mass > 1.1)))
>>> sideband.columns
['mass']
"""

from __future__ import annotations

from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr.graph import ExprLike, Node, walk
from laddu_dask.expr.ops import COMPLEX, REAL
from laddu_dask.expr.tags import strip_tags

#: The comparisons, as they read.
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
_CLOSED = {"both": (">=", "<="), "neither": (">", "<"), "left": (">=", "<"), "right": (">", "<=")}
#: Operations that keep laddu's "real" flag of their arguments (its values stay complex).
_FLAG_KEEPING = ("add", "sub", "mul", "div", "neg", "powi", "pow", "exp", "sin", "cos", "tan")


def is_laddu_real(expr: Node) -> bool:
    """Whether laddu counts ``expr`` as real: a real node, or a complex one that only the
    principal ``sqrt``/``log`` of real arguments (and arithmetic on them) made complex.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> x = ld.scalar("x")
    >>> is_laddu_real(x.sqrt() * 2.0), is_laddu_real(ld.cis(x))
    (True, False)
    """
    memo: dict[int, bool] = {}
    for node in walk(expr):
        if node.kind == REAL:
            flag = True
        elif node.op in ("sqrt", "log"):
            arg = node.args[0]
            flag = arg.op == "to_complex" and memo[arg.args[0].serial]
        elif node.op in _FLAG_KEEPING:
            flag = all(memo[a.serial] for a in node.args)
        else:
            flag = False
        memo[node.serial] = flag
    return memo[expr.serial]


def _real_side(expr: Node, op: str) -> Node:
    if expr.kind == REAL:
        return expr
    if is_laddu_real(expr):
        return expr.real()
    raise ModelError(f"the comparison {op!r} needs real expressions, got a complex one "
                     "(compare its .real(), .imag() or .abs())")


class Predicate:
    """A boolean condition on events: a comparison of two expressions, or ``&``, ``|``, ``~``
    of predicates.

    Build predicates by comparing expressions; do not call the constructor.

    Attributes
    ----------
    op : str
        A comparison (``"<"``, ``"<="``, ``">"``, ``">="``, ``"=="``, ``"!="``), ``"&"``,
        ``"|"`` or ``"~"``.
    args : tuple
        Two :class:`~laddu_dask.Expr` of a comparison (real ones, except for ``==`` and
        ``!=``, checked when evaluated), else the predicates combined.
    """

    __slots__ = ("op", "args")

    def __init__(self, op: str, args: tuple) -> None:
        self.op = op
        self.args = args

    # -- combination ------------------------------------------------------------
    def __and__(self, other: Predicate) -> Predicate:
        if not isinstance(other, Predicate):
            return NotImplemented
        return Predicate("&", (self, other))

    def __or__(self, other: Predicate) -> Predicate:
        if not isinstance(other, Predicate):
            return NotImplemented
        return Predicate("|", (self, other))

    def __invert__(self) -> Predicate:
        return Predicate("~", (self,))

    def __bool__(self) -> bool:
        if self.op == "==":
            return self.args[0] is self.args[1]
        if self.op == "!=":
            return self.args[0] is not self.args[1]
        raise TypeError("a predicate has no truth value: combine predicates with &, | and ~ "
                        "(not and, or, not) and apply them with a dataset selection")

    @staticmethod
    def between(value: ExprLike, *, low: ExprLike, high: ExprLike, closed: str = "both") -> Predicate:
        """Whether ``value`` lies between ``low`` and ``high`` (laddu's ``Predicate.between``).

        Parameters
        ----------
        value, low, high : Expr or float
            The value and the interval's ends.
        closed : {"both", "neither", "left", "right"}, default "both"
            Which ends belong to the interval.

        Raises
        ------
        ModelError
            For another ``closed`` (a ``ValueError``, as in laddu), or a complex expression.

        Examples
        --------
        >>> import laddu_dask as ld
        >>> ld.Predicate.between(ld.scalar("t"), low=-1.0, high=-0.1, closed="left")
        Predicate(((t >= -1.0) & (t < -0.1)))
        """
        ops = _CLOSED.get(closed) if isinstance(closed, str) else None
        if ops is None:
            raise ModelError(f"closed must be 'both', 'neither', 'left', or 'right', got {closed!r}")
        expressions = [v for v in (value, low, high) if isinstance(v, Node)]
        if not expressions:
            raise ModelError("Predicate.between compares an expression: value, low or high must be one")
        convert = type(expressions[0])  # Expr(x): x itself, or the constant x
        value = convert(value)
        return compare(ops[0], value, convert(low)) & compare(ops[1], value, convert(high))

    # -- inspection ---------------------------------------------------------------
    def comparisons(self) -> list[Predicate]:
        """The comparisons of the predicate (its leaves), in order of first appearance."""
        if self.op in COMPARISONS:
            return [self]
        out: list[Predicate] = []
        for arg in self.args:
            out.extend(c for c in arg.comparisons() if c not in out)
        return out

    @property
    def expressions(self) -> list[Node]:
        """The distinct expressions the predicate compares, in order of first appearance."""
        out: dict[int, Node] = {}
        for c in self.comparisons():
            for side in comparison_sides(c):
                out.setdefault(side.serial, side)
        return list(out.values())

    @property
    def columns(self) -> list[str]:
        """The event columns the predicate reads (sorted)."""
        sides = [side for c in self.comparisons() for side in c.args]
        return sorted({n.attr for e in sides for n in walk(e) if n.op == "column"})

    def __repr__(self) -> str:
        return f"Predicate({self._text()})"

    def _text(self) -> str:
        if self.op in COMPARISONS:
            return f"({_expr_text(self.args[0])} {self.op} {_expr_text(self.args[1])})"
        if self.op == "~":
            return f"~{self.args[0]._text()}"
        return f"({self.args[0]._text()} {self.op} {self.args[1]._text()})"


def _expr_text(e: Node) -> str:
    if e.op == "column":
        return e.attr
    if e.op == "const":
        return repr(e.attr)
    if e.op == "param":
        return e.attr.name
    return repr(e)


def compare(op: str, left: Node, right: Node) -> Predicate:
    """The comparison ``left op right`` (what ``<``, ``==``, ... on expressions build).

    Ordering comparisons check at once that both sides are real (their real part where
    laddu counts them as real); ``==`` and ``!=`` check when evaluated, so that comparing
    complex nodes for identity (in a dictionary, with ``in``) stays possible.
    """
    if op not in COMPARISONS:
        raise ModelError(f"unknown comparison {op!r}; use one of {', '.join(COMPARISONS)}")
    if op in ("==", "!="):
        return Predicate(op, (left, right))
    left, right = strip_tags(left), strip_tags(right)
    return Predicate(op, (_real_side(left, op), _real_side(right, op)))


def comparison_sides(predicate: Predicate) -> tuple[Node, Node]:
    """The two real expressions a comparison evaluates (``==``/``!=`` checked here).

    Raises
    ------
    ModelError
        When a side of ``==``/``!=`` is complex and laddu does not count it as real.
    """
    left, right = (strip_tags(side) for side in predicate.args)
    if predicate.op in ("==", "!=") and COMPLEX in (left.kind, right.kind):
        return _real_side(left, predicate.op), _real_side(right, predicate.op)
    return left, right


def evaluate_predicate(predicate: Predicate, values: Any, xp: Any) -> Any:
    """Combine per-comparison-side values into the boolean mask of ``predicate``.

    ``values(expr)`` returns the per-event array (or scalar) of a real expression.
    """
    if predicate.op in COMPARISONS:
        a, b = (values(side) for side in comparison_sides(predicate))
        return {"<": xp.less, "<=": xp.less_equal, ">": xp.greater, ">=": xp.greater_equal,
                "==": xp.equal, "!=": xp.not_equal}[predicate.op](a, b)
    masks = [evaluate_predicate(p, values, xp) for p in predicate.args]
    if predicate.op == "~":
        return xp.logical_not(masks[0])
    return (xp.logical_and if predicate.op == "&" else xp.logical_or)(masks[0], masks[1])
