"""Expressions as laddu 0.28.1's JSON: a node list, written (and the names of its node kinds).

laddu writes an expression as ``{"root": i, "nodes": [...], "metadata": [...]}``: each node
is one of its kinds (``RealConst``, ``ComplexConst``, ``ScalarParam``, ``EventScalar``,
``EventP4Component``, ``Unary``, ``Binary``, ``NaryAdd``, ``NaryMul``, ``Complex``,
``Vector``, ``Matrix``, ``Component``, ``MatrixElement``, ``MatMul``, ``MatVec``, ``Dot``,
``Solve``) referring to earlier nodes by index, and each metadata entry holds the node's
display name and projection tags.  :func:`to_json` writes our graph in that format (it only
reads nodes, so it sits below the operators of :mod:`laddu_dask.expr.node`) and
:func:`laddu_dask.expr.exprjson_read.from_json` reads it back (text laddu wrote, too) through
the ordinary constructors, so the result is interned and simplified like an expression written
by hand.

How our nodes map onto laddu's:

* a column ``NAME_e``/``_px``/``_py``/``_pz`` is laddu's four-momentum component of
  ``NAME`` (our datasets store four-vectors as those columns); any other column is an
  event scalar;
* ``sqrt`` and ``log`` of a real argument are laddu's principal branches (complex where the
  argument is negative), which :meth:`Expr.sqrt` builds; a real-valued root that laddu-dask
  built on purpose (a Lorentz factor) carries ``"real": true`` in its ``Unary`` node, a key
  laddu ignores, so that it reads back as the same node;
* ``acos(x)`` is written as laddu builds it, ``atan2(sqrt(1 - x^2), x)``, and that pattern
  is read back as ``acos``; ``to_complex(x)`` is ``Complex(x, 0.0)``; ``cis(x)`` is
  ``Complex(cos x, sin x)``;
* a projection tag is a copy of the tagged node carrying the tags in its metadata (so an
  untagged use of the same node stays untagged);
* operations laddu does not have (``abs``, ``tan``, ``x ** y`` with an expression exponent,
  operations added with :func:`~laddu_dask.expr.register_operation`) are our own node kind
  ``LadduDaskOp`` ``{"op": name, "inputs": [...], "attr": ...}``, which laddu refuses.

Examples
--------
>>> import laddu_dask as ld
>>> e = (ld.parameter("a") * ld.scalar("x") + 1.0).norm_sqr()
>>> text = e.to_json()
>>> text[:60]
'{"root":5,"nodes":[{"ScalarParam":{"name":"a","state":"Free"'
>>> ld.Expr.from_json(text) is e
True
"""

from __future__ import annotations

import json as _json
from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr.graph import Node, walk
from laddu_dask.expr.ops import COMPLEX, REAL
from laddu_dask.expr.positivity import is_nonnegative
from laddu_dask.expr.tags import TAG

_P4 = {"e": "E", "px": "Px", "py": "Py", "pz": "Pz"}
P4_BACK = {v: k for k, v in _P4.items()}
_UNARY = {"neg": "Neg", "sin": "Sin", "cos": "Cos", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
          "conj": "Conj", "real": "Real", "imag": "Imag", "norm_sqr": "NormSqr"}
_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "atan2": "Atan2"}
UNARY_BACK = {v: k for k, v in _UNARY.items()}
BINARY_BACK = {v: k for k, v in _BINARY.items()}
#: Our own node kind, for operations laddu 0.28.1 does not have.
OWN_KIND = "LadduDaskOp"


# ---------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------
class _Writer:
    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.metadata: list[dict[str, Any]] = []
        self.index: dict[int, int] = {}
        self.records: dict[int, tuple[Any, str]] = {}

    def add(self, record: Any, source: str, tags: tuple[str, ...] = ()) -> int:
        self.nodes.append(record)
        self.metadata.append({"source": source, "name": None, "tags": list(tags)})
        return len(self.nodes) - 1

    def expr(self, root: Node) -> int:
        order = walk(root)
        # a node used only under tags is written only as the tagged copies, as laddu has it
        untagged_use = {root.serial} | {a.serial for n in order if n.op != TAG for a in n.args}
        for node in order:
            if node.serial in self.index or node.serial in self.records:
                continue
            args = [self.index.get(a.serial) for a in node.args]
            if node.op == TAG:  # a copy of the tagged node that carries the tags
                record, source = self.records[node.args[0].serial]
                self.index[node.serial] = self.add(record, source, node.attr)
                continue
            record, source = self._node(node, args)
            self.records[node.serial] = (record, source)
            if node.serial in untagged_use:
                self.index[node.serial] = self.add(record, source)
        return self.index[root.serial]

    def _node(self, n: Node, args: list[int]) -> tuple[Any, str]:
        if n.op == "const":
            if n.kind == COMPLEX:
                return {"ComplexConst": [n.attr.real, n.attr.imag]}, "Const"
            return {"RealConst": n.attr}, "Const"
        if n.op == "column":
            head, sep, tail = n.attr.rpartition("_")
            if sep and head and tail in _P4:
                return {"EventP4Component": {"name": head, "component": _P4[tail]}}, "Event"
            return {"EventScalar": n.attr}, "Event"
        if n.op == "param":
            return {"ScalarParam": _spec_record(n.attr)}, "Param"
        if n.op in _UNARY:
            body = {"op": _UNARY[n.op], "input": args[0]}
            if n.op in ("sqrt", "log") and n.kind == REAL and not is_nonnegative(n.args[0]):
                body["real"] = True  # our real root of a real argument (laddu ignores the key)
            return {"Unary": body}, "Unary"
        if n.op == "powi":
            return {"Unary": {"op": {"PowI": n.attr}, "input": args[0]}}, "Unary"
        if n.op in _BINARY:
            return {"Binary": {"op": _BINARY[n.op], "lhs": args[0], "rhs": args[1]}}, "Binary"
        if n.op == "complex":
            return {"Complex": {"re": args[0], "im": args[1]}}, "Complex"
        if n.op == "to_complex":
            zero = self.add({"RealConst": 0.0}, "Const")
            return {"Complex": {"re": args[0], "im": zero}}, "Complex"
        if n.op == "cis":
            cos = self.add({"Unary": {"op": "Cos", "input": args[0]}}, "Unary")
            sin = self.add({"Unary": {"op": "Sin", "input": args[0]}}, "Unary")
            return {"Complex": {"re": cos, "im": sin}}, "Complex"
        if n.op == "acos":  # laddu's acos: atan2(sqrt(1 - x^2), x)
            one = self.add({"RealConst": 1.0}, "Const")
            square = self.add({"Unary": {"op": {"PowI": 2}, "input": args[0]}}, "Unary")
            diff = self.add({"Binary": {"op": "Sub", "lhs": one, "rhs": square}}, "Binary")
            root = self.add({"Unary": {"op": "Sqrt", "input": diff}}, "Unary")
            return {"Binary": {"op": "Atan2", "lhs": root, "rhs": args[0]}}, "Binary"
        return {OWN_KIND: {"op": n.op, "inputs": args, "attr": n.attr}}, OWN_KIND

    def value(self, value: Any) -> int:
        """The index of ``value``: an expression (shape ``()``), or the vector (``(n,)``) or
        matrix (``(rows, cols)``) of expressions of :mod:`laddu_dask.expr.linalg`."""
        if len(value.shape) == 1:
            elements = [self.expr(e) for e in value]
            return self.add({"Vector": {"elements": elements}}, "Vector")
        if len(value.shape) == 2:
            rows, cols = value.shape
            elements = [self.expr(value.at(i, j)) for i in range(rows) for j in range(cols)]
            return self.add({"Matrix": {"rows": rows, "cols": cols, "elements": elements}}, "Matrix")
        return self.expr(value)


def _spec_record(spec: Any) -> dict[str, Any]:
    if spec.is_fixed:
        state: Any = {"Fixed": spec.fixed}
        initial: Any = {"Value": spec.fixed}
    else:
        state = "Free"
        if spec.initial_range is not None:
            initial = {"Uniform": {"min": spec.initial_range[0], "max": spec.initial_range[1]}}
        elif spec.initial == 0.0:  # laddu's default initial value is 0
            initial = "Default"
        else:
            initial = {"Value": spec.initial}
    return {"name": spec.name, "state": state, "initial": initial,
            "bounds": {"min": spec.bounds[0], "max": spec.bounds[1]}, "periodic": spec.periodic,
            "scale": spec.scale, "unit": spec.unit, "latex": spec.latex,
            "description": spec.description}


def node_record(node: Node) -> dict[str, Any]:
    """The laddu JSON record of one node alone (its inputs numbered 0), e.g. to tell its kind."""
    return _Writer()._node(node, [0] * len(node.args))[0]


def to_dict(value: Any) -> dict[str, Any]:
    """The JSON object of an expression (or a vector or matrix of them), laddu's layout."""
    writer = _Writer()
    root = writer.value(value)
    return {"root": root, "nodes": writer.nodes, "metadata": writer.metadata}


def to_json(value: Any) -> str:
    """laddu 0.28.1's JSON text of an expression (compact, as laddu writes it)."""
    return _json.dumps(to_dict(value), separators=(",", ":"))


def parse_json(text: str | bytes, where: str) -> Any:
    """The value of the JSON ``text`` a ``from_json`` was given (``ModelError`` naming ``where``
    when it is not a string or not JSON)."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise ModelError(f"{where}: json must be a str, got {type(text).__name__}")
    try:
        return _json.loads(text)
    except ValueError as exc:
        raise ModelError(f"{where}: not JSON: {exc}") from None



# ---------------------------------------------------------------------------------------
# the node kinds by name (laddu's ExprNodeKind)
# ---------------------------------------------------------------------------------------
_KIND_NAMES = ("REAL_CONST", "COMPLEX_CONST", "SCALAR_PARAM", "EVENT_SCALAR", "EVENT_P4_COMPONENT", "UNARY",
               "BINARY", "NARY_ADD", "NARY_MUL", "COMPLEX", "VECTOR", "MATRIX", "COMPONENT",
               "MATRIX_ELEMENT", "MAT_MUL", "MAT_VEC", "DOT", "SOLVE")


class ExprNodeKind:
    """A category of node in an expression's JSON (laddu's ``ExprNodeKind``): ``REAL_CONST``,
    ``BINARY``, ... with laddu's integer values, in the order of laddu's node kinds.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.ExprNodeKind.BINARY, int(ld.ExprNodeKind.BINARY)
    (ExprNodeKind.BINARY, 6)
    >>> ld.ExprNodeKind.of('{"Binary": {"op": "Add", "lhs": 0, "rhs": 1}}') == ld.ExprNodeKind.BINARY
    True
    """

    __slots__ = ("_name", "_value")

    def __init__(self, name: str, value: int) -> None:
        self._name, self._value = name, value

    def __int__(self) -> int:
        return self._value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExprNodeKind) and other._value == self._value

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(("ExprNodeKind", self._value))

    def __repr__(self) -> str:
        return f"ExprNodeKind.{self._name}"

    __str__ = __repr__

    @staticmethod
    def of(record: str | dict[str, Any]) -> ExprNodeKind:
        """The kind of one node of an expression's JSON (a one-key object or its text)."""
        data = _json.loads(record) if isinstance(record, str) else record
        kind = next(iter(data)) if isinstance(data, dict) and len(data) == 1 else None
        name = "".join(f"_{c}" if c.isupper() else c.upper() for c in kind or "").lstrip("_")
        if name not in _KIND_NAMES:
            raise ModelError(f"ExprNodeKind.of: {str(record)[:80]!r} is not a node of laddu's kinds")
        return getattr(ExprNodeKind, name)


for _i, _n in enumerate(_KIND_NAMES):
    setattr(ExprNodeKind, _n, ExprNodeKind(_n, _i))
