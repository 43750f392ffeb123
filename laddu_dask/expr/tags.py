"""Projection tags: labels on expression nodes, and projections that keep some of them.

A tag is metadata: ``expr.tagged("S")`` wraps ``expr`` in a ``"tag"`` node that carries
the label and evaluates to ``expr`` itself.  ``expr.project(["S", "D"])`` replaces every
tagged node whose tags are all unselected by zero (of the node's kind), keeps a tagged
node with a selected tag whole (tags inside it do not matter), and rebuilds untagged
nodes from their projected arguments, as laddu 0.28.1 does.  Nothing else changes, so
``|S + D|^2`` projected onto ``["S"]`` is ``|S|^2`` and keeps no interference, while
projecting ``|S + D|^2`` onto ``["S", "D"]`` keeps it.

Tag nodes never reach the compiler: :class:`~laddu_dask.Model` compiles
:func:`strip_tags` of its expression, which is the very (interned) expression written
without tags, so tagging a model does not change a bit of its values.

Examples
--------
>>> import laddu_dask as ld
>>> s = ld.parameter("s", initial=2.0).tagged("S")
>>> d = ld.parameter("d", initial=3.0).tagged("D")
>>> ld.Model((s + d).norm_sqr().project(["S"])).parameter_names
['s']
>>> strip_tags(s + d) is ld.parameter("s", initial=2.0) + ld.parameter("d", initial=3.0)
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from laddu_dask.errors import ModelError
from laddu_dask.expr.graph import Node, walk
from laddu_dask.expr.ops import COMPLEX, LEAVES

#: The operation name of a tag node (its attribute is the sorted tuple of its tags).
TAG = "tag"


def tag(expr: Node, name: str) -> Node:
    """``expr`` labelled with the projection tag ``name`` (laddu's ``Expr.tagged``).

    Tagging a tag node adds the label to the same node, so a node kept by any of its
    tags is kept.

    Raises
    ------
    ModelError
        When ``name`` is not a string.
    """
    if not isinstance(name, str):
        raise ModelError(f"a tag must be a string, got {type(name).__name__} {name!r}")
    if expr.op == TAG:
        labels = tuple(sorted({*expr.attr, name}))
        return type(expr)._intern(TAG, expr.args, labels, expr.kind)
    return type(expr)._intern(TAG, (expr,), (name,), expr.kind)


def _check_tags(tags: Iterable[str]) -> frozenset[str]:
    if isinstance(tags, str) or not isinstance(tags, Iterable):
        raise ModelError(f"project takes a sequence of tags, e.g. [{tags!r}], got {type(tags).__name__}")
    tags = list(tags)
    for t in tags:
        if not isinstance(t, str):
            raise ModelError(f"a tag must be a string, got {type(t).__name__} {t!r}")
    return frozenset(tags)


def rewrite(root: Node, replace: Callable[[Node, tuple[Node, ...]], Node | None],
            descend: Callable[[Node], bool] = lambda node: True) -> Node:
    """Rebuild ``root`` bottom-up.

    ``replace(node, args)`` gets each node with its rewritten arguments and returns its
    replacement, or ``None`` to rebuild it from ``args`` with the constructors that fold
    constants and identities (so the result is the expression one would have written
    directly; unchanged subgraphs come back as the same nodes).  The arguments of a node
    for which ``descend(node)`` is false are not rewritten (``args`` is then empty).
    """
    reached: dict[int, Node] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if node.serial not in reached:
            reached[node.serial] = node
            if descend(node):
                stack.extend(node.args)
    memo: dict[int, Node] = {}
    for serial in sorted(reached):  # interning builds every argument before its users
        node = reached[serial]
        args = tuple(memo[a.serial] for a in node.args) if descend(node) else ()
        out = replace(node, args)
        if out is None:
            if node.op in LEAVES or all(a is b for a, b in zip(args, node.args)):
                out = node
            elif node.op == TAG:
                out = type(node)._intern(TAG, args, node.attr, node.kind)
            else:
                out = node._with_args(args)  # through the constructors of the expression
        memo[serial] = out
    return memo[root.serial]


def project(expr: Node, tags: Iterable[str]) -> Node:
    """``expr`` with only the contributions carrying one of ``tags`` (laddu's ``Expr.project``).

    A tagged node with a selected tag is kept whole; one whose tags are all unselected
    becomes zero; untagged nodes are rebuilt from their projected arguments.  Tags the
    expression does not carry select nothing (laddu's behaviour): an expression whose
    every contribution is tagged then projects to zero.

    Raises
    ------
    ModelError
        When ``tags`` is a single string or holds something other than strings.
    """
    keep = _check_tags(tags)

    def replace(node: Node, args: tuple[Node, ...]) -> Node | None:
        if node.op != TAG:
            return None
        if keep.intersection(node.attr):
            return node
        return type(node)._intern("const", (), 0j if node.kind == COMPLEX else 0.0, node.kind)

    return rewrite(expr, replace, descend=lambda node: node.op != TAG)


def strip_tags(expr: Node) -> Node:
    """``expr`` without its tag nodes: the expression as written without tags."""
    return rewrite(expr, lambda node, args: args[0] if node.op == TAG else None)


def tags_of(expr: Node) -> list[str]:
    """Every tag in ``expr``, sorted."""
    return sorted({t for n in walk(expr) if n.op == TAG for t in n.attr})
