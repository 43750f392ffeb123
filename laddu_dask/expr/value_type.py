"""Whether laddu types an expression as real-valued (``Dataset.evaluate(expr, real=True)``).

laddu-dask gives a node the kind ``"complex"`` wherever its value can leave the real line
(``Vec4.m()`` of a space-like vector is ``i sqrt(-m^2)``). laddu types expressions
otherwise: real columns and constants, and every function of real arguments (``sqrt``,
``log``, ``acos``, arithmetic), are real, and ``evaluate(real=True)`` returns the real part
of their principal-branch values; a complex constant, a complex parameter, ``cis``, a line
shape or anything built from them is complex and is refused. :func:`real_valued` is that
typing on laddu-dask's graph.

Examples
--------
>>> import laddu_dask as ld
>>> v = ld.Vec4.event("x")
>>> v.m().kind, real_valued(v.m())
('complex', True)
>>> real_valued(1j * ld.scalar("s")), real_valued((1j * ld.scalar("s")).norm_sqr())
(False, True)
"""

from __future__ import annotations

from laddu_dask.expr.graph import walk
from laddu_dask.expr.node import Expr
from laddu_dask.expr.ops import OPS

__all__ = ["real_valued"]


def _real(node: Expr, real: dict[int, bool]) -> bool:
    if node.op == "const":
        return complex(node.attr).imag == 0.0
    if node.op == "column":
        return True
    if node.op == "param":
        return node.kind == "real"
    if node.op == "complex":  # complex(re, im) is real only with the constant zero as im
        im = node.args[1]
        return real[node.args[0].serial] and im.op == "const" and complex(im.attr) == 0
    if node.op == "to_complex":  # inserted so that sqrt and log continue analytically
        return real[node.args[0].serial]
    spec = OPS.get(node.op)
    if spec is not None and spec.result != "promote":  # cis is complex; real, abs, acos, ... real
        return spec.result == "real"
    return all(real[a.serial] for a in node.args)  # promoting operations, tags


def real_valued(expr: Expr) -> bool:
    """Whether laddu types ``expr`` as real: no complex constant, complex parameter or
    complex-valued operation feeds it except through ``real``, ``imag``, ``abs`` or
    ``norm_sqr``.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> real_valued(ld.scalar("s").sqrt()), real_valued(ld.cis(ld.scalar("s")))
    (True, False)
    """
    real: dict[int, bool] = {}
    for node in walk(expr):
        real[node.serial] = _real(node, real)
    return real[expr.serial]
