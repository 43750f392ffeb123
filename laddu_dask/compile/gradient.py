"""Reverse-mode differentiation rules, as source code for generated kernels.

Adjoints follow the conjugate convention: for a complex node ``z = x + i y`` and a
real objective ``L``, the adjoint is ``dL/dx + i dL/dy``.  A holomorphic operation
``w = f(z)`` passes ``conj(f'(z)) * adjoint(w)`` back to ``z``; ``conj``, ``real``,
``imag``, ``abs`` and ``norm_sqr`` have their own rules.  A real node keeps the real
part of what it receives.  Seeding the root with ``1`` gives ``d Re(value)/dp``,
seeding it with ``1j`` gives ``d Im(value)/dp``.

Examples
--------
>>> import laddu_dask as ld
>>> from laddu_dask.compile.gradient import contributions
>>> x, a = ld.scalar("x"), ld.parameter("a")
>>> node = x * a
>>> contributions(node, ["vx", "va"], "w", "g")
[(0, '(g * va)', 'real'), (1, '(g * vx)', 'real')]
"""

from __future__ import annotations

from collections.abc import Callable

from laddu_dask.errors import ModelError
from laddu_dask.expr.node import Expr
from laddu_dask.expr.ops import COMPLEX, REAL


def contributions(node: Expr, args: list[str], w: str, g: str) -> list[tuple[int, str, str]]:
    """Source of what ``node``'s adjoint ``g`` passes to each argument.

    Parameters
    ----------
    node : Expr
        The operation.
    args : list of str
        Source names of the argument values.
    w : str
        Source name of the node's own value.
    g : str
        Source name of the node's adjoint.

    Returns
    -------
    list of (argument index, source, kind)
        ``kind`` is the kind of the source; the caller takes the real part when
        the argument is real and the source complex.
    """
    kinds = [a.kind for a in node.args]
    anycomplex = node.kind == COMPLEX or COMPLEX in kinds
    ck = COMPLEX if anycomplex else REAL

    def cj(name: str, kind: str) -> str:
        return f"xp.conj({name})" if kind == COMPLEX else name

    op = node.op
    a0 = args[0]
    k0 = kinds[0]
    if op == "add":
        return [(0, g, node.kind), (1, g, node.kind)]
    if op == "sub":
        return [(0, g, node.kind), (1, f"(-{g})", node.kind)]
    if op == "neg":
        return [(0, f"(-{g})", node.kind)]
    if op == "mul":
        a1, k1 = args[1], kinds[1]
        return [(0, f"({g} * {cj(a1, k1)})", ck), (1, f"({g} * {cj(a0, k0)})", ck)]
    if op == "div":
        a1, k1 = args[1], kinds[1]
        num = node.args[0]
        if num.op == "const" and num.attr == 1.0:
            # w = 1 / b: dw/db = -w^2, no second division
            dw = f"(-{g} * {cj(f'({w} * {w})', node.kind)})"
        else:
            dw = f"(-{g} * {cj(w, node.kind)} / {cj(a1, k1)})"
        return [(0, f"({g} / {cj(a1, k1)})", ck), (1, dw, ck)]
    if op == "powi":
        n = node.attr
        return [(0, f"({g} * {float(n)!r} * {cj(f'({a0} ** {n - 1})', k0)})", ck)]
    if op == "pow":
        a1, k1 = args[1], kinds[1]
        return [
            (0, f"({g} * {cj(f'({a1} * xp.power({a0}, {a1} - 1))', ck)})", ck),
            (1, f"({g} * {cj(f'({w} * xp.log({a0}))', ck)})", ck),
        ]
    if op == "sin":
        return [(0, f"({g} * {cj(f'xp.cos({a0})', k0)})", ck)]
    if op == "cos":
        return [(0, f"(-{g} * {cj(f'xp.sin({a0})', k0)})", ck)]
    if op == "tan":
        return [(0, f"({g} * {cj(f'(1.0 + {w} * {w})', k0)})", ck)]
    if op == "exp":
        return [(0, f"({g} * {cj(w, k0)})", ck)]
    if op == "log":
        return [(0, f"({g} / {cj(a0, k0)})", ck)]
    if op == "sqrt":
        return [(0, f"(0.5 * {g} / {cj(w, k0)})", ck)]
    if op == "abs":
        if k0 == REAL:
            return [(0, f"({g} * xp.sign({a0}))", REAL)]
        return [(0, f"({g} * {a0} / {w})", COMPLEX)]
    if op == "conj":
        return [(0, cj(g, k0), k0)]
    if op == "real":
        return [(0, g, REAL)]
    if op == "imag":
        return [(0, f"(1j * {g})", COMPLEX)]
    if op == "norm_sqr":
        return [(0, f"(2.0 * {g} * {a0})", k0)]
    if op == "atan2":
        a1 = args[1]
        r2 = f"({a0} * {a0} + {a1} * {a1})"
        return [(0, f"({g} * {a1} / {r2})", REAL), (1, f"(-{g} * {a0} / {r2})", REAL)]
    if op == "complex":
        return [(0, f"xp.real({g})", REAL), (1, f"xp.imag({g})", REAL)]
    if op == "to_complex":
        return [(0, f"xp.real({g})", REAL)]
    raise ModelError(f"no derivative rule for operation {op!r}")


def reverse_sweep(
    nodes: list[Expr],
    adjoint: dict[int, str],
    value_name: Callable[[Expr], str],
    target_name: Callable[[Expr], str],
    include: Callable[[Expr], bool],
    emit: Callable[[Expr, str, str, str, bool], str],
) -> list[str]:
    """Source lines of one reverse sweep, shared by every kernel generator.

    Parameters
    ----------
    nodes : list of Expr
        The nodes to sweep, in topological order (the sweep runs from the last).
    adjoint : dict
        ``serial -> source name`` of the adjoints known so far (the root's seed); the
        sweep adds every adjoint it creates.
    value_name, target_name : callable
        Source names of a node's value and of its adjoint.
    include : callable
        Whether an argument's adjoint is wanted.
    emit : callable
        ``emit(arg, target, src, kind, first) -> line``: a line that starts
        (``first``) or adds to the adjoint ``target`` of ``arg`` with the contribution
        ``src`` of kind ``kind`` (in the generator's own syntax).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> x, a = ld.scalar("x"), ld.parameter("a")
    >>> node = x * a
    >>> names = {x.serial: "x", a.serial: "a", node.serial: "w"}
    >>> reverse_sweep([node], {node.serial: "g"}, lambda n: names[n.serial],
    ...               lambda n: "g_" + names[n.serial], lambda n: n is a,
    ...               lambda arg, t, src, kind, first: f"{t} = {src}" if first else f"{t} += {src}")
    ['g_a = (g * x)']
    """
    lines: list[str] = []
    for node in reversed(nodes):
        g = adjoint.get(node.serial)
        if g is None:
            continue
        args = [value_name(a) for a in node.args]
        for pos, src, kind in contributions(node, args, value_name(node), g):
            arg = node.args[pos]
            if not include(arg):
                continue
            first = arg.serial not in adjoint
            if first:
                adjoint[arg.serial] = target_name(arg)
            lines.append(emit(arg, adjoint[arg.serial], src, kind, first))
    return lines


def python_accumulate(arg: Expr, target: str, src: str, kind: str, first: bool,
                      indent: str = "    ", real: str = "xp.real") -> str:
    """The :func:`reverse_sweep` line of the Python generators (NumPy code by default)."""
    if arg.kind == REAL and kind == COMPLEX:
        src = f"{real}({src})"
    return f"{indent}{target} = {src}" if first else f"{indent}{target} = {target} + {src}"
