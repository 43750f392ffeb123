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
import math
from collections.abc import Mapping, Sequence
from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr.exprjson import to_json
from laddu_dask.expr.exprjson_read import from_json
from laddu_dask.expr.graph import walk
from laddu_dask.expr.node import Expr, as_expr
from laddu_dask.expr.parameter import ParameterSpec, draw_starts, merge_parameters
from laddu_dask.expr.tags import TAG, project, strip_tags, tags_of
from laddu_dask.expr.updates import ParameterUpdate, update_parameters
from laddu_dask.views import format_bounds, table


class Model:
    """An intensity (or amplitude) expression and its parameters.

    This is the expression layer's model. Per-event evaluation needs the compiled kernels of
    the layers above, so the public ``ld.Model`` (:mod:`laddu_dask.facade`) is its subclass
    with laddu's ``evaluate`` and ``value_and_gradient``. The models a model makes
    (:meth:`projection`, :meth:`with_parameters`) are of its own class.

    Parameters
    ----------
    expr : Expr
        The per-event value.  Likelihoods use its real part.
    exact_solver_seconds : float, default 0.0
        laddu's time limit for its graph optimizer; accepted for compatibility and not
        used (laddu-dask's graph is simplified as it is built).

    Attributes
    ----------
    expr : Expr
        The expression that is compiled: the one given, without its projection tags.
    source : Expr
        The expression as given, tags included (:meth:`projection` selects from it).
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

    def __init__(self, expr: Expr, *, exact_solver_seconds: float = 0.0) -> None:
        if isinstance(expr, Model):
            expr = expr.source
        if not isinstance(expr, Expr):
            if isinstance(expr, (int, float, complex)):
                expr = as_expr(expr)
            else:
                raise ModelError(f"Model needs an expression, got {type(expr).__name__}")
        _check_seconds(exact_solver_seconds)
        self.source = expr
        nodes = walk(expr)
        if any(n.op == TAG for n in nodes):
            expr = strip_tags(expr)
            nodes = walk(expr)
        self.expr = expr
        self._projections: dict[frozenset[str], Model] = {}
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

    def sample_parameters(self, *, seed: int = 0, n: int | None = None) -> list[float] | list[list[float]]:
        """Reproducible starts for the free parameters, in :attr:`parameter_names` order
        (laddu's ``sample_parameters``): uniform in each parameter's initialization range
        (``initial=(min, max)``, inside its bounds), else its initial value.  ``n`` gives
        that many starts (a list of lists).

        Examples
        --------
        >>> import laddu_dask as ld
        >>> m = ld.Model(ld.parameter("a", initial=(1.0, 2.0)) * ld.parameter("b", initial=0.5))
        >>> starts = m.sample_parameters(seed=3, n=2)
        >>> len(starts), all(1.0 <= s[0] < 2.0 and s[1] == 0.5 for s in starts)
        (2, True)
        """
        return draw_starts(self.parameters.values(), seed, n)

    @property
    def fixed_parameters(self) -> dict[str, float]:
        return {n: s.fixed for n, s in self.parameters.items() if s.fixed is not None}

    # -- tags and parameter edits (laddu's Model methods) ----------------------------------------
    @property
    def parameter_specs(self) -> dict[str, ParameterSpec]:
        """Every parameter's definition, free and fixed, sorted by name (a new dict each time).

        Examples
        --------
        >>> import laddu_dask as ld
        >>> model = ld.Model(ld.parameter("b", fixed=2.0) * ld.parameter("a"))
        >>> list(model.parameter_specs), model.parameter_specs["b"].fixed
        (['a', 'b'], 2.0)
        """
        return {name: self.parameters[name] for name in sorted(self.parameters)}

    @property
    def tags(self) -> list[str]:
        """The projection tags of the expression, sorted."""
        return tags_of(self.source)

    def projection(self, tags: Sequence[str], *, exact_solver_seconds: float = 0.0) -> Model:
        """The model with only the contributions carrying one of ``tags`` (laddu's
        ``Model.projection``): every tagged node without a selected tag is zero.

        The projection is a model of its own, with the parameters that remain (in their
        order of appearance); the full model is not changed.  The same selection gives
        the same model (and its compiled kernels) again.

        Examples
        --------
        >>> import laddu_dask as ld
        >>> s = ld.parameter("s", initial=2.0).tagged("S")
        >>> d = ld.parameter("d", initial=3.0).tagged("D")
        >>> model = ld.Model((s + d).norm_sqr())
        >>> model.projection(["S"]).evaluate(), model.projection(["S", "D"]).evaluate()
        ((4+0j), (25+0j))
        """
        _check_seconds(exact_solver_seconds)
        projected = project(self.source, tags)  # checks the tags
        key = frozenset(tags)
        hit = self._projections.get(key)
        if hit is None:  # kept with the model, so that its compiled kernels stay cached too
            hit = self._projections[key] = type(self)(projected)
        return hit

    def with_parameters(self, updates: Mapping[str, ParameterUpdate], *,
                        exact_solver_seconds: float = 0.0) -> Model:
        """A new model with some parameters redefined (laddu's ``Model.with_parameters``):
        fixed, freed, given new initial values, bounds or labels, or renamed.

        Parameters
        ----------
        updates : dict[str, ParameterUpdate]
            Updates by parameter name; parameters not named keep their definitions.

        Raises
        ------
        ParameterError
            For an unknown name, a value that is not a :class:`ParameterUpdate`, an
            invalid resulting definition, or a rename onto a name in use.

        Examples
        --------
        >>> import laddu_dask as ld
        >>> model = ld.Model(ld.parameter("a", initial=1.0) * ld.scalar("x"))
        >>> model.with_parameters({"a": ld.ParameterUpdate(name="slope")}).parameter_names
        ['slope']
        """
        _check_seconds(exact_solver_seconds)
        return type(self)(update_parameters(self.source, self.parameters, updates))

    @property
    def optimization_diagnostics(self) -> dict[str, Any]:
        """laddu's outcome of its graph optimizer, with laddu's keys.  laddu-dask has no
        equality search (the graph is interned and simplified as it is built), so ``rounds``
        is 0, ``explored_nodes`` the nodes of the compiled graph and no exact solver ran."""
        reason = "laddu-dask has no exact solver: the graph is simplified as it is built"
        return {"rounds": 0, "explored_nodes": len(walk(self.expr)), "stop_reason": "no equality search",
                "execution_exact": False, "execution_fallback": reason,
                "normalization_exact": False, "normalization_fallback": reason}

    def equation(self, *, colors: Any = None, style_rules: Any = None) -> str:
        """:meth:`Expr.equation` of the model's expression."""
        return self.source.equation(colors=colors, style_rules=style_rules)

    def latex(self, *, colors: Any = None, style_rules: Any = None) -> str:
        """:meth:`Expr.latex` of the model's expression."""
        return self.source.latex(colors=colors, style_rules=style_rules)

    def tree(self, *, colors: Any = None, expand_repeated: bool = True, style_rules: Any = None) -> str:
        """:meth:`Expr.tree` of the model's expression."""
        return self.source.tree(colors=colors, expand_repeated=expand_repeated, style_rules=style_rules)

    def dot(self, *, colors: Any = None, expand_repeated: bool = True, style_rules: Any = None) -> str:
        """:meth:`Expr.dot` of the model's expression."""
        return self.source.dot(colors=colors, expand_repeated=expand_repeated, style_rules=style_rules)

    def svg(self, path: Any, *, colors: Any = None, expand_repeated: bool = True,
            style_rules: Any = None) -> None:
        """:meth:`Expr.svg` of the model's expression."""
        self.source.svg(path, colors=colors, expand_repeated=expand_repeated, style_rules=style_rules)

    def to_json(self) -> str:
        """The model's expression (tags included) as laddu 0.28.1's JSON text, as laddu's
        ``Model.to_json`` writes it (:meth:`Expr.to_json`)."""
        return to_json(self.source)

    @staticmethod
    def from_json(json: str, *, exact_solver_seconds: float = 0.0) -> Model:
        """The model of laddu 0.28.1's JSON text (from laddu's ``Model.to_json`` or ours);
        ``exact_solver_seconds`` as in the constructor.

        Examples
        --------
        >>> import laddu_dask as ld
        >>> m = ld.Model(ld.parameter("a", initial=2.0) * ld.scalar("x"))
        >>> ld.Model.from_json(json=m.to_json()).parameter_names
        ['a']
        """
        expr = from_json(json, "Model.from_json")
        if not isinstance(expr, Expr):
            raise ModelError(f"Model.from_json: a model is a scalar expression, got a {expr!r}")
        return Model(expr, exact_solver_seconds=exact_solver_seconds)

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


def _check_seconds(value: object) -> None:
    ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
          and math.isfinite(value) and value >= 0)
    if not ok:
        raise ModelError(f"exact_solver_seconds must be a non-negative number, got {value!r}")
