"""Immutable, hash-consed expression nodes with operator overloading.

An :class:`Expr` is a node of a directed acyclic graph.  Nodes are interned: building
the same operation on the same arguments twice returns the *same* object, so equal
subexpressions are shared (common-subexpression elimination happens as the model is
written).  Constants are folded and trivial identities (``x + 0``, ``x * 1``,
``-(-x)``) removed at construction, with the very array code the kernels use.

Examples
--------
>>> import laddu_dask as ld
>>> s = ld.scalar("s")
>>> (s * 2 + 1) is (s * 2 + 1)
True
>>> (s + 0) is s
True
>>> ld.constant(2.0) * 3.0
Expr(const 6.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Union

import numpy as np

from laddu_dask.errors import ModelError
from laddu_dask.expr.expr_views import ExprViews
from laddu_dask.expr.graph import Node
from laddu_dask.expr.ops import COMPLEX, LEAVES, OPS, REAL, evaluate
from laddu_dask.expr.positivity import is_nonnegative
from laddu_dask.expr.predicate import compare
from laddu_dask.expr.tags import project as _project
from laddu_dask.expr.tags import tag as _tag

Number = int | float | complex
ExprLike = Union["Expr", int, float, complex]


class Expr(Node, ExprViews):
    """A node of an expression graph (real- or complex-valued, per event).

    Build expressions with :func:`~laddu_dask.scalar`, :func:`~laddu_dask.parameter`,
    :class:`~laddu_dask.Vec4` and arithmetic; never call the constructor directly.

    Attributes
    ----------
    op : str
        ``"const"``, ``"column"``, ``"param"`` or an operation of :data:`OPS`.
    args : tuple of Expr
        Arguments of an operation (empty for leaves).
    attr : object
        The leaf payload (value, column name, parameter spec) or an integer power.
    kind : {"real", "complex"}
        Whether the node's values are real or complex.
    """

    __slots__ = ()

    op: str
    args: tuple[Expr, ...]

    def __new__(cls, value: ExprLike) -> Expr:
        """``Expr(x)``: ``x`` itself when it is an expression, else the constant ``x`` (laddu's
        ``Expr(value)``); other nodes come from ld.scalar, ld.parameter, ld.Vec4, arithmetic."""
        return as_expr(value)

    def __init__(self, value: ExprLike = None) -> None:  # the node was built by __new__
        pass

    def _with_args(self, args: tuple[Expr, ...]) -> Expr:
        return apply(self.op, *args, attr=self.attr)

    @staticmethod
    def from_json(json: str) -> Any:
        """The expression of laddu 0.28.1's JSON text (written by laddu or :meth:`to_json`).

        A vector- or matrix-valued root gives a :class:`~laddu_dask.expr.linalg.Vector` or
        :class:`~laddu_dask.expr.linalg.Matrix` of expressions.

        Raises
        ------
        ModelError
            For text that is not JSON or a node kind neither library writes, naming the node.

        Examples
        --------
        >>> import laddu_dask as ld
        >>> e = ld.parameter("a") * ld.scalar("x")
        >>> ld.Expr.from_json(json=e.to_json()) is e
        True
        """
        # The one import of a higher module (declared in .importlinter): the reader builds
        # vectors, parameters, functions and tags, which all build on this module.
        from laddu_dask.expr.exprjson_read import from_json

        return from_json(json)

    def __hash__(self) -> int:
        return self.serial

    # -- comparisons: Predicates (laddu's selections) -----------------------------
    # ``==`` and ``!=`` give Predicates too, whose truth value is the identity of the two
    # nodes (so dictionaries, ``in`` and ``list.index`` keep working on interned nodes).
    def __eq__(self, other: object) -> Any:
        return _compare("==", self, other)

    def __ne__(self, other: object) -> Any:
        return _compare("!=", self, other)

    def __lt__(self, other: ExprLike) -> Any:
        return _compare("<", self, other)

    def __le__(self, other: ExprLike) -> Any:
        return _compare("<=", self, other)

    def __gt__(self, other: ExprLike) -> Any:
        return _compare(">", self, other)

    def __ge__(self, other: ExprLike) -> Any:
        return _compare(">=", self, other)

    def __reduce__(self):  # pickling rebuilds through the interning constructors
        return (_rebuild, (self.op, self.args, self.attr, self.kind))

    # -- arithmetic -----------------------------------------------------------
    def __add__(self, other: ExprLike) -> Expr:
        return apply("add", self, as_expr(other))

    def __radd__(self, other: ExprLike) -> Expr:
        return apply("add", as_expr(other), self)

    def __sub__(self, other: ExprLike) -> Expr:
        return apply("sub", self, as_expr(other))

    def __rsub__(self, other: ExprLike) -> Expr:
        return apply("sub", as_expr(other), self)

    def __mul__(self, other: ExprLike) -> Expr:
        return apply("mul", self, as_expr(other))

    def __rmul__(self, other: ExprLike) -> Expr:
        return apply("mul", as_expr(other), self)

    def __truediv__(self, other: ExprLike) -> Expr:
        return apply("div", self, as_expr(other))

    def __rtruediv__(self, other: ExprLike) -> Expr:
        return apply("div", as_expr(other), self)

    def __neg__(self) -> Expr:
        return apply("neg", self)

    def __pos__(self) -> Expr:
        return self

    def __pow__(self, other: ExprLike, modulo: None = None) -> Expr:
        if modulo is not None:
            raise TypeError("pow() of an expression takes no modulo")
        if isinstance(other, (int, np.integer)) and not isinstance(other, bool):
            return powi(self, int(other))
        if isinstance(other, float) and other.is_integer() and abs(other) <= 64:
            return powi(self, int(other))
        return apply("pow", self, as_expr(other))

    def __rpow__(self, other: ExprLike) -> Expr:
        return apply("pow", as_expr(other), self)

    # -- math methods (laddu's names) ------------------------------------------
    def sin(self) -> Expr:
        """Sine."""
        return apply("sin", self)

    def cos(self) -> Expr:
        """Cosine."""
        return apply("cos", self)

    def tan(self) -> Expr:
        """Tangent."""
        return apply("tan", self)

    def exp(self) -> Expr:
        """Exponential."""
        return apply("exp", self)

    def log(self) -> Expr:
        """Natural logarithm, principal branch: ``log(-4) = log 4 + i pi`` as in laddu.

        A real argument gives a real node where it is non-negative by construction
        (:func:`is_nonnegative`), else the complex logarithm of ``x + 0i``.
        """
        return apply("log", self if self.kind == COMPLEX or is_nonnegative(self) else self.to_complex())

    def sqrt(self) -> Expr:
        """Square root, principal branch: ``sqrt(-4) = 2i`` as in laddu.

        A real argument gives a real node where it is non-negative by construction
        (:func:`is_nonnegative`: sums and products of squares, moduli, exponentials,
        non-negative constants), else the complex root of ``x + 0i``; both are laddu's value.

        Examples
        --------
        >>> import laddu_dask as ld
        >>> x = ld.scalar("x")
        >>> (x * x + 1.0).sqrt().kind, x.sqrt().kind
        ('real', 'complex')
        """
        return apply("sqrt", self if self.kind == COMPLEX or is_nonnegative(self) else self.to_complex())

    def acos(self) -> Expr:
        """Inverse cosine of a real expression, of the argument clipped to ``[-1, 1]`` (laddu's
        ``acos``: 0 above 1, pi below -1)."""
        return apply("acos", self)

    def abs(self) -> Expr:
        """Absolute value (the modulus for complex values)."""
        return apply("abs", self)

    def conj(self) -> Expr:
        """Complex conjugate (the value itself when real)."""
        return apply("conj", self)

    def real(self) -> Expr:
        """Real part."""
        return apply("real", self)

    def imag(self) -> Expr:
        """Imaginary part."""
        return apply("imag", self)

    def norm_sqr(self) -> Expr:
        """Squared modulus ``|z|^2`` (real)."""
        return apply("norm_sqr", self)

    def to_complex(self) -> Expr:
        """The same value as a complex number (so that ``sqrt`` and ``log`` continue analytically)."""
        return apply("to_complex", self)

    # -- projection tags (laddu's names; see laddu_dask.expr.tags) -------------------------
    def tagged(self, tag: str) -> Expr:
        """This expression labelled with the projection tag ``tag`` (a metadata node that
        evaluates to the expression itself); :meth:`project` selects tagged contributions.

        Examples
        --------
        >>> import laddu_dask as ld
        >>> a = ld.parameter("a", initial=2.0).tagged("A")
        >>> b = ld.parameter("b", initial=3.0).tagged("B")
        >>> ld.Model((a + b).project(["A"])).parameter_names
        ['a']
        """
        return _tag(self, tag)

    def project(self, tags: Sequence[str]) -> Expr:
        """This expression with only the contributions carrying one of ``tags``: every
        tagged node without a selected tag becomes zero (laddu's ``Expr.project``).

        Examples
        --------
        >>> import numpy as np
        >>> import laddu_dask as ld
        >>> s = ld.scalar("x").tagged("S")
        >>> d = (2.0 * ld.scalar("x")).tagged("D")
        >>> events = ld.Dataset.from_arrays(scalars={"x": np.array([1.0, 2.0])})
        >>> ld.Model((s + d).norm_sqr().project(["S"])).evaluate(events, real=True).tolist()
        [1.0, 4.0]
        """
        return _project(self, tags)


def _rebuild(op: str, args: tuple[Expr, ...], attr: Any, kind: str) -> Expr:
    return Expr._intern(op, args, attr, kind)


# ---------------------------------------------------------------------------
# leaves
# ---------------------------------------------------------------------------
def constant(value: Number) -> Expr:
    """A constant expression.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.constant(1.5).kind, ld.constant(1j).kind
    ('real', 'complex')
    """
    if isinstance(value, Expr):
        return value
    if isinstance(value, (bool, np.bool_)):
        raise ModelError(f"cannot use the boolean {value!r} as an expression")
    if isinstance(value, (complex, np.complexfloating)):
        c = complex(value)
        return Expr._intern("const", (), c, COMPLEX)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return Expr._intern("const", (), float(value), REAL)
    raise ModelError(f"cannot turn {type(value).__name__} {value!r} into an expression")


def column(name: str) -> Expr:
    """The per-event value of the real column ``name``."""
    if not isinstance(name, str) or not name:
        raise ModelError(f"a column name must be a non-empty string, got {name!r}")
    return Expr._intern("column", (), name, REAL)


def scalar(name: str) -> Expr:
    """An event scalar column (laddu's ``scalar``).

    Parameters
    ----------
    name : str
        Column name in the dataset.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.scalar("pol_angle")
    Expr(column 'pol_angle')
    """
    return column(name)


def as_expr(value: ExprLike) -> Expr:
    """Return ``value`` as an expression (numbers become constants)."""
    if isinstance(value, Expr):
        return value
    return constant(value)


# ---------------------------------------------------------------------------
# operations
# ---------------------------------------------------------------------------
def _const_value(node: Expr) -> Any:
    return np.complex128(node.attr) if node.kind == COMPLEX else np.float64(node.attr)


def _fold(op: str, args: tuple[Expr, ...], attr: Any) -> Expr:
    out = evaluate(op, [_const_value(a) for a in args], attr)
    if np.iscomplexobj(out):
        return Expr._intern("const", (), complex(out), COMPLEX)
    return Expr._intern("const", (), float(out), REAL)


def _is(node: Expr, value: float) -> bool:
    return node.op == "const" and node.attr == value and not (
        isinstance(node.attr, float) and math.copysign(1.0, node.attr) < 0 and value == 0
    )


def _zero(kind: str) -> Expr:
    return constant(0j) if kind == COMPLEX else constant(0.0)


def apply(op: str, *args: Expr, attr: Any = None) -> Expr:
    """Build (or find) the node ``op(*args)``, folding constants and identities.

    Parameters
    ----------
    op : str
        A key of :data:`laddu_dask.expr.ops.OPS`.
    *args : Expr
        The arguments.
    attr : int, optional
        The exponent of ``powi``.
    """
    info = OPS.get(op)
    if info is None or op in LEAVES:
        raise ModelError(f"unknown operation {op!r}")
    if len(args) != info.arity:
        raise ModelError(f"{op} takes {info.arity} arguments, got {len(args)}")
    args = tuple(as_expr(a) for a in args)
    if info.real_args:
        for a in args:
            if a.kind != REAL:
                raise ModelError(f"{op} needs real arguments; take .real() or .imag() first")
    if info.result == "promote":
        kind = COMPLEX if any(a.kind == COMPLEX for a in args) else REAL
    else:
        kind = info.result
    if all(a.op == "const" for a in args):
        return _fold(op, args, attr)
    simplified = _simplify(op, args, kind)
    if simplified is not None:
        return simplified
    return Expr._intern(op, args, attr, kind)


def _simplify(op: str, args: tuple[Expr, ...], kind: str) -> Expr | None:
    """Identities that are exact in IEEE arithmetic for finite values."""
    a = args[0]
    b = args[1] if len(args) > 1 else None
    if op == "add":
        if _is(a, 0.0) and b.kind == kind:
            return b
        if _is(b, 0.0) and a.kind == kind:
            return a
    elif op == "sub":
        if _is(b, 0.0) and a.kind == kind:
            return a
        if _is(a, 0.0):
            return apply("neg", b)
    elif op == "mul":
        if _is(a, 1.0) and b.kind == kind:
            return b
        if _is(b, 1.0) and a.kind == kind:
            return a
        if _is(a, -1.0) and b.kind == kind:
            return apply("neg", b)
        if _is(b, -1.0) and a.kind == kind:
            return apply("neg", a)
    elif op == "div":
        if _is(b, 1.0) and a.kind == kind:
            return a
    elif op == "neg":
        if a.op == "neg":
            return a.args[0]
    elif op in ("conj", "real") and a.kind == REAL:
        return a
    elif op == "imag" and a.kind == REAL:
        return _zero(REAL)
    elif op == "to_complex" and a.kind == COMPLEX:
        return a
    elif op == "complex" and _is(b, 0.0):  # x + 0i, and cos y + i sin y, written as JSON reads them
        return apply("to_complex", a)
    elif op == "complex" and a.op == "cos" and b.op == "sin" and a.args[0] is b.args[0]:
        return apply("cis", a.args[0])
    return None


def powi(base: ExprLike, n: int) -> Expr:
    """``base ** n`` for an integer ``n`` (exact repeated multiplication semantics of NumPy)."""
    base = as_expr(base)
    if n == 1:
        return base
    if n == 0:
        return constant(1.0) if base.kind == REAL else constant(1 + 0j)
    if base.op == "const":
        return _fold("powi", (base,), n)
    return Expr._intern("powi", (base,), int(n), base.kind)


def _compare(op: str, left: Expr, right: object) -> Any:
    if not isinstance(right, (Expr, int, float, complex, np.number)) or isinstance(right, (bool, np.bool_)):
        return NotImplemented
    return compare(op, left, as_expr(right))

