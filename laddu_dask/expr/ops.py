"""The operation spec: every operation of the expression graph, written once.

Every node of an expression is a leaf (a constant, an event column or a parameter) or an
operation.  An operation is one :class:`OpSpec`: its arity and result kind; its *value*
as array code (NumPy or CuPy, one source for real and complex operands); its
*derivative rule*, a small expression (:class:`Term`) over the same spec; and the few
spellings a backend needs of its own (the scalar Numba kernels, CUDA C++).  Everything is
printed from it: constant folding here (so a folded constant is computed exactly as the
array code would compute it), and in :mod:`laddu_dask.compile` the array code, the fused
Numba kernels, the CUDA source and the sufficient-statistics code.

Derivative rules use the conjugate convention: for a complex node ``z = x + i y`` and a
real objective ``L`` the adjoint is ``dL/dx + i dL/dy``.  A holomorphic ``w = f(z)``
passes ``conj(f'(z)) * adjoint(w)`` back to ``z``; ``conj``, ``real``, ``imag``, ``abs``
and ``norm_sqr`` have their own rules; a real argument keeps the real part of what it
receives.  A rule sees the arguments ``r.args``, the node's value ``r.w`` and its adjoint
``r.g`` as terms, and returns one term (or ``None``: nothing) per argument.

:func:`laddu_dask.expr.register_operation` (in :mod:`laddu_dask.expr.extension`, above the
expression nodes it builds) adds an operation in one call.

Examples
--------
>>> from laddu_dask.expr.ops import OPS, REAL
>>> OPS["mul"].value.format("a", "b")
'(a * b)'
>>> [str(t) for t in OPS["sin"].rule((REAL,))]
['(g * xp.cos(x0))']
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from laddu_dask.errors import ModelError
from laddu_dask.expr.arrayfuncs import arccos_slope, cis, make_complex, norm_sqr

REAL = "real"
COMPLEX = "complex"

#: Leaf operations: they carry an attribute instead of arguments.
LEAVES = ("const", "column", "param")

#: A backend spelling: a template, or a function of the operand kinds giving one.
Spelling = str | Callable[[tuple[str, ...]], str] | None


# ---------------------------------------------------------------------------------------
# terms: the expressions derivative rules are written in
# ---------------------------------------------------------------------------------------
class Term:
    """A node of a derivative rule: an operation of the spec over symbols and numbers.

    ``op`` is an operation name, ``"symbol"`` (``attr``: ``"x0"``, ``"x1"``, ... for the
    arguments, ``"w"`` for the node's value, ``"g"`` for its adjoint) or ``"number"``
    (``attr``: a Python number, printed as written).  Arithmetic operators and :func:`call`
    build terms; ``kind`` follows the spec's result rules.
    """

    __slots__ = ("op", "args", "attr", "kind")

    def __init__(self, op: str, args: tuple[Term, ...], attr: Any, kind: str) -> None:
        self.op, self.args, self.attr, self.kind = op, args, attr, kind

    @staticmethod
    def symbol(name: str, kind: str) -> Term:
        """A named value of the node being differentiated."""
        return Term("symbol", (), name, kind)

    @staticmethod
    def number(value: int | float | complex) -> Term:
        """A number (an ``int`` stays an ``int`` in the Python printers)."""
        return Term("number", (), value, COMPLEX if isinstance(value, complex) else REAL)

    def __add__(self, other: TermLike) -> Term:
        return call("add", self, other)

    def __radd__(self, other: TermLike) -> Term:
        return call("add", other, self)

    def __sub__(self, other: TermLike) -> Term:
        return call("sub", self, other)

    def __rsub__(self, other: TermLike) -> Term:
        return call("sub", other, self)

    def __mul__(self, other: TermLike) -> Term:
        return call("mul", self, other)

    def __rmul__(self, other: TermLike) -> Term:
        return call("mul", other, self)

    def __truediv__(self, other: TermLike) -> Term:
        return call("div", self, other)

    def __rtruediv__(self, other: TermLike) -> Term:
        return call("div", other, self)

    def __neg__(self) -> Term:
        return call("neg", self)

    def __pow__(self, n: int) -> Term:
        return call("powi", self, attr=int(n))

    def __str__(self) -> str:  # the array spelling, for reading rules
        if self.op == "symbol":
            return self.attr
        if self.op == "number":
            return repr(self.attr)
        return SPEC[self.op].value.format(*map(str, self.args), attr=self.attr)

    def __repr__(self) -> str:
        return f"Term({self})"


TermLike = Term | int | float | complex


def call(op: str, *args: TermLike, attr: Any = None) -> Term:
    """The term ``op(*args)`` of a derivative rule (``op`` any operation of the spec).

    Examples
    --------
    >>> str(call("cos", Term.symbol("x0", REAL)) * 2.0)
    '(xp.cos(x0) * 2.0)'
    """
    spec = SPEC.get(op)
    if spec is None:
        raise ModelError(f"unknown operation {op!r} in a derivative rule")
    terms = tuple(a if isinstance(a, Term) else Term.number(a) for a in args)
    if len(terms) != spec.arity:
        raise ModelError(f"{op} takes {spec.arity} arguments, got {len(terms)}")
    return Term(op, terms, attr, spec.kind(tuple(t.kind for t in terms)))


def conj(t: Term) -> Term:
    """``conj(t)``, or ``t`` itself when it is real."""
    return t if t.kind == REAL else call("conj", t)


@dataclass(frozen=True)
class Rule:
    """What a derivative rule sees of one node.

    Attributes
    ----------
    args : tuple of Term
        The arguments (symbols ``x0``, ``x1``, ...).
    w, g : Term
        The node's value and its adjoint.
    attr : object
        The node's attribute (the exponent of ``powi``).
    constants : tuple
        Each argument's value where it is a constant, else ``None``.
    """

    args: tuple[Term, ...]
    w: Term
    g: Term
    attr: Any = None
    constants: tuple = ()


# ---------------------------------------------------------------------------------------
# the spec
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OpSpec:
    """One operation: value, derivative rule and backend spellings.

    Attributes
    ----------
    name : str
        The operation (``Expr.op``).
    arity : int
        Number of expression arguments.
    value : str
        Array code with ``{0}``, ``{1}`` for the arguments, ``xp`` for the array module
        (``numpy`` or ``cupy``) and ``{attr}`` for an integer attribute; real and complex
        operands alike.
    derivative : callable or None
        ``derivative(rule) -> tuple`` of one :class:`Term` (or ``None``) per argument:
        what the node's adjoint passes to it.
    result : {"promote", "real", "complex"}
        ``"promote"``: complex if any argument is.
    commutative : bool
        Whether the arguments may be put in a canonical order.
    real_args : bool
        Whether the arguments must be real.
    numba : str or callable, optional
        Scalar Numba spelling; default ``value`` with ``np`` for ``xp`` (it may use ``np``,
        ``math`` and :mod:`laddu_dask.compile.numba_prelude`).
    numba_forward : str or callable, optional
        The forward pass's own Numba spelling where it differs from the one derivative
        rules use.
    cuda : str or callable, optional
        CUDA C++ spelling (the prelude's functions are overloaded for ``real_t`` and
        ``cplx``); ``None``: the operation has no CUDA form.
    functions : mapping
        Names the array code of ``value`` calls, and the functions they are.
    expression : bool
        ``False`` for a function only derivative rules use (not an ``Expr`` operation).
    """

    name: str
    arity: int
    value: str
    derivative: Callable[[Rule], tuple] | None
    result: str = "promote"
    commutative: bool = False
    real_args: bool = False
    numba: Spelling = None
    numba_forward: Spelling = None
    cuda: Spelling = None
    functions: Mapping[str, Callable] = field(default_factory=dict)
    expression: bool = True

    def kind(self, arg_kinds: tuple[str, ...]) -> str:
        """The result kind for arguments of these kinds."""
        if self.result == "promote":
            return COMPLEX if COMPLEX in arg_kinds else REAL
        return self.result

    def rule(self, arg_kinds: tuple[str, ...], attr: Any = None, constants: tuple = ()) -> tuple:
        """The derivative rule's terms for arguments of these kinds (one per argument)."""
        if self.derivative is None:
            raise ModelError(f"no derivative rule for operation {self.name!r}")
        kind = self.kind(arg_kinds)
        r = Rule(tuple(Term.symbol(f"x{i}", k) for i, k in enumerate(arg_kinds)),
                 Term.symbol("w", kind), Term.symbol("g", kind), attr,
                 tuple(constants) or (None,) * len(arg_kinds))
        terms = tuple(self.derivative(r))
        if len(terms) != self.arity or not all(t is None or isinstance(t, Term) for t in terms):
            raise ModelError(f"the derivative rule of {self.name!r} must return one Term (or None) "
                             f"per argument, got {terms!r}")
        return terms

    def numba_form(self, arg_kinds: tuple[str, ...], forward: bool) -> str | None:
        """The Numba template (``None``: none)."""
        form = _form(self.numba_forward, arg_kinds) if forward else None
        if form is None:
            form = _form(self.numba, arg_kinds)
        if form is None and not self.functions:
            form = self.value.replace("xp.", "np.")
        return form

    def cuda_form(self, arg_kinds: tuple[str, ...]) -> str | None:
        """The CUDA template (``None``: none)."""
        return _form(self.cuda, arg_kinds)


def _form(spelling: Spelling, arg_kinds: tuple[str, ...]) -> str | None:
    return spelling(arg_kinds) if callable(spelling) else spelling


#: Every operation of the spec, by name.
SPEC: dict[str, OpSpec] = {}
#: The operations of expressions (``SPEC`` less the functions only derivative rules use).
OPS: dict[str, OpSpec] = {}
_BUILTIN: set[str] = set()


def add_spec(spec: OpSpec) -> None:
    """Add ``spec`` to :data:`SPEC` (and to :data:`OPS` where it is an expression operation)."""
    SPEC[spec.name] = spec
    if spec.expression:
        OPS[spec.name] = spec


def array_namespace() -> dict[str, Any]:
    """The globals of generated array code: ``np`` (and ``xp``: NumPy) and every function the
    spec's array code calls."""
    namespace: dict[str, Any] = {"np": np, "xp": np}
    for spec in SPEC.values():
        namespace.update(spec.functions)
    return namespace


def evaluate(op: str, values: list, attr: Any = None) -> Any:
    """An operation's array code on NumPy values (constant folding).

    Examples
    --------
    >>> float(evaluate("atan2", [1.0, 1.0]))
    0.7853981633974483
    """
    env = array_namespace()
    env.update({f"v{i}": v for i, v in enumerate(values)})
    src = SPEC[op].value.format(*[f"v{i}" for i in range(len(values))], attr=attr)
    with np.errstate(all="ignore"):
        return eval(_compiled(src), env)  # noqa: S307 - a template of the spec


@functools.lru_cache(maxsize=1024)
def _compiled(src: str) -> Any:
    """``src`` compiled once (run as a code object, an interrupt inside it is an ordinary one:
    see :mod:`laddu_dask.jobs.interrupts`)."""
    return compile(src, "<laddu-dask constant fold>", "eval")


# ---------------------------------------------------------------------------------------
# the built-in operations
# ---------------------------------------------------------------------------------------
def _d_mul(r: Rule) -> tuple:
    x, y = r.args
    return r.g * conj(y), r.g * conj(x)


def _d_div(r: Rule) -> tuple:
    x, y = r.args
    if r.constants[0] == 1.0:  # w = 1 / y: dw/dy = -w^2, no second division
        dy = -r.g * conj(r.w * r.w)
    else:
        dy = -r.g * conj(r.w) / conj(y)
    return r.g / conj(y), dy


def _d_powi(r: Rule) -> tuple:
    (x,) = r.args
    return (r.g * float(r.attr) * conj(x ** (r.attr - 1)),)


def _d_pow(r: Rule) -> tuple:
    x, y = r.args
    return r.g * conj(y * call("pow", x, y - 1)), r.g * conj(r.w * call("log", x))


def _d_abs(r: Rule) -> tuple:
    (x,) = r.args
    return (r.g * call("sign", x),) if x.kind == REAL else (r.g * x / r.w,)


def _d_atan2(r: Rule) -> tuple:
    y, x = r.args
    r2 = y * y + x * x
    return r.g * x / r2, -r.g * y / r2


def _complex_divisor(kinds: tuple[str, ...]) -> str | None:
    # one reciprocal per complex quotient, as the CUDA prelude's operator/; the derivative
    # rules keep Numba's own division (their gradients are pinned bitwise)
    return "_cdiv({0}, {1})" if kinds[1] == COMPLEX else None


_SPECS = [
    OpSpec("add", 2, "({0} + {1})", lambda r: (r.g, r.g), commutative=True, cuda="({0} + {1})"),
    OpSpec("sub", 2, "({0} - {1})", lambda r: (r.g, -r.g), cuda="({0} - {1})"),
    OpSpec("mul", 2, "({0} * {1})", _d_mul, commutative=True, cuda="({0} * {1})"),
    OpSpec("div", 2, "({0} / {1})", _d_div, numba_forward=_complex_divisor, cuda="({0} / {1})"),
    OpSpec("neg", 1, "(-{0})", lambda r: (-r.g,), cuda="(-{0})"),
    OpSpec("powi", 1, "({0} ** {attr})", _d_powi, cuda="ld_powi({0}, {attr})"),
    OpSpec("pow", 2, "xp.power({0}, {1})", _d_pow, cuda="ld_pow({0}, {1})"),
    OpSpec("sin", 1, "xp.sin({0})", lambda r: (r.g * conj(call("cos", *r.args)),), cuda="ld_sin({0})"),
    OpSpec("cos", 1, "xp.cos({0})", lambda r: (-r.g * conj(call("sin", *r.args)),), cuda="ld_cos({0})"),
    OpSpec("tan", 1, "xp.tan({0})", lambda r: (r.g * conj(1.0 + r.w * r.w),), cuda="ld_tan({0})"),
    OpSpec("exp", 1, "xp.exp({0})", lambda r: (r.g * conj(r.w),), cuda="ld_exp({0})"),
    OpSpec("log", 1, "xp.log({0})", lambda r: (r.g / conj(r.args[0]),), cuda="ld_log({0})"),
    OpSpec("sqrt", 1, "xp.sqrt({0})", lambda r: (0.5 * r.g / conj(r.w),), cuda="ld_sqrt({0})"),
    OpSpec("abs", 1, "xp.abs({0})", _d_abs, result=REAL, numba="abs({0})", cuda="ld_abs({0})"),
    OpSpec("conj", 1, "xp.conj({0})", lambda r: (conj(r.g),), cuda="ld_conj({0})"),
    OpSpec("real", 1, "({0}).real", lambda r: (r.g,), result=REAL, numba="({0}).real",
           cuda="ld_re({0})"),
    OpSpec("imag", 1, "({0}).imag", lambda r: (1j * r.g,), result=REAL, numba="({0}).imag",
           cuda="ld_im({0})"),
    OpSpec("norm_sqr", 1, "_norm_sqr({0})", lambda r: (2.0 * r.g * r.args[0],), result=REAL,
           numba="_nsq({0})", cuda="ld_nsq({0})", functions={"_norm_sqr": norm_sqr}),
    OpSpec("atan2", 2, "xp.arctan2({0}, {1})", _d_atan2, result=REAL, real_args=True,
           cuda="ld_atan2({0}, {1})"),
    OpSpec("complex", 2, "_complex({0}, {1})", lambda r: (call("real", r.g), call("imag", r.g)),
           result=COMPLEX, real_args=True, numba="_cplx({0}, {1})", cuda="ld_c({0}, {1})",
           functions={"_complex": make_complex}),
    OpSpec("to_complex", 1, "({0} + 0j)", lambda r: (call("real", r.g),), result=COMPLEX,
           numba="_cplx({0}, 0.0)", cuda="ld_to_c({0})"),
    # arccos of the argument clipped to [-1, 1] (laddu's acos: 0 above 1, pi below -1)
    OpSpec("acos", 1, "xp.arccos(xp.clip({0}, -1.0, 1.0))", lambda r: (r.g * call("dacos", *r.args),),
           result=REAL, real_args=True,
           numba="math.acos({0} if not abs({0}) > 1.0 else math.copysign(1.0, {0}))",
           cuda="ld_acos({0})"),
    # exp(i phase) of a real phase
    OpSpec("cis", 1, "_cis({0})", lambda r: (call("imag", call("conj", r.w) * r.g),), result=COMPLEX,
           real_args=True, numba="_cplx(math.cos({0}), math.sin({0}))", cuda="ld_cis({0})",
           functions={"_cis": cis}),
    # the derivative of acos; not an expression operation
    OpSpec("dacos", 1, "_dacos({0})", lambda r: (None,), result=REAL, real_args=True,
           numba="(-1.0 / math.sqrt(1.0 - {0} * {0}) if not abs({0}) >= 1.0 else 0.0)",
           cuda="ld_dacos({0})", functions={"_dacos": arccos_slope}, expression=False),
    # the derivative of abs; not an expression operation
    OpSpec("sign", 1, "xp.sign({0})", lambda r: (None,), result=REAL, real_args=True,
           cuda="ld_sign({0})", expression=False),
]
for _spec in _SPECS:
    add_spec(_spec)
_BUILTIN.update(SPEC)


def is_builtin(name: str) -> bool:
    """Whether ``name`` is one of the built-in operations (which cannot be removed)."""
    return name in _BUILTIN
