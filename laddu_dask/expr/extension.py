"""The extension hook: :func:`register_operation` adds an operation to the spec of
:mod:`laddu_dask.expr.ops` in one call and returns its node builder (so it sits above
:mod:`laddu_dask.expr.node`, whose :func:`~laddu_dask.expr.node.apply` builds the nodes);
:func:`unregister_operation` removes one again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr.node import apply
from laddu_dask.expr.ops import COMPLEX, LEAVES, OPS, REAL, SPEC, OpSpec, Rule, Spelling, add_spec, is_builtin

__all__ = ["register_operation", "unregister_operation"]


def register_operation(
    name: str, arity: int, value: str, derivative: Callable[[Rule], tuple], *,
    result: str = "promote", real_args: bool = False, numba: Spelling = None,
    cuda: Spelling = None, functions: Mapping[str, Callable] | None = None,
) -> Callable[..., Any]:
    """Add an operation to the spec: usable in expressions, differentiable, and printed by
    every backend that has a spelling of it.

    Parameters
    ----------
    name : str
        A new operation name (an identifier).
    arity : int
        Number of arguments.
    value : str
        Array code (see :class:`OpSpec`), e.g. ``"xp.sinh({0})"``.
    derivative : callable
        ``derivative(rule) -> tuple`` of one :class:`Term` (or ``None``) per argument,
        built with arithmetic, :func:`call` and :func:`conj`.
    result, real_args, numba, cuda, functions
        As in :class:`OpSpec` (the fused kernels need ``value`` to be NumPy code
        Numba compiles, or a ``numba`` spelling; CUDA needs ``cuda``).

    Returns
    -------
    callable
        ``f(*args) -> Expr``, the node builder (``laddu_dask.expr.apply(name, *args)``).

    Raises
    ------
    ModelError
        The name is taken, or the templates or the rule do not fit the arity.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> from laddu_dask.expr import register_operation, unregister_operation
    >>> from laddu_dask.expr.ops import conj
    >>> cube = register_operation("cube_doc", 1, "({0} * {0} * {0})",
    ...                           lambda r: (r.g * conj(3.0 * r.args[0] * r.args[0]),))
    >>> cube(ld.constant(2.0))
    Expr(const 8.0)
    >>> unregister_operation("cube_doc")
    """
    if not isinstance(name, str) or not name.isidentifier() or name in LEAVES:
        raise ModelError(f"an operation name must be an identifier, got {name!r}")
    if name in SPEC:
        raise ModelError(f"operation {name!r} is already defined")
    if not isinstance(arity, int) or arity < 1:
        raise ModelError(f"operation {name!r}: arity must be a positive integer, got {arity!r}")
    if result not in ("promote", REAL, COMPLEX):
        raise ModelError(f"operation {name!r}: result must be 'promote', 'real' or 'complex'")
    spec = OpSpec(name, arity, value, derivative, result=result, real_args=real_args, numba=numba,
                  cuda=cuda, functions=dict(functions or {}))
    combos = [(REAL,) * arity] if real_args else [
        tuple(COMPLEX if (k >> i) & 1 else REAL for i in range(arity)) for k in range(2**arity)]
    for kinds in combos:
        for template in (value, spec.numba_form(kinds, True), spec.cuda_form(kinds)):
            try:
                if template is not None:
                    template.format(*range(arity), attr=0)
            except (IndexError, KeyError, ValueError) as err:
                raise ModelError(f"operation {name!r}: the template {template!r} does not fit "
                                 f"{arity} argument(s): {err}") from None
        spec.rule(kinds)
    add_spec(spec)

    def build(*args: Any) -> Any:
        return apply(name, *args)

    build.__name__ = name
    build.__doc__ = f"The operation {name!r} (registered through register_operation)."
    return build


def unregister_operation(name: str) -> None:
    """Remove an operation :func:`register_operation` added (built-in ones stay)."""
    if is_builtin(name):
        raise ModelError(f"the built-in operation {name!r} cannot be removed")
    if name not in SPEC:
        raise ModelError(f"unknown operation {name!r}")
    del SPEC[name]
    OPS.pop(name, None)
