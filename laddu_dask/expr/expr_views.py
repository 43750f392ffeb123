"""laddu's serialization and display methods of :class:`~laddu_dask.Expr`: ``to_json``,
``equation``, ``latex``, ``tree``, ``dot``, ``svg``, ``named``, ``shape``, ``at``, ``[]`` and
``@`` (a base class of ``Expr``, so that ``node.py`` stays one idea).

The work is done by :mod:`laddu_dask.expr.exprjson` and :mod:`laddu_dask.expr.display`, which
only read nodes; ``Expr.from_json``, which builds them, is ``Expr``'s own.
"""

from __future__ import annotations

from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr import display
from laddu_dask.expr.exprjson import to_json


class DisplayViews:
    """laddu's display methods (``equation``, ``latex``, ``tree``, ``dot``, ``svg``), inherited by
    :class:`~laddu_dask.Expr` and the :class:`~laddu_dask.expr.linalg.Vector` and
    :class:`~laddu_dask.expr.linalg.Matrix` containers (laddu's vector- and matrix-valued ``Expr``)."""

    __slots__ = ()

    def equation(self, *, colors: Any = None, style_rules: Any = None) -> str:
        """The expression as a one-line equation, e.g. ``'|a * x + 1|^2'``.

        ``colors`` (``"light"``, ``"dark"``, ``"none"``) and ``style_rules`` (a sequence of
        :class:`~laddu_dask.NodeStyleRule`, laid over the preset) color each node's text (ANSI).
        """
        return display.equation(self, colors=colors, style_rules=style_rules)

    def latex(self, *, colors: Any = None, style_rules: Any = None) -> str:
        """The expression as a LaTeX math-mode fragment; styles color the text (``\\color[RGB]``)."""
        return display.latex(self, colors=colors, style_rules=style_rules)

    def tree(self, *, colors: Any = None, expand_repeated: bool = True, style_rules: Any = None) -> str:
        """An indented tree of the nodes of :meth:`to_json`, in laddu's layout; styles color the
        lines (ANSI text and background)."""
        return display.tree(self, colors=colors, expand_repeated=expand_repeated, style_rules=style_rules)

    def dot(self, *, colors: Any = None, expand_repeated: bool = True, style_rules: Any = None) -> str:
        """The expression graph as Graphviz DOT text, in laddu's layout; styles set each node's
        ``fontcolor``, ``color`` (border) and ``fillcolor``.

        Examples
        --------
        >>> import laddu_dask as ld
        >>> print(ld.parameter("a").dot(colors="light"), end="")
        digraph ExprGraph {
          n0 [label="#0 ScalarParam(a)", fontcolor="#005cc5", color="#005cc5"];
        }
        """
        return display.dot(self, colors=colors, expand_repeated=expand_repeated, style_rules=style_rules)

    def svg(self, path: Any, *, colors: Any = None, expand_repeated: bool = True,
            style_rules: Any = None) -> None:
        """Write the graph to the SVG file ``path`` (with Graphviz where installed, else the tree),
        in the colors of the styles."""
        display.svg(self, path, colors=colors, expand_repeated=expand_repeated, style_rules=style_rules)



class ExprViews(DisplayViews):
    """laddu's serialization and display methods, inherited by :class:`~laddu_dask.Expr`."""

    __slots__ = ()

    def __str__(self) -> str:
        """The equation, as laddu's ``str(expr)``: ``str(a * x)`` is ``'a * x'``."""
        return self.equation()

    # -- laddu's JSON (see laddu_dask.expr.exprjson) ---------------------------------------
    def to_json(self) -> str:
        """This expression as laddu 0.28.1's JSON text (a node list), which laddu reads.

        Examples
        --------
        >>> import laddu_dask as ld
        >>> ld.scalar("x").to_json()
        '{"root":0,"nodes":[{"EventScalar":"x"}],"metadata":[{"source":"Event","name":null,"tags":[]}]}'
        """
        return to_json(self)

    def named(self, name: str) -> Any:
        """laddu's display name of the root node; laddu-dask keeps no names, so this is the
        expression itself (names never change a value)."""
        if not isinstance(name, str):
            raise TypeError(f"named() takes a str, got {type(name).__name__}")  # laddu: a TypeError
        return self

    @property
    def shape(self) -> tuple[()]:
        """``()``: an expression is a scalar (vectors and matrices are ``Vector``/``Matrix``)."""
        return ()

    def at(self, row: int, col: int) -> Any:
        """Matrix entries are taken from a ``Matrix``; a scalar expression has none."""
        raise ModelError(f"at({row}, {col}): a scalar expression has no matrix elements")

    def __getitem__(self, index: int) -> Any:
        raise ModelError(f"[{index!r}]: a scalar expression has no vector components")

    def __matmul__(self, other: object) -> Any:
        raise TypeError("the @ operator needs matrix @ matrix, matrix @ vector or vector @ vector "
                        f"operands, got a scalar expression @ {type(other).__name__}")

    __rmatmul__ = __matmul__

