"""Colors and style rules of the expression displays, as laddu 0.28.1 has them.

A :class:`NodeStyleRule` pairs a :class:`NodeSelector` (every node, a node kind, a name or a
tag) with a :class:`NodeStyle` (text, fill and border :class:`DisplayColor`).  The displays
(:mod:`laddu_dask.expr.display`) resolve each node's style by laying the matching rules over
one another in order, the preset's first (``colors="light"`` or ``"dark"``: constants,
parameters, event data, operations and linear algebra in five colors, text and border), then
the user's, later fields winning; then print it as laddu does: Graphviz attributes
(``fontcolor``, ``color``, ``fillcolor`` with ``style=filled``) in DOT, 24-bit ANSI codes in the
tree and the equation, ``\\color[RGB]`` (text color only) in LaTeX.

Examples
--------
>>> import laddu_dask as ld
>>> red = ld.DisplayColor(200, 0, 0)
>>> rule = ld.NodeStyleRule(ld.NodeSelector.name("a"), ld.NodeStyle(foreground=red))
>>> print((ld.parameter("a") * 2.0).dot(style_rules=[rule]), end="")
digraph ExprGraph {
  n0 [label="#2 Binary(Mul)"];
  n1 [label="#0 ScalarParam(a)", fontcolor="#c80000"];
  n0 -> n1 [label="lhs"];
  n2 [label="#1 RealConst(2)"];
  n0 -> n2 [label="rhs"];
}
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr.exprjson import ExprNodeKind


def _instance(value: object, cls: type, what: str) -> Any:
    if not isinstance(value, cls):
        raise TypeError(f"{what} must be {cls.__name__}, got {type(value).__name__}")
    return value


class DisplayColor:
    """An RGB color of the expression displays (laddu's ``DisplayColor``).

    Parameters
    ----------
    red, green, blue : int
        Channels, 0 to 255.

    Raises
    ------
    TypeError
        For a channel that is not an integer.
    OverflowError
        For a channel outside 0 to 255 (laddu's error type).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.DisplayColor(255, 0, 10), ld.DisplayColor(1, 2, 3).green
    (DisplayColor(255, 0, 10), 2)
    """

    __slots__ = ("_rgb",)
    __hash__ = None  # type: ignore[assignment] - laddu's is unhashable too

    def __init__(self, red: int, green: int, blue: int) -> None:
        channels = []
        for what, value in (("red", red), ("green", green), ("blue", blue)):
            try:
                channel = operator.index(value)
            except TypeError:
                raise TypeError(f"DisplayColor: {what} must be an integer, "
                                f"got {type(value).__name__}") from None
            if not 0 <= channel <= 255:
                raise OverflowError(f"DisplayColor: {what} must be 0 to 255, got {channel}")
            channels.append(channel)
        self._rgb = tuple(channels)

    @property
    def red(self) -> int:
        """Red channel."""
        return self._rgb[0]

    @property
    def green(self) -> int:
        """Green channel."""
        return self._rgb[1]

    @property
    def blue(self) -> int:
        """Blue channel."""
        return self._rgb[2]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DisplayColor) and other._rgb == self._rgb

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __repr__(self) -> str:
        return "DisplayColor({}, {}, {})".format(*self._rgb)

    def hex(self) -> str:
        """``'#rrggbb'``, the color as Graphviz and SVG write it."""
        return "#{:02x}{:02x}{:02x}".format(*self._rgb)


class NodeSelector:
    """Which expression nodes a :class:`NodeStyleRule` styles (laddu's ``NodeSelector``).

    Build one with :meth:`any`, :meth:`kind`, :meth:`name` or :meth:`tag`.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.NodeSelector.kind(ld.ExprNodeKind.BINARY) == ld.NodeSelector.kind(ld.ExprNodeKind.BINARY)
    True
    >>> ld.NodeSelector.name("a") != ld.NodeSelector.tag("a")
    True
    """

    __slots__ = ("_what", "_value")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, what: str, value: Any) -> None:
        self._what, self._value = what, value

    @staticmethod
    def any() -> NodeSelector:
        """Select every node."""
        return NodeSelector("any", None)

    @staticmethod
    def kind(kind: ExprNodeKind) -> NodeSelector:
        """Select the nodes of one :class:`~laddu_dask.ExprNodeKind`."""
        return NodeSelector("kind", _instance(kind, ExprNodeKind, "NodeSelector.kind: kind"))

    @staticmethod
    def name(name: str) -> NodeSelector:
        """Select the nodes of a name: a parameter's, an event column's (a four-vector's for its
        components) or a display name."""
        return NodeSelector("name", _instance(name, str, "NodeSelector.name: name"))

    @staticmethod
    def tag(tag: str) -> NodeSelector:
        """Select the nodes carrying a projection tag."""
        return NodeSelector("tag", _instance(tag, str, "NodeSelector.tag: tag"))

    def matches(self, kind: ExprNodeKind | None, names: Iterable[str], tags: Iterable[str]) -> bool:
        """Whether a node of this kind (``None``: laddu-dask's own operations), names and tags is selected."""
        if self._what == "any":
            return True
        if self._what == "kind":
            return kind == self._value
        return self._value in (names if self._what == "name" else tags)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NodeSelector) and (other._what, other._value) == (self._what, self._value)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __repr__(self) -> str:
        return f"NodeSelector.{self._what}({'' if self._value is None else repr(self._value)})"


class NodeStyle:
    """Text (``foreground``), ``fill`` and ``border`` colors of the nodes a rule selects, each
    optional (laddu's ``NodeStyle``).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.NodeStyle(fill=ld.DisplayColor(1, 2, 3)).fill, ld.NodeStyle().border
    (DisplayColor(1, 2, 3), None)
    """

    __slots__ = ("_colors",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, *, foreground: DisplayColor | None = None, fill: DisplayColor | None = None,
                 border: DisplayColor | None = None) -> None:
        for what, color in (("foreground", foreground), ("fill", fill), ("border", border)):
            if color is not None:
                _instance(color, DisplayColor, f"NodeStyle: {what}")
        self._colors = (foreground, fill, border)

    @property
    def foreground(self) -> DisplayColor | None:
        """Text color."""
        return self._colors[0]

    @property
    def fill(self) -> DisplayColor | None:
        """Terminal background or Graphviz fill color."""
        return self._colors[1]

    @property
    def border(self) -> DisplayColor | None:
        """Graphviz outline color."""
        return self._colors[2]

    def over(self, below: NodeStyle) -> NodeStyle:
        """This style laid over ``below``: each color this style sets wins."""
        colors = [mine if mine is not None else theirs for mine, theirs in zip(self._colors, below._colors)]
        return NodeStyle(foreground=colors[0], fill=colors[1], border=colors[2])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NodeStyle) and other._colors == self._colors

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __repr__(self) -> str:
        return "NodeStyle(foreground={!r}, fill={!r}, border={!r})".format(*self._colors)


class NodeStyleRule:
    """A :class:`NodeSelector` and the :class:`NodeStyle` laid over the nodes it selects
    (laddu's ``NodeStyleRule``); later rules win.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> rule = ld.NodeStyleRule(ld.NodeSelector.tag("S"), ld.NodeStyle(border=ld.DisplayColor(0, 0, 0)))
    >>> rule.selector == ld.NodeSelector.tag("S"), rule.style.border
    (True, DisplayColor(0, 0, 0))
    """

    __slots__ = ("_selector", "_style")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, selector: NodeSelector, style: NodeStyle) -> None:
        self._selector = _instance(selector, NodeSelector, "NodeStyleRule: selector")
        self._style = _instance(style, NodeStyle, "NodeStyleRule: style")

    @property
    def selector(self) -> NodeSelector:
        """Which nodes the rule styles."""
        return self._selector

    @property
    def style(self) -> NodeStyle:
        """The style laid over them."""
        return self._style

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NodeStyleRule) and other._selector == self._selector \
            and other._style == self._style

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __repr__(self) -> str:
        return f"NodeStyleRule({self._selector!r}, {self._style!r})"


# ---------------------------------------------------------------------------------------
# presets, checking and resolving
# ---------------------------------------------------------------------------------------
#: laddu's palettes: constants, parameters, event data, operations, linear algebra
_PALETTES = {
    "light": ((88, 96, 105), (0, 92, 197), (3, 102, 214), (130, 80, 223), (207, 34, 46)),
    "dark": ((139, 148, 158), (88, 166, 255), (121, 192, 255), (210, 168, 255), (255, 123, 114)),
}
_GROUPS = (
    ("REAL_CONST", "COMPLEX_CONST"),
    ("SCALAR_PARAM",),
    ("EVENT_SCALAR", "EVENT_P4_COMPONENT"),
    ("UNARY", "BINARY", "NARY_ADD", "NARY_MUL", "COMPLEX", "VECTOR", "MATRIX", "COMPONENT", "MATRIX_ELEMENT"),
    ("MAT_MUL", "MAT_VEC", "DOT", "SOLVE"),
)


def _preset(palette: tuple[tuple[int, int, int], ...]) -> list[NodeStyleRule]:
    rules = []
    for rgb, kinds in zip(palette, _GROUPS, strict=True):
        color = DisplayColor(*rgb)
        rules += [NodeStyleRule(NodeSelector.kind(getattr(ExprNodeKind, k)),
                                NodeStyle(foreground=color, border=color)) for k in kinds]
    return rules


def style_rules(colors: Any, rules: Any) -> list[NodeStyleRule]:
    """The rules of a display call: the ``colors`` preset's (``"light"``, ``"dark"``; ``"none"``
    or ``None``: none; any letter case, as laddu), then the user's ``style_rules``.

    Raises
    ------
    TypeError
        For ``colors`` that is not a str or ``None``, ``style_rules`` that is not a sequence, or
        an element that is not a :class:`NodeStyleRule`.
    ModelError
        For another ``colors`` name (a ``ValueError``, as laddu's).
    """
    if colors is not None and not isinstance(colors, str):
        raise TypeError(f"colors must be a string or None, got {type(colors).__name__}")
    preset = None if colors is None else colors.lower()
    if preset not in (None, "none", *_PALETTES):
        raise ModelError(f"colors must be 'light', 'dark', 'none', or None, got {colors!r}")
    out = _preset(_PALETTES[preset]) if preset in _PALETTES else []
    if rules is None:
        return out
    if isinstance(rules, (str, bytes)) or not isinstance(rules, Sequence):
        raise TypeError(f"style_rules must be a sequence of NodeStyleRule, got {type(rules).__name__}")
    return out + [_instance(r, NodeStyleRule, "each of style_rules") for r in rules]


def resolve(rules: Sequence[NodeStyleRule], kind: ExprNodeKind | None, names: Iterable[str],
            tags: Iterable[str]) -> NodeStyle:
    """The style of one node: the matching rules laid over one another, in order."""
    names, tags = tuple(names), tuple(tags)
    style = NodeStyle()
    for rule in rules:
        if rule.selector.matches(kind, names, tags):
            style = rule.style.over(style)
    return style


def ansi(style: NodeStyle, text: str) -> str:
    """``text`` in 24-bit ANSI text and background colors (a border has no ANSI form)."""
    fg, fill = style.foreground, style.fill
    if fg is None and fill is None:
        return text
    prefix = "" if fg is None else f"\x1b[38;2;{fg.red};{fg.green};{fg.blue}m"
    prefix += "" if fill is None else f"\x1b[48;2;{fill.red};{fill.green};{fill.blue}m"
    return f"{prefix}{text}\x1b[0m"


def latex(style: NodeStyle, text: str) -> str:
    """``text`` in its text color (``\\color[RGB]``, needs ``xcolor``); fills and borders have no
    LaTeX form."""
    fg = style.foreground
    return text if fg is None else f"{{\\color[RGB]{{{fg.red},{fg.green},{fg.blue}}}{text}}}"


def dot_attributes(style: NodeStyle) -> str:
    """The Graphviz attributes of a style, each after ``", "`` (``""`` for no colors)."""
    out = ""
    if style.foreground is not None:
        out += f', fontcolor="{style.foreground.hex()}"'
    if style.border is not None:
        out += f', color="{style.border.hex()}"'
    if style.fill is not None:
        out += f', fillcolor="{style.fill.hex()}", style=filled'
    return out
