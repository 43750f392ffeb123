"""JSON forms of expressions, models and four-vectors (laddu's ``to_json``/``from_json``).

An expression is written as its graph: the nodes in topological order, each with its
operation, arguments (earlier node indices), kind and attribute (a number, a column name,
a parameter's settings, an exponent, tags). Numbers keep every bit (Python's shortest
round-trip ``repr``), so ``Expr.from_json(e.to_json()) is e``: the same interned node.
The format is laddu-dask's own, not laddu's graph format.

Examples
--------
>>> import laddu_dask as ld
>>> e = ld.parameter("a", initial=0.1) * ld.scalar("x").sqrt() + 1j
>>> ld.Expr.from_json(e.to_json()) is e
True
"""

from __future__ import annotations

import dataclasses
import json as jsonlib
from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr.node import Expr, walk
from laddu_dask.expr.ops import LEAVES, OPS
from laddu_dask.expr.parameter import ParameterSpec

__all__ = ["components_from_json", "components_to_json", "expr_from_data", "expr_from_json", "expr_to_data",
           "expr_to_json"]

FORMAT = "laddu-dask expression"
VERSION = 1
_KINDS = ("real", "complex")


def _attr(node: Expr) -> Any:
    a = node.attr
    if node.op == "const":
        c = complex(a)
        return {"re": c.real, "im": c.imag} if node.kind == "complex" else float(a)
    if node.op == "param":
        return {f.name: getattr(a, f.name) for f in dataclasses.fields(a)}
    if isinstance(a, tuple):
        return list(a)
    return a


def expr_to_data(expr: Expr) -> dict[str, Any]:
    """The JSON-able form of ``expr`` (see the module docstring)."""
    nodes = walk(expr)
    index = {n.serial: i for i, n in enumerate(nodes)}
    items = [{"op": n.op, "args": [index[a.serial] for a in n.args], "kind": n.kind, "attr": _attr(n)}
             for n in nodes]
    return {"format": FORMAT, "version": VERSION, "root": len(nodes) - 1, "nodes": items}


def expr_to_json(expr: Expr) -> str:
    """``expr`` as a JSON string."""
    return jsonlib.dumps(expr_to_data(expr))


def _spec(d: dict[str, Any]) -> ParameterSpec:
    d = dict(d)
    d["bounds"] = tuple(d["bounds"])
    if d.get("initial_range") is not None:
        d["initial_range"] = tuple(d["initial_range"])
    return ParameterSpec(**d)


def _node(item: dict[str, Any], built: list[Expr]) -> Expr:
    op, kind, attr = item["op"], item["kind"], item.get("attr")
    if kind not in _KINDS or (op not in OPS and op not in LEAVES and op != "tag"):
        raise ModelError(f"Expr.from_json: unknown operation {op!r} or kind {kind!r}")
    args = tuple(built[i] for i in item["args"])
    if op == "const":
        attr = complex(attr["re"], attr["im"]) if kind == "complex" else float(attr)
    elif op == "param":
        attr = _spec(attr)
    elif isinstance(attr, list):
        attr = tuple(attr)
    return Expr._intern(op, args, attr, kind)


def expr_from_data(data: dict[str, Any]) -> Expr:
    """The expression :func:`expr_to_data` wrote.

    Raises
    ------
    ModelError
        Not this format, an unknown operation, or a node referring to a later one.
    """
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise ModelError(f"Expr.from_json needs laddu-dask's expression JSON ({FORMAT!r}, version "
                         f"{VERSION}), got {str(data)[:80]!r}")
    built: list[Expr] = []
    try:
        for item in data["nodes"]:
            if any(not 0 <= i < len(built) for i in item["args"]):
                raise ModelError(f"Expr.from_json: node {len(built)} refers to a node not before it")
            built.append(_node(item, built))
        return built[data["root"]]
    except (KeyError, TypeError, IndexError, ValueError) as err:
        if isinstance(err, ModelError):
            raise
        raise ModelError(f"Expr.from_json: malformed expression JSON ({type(err).__name__}: {err})") from None


def expr_from_json(json: str) -> Expr:
    """The expression :func:`expr_to_json` wrote (``json`` is laddu's keyword)."""
    if not isinstance(json, str):
        raise TypeError(f"from_json takes a JSON str, got {type(json).__name__}")
    try:
        data = jsonlib.loads(json)
    except ValueError as err:
        raise ModelError(f"Expr.from_json: not JSON ({err})") from None
    return expr_from_data(data)


def components_to_json(kind: str, components: Any) -> str:
    """A vector's components (``Vec3``, ``Vec4``) as JSON: ``{"vector": kind, "components": [...]}``."""
    return jsonlib.dumps({"vector": kind, "components": [expr_to_data(c) for c in components]})


def components_from_json(json: str, kind: str) -> list[Expr]:
    """The component expressions :func:`components_to_json` wrote for a ``kind`` vector.

    Raises
    ------
    ModelError
        Not a ``kind`` vector's JSON.
    """
    if not isinstance(json, str):
        raise TypeError(f"from_json takes a JSON str, got {type(json).__name__}")
    try:
        data = jsonlib.loads(json)
    except ValueError as err:
        raise ModelError(f"{kind}.from_json: not JSON ({err})") from None
    if not isinstance(data, dict) or data.get("vector") != kind:
        raise ModelError(f"{kind}.from_json needs the JSON {kind}.to_json writes, got {json[:80]!r}")
    return [expr_from_data(c) for c in data["components"]]
