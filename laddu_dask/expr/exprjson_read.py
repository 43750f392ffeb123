"""Expressions read from laddu 0.28.1's JSON (the node list :mod:`laddu_dask.expr.exprjson` writes).

:func:`from_json` reads the text laddu or :func:`~laddu_dask.expr.exprjson.to_json` wrote
through the ordinary constructors, so the result is interned and simplified like an
expression written by hand; vectors and matrices of laddu's are read as
:class:`~laddu_dask.expr.linalg.Vector` and :class:`~laddu_dask.expr.linalg.Matrix`.

Examples
--------
>>> import laddu_dask as ld
>>> e = (ld.parameter("a") * ld.scalar("x") + 1.0).norm_sqr()
>>> from_json(e.to_json()) is e
True
"""

from __future__ import annotations

from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr.exprjson import BINARY_BACK, OWN_KIND, P4_BACK, UNARY_BACK, parse_json
from laddu_dask.expr.functions import atan2, complex_
from laddu_dask.expr.linalg import Matrix, Vector, dot, expr_sum, matmul, matvec, solve
from laddu_dask.expr.node import Expr, apply, column, constant, powi
from laddu_dask.expr.ops import OPS, REAL
from laddu_dask.expr.parameter import parameter
from laddu_dask.expr.tags import tag


def _inside(value: float, bounds: tuple[float | None, float | None]) -> bool:
    lo, hi = bounds
    return (lo is None or value >= lo) and (hi is None or value <= hi)


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
            return column(f"{body['name']}_{P4_BACK[body['component']]}")
        if kind == "ScalarParam":
            return _read_parameter(body)
        if kind == "Unary":
            op = body["op"]
            if not (isinstance(op, dict) and set(op) == {"PowI"}) and op not in UNARY_BACK:
                raise _fail(self.where, i, f"has the unary operation {op!r}, which neither library writes")
            x = self.expr(i, body["input"])
            if isinstance(op, dict) and set(op) == {"PowI"}:
                return powi(x, int(op["PowI"]))
            name = UNARY_BACK[op]
            if name in ("sqrt", "log") and not (body.get("real") is True and x.kind == REAL):
                return getattr(x, name)()  # laddu's principal branch: complex where x < 0
            return apply(name, x)
        if kind == "Binary":
            if body.get("op") not in BINARY_BACK:
                raise _fail(self.where, i, f"has the binary operation {body.get('op')!r}, which neither "
                            "library writes")
            op = BINARY_BACK[body["op"]]
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
    """Read laddu 0.28.1's JSON text of an expression (:func:`~laddu_dask.expr.exprjson.to_json`'s,
    too).

    Raises
    ------
    ModelError
        For text that is not JSON, a node kind neither library writes (naming the node),
        a reference to a node that does not come earlier, or a malformed node.
    """
    return from_dict(parse_json(text, where), where)
