"""Predicates evaluated on a batch of events: the boolean mask a selection keeps.

Every expression a :class:`~laddu_dask.expr.predicate.Predicate` compares is compiled
once (:class:`~laddu_dask.compile.compiled.CompiledModel`, cached per expression) and
evaluated with its array code on the batch's columns; the comparisons and ``&``, ``|``,
``~`` combine the values into one mask.  NumPy columns give a NumPy mask, CuPy columns a
CuPy one.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> from laddu_dask.compile.selection import predicate_mask
>>> x = ld.scalar("x")
>>> predicate_mask((x < 0.5) | (x * x > 2.0), {"x": np.array([0.1, 1.0, 2.0])})
array([ True, False,  True])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.errors import ModelError
from laddu_dask.expr.arrayfuncs import array_module
from laddu_dask.expr.node import Expr
from laddu_dask.expr.predicate import Predicate, evaluate_predicate


def predicate_mask(predicate: Predicate, events: Any,
                   parameters: Mapping[str, float] | None = None, precision: str = "f64",
                   memo: dict[int, Any] | None = None) -> Any:
    """The per-event boolean mask of ``predicate`` on a batch of events.

    Parameters
    ----------
    predicate : Predicate
        The condition (``x < 1``, ``(a > 0) & ~(b <= 2)``, ``Predicate.between(...)``).
    events : mapping of str to array, or an object with a ``columns`` mapping
        The batch's columns (an :class:`~laddu_dask.EventBatch` works); every column the
        predicate reads must be there, all of one length.
    parameters : mapping of str to float, optional
        Values of the free parameters the compared expressions use, by name.
    precision : {"f64", "f32"}, default "f64"
        The precision the expressions are evaluated in.
    memo : dict, optional
        Values of the compared expressions on these events, kept between calls (the bins of
        one ``bin_by`` compare one expression on one batch); without parameters only.

    Returns
    -------
    array of bool
        ``True`` where the event passes (a NaN compares as false, except with ``!=``).

    Raises
    ------
    ModelError
        When ``predicate`` is not a Predicate, a column is missing, or a side of ``==`` is
        complex.
    ParameterError
        When a compared expression needs a parameter that is not given.
    """
    if not isinstance(predicate, Predicate):
        raise ModelError(f"a selection needs a Predicate (e.g. ld.scalar('x') < 1.0), "
                         f"got {type(predicate).__name__}")
    columns = getattr(events, "columns", events)
    if not isinstance(columns, Mapping):
        raise ModelError(f"predicate_mask needs a mapping of columns or an event batch, "
                         f"got {type(events).__name__}")
    missing = [c for c in predicate.columns if c not in columns]
    if missing:
        raise ModelError(f"the predicate reads column(s) {', '.join(missing)}, which the events "
                         f"do not have (they have {', '.join(sorted(columns)) or 'none'})")
    n = len(next(iter(columns.values()))) if columns else 0
    xp = array_module(*columns.values())
    values: dict[int, Any] = memo if memo is not None and not parameters else {}

    def value(expr: Expr) -> Any:
        hit = values.get(expr.serial)
        if hit is None:
            hit = values[expr.serial] = expression_values(expr, columns, parameters, precision, n=n)
        return hit

    with np.errstate(invalid="ignore"):
        mask = evaluate_predicate(predicate, value, xp)
    return xp.broadcast_to(xp.asarray(mask, dtype=bool), (n,)).copy()


def expression_values(expr: Expr, columns: Mapping[str, Any],
                      parameters: Mapping[str, float] | None = None, precision: str = "f64",
                      n: int | None = None) -> Any:
    """The per-event values of ``expr`` on event ``columns`` (its compiled array code).

    ``parameters`` gives the free parameters the expression uses, by name (a missing one is
    a ``ParameterError``); ``n`` is the number of events (for an expression that reads no
    column).  The values are real or complex as the expression is.

    Examples
    --------
    >>> import numpy as np
    >>> import laddu_dask as ld
    >>> expression_values(ld.scalar("x") * 2.0, {"x": np.array([1.0, 2.5])})
    array([2., 5.])
    """
    cm = CompiledModel.from_expr(expr)
    missing = [c for c in cm.columns if c not in columns]
    if missing:
        raise ModelError(f"the expression reads column(s) {', '.join(missing)}, which the events "
                         f"do not have (they have {', '.join(sorted(columns)) or 'none'})")
    cache = cm.event_cache({c: columns[c] for c in cm.columns}, precision)
    params = dict(parameters or {})
    given = {name: params[name] for name in cm.parameter_names if name in params}
    if n is None:
        n = len(next(iter(columns.values()))) if columns else 1
    return cm.values(cache, given if cm.parameter_names else (), n=n, precision=precision)
