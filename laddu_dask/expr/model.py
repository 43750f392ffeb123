"""A model: an intensity expression together with its parameter layout.

Examples
--------
>>> import laddu_dask as ld
>>> s = ld.scalar("s")
>>> bw = ld.breit_wigner(s, mass=ld.parameter("mass", initial=1.5), width=ld.parameter("width", initial=0.1))
>>> model = ld.Model(bw.norm_sqr())
>>> model.parameter_names
['mass', 'width']
>>> model.default_parameters
[1.5, 0.1]
"""

from __future__ import annotations

import html

from laddu_dask.errors import ModelError
from laddu_dask.expr.node import Expr, as_expr, walk
from laddu_dask.expr.parameter import ParameterSpec, merge_parameters
from laddu_dask.views import format_bounds, table


class Model:
    """An intensity (or amplitude) expression and its parameters.

    Parameters
    ----------
    expr : Expr
        The per-event value.  Likelihoods use its real part.

    Attributes
    ----------
    expr : Expr
        The expression.
    parameters : dict[str, ParameterSpec]
        Every parameter, free and fixed, in order of first appearance.
    parameter_names : list[str]
        The free parameters, in order of first appearance in a depth-first walk of
        the expression (arguments left to right).  Parameter vectors follow this order.
    default_parameters : list[float]
        The initial values of the free parameters.
    fixed_parameters : dict[str, float]
        The fixed parameters and their values.
    columns : list[str]
        The dataset columns the model reads.
    """

    def __init__(self, expr: Expr) -> None:
        if isinstance(expr, Model):
            expr = expr.expr
        if not isinstance(expr, Expr):
            if isinstance(expr, (int, float, complex)):
                expr = as_expr(expr)
            else:
                raise ModelError(f"Model needs an expression, got {type(expr).__name__}")
        self.expr = expr
        nodes = walk(expr)
        self.parameters: dict[str, ParameterSpec] = merge_parameters(
            n.attr for n in nodes if n.op == "param"
        )
        self.columns: list[str] = sorted({n.attr for n in nodes if n.op == "column"})

    @property
    def parameter_names(self) -> list[str]:
        return [name for name, spec in self.parameters.items() if not spec.is_fixed]

    @property
    def default_parameters(self) -> list[float]:
        return [spec.initial for spec in self.parameters.values() if not spec.is_fixed]

    @property
    def fixed_parameters(self) -> dict[str, float]:
        return {n: s.fixed for n, s in self.parameters.items() if s.fixed is not None}

    def __repr__(self) -> str:
        return (
            f"Model({len(self.parameter_names)} free parameters: {', '.join(self.parameter_names)}; "
            f"columns: {', '.join(self.columns)})"
        )

    def _repr_html_(self) -> str:
        rows = [
            [name, f"{spec.initial:g}", "\u2014" if spec.is_fixed else format_bounds(*spec.bounds),
             "fixed" if spec.is_fixed else "free"]
            for name, spec in self.parameters.items()
        ]
        columns = ", ".join(self.columns) or "none"
        return (
            "<b>laddu_dask.Model</b>"
            f"<p>columns: {html.escape(columns)}</p>"
            + table(["parameter", "value", "bounds", "status"], rows)
        )
