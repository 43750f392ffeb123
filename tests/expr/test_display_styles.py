"""Colored expression displays: laddu 0.28.1's ``DisplayColor``, ``NodeSelector``, ``NodeStyle``,
``NodeStyleRule`` and the ``colors``/``style_rules`` keywords of ``equation``, ``latex``, ``tree``,
``dot`` and ``svg``.

Wherever the plain displays agree with laddu node for node (the expressions of
``test_expr_json``), the styled ones are laddu's text, ANSI codes, ``\\color[RGB]`` and Graphviz
attributes included.
"""

from __future__ import annotations

import re

import pytest
from laddu_reference import laddu, needs_laddu
from test_expr_json import _shown

import laddu_dask as ld
from laddu_dask.errors import ModelError


def _rules(lib):
    """User rules of every selector, overlapping so that order decides."""
    c = lib.DisplayColor
    return [
        lib.NodeStyleRule(lib.NodeSelector.any(), lib.NodeStyle(border=c(9, 9, 9))),
        lib.NodeStyleRule(lib.NodeSelector.kind(lib.ExprNodeKind.BINARY),
                          lib.NodeStyle(foreground=c(1, 2, 3), fill=c(250, 240, 230))),
        lib.NodeStyleRule(lib.NodeSelector.name("x"), lib.NodeStyle(foreground=c(200, 0, 0))),
        lib.NodeStyleRule(lib.NodeSelector.name("p"), lib.NodeStyle(fill=c(0, 200, 0))),
        lib.NodeStyleRule(lib.NodeSelector.name("a"), lib.NodeStyle(border=c(0, 0, 255))),
        lib.NodeStyleRule(lib.NodeSelector.tag("S"), lib.NodeStyle(foreground=c(7, 7, 7), border=c(8, 8, 8))),
    ]


STYLES = {
    "light": lambda lib: {"colors": "light"},
    "dark": lambda lib: {"colors": "DARK"},  # any letter case, as laddu
    "none": lambda lib: {"colors": "none", "style_rules": []},
    "rules": lambda lib: {"style_rules": _rules(lib)},
    "light and rules": lambda lib: {"colors": "light", "style_rules": tuple(_rules(lib))},
}


@needs_laddu
@pytest.mark.parametrize("style", sorted(STYLES))
@pytest.mark.parametrize("what", ["equation", "latex", "tree", "dot", "tree shared", "dot shared"])
def test_styled_display_is_laddus(what, style):
    method, _, shared = what.partition(" ")
    options = {"expand_repeated": False} if shared else {}
    ours_options, theirs_options = {**options, **STYLES[style](ld)}, {**options, **STYLES[style](laddu)}
    colored = 0
    for ours, theirs in zip(_shown(ld), _shown(laddu), strict=True):
        want = getattr(theirs, method)(**theirs_options)
        assert getattr(ours, method)(**ours_options) == want
        assert getattr(ld.Model(ours), method)(**ours_options) == want
        colored += want != getattr(theirs, method)(**options)
    assert colored >= (0 if style == "none" else 10)  # the styles change the text


def _containers(lib):
    x, a = lib.scalar("x"), lib.parameter("a")
    return [lib.vector([x * a, 1.0, (x * a).tagged("S")]),
            lib.matrix([[x, a * 2.0], [lib.Vec4.event("p").e(), (x + a).norm_sqr()]])]


@needs_laddu
@pytest.mark.parametrize("style", sorted(STYLES))
def test_vector_and_matrix_displays_are_laddus(style):
    """laddu's vector- and matrix-valued expressions are our Vector and Matrix containers."""
    for method in ("equation", "latex", "tree", "dot"):
        for ours, theirs in zip(_containers(ld), _containers(laddu), strict=True):
            want = getattr(theirs, method)(**STYLES[style](laddu))
            assert getattr(ours, method)(**STYLES[style](ld)) == want
            assert getattr(ours, method)() == getattr(theirs, method)()


def test_preset_and_rules_in_dot_by_hand():
    """Later rules win field by field; a fill adds ``style=filled``; unselected nodes stay plain."""
    c = ld.DisplayColor
    e = ld.parameter("a").tagged("S") * ld.scalar("x")
    rules = [ld.NodeStyleRule(ld.NodeSelector.tag("S"), ld.NodeStyle(fill=c(1, 2, 3), border=c(4, 5, 6))),
             ld.NodeStyleRule(ld.NodeSelector.kind(ld.ExprNodeKind.SCALAR_PARAM),
                              ld.NodeStyle(border=c(7, 8, 9)))]
    assert e.dot(colors="light", style_rules=rules).splitlines()[2:5:2] == [
        '  n1 [label="#0 ScalarParam(a) tags=[S]", fontcolor="#005cc5", color="#070809", '
        'fillcolor="#010203", style=filled];',
        '  n2 [label="#1 EventScalar(x)", fontcolor="#0366d6", color="#0366d6"];',
    ]
    assert e.dot(style_rules=rules[:1]).splitlines()[1:4] == [
        '  n0 [label="#2 Binary(Mul)"];',
        '  n1 [label="#0 ScalarParam(a) tags=[S]", color="#040506", fillcolor="#010203", style=filled];',
        '  n0 -> n1 [label="lhs"];',
    ]
    assert e.latex(style_rules=rules) == "a \\cdot x"  # fills and borders have no LaTeX form
    assert e.equation(style_rules=rules) == "\x1b[48;2;1;2;3ma\x1b[0m * x"


def test_svg_is_drawn_in_the_styles_colors(tmp_path):
    e = (ld.parameter("a") * ld.scalar("x")).tagged("S")
    rule = ld.NodeStyleRule(ld.NodeSelector.tag("S"), ld.NodeStyle(fill=ld.DisplayColor(1, 2, 3)))
    e.svg(tmp_path / "plain.svg")
    e.svg(tmp_path / "light.svg", colors="light", style_rules=[rule])
    ld.Model(e).svg(tmp_path / "model.svg", colors="light", style_rules=[rule], expand_repeated=False)
    plain, light = (tmp_path / "plain.svg").read_text(), (tmp_path / "light.svg").read_text()
    assert (tmp_path / "model.svg").read_text() == light
    colors = set(re.findall(r'(?:fill|stroke|fontcolor|color)="(#[0-9a-f]{6})"', light))
    assert {"#005cc5", "#0366d6", "#8250df", "#010203"} <= colors  # the preset's and the rule's
    assert re.search(r'<text[^>]*fill="#005cc5"[^>]*>#0 ScalarParam\(a\)', light)  # the parameter's text
    assert not re.findall(r"#[0-9a-f]{6}", plain)


@needs_laddu
def test_style_classes_are_laddus():
    for lib in (ld, laddu):
        c = lib.DisplayColor(255, 0, 10)
        assert (repr(c), c.red, c.green, c.blue) == ("DisplayColor(255, 0, 10)", 255, 0, 10)
        assert c == lib.DisplayColor(red=255, green=0, blue=10) and c != lib.DisplayColor(255, 0, 11)
        assert c != (255, 0, 10) and not (c == (255, 0, 10))
        s = lib.NodeStyle(foreground=c, fill=lib.DisplayColor(1, 2, 3))
        assert (s.foreground, s.fill, s.border) == (c, lib.DisplayColor(1, 2, 3), None)
        assert s == lib.NodeStyle(fill=lib.DisplayColor(1, 2, 3), foreground=c) and s != lib.NodeStyle()
        kinds = lib.NodeSelector.kind(lib.ExprNodeKind.BINARY)
        assert kinds == lib.NodeSelector.kind(lib.ExprNodeKind.BINARY)
        assert kinds != lib.NodeSelector.kind(lib.ExprNodeKind.UNARY)
        assert lib.NodeSelector.any() == lib.NodeSelector.any() and lib.NodeSelector.any() != kinds
        assert lib.NodeSelector.name("a") != lib.NodeSelector.tag("a")
        assert lib.NodeSelector.name("a") == lib.NodeSelector.name("a") != lib.NodeSelector.name("b")
        rule = lib.NodeStyleRule(selector=kinds, style=s)
        assert rule.selector == kinds and rule.style == s
        assert rule == lib.NodeStyleRule(kinds, s) and rule != lib.NodeStyleRule(lib.NodeSelector.any(), s)
        for value in (c, s, kinds, rule):
            with pytest.raises(TypeError, match="unhashable"):
                hash(value)


def test_bad_styles_are_refused_naming_the_argument():
    c, e = ld.DisplayColor(1, 2, 3), ld.scalar("x")
    with pytest.raises(OverflowError, match="DisplayColor: red must be 0 to 255, got 256"):
        ld.DisplayColor(256, 0, 0)
    with pytest.raises(OverflowError, match="blue must be 0 to 255, got -1"):
        ld.DisplayColor(0, 0, -1)
    with pytest.raises(TypeError, match="green must be an integer, got float"):
        ld.DisplayColor(0, 1.5, 0)
    with pytest.raises(TypeError, match="NodeSelector.kind: kind must be ExprNodeKind, got str"):
        ld.NodeSelector.kind("BINARY")
    with pytest.raises(TypeError, match="NodeSelector.name: name must be str, got int"):
        ld.NodeSelector.name(3)
    with pytest.raises(TypeError, match="NodeStyle: fill must be DisplayColor, got tuple"):
        ld.NodeStyle(fill=(1, 2, 3))
    with pytest.raises(TypeError, match="positional"):
        ld.NodeStyle(c)
    with pytest.raises(TypeError, match="NodeStyleRule: style must be NodeStyle, got NoneType"):
        ld.NodeStyleRule(ld.NodeSelector.any(), None)
    with pytest.raises(ModelError, match="colors must be 'light', 'dark', 'none', or None, got 'pink'"):
        e.tree(colors="pink")
    with pytest.raises(TypeError, match="colors must be a string or None, got int"):
        e.dot(colors=1)
    with pytest.raises(TypeError, match="each of style_rules must be NodeStyleRule, got int"):
        e.equation(style_rules=[1])
    rule = ld.NodeStyleRule(ld.NodeSelector.any(), ld.NodeStyle())
    for not_a_sequence in (rule, iter([rule]), "ab"):
        with pytest.raises(TypeError, match="style_rules must be a sequence of NodeStyleRule"):
            e.latex(style_rules=not_a_sequence)
