"""Expressions shown as laddu 0.28.1 shows them: equation, LaTeX, tree, Graphviz DOT, SVG.

:func:`equation` and :func:`latex` print the expression in infix notation, parenthesized by
precedence (``|a * x + 1|^2``, ``\\left|a \\cdot x + 1\\right|^{2}``); numbers are positional with at
most 16 significant digits, as laddu prints them.  :func:`tree` and :func:`dot` draw the node list of the
expression's laddu JSON (:mod:`laddu_dask.expr.exprjson`), numbered as that text numbers it,
in laddu's layout: ``#5 Unary(NormSqr)``, edges named ``lhs``/``rhs``/``input``; shared
subtrees are repeated, or with ``expand_repeated=False`` drawn once and referred to.
:func:`svg` renders the DOT text with Graphviz's ``dot`` program where it is installed, and
otherwise writes the tree as SVG text, so that it works without Graphviz as laddu's does.

Examples
--------
>>> import laddu_dask as ld
>>> e = (ld.parameter("a") * ld.scalar("x") + 1.0).norm_sqr()
>>> e.equation()
'|a * x + 1|^2'
>>> print(e.tree(), end="")
ExprGraph(root=#5)
#5 Unary(NormSqr)
┗ input: #4 Binary(Add)
   ┣ lhs: #2 Binary(Mul)
   ┃  ┣ lhs: #0 ScalarParam(a)
   ┃  ┗ rhs: #1 EventScalar(x)
   ┗ rhs: #3 RealConst(1)
"""

from __future__ import annotations

import html
import math
import os
import shutil
import subprocess
from typing import Any

import numpy as np

from laddu_dask.errors import ModelError
from laddu_dask.expr import display_styles as styles
from laddu_dask.expr.display_styles import NodeStyle, NodeStyleRule
from laddu_dask.expr.exprjson import ExprNodeKind, node_record, to_dict
from laddu_dask.expr.graph import Node
from laddu_dask.expr.tags import TAG
from laddu_dask.files import atomic_path, atomic_write

_FUNCTIONS = {"sin": "sin", "cos": "cos", "tan": "tan", "exp": "exp", "log": "log", "acos": "acos",
              "conj": "conj", "real": "real", "imag": "imag", "sqrt": "sqrt", "cis": "cis"}
_LATEX_FUNCTIONS = {"sin": r"\sin", "cos": r"\cos", "tan": r"\tan", "exp": r"\exp", "log": r"\log",
                    "acos": r"\arccos", "real": r"\operatorname{Re}", "imag": r"\operatorname{Im}",
                    "cis": r"\operatorname{cis}"}


def _record_info(record: dict[str, Any],
                 meta: dict[str, Any]) -> tuple[ExprNodeKind | None, list[str], list[str]]:
    """``(kind, names, tags)`` of a JSON node, what a :class:`NodeSelector` looks at: our own
    operations have no laddu kind; names are the display name, a parameter's, an event column's."""
    key, body = next(iter(record.items()))
    try:
        kind: ExprNodeKind | None = ExprNodeKind.of(record)
    except ModelError:  # laddu-dask's own operation
        kind = None
    names = [meta["name"]] if meta.get("name") else []
    if key == "ScalarParam" or key == "EventP4Component":
        names.append(body["name"])
    elif key == "EventScalar":
        names.append(body)
    return kind, names, list(meta.get("tags", ()))


def _style(rules: list[NodeStyleRule], record: dict[str, Any], meta: dict[str, Any]) -> NodeStyle:
    return styles.resolve(rules, *_record_info(record, meta)) if rules else NodeStyle()


def number(value: float) -> str:
    """A real number as laddu prints it: positional, at most 16 significant digits, and
    magnitudes up to 1e-15 as ``0``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value != 0.0 and abs(value) <= 1e-15:
        return "0"
    return np.format_float_positional(value, precision=16, unique=True, fractional=False, trim="-")


def _complex(value: complex, unit: str) -> tuple[str, int]:
    re, im = number(value.real), number(abs(value.imag))
    if re == "0":
        return (f"-{im}{unit}", 3) if value.imag < 0 else (f"{im}{unit}", 4)
    return f"{re} {'-' if value.imag < 0 else '+'} {im}{unit}", 0


# ---------------------------------------------------------------------------------------
# infix: equation and LaTeX
# ---------------------------------------------------------------------------------------
def _infix(root: Any, tex: bool, rules: list[NodeStyleRule]) -> str:
    memo: dict[int, tuple[str, int]] = {}
    paint = styles.latex if tex else styles.ansi
    times = r"\cdot" if tex else "*"

    def paren(text: str) -> str:
        return rf"\left({text}\right)" if tex else f"({text})"

    def at(node: Node, prec: int) -> str:
        text, p = show(node)
        return paren(text) if p < prec else text

    def call(name: str, *args: Node) -> tuple[str, int]:
        inner = ", ".join(show(a)[0] for a in args)
        if tex:
            fn = _LATEX_FUNCTIONS.get(name, rf"\operatorname{{{name}}}")
            return rf"{fn}\left({inner}\right)", 4
        return f"{_FUNCTIONS.get(name, name)}({inner})", 4

    def show(node: Node) -> tuple[str, int]:
        hit = memo.get(node.serial)
        if hit is None:
            base, tags = node, []
            while base.op == TAG:  # laddu's tags are the metadata of the tagged node itself
                tags += base.attr
                base = base.args[0]
            text, prec = node_text(base)
            if rules and base.op != "to_complex":  # to_complex prints as its input
                text = paint(_style(rules, node_record(base), {"tags": tags}), text)
            hit = memo[node.serial] = (text, prec)
        return hit

    def node_text(n: Node) -> tuple[str, int]:  # (text, precedence): 1 sum, 2 product, 3 unary, 4 atom
        op, a = n.op, n.args
        if op == "const":
            if isinstance(n.attr, complex):
                return _complex(n.attr, r"\mathrm{i}" if tex else "i")
            return number(n.attr), (4 if n.attr >= 0 else 1)
        if op == "column":
            head, sep, tail = n.attr.rpartition("_")
            if sep and head and tail in ("e", "px", "py", "pz"):
                return (rf"{head}_{{\mathrm{{{tail}}}}}" if tex else f"{head}.{tail}"), 4
            return n.attr, 4
        if op == "param":
            return (n.attr.latex if tex and n.attr.latex else n.attr.name), 4
        if op in (TAG, "to_complex"):
            return show(a[0])
        if op == "add":
            return f"{at(a[0], 1)} + {at(a[1], 1)}", 1
        if op == "sub":
            return f"{at(a[0], 1)} - {at(a[1], 2)}", 1
        if op == "mul":
            return f"{at(a[0], 2)} {times} {at(a[1], 3)}", 2
        if op == "div":
            if tex:
                return rf"\frac{{{show(a[0])[0]}}}{{{show(a[1])[0]}}}", 4
            return f"{at(a[0], 2)} / {at(a[1], 3)}", 2
        if op == "neg":
            return f"-{at(a[0], 3)}", 3
        if op in ("powi", "pow"):
            exponent = str(n.attr) if op == "powi" else show(a[1])[0]
            if tex:
                return f"{at(a[0], 4)}^{{{exponent}}}", 3
            return f"{at(a[0], 4)}^{exponent if op == 'powi' else paren(exponent)}", 3
        if op == "norm_sqr":
            inner = show(a[0])[0]
            return (rf"\left|{inner}\right|^{{2}}" if tex else f"|{inner}|^2"), 4
        if op == "abs":
            inner = show(a[0])[0]
            return (rf"\left|{inner}\right|" if tex else f"|{inner}|"), 4
        if op == "conj" and tex:
            return rf"\overline{{{show(a[0])[0]}}}", 4
        if op == "sqrt" and tex:
            return rf"\sqrt{{{show(a[0])[0]}}}", 4
        return call(op, *a)

    if root.shape == ():
        return show(root)[0]
    # a vector or matrix of laddu's (laddu_dask.expr.linalg): its entries, [a, b] or
    # [[a, b], [c, d]], a bmatrix in LaTeX
    vector = len(root.shape) == 1
    shape = (len(root), 1) if vector else root.shape
    rows = [[show(root[i] if vector else root.at(i, j))[0] for j in range(shape[1])] for i in range(shape[0])]
    if tex:
        text = r" \\ ".join(" & ".join(row) for row in rows)
        text = rf"\begin{{bmatrix}}{text}\end{{bmatrix}}"
    elif vector:
        text = "[" + ", ".join(row[0] for row in rows) + "]"
    else:
        text = "[" + ", ".join("[" + ", ".join(row) + "]" for row in rows) + "]"
    return paint(_style(rules, {"Vector" if vector else "Matrix": {}}, {}), text) if rules else text


def equation(expr: Any, *, colors: Any = None, style_rules: Any = None) -> str:
    """The expression as a one-line equation (laddu's ``Expr.equation``), each node's text in its
    style's ANSI colors."""
    return _infix(expr, False, styles.style_rules(colors, style_rules))


def latex(expr: Any, *, colors: Any = None, style_rules: Any = None) -> str:
    """The expression as a LaTeX math-mode fragment (laddu's ``Expr.latex``), each node's text in
    its style's text color."""
    return _infix(expr, True, styles.style_rules(colors, style_rules))


# ---------------------------------------------------------------------------------------
# the node list: tree, DOT, SVG
# ---------------------------------------------------------------------------------------
def _label(record: dict[str, Any], meta: dict[str, Any]) -> tuple[str, list[tuple[str, int]]]:
    kind, body = next(iter(record.items()))
    if kind == "RealConst":
        text, children = f"RealConst({number(body)})", []
    elif kind == "ComplexConst":
        text, children = f"ComplexConst({_complex(complex(*body), 'i')[0]})", []
    elif kind == "EventScalar":
        text, children = f"EventScalar({body})", []
    elif kind == "EventP4Component":
        text, children = f"EventP4Component({body['name']}.{body['component'].lower()})", []
    elif kind == "ScalarParam":
        text, children = f"ScalarParam({body['name']})", []
    elif kind == "Unary":
        op = body["op"]
        name = f"PowI({op['PowI']})" if isinstance(op, dict) else op
        text, children = f"Unary({name})", [("input", body["input"])]
    elif kind == "Binary":
        text, children = f"Binary({body['op']})", [("lhs", body["lhs"]), ("rhs", body["rhs"])]
    elif kind == "Complex":
        text, children = "Complex", [("re", body["re"]), ("im", body["im"])]
    elif kind == "Vector":
        elements = body["elements"]
        text = f"Vector(len={len(elements)})"
        children = [(f"element[{i}]", j) for i, j in enumerate(elements)]
    elif kind == "Matrix":
        cols = body["cols"]
        text = f"Matrix({body['rows']}x{cols})"
        children = [(f"element[{k // cols},{k % cols}]", j) for k, j in enumerate(body["elements"])]
    else:  # our own node kind
        text = f"{kind}({body['op']})"
        children = [(f"input[{i}]", j) for i, j in enumerate(body["inputs"])]
    if meta.get("tags"):
        text += f" tags=[{', '.join(meta['tags'])}]"
    return text, children


def _tree_lines(value: Any, expand_repeated: bool,
                rules: list[NodeStyleRule]) -> list[tuple[str, str, NodeStyle]]:
    """The tree's lines as ``(prefix, node text, style)``, after the ``ExprGraph(root=#i)`` line."""
    data = to_dict(value)
    nodes, metadata = data["nodes"], data["metadata"]
    labels = [_label(r, m) for r, m in zip(nodes, metadata, strict=True)]
    lines: list[tuple[str, str, NodeStyle]] = []
    seen: set[int] = set()

    def draw(i: int, head: str, indent: str) -> None:
        text, children = labels[i]
        style = _style(rules, nodes[i], metadata[i])
        if i in seen and not expand_repeated:
            lines.append((head, f"#{i} <reference to #{i}>", style))
            return
        seen.add(i)
        lines.append((head, f"#{i} {text}", style))
        for k, (edge, j) in enumerate(children):
            last = k == len(children) - 1
            draw(j, f"{indent}{'┗' if last else '┣'} {edge}: ", indent + ("   " if last else "┃  "))

    draw(data["root"], "", "")
    return [("", f"ExprGraph(root=#{data['root']})", NodeStyle()), *lines]


def tree(value: Any, *, colors: Any = None, expand_repeated: bool = True, style_rules: Any = None) -> str:
    """An indented tree of the expression's nodes (laddu's ``Expr.tree``), each node's line in its
    style's ANSI colors."""
    rules = styles.style_rules(colors, style_rules)
    lines = _tree_lines(value, expand_repeated, rules)
    return "".join(f"{head}{styles.ansi(style, text)}\n" for head, text, style in lines)


def dot(value: Any, *, colors: Any = None, expand_repeated: bool = True, style_rules: Any = None) -> str:
    """The expression graph as Graphviz DOT text (laddu's ``Expr.dot``), each node with its
    style's ``fontcolor``, ``color`` and ``fillcolor``."""
    rules = styles.style_rules(colors, style_rules)
    data = to_dict(value)
    nodes, metadata = data["nodes"], data["metadata"]
    labels = [_label(r, m) for r, m in zip(nodes, metadata, strict=True)]
    lines = ["digraph ExprGraph {"]
    emitted: dict[int, str] = {}

    def draw(i: int) -> str:
        if not expand_repeated and i in emitted:
            return emitted[i]
        name = f"n{i}" if not expand_repeated else f"n{len(emitted)}"
        emitted[i if not expand_repeated else -len(emitted) - 1] = name
        text, children = labels[i]
        quoted = f"#{i} {text}".replace("\\", "\\\\").replace('"', '\\"')
        attributes = styles.dot_attributes(_style(rules, nodes[i], metadata[i]))
        lines.append(f'  {name} [label="{quoted}"{attributes}];')
        for edge, j in children:
            lines.append(f'  {name} -> {draw(j)} [label="{edge}"];')
        return name

    draw(data["root"])
    return "\n".join(lines) + "\n}\n"


def svg(value: Any, path: str | os.PathLike[str], *, colors: Any = None, expand_repeated: bool = True,
        style_rules: Any = None) -> None:
    """Write the expression graph to the SVG file ``path`` (laddu's ``Expr.svg``): Graphviz's
    rendering of :func:`dot` where its ``dot`` program is installed, else the :func:`tree`
    as SVG text, each line in its style's text color, on its fill, in its border."""
    rules = styles.style_rules(colors, style_rules)
    program = shutil.which("dot")
    if program is not None:
        source = dot(value, expand_repeated=expand_repeated, style_rules=rules).encode()
        with atomic_path(path) as tmp:
            done = subprocess.run([program, "-Tsvg", "-o", tmp], input=source, capture_output=True,
                                  check=False, timeout=60)
            if done.returncode == 0:
                return
    lines = _tree_lines(value, expand_repeated, rules)
    width = 12 + 8 * max(len(head + text) for head, text, _ in lines)
    height = 12 + 18 * len(lines)
    rows = []
    for k, (head, text, style) in enumerate(lines):
        x, y = 6 + 8 * len(head), 18 * (k + 1)
        if style.fill is not None or style.border is not None:
            fill = "none" if style.fill is None else style.fill.hex()
            stroke = "" if style.border is None else f' stroke="{style.border.hex()}"'
            rows.append(f'<rect x="{x - 2}" y="{y - 13}" width="{8 * len(text) + 4}" height="17" '
                        f'fill="{fill}"{stroke}/>')
        if head:
            rows.append(f'<text x="6" y="{y}" xml:space="preserve">{html.escape(head)}</text>')
        color = "" if style.foreground is None else f' fill="{style.foreground.hex()}"'
        rows.append(f'<text x="{x}" y="{y}"{color} xml:space="preserve">{html.escape(text)}</text>')
    with atomic_write(path, encoding="utf-8") as out:
        out.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                  f'font-family="monospace" font-size="13">{"".join(rows)}</svg>\n')
