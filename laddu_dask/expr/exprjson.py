"""Expressions as laddu 0.28.1's JSON: a node list, read and written.

laddu writes an expression as ``{"root": i, "nodes": [...], "metadata": [...]}``: each node
is one of its kinds (``RealConst``, ``ComplexConst``, ``ScalarParam``, ``EventScalar``,
``EventP4Component``, ``Unary``, ``Binary``, ``NaryAdd``, ``NaryMul``, ``Complex``,
``Vector``, ``Matrix``, ``Component``, ``MatrixElement``, ``MatMul``, ``MatVec``, ``Dot``,
``Solve``) referring to earlier nodes by index, and each metadata entry holds the node's
display name and projection tags.  :func:`to_json` writes our graph in that format and
:func:`from_json` reads it back (text laddu wrote, too) through the ordinary constructors,
so the result is interned and simplified like an expression written by hand.

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
from laddu_dask.expr.functions import atan2, complex_
from laddu_dask.expr.linalg import Matrix, Vector, dot, expr_sum, matmul, matvec, solve
from laddu_dask.expr.node import Expr, apply, column, constant, powi, walk
from laddu_dask.expr.ops import COMPLEX, OPS, REAL
from laddu_dask.expr.parameter import ParameterSpec, parameter
from laddu_dask.expr.positivity import is_nonnegative
from laddu_dask.expr.tags import TAG, tag

_P4 = {"e": "E", "px": "Px", "py": "Py", "pz": "Pz"}
_P4_BACK = {v: k for k, v in _P4.items()}
_UNARY = {"neg": "Neg", "sin": "Sin", "cos": "Cos", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
          "conj": "Conj", "real": "Real", "imag": "Imag", "norm_sqr": "NormSqr"}
_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "atan2": "Atan2"}
_UNARY_BACK = {v: k for k, v in _UNARY.items()}
_BINARY_BACK = {v: k for k, v in _BINARY.items()}
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

    def expr(self, root: Expr) -> int:
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

    def _node(self, n: Expr, args: list[int]) -> tuple[Any, str]:
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

    def value(self, value: Expr | Vector | Matrix) -> int:
        if isinstance(value, Vector):
            elements = [self.expr(e) for e in value.elements]
            return self.add({"Vector": {"elements": elements}}, "Vector")
        if isinstance(value, Matrix):
            rows, cols = value.shape
            elements = [self.expr(value.at(i, j)) for i in range(rows) for j in range(cols)]
            return self.add({"Matrix": {"rows": rows, "cols": cols, "elements": elements}}, "Matrix")
        return self.expr(value)


def _inside(value: float, bounds: tuple[float | None, float | None]) -> bool:
    lo, hi = bounds
    return (lo is None or value >= lo) and (hi is None or value <= hi)


def _spec_record(spec: ParameterSpec) -> dict[str, Any]:
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


def node_record(node: Expr) -> dict[str, Any]:
    """The laddu JSON record of one node alone (its inputs numbered 0), e.g. to tell its kind."""
    return _Writer()._node(node, [0] * len(node.args))[0]


def to_dict(value: Expr | Vector | Matrix) -> dict[str, Any]:
    """The JSON object of an expression (or a vector or matrix of them), laddu's layout."""
    writer = _Writer()
    root = writer.value(value)
    return {"root": root, "nodes": writer.nodes, "metadata": writer.metadata}


def to_json(value: Expr | Vector | Matrix) -> str:
    """laddu 0.28.1's JSON text of an expression (compact, as laddu writes it)."""
    return _json.dumps(to_dict(value), separators=(",", ":"))


# ---------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------
def _fail(where: str, i: int | None, message: str) -> ModelError:
    at = "" if i is None else f" node {i}"
    return ModelError(f"{where}:{at} {message}")


class _Reader:
    def __init__(self, data: dict[str, Any], where: str) -> None:
        self.where = where
        self.records = data["nodes"]
        self.values: list[Any] = []

    def ref(self, i: int, j: object) -> Any:
        if isinstance(j, bool) or not isinstance(j, int) or not 0 <= j < i:
            raise _fail(self.where, i, f"refers to node {j!r}, which is not an earlier node")
        return self.values[j]

    def expr(self, i: int, j: object) -> Expr:
        out = self.ref(i, j)
        if not isinstance(out, Expr):
            raise _fail(self.where, i, f"needs a scalar expression at node {j}, got a {out!r}")
        return out

    def record(self, j: int) -> tuple[str | None, Any]:
        rec = self.records[j]
        if isinstance(rec, dict) and len(rec) == 1:
            return next(iter(rec.items()))
        return None, None

    def acos_argument(self, lhs: int, rhs: int) -> int | None:
        """``k`` when ``lhs`` is laddu's ``sqrt(1 - x_k^2)`` and ``rhs`` is ``k`` (its acos)."""
        try:
            kind, body = self.record(lhs)
            if kind != "Unary" or body["op"] != "Sqrt":
                return None
            kind, diff = self.record(body["input"])
            if kind != "Binary" or diff["op"] != "Sub" or self.record(diff["lhs"]) != ("RealConst", 1.0):
                return None
            kind, square = self.record(diff["rhs"])
            if kind != "Unary" or square["op"] != {"PowI": 2}:
                return None
            same = self.values[square["input"]] is self.values[rhs]
            return rhs if same else None
        except (KeyError, TypeError, IndexError):
            return None

    def node(self, i: int, kind: str, body: Any) -> Any:
        if kind == "RealConst":
            return constant(float(body))
        if kind == "ComplexConst":
            return constant(complex(float(body[0]), float(body[1])))
        if kind == "EventScalar":
            return column(body)
        if kind == "EventP4Component":
            return column(f"{body['name']}_{_P4_BACK[body['component']]}")
        if kind == "ScalarParam":
            return _read_parameter(body)
        if kind == "Unary":
            op = body["op"]
            if not (isinstance(op, dict) and set(op) == {"PowI"}) and op not in _UNARY_BACK:
                raise _fail(self.where, i, f"has the unary operation {op!r}, which neither library writes")
            x = self.expr(i, body["input"])
            if isinstance(op, dict) and set(op) == {"PowI"}:
                return powi(x, int(op["PowI"]))
            name = _UNARY_BACK[op]
            if name in ("sqrt", "log") and not (body.get("real") is True and x.kind == REAL):
                return getattr(x, name)()  # laddu's principal branch: complex where x < 0
            return apply(name, x)
        if kind == "Binary":
            if body.get("op") not in _BINARY_BACK:
                raise _fail(self.where, i, f"has the binary operation {body.get('op')!r}, which neither "
                            "library writes")
            op = _BINARY_BACK[body["op"]]
            if op == "atan2":
                k = self.acos_argument(body["lhs"], body["rhs"])
                if k is not None:
                    return apply("acos", self.expr(i, k))
                return atan2(self.expr(i, body["lhs"]), self.expr(i, body["rhs"]))
            return apply(op, self.expr(i, body["lhs"]), self.expr(i, body["rhs"]))
        if kind == "NaryAdd":
            return expr_sum([self.expr(i, j) for j in body["terms"]])
        if kind == "NaryMul":
            out = self.expr(i, body["factors"][0])
            for j in body["factors"][1:]:
                out = out * self.expr(i, j)
            return out
        if kind == "Complex":
            re, im = self.expr(i, body["re"]), self.expr(i, body["im"])
            return complex_(re, im)  # x + 0i and cos y + i sin y become to_complex(x) and cis(y)
        if kind == "Vector":
            return Vector([self.expr(i, j) for j in body["elements"]])
        if kind == "Matrix":
            rows, cols, elements = int(body["rows"]), int(body["cols"]), body["elements"]
            if rows * cols != len(elements):
                raise _fail(self.where, i, f"a {rows}x{cols} matrix has {len(elements)} elements")
            flat = [self.expr(i, j) for j in elements]
            return Matrix([flat[r * cols:(r + 1) * cols] for r in range(rows)])
        if kind == "Component":
            return self.ref(i, body["input"])[int(body["index"])]
        if kind == "MatrixElement":
            return self.ref(i, body["input"]).at(int(body["row"]), int(body["col"]))
        if kind == "MatMul":
            return matmul(self.ref(i, body["lhs"]), self.ref(i, body["rhs"]))
        if kind == "MatVec":
            return matvec(self.ref(i, body["matrix"]), self.ref(i, body["vector"]))
        if kind == "Dot":
            return dot(self.ref(i, body["lhs"]), self.ref(i, body["rhs"]))
        if kind == "Solve":
            return solve(self.ref(i, body["matrix"]), self.ref(i, body["rhs"]))
        if kind == OWN_KIND:
            op = body["op"]
            if op not in OPS:
                raise _fail(self.where, i, f"has the operation {op!r}, which laddu-dask does not know")
            attr = body.get("attr")
            args = [self.expr(i, j) for j in body["inputs"]]
            return powi(args[0], int(attr)) if op == "powi" else apply(op, *args, attr=attr)
        raise _fail(self.where, i, f"has the node kind {kind!r}, which neither laddu 0.28.1 "
                    "nor laddu-dask writes")


def _read_parameter(body: dict[str, Any]) -> Expr:
    bounds = body.get("bounds") or {}
    state = body.get("state", "Free")
    initial = body.get("initial", "Default")
    start: Any = None
    if isinstance(initial, dict) and "Value" in initial:
        start = initial["Value"]
    elif isinstance(initial, dict) and "Uniform" in initial:
        start = (initial["Uniform"]["min"], initial["Uniform"]["max"])
    elif initial == "Default":  # laddu's default: 0 (ours where 0 is out of bounds)
        start = 0.0 if _inside(0.0, (bounds.get("min"), bounds.get("max"))) else None
    else:
        raise ModelError(f"parameter {body.get('name')!r}: unknown initial value {initial!r}")
    fixed = state["Fixed"] if isinstance(state, dict) and "Fixed" in state else None
    if fixed is None and state != "Free":
        raise ModelError(f"parameter {body.get('name')!r}: unknown state {state!r}")
    return parameter(body["name"], initial=None if fixed is not None else start,
                     bounds=(bounds.get("min"), bounds.get("max")), fixed=fixed,
                     periodic=bool(body.get("periodic", False)), scale=body.get("scale"),
                     unit=body.get("unit"), latex=body.get("latex"), description=body.get("description"))


def from_dict(data: Any, where: str = "Expr.from_json") -> Expr | Vector | Matrix:
    """The expression (or vector or matrix) of a JSON object in laddu's layout."""
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list) or "root" not in data:
        raise ModelError(f"{where}: expected an object with 'root' and 'nodes', got {str(data)[:80]!r}")
    reader = _Reader(data, where)
    metadata = data.get("metadata") or []
    for i, rec in enumerate(reader.records):
        kind, body = reader.record(i)
        if kind is None:
            raise _fail(where, i, f"is not a one-key object: {str(rec)[:80]!r}")
        try:
            value = reader.node(i, kind, body)
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            if isinstance(exc, ModelError):
                if str(exc).startswith(where):
                    raise
                raise _fail(where, i, f"({kind}): {exc}") from None
            raise _fail(where, i, f"({kind}) is malformed: {type(exc).__name__} {exc}") from None
        meta = metadata[i] if i < len(metadata) and isinstance(metadata[i], dict) else {}
        for t in meta.get("tags") or ():
            if not isinstance(value, Expr):
                raise _fail(where, i, "carries a tag, but only scalar expressions can be tagged")
            value = tag(value, t)
        reader.values.append(value)
    root = data["root"]
    if isinstance(root, bool) or not isinstance(root, int) or not 0 <= root < len(reader.values):
        raise ModelError(f"{where}: the root node {root!r} is not one of the {len(reader.values)} nodes")
    return reader.values[root]


def from_json(text: str | bytes, where: str = "Expr.from_json") -> Expr | Vector | Matrix:
    """Read laddu 0.28.1's JSON text of an expression (:func:`to_json`'s, too).

    Raises
    ------
    ModelError
        For text that is not JSON, a node kind neither library writes (naming the node),
        a reference to a node that does not come earlier, or a malformed node.
    """
    return from_dict(parse_json(text, where), where)


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
