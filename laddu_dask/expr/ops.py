"""The table of elementary operations an expression graph is made of.

Every node of an expression is either a leaf (a constant, an event column or a
parameter) or one of the operations below.  Each operation has one array
template, used both to fold constants while an expression is built and by the
code generator in :mod:`laddu_dask.compile`, so a folded constant is computed
exactly as the generated kernel would compute it.

Examples
--------
>>> from laddu_dask.expr.ops import OPS
>>> OPS["mul"].template.format("a", "b")
'(a * b)'
"""

from __future__ import annotations

from dataclasses import dataclass

REAL = "real"
COMPLEX = "complex"

#: Leaf operations: they carry an attribute instead of arguments.
LEAVES = ("const", "column", "param")


@dataclass(frozen=True)
class OpInfo:
    """How one operation is evaluated and typed.

    Attributes
    ----------
    arity:
        Number of expression arguments.
    template:
        Python source with ``{0}``, ``{1}`` for the arguments and ``xp`` for the
        array module (``numpy`` or ``cupy``); ``{attr}`` for an integer attribute.
    result:
        ``"promote"`` (complex if any argument is complex), ``"real"`` or ``"complex"``.
    commutative:
        Whether the arguments may be put in a canonical order.
    """

    arity: int
    template: str
    result: str = "promote"
    commutative: bool = False


OPS: dict[str, OpInfo] = {
    "add": OpInfo(2, "({0} + {1})", commutative=True),
    "sub": OpInfo(2, "({0} - {1})"),
    "mul": OpInfo(2, "({0} * {1})", commutative=True),
    "div": OpInfo(2, "({0} / {1})"),
    "neg": OpInfo(1, "(-{0})"),
    "powi": OpInfo(1, "({0} ** {attr})"),
    "pow": OpInfo(2, "xp.power({0}, {1})"),
    "sin": OpInfo(1, "xp.sin({0})"),
    "cos": OpInfo(1, "xp.cos({0})"),
    "tan": OpInfo(1, "xp.tan({0})"),
    "exp": OpInfo(1, "xp.exp({0})"),
    "log": OpInfo(1, "xp.log({0})"),
    "sqrt": OpInfo(1, "xp.sqrt({0})"),
    "abs": OpInfo(1, "xp.abs({0})", result=REAL),
    "conj": OpInfo(1, "xp.conj({0})"),
    "real": OpInfo(1, "xp.real({0})", result=REAL),
    "imag": OpInfo(1, "xp.imag({0})", result=REAL),
    "norm_sqr": OpInfo(1, "_norm_sqr({0})", result=REAL),
    "atan2": OpInfo(2, "xp.arctan2({0}, {1})", result=REAL),
    "complex": OpInfo(2, "_complex({0}, {1})", result=COMPLEX),
    "to_complex": OpInfo(1, "({0} + 0j)", result=COMPLEX),
}

#: Operations whose arguments must be real.
REAL_ONLY = frozenset({"atan2", "complex"})
