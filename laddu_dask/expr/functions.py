"""Elementary functions of expressions that are not methods of one: ``acos``, ``cis``,
``atan2`` and the complex numbers built from two real expressions.

Examples
--------
>>> import laddu_dask as ld
>>> complex_(1.0, 2.0)
Expr(const (1+2j))
"""

from __future__ import annotations

import math  # noqa: F401 - the doctests' pi

from laddu_dask.expr.node import Expr, ExprLike, apply, as_expr
from laddu_dask.expr.ops import COMPLEX

__all__ = ["acos", "atan2", "cis", "complex_", "polar_complex"]


def acos(value: ExprLike) -> Expr:
    """The inverse cosine of a real expression, of the argument clipped to ``[-1, 1]``
    (laddu's ``acos``: 0 above 1, pi below -1).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.acos(-1.0).attr == math.pi, ld.acos(2.0).attr
    (True, 0.0)
    """
    return apply("acos", as_expr(value))


def cis(phase: ExprLike) -> Expr:
    """The unit complex number ``exp(i phase)`` (laddu's ``cis``): ``cos + i sin`` of a real
    phase, ``exp(i z)`` of a complex one.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.cis(0.0)
    Expr(const (1+0j))
    """
    phase = as_expr(phase)
    if phase.kind == COMPLEX:
        return (1j * phase).exp()
    return apply("cis", phase)


def atan2(y: ExprLike, x: ExprLike) -> Expr:
    """The quadrant-aware angle ``atan2(y, x)`` of two real expressions.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.atan2(1.0, 1.0)
    Expr(const 0.7853981633974483)
    """
    return apply("atan2", as_expr(y), as_expr(x))


def complex_(re: ExprLike, im: ExprLike) -> Expr:
    """The complex expression ``re + i im`` from two real expressions (``ld.complex``).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> c = ld.complex(ld.parameter("re"), ld.parameter("im"))
    >>> c.kind
    'complex'
    """
    return apply("complex", as_expr(re), as_expr(im))


def polar_complex(magnitude: ExprLike, phase: ExprLike) -> Expr:
    """The complex expression ``magnitude * exp(i phase)``.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.polar_complex(2.0, 0.0)
    Expr(const (2+0j))
    """
    magnitude, phase = as_expr(magnitude), as_expr(phase)
    return magnitude * complex_(phase.cos(), phase.sin())
