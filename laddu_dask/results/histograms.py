"""Projection histograms: data, the fit (total and per tagged wave) and residuals of any
per-event expression (a mass, an angle), filled where the partitions live.

Every histogram is one Dask task per partition that evaluates the expression (and the
model, for the fit) and returns the exact partial sums of each bin
(:func:`~laddu_dask.data.histogram.histogram_partials`), merged exactly: the histograms do
not depend on the partitioning.  The fit is the accepted Monte Carlo weighted by ``w I``:
for an :class:`~laddu_dask.ExtendedNLL` the absolute prediction, for an
:class:`~laddu_dask.NLL` scaled to the data's total weight (``N / sum_accmc w I``, the
same factor for every wave).  Residuals are pulls,
``(data - fit) / sqrt(sigma_data^2 + sigma_fit^2)`` (0 where both are empty).

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> s = ld.parameter("s", initial=1.0).tagged("S")
>>> d = (ld.parameter("d", initial=1.0) * x).tagged("D")
>>> model = ld.Model((s + d) * (s + d))
>>> data = ld.Dataset.from_arrays(scalars={"x": np.array([0.1, 0.6, 0.7])})
>>> mc = ld.Dataset.from_arrays(scalars={"x": np.array([0.25, 0.75])})
>>> lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
>>> h = ld.projection_histograms(lik, "nll", [1.0, 1.0], x, bins=2, range=(0.0, 1.0))
>>> h.data.counts, [round(c, 6) for c in h.fit.counts], [round(c, 6) for c in h.waves["D"].counts]
([1.0, 2.0], [1.013514, 1.986486], [0.040541, 0.364865])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.compile.dtypes import real_dtype
from laddu_dask.compile.layout import ParameterValues
from laddu_dask.compile.selection import expression_values
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.dataset import Dataset
from laddu_dask.data.histogram import Histogram, histogram_partials
from laddu_dask.data.operations import Bin
from laddu_dask.errors import ModelError
from laddu_dask.expr.node import Expr
from laddu_dask.likelihood.terms import ExtendedNLL
from laddu_dask.results.events import _block
from laddu_dask.results.integrals import Selection, check_tags, find_term
from laddu_dask.runtime.partition import Params
from laddu_dask.runtime.reducer import PartitionReducer
from laddu_dask.runtime.reduction import object_token
from laddu_dask.sums import ExactPartials


@dataclass(frozen=True)
class ProjectionHistograms:
    """Histograms of one expression for a fit projection (see the module docstring).

    Attributes
    ----------
    edges : numpy.ndarray
    data : Histogram
        The data (errors ``sqrt(sum w^2)``).
    fit : Histogram
        The fitted prediction (errors: the Monte Carlo's finite size).
    waves : dict of str to Histogram
        The prediction of each tagged wave alone.
    residuals : numpy.ndarray
        Pulls per bin.
    label : str
        The expression's name (for axis labels).
    scale : float
        The factor of the accepted-MC weights ``w I`` (1 for an ExtendedNLL).
    """

    edges: np.ndarray
    data: Histogram
    fit: Histogram
    waves: dict[str, Histogram] = field(default_factory=dict)
    residuals: np.ndarray = field(default_factory=lambda: np.zeros(0))
    label: str = ""
    scale: float = 1.0


def _fill(batch: EventBatch, expr: Expr, edges: np.ndarray, reducer: PartitionReducer | None,
          params: Params | None) -> ExactPartials:
    x = expression_values(expr, batch.columns, n=batch.n_events)
    x = np.broadcast_to(np.real(np.asarray(x)), (batch.n_events,)).astype(np.float64)
    if reducer is None:
        w = np.asarray(batch.weights, dtype=np.float64)
    else:
        w = _block(batch, reducer, params, (0,))[0]
    return histogram_partials(x, w, edges)


def _merge(edges: np.ndarray, *parts: ExactPartials) -> Histogram:
    return Histogram.from_partials(parts, edges)


def _layer(dataset: Dataset, expr: Expr, edges: np.ndarray, selection: Selection | None,
           params: np.ndarray | None, tag: str) -> tuple[HighLevelGraph, tuple]:
    """The graph of one histogram of ``dataset``, and the key of the merged histogram."""
    columns = list(CompiledModel.from_expr(expr).columns)
    reducer = point = None
    if selection is not None:
        columns = list(dict.fromkeys([*selection.compiled.columns, *columns]))
        reducer, point = selection.model.reducer, selection.model._params(params)
    dataset.schema.require(columns, ", ".join(dataset.sources))
    precision = "f64" if selection is None else selection.model.precision
    loads, keys = dataset.partition_graph(columns, real_dtype(precision), name="laddu-hist-load")
    token = tokenize(keys[0][0] if keys else tag, object_token(expr), edges.tolist(),
                     None if selection is None else object_token(selection))
    name = f"laddu-hist-{tag}-{token}"
    layer: dict[Any, Any] = {(name, i): (_fill, key, expr, edges, reducer, point)
                             for i, key in enumerate(keys)}
    out = (f"{name}-merged", 0)
    layer[out] = (_merge, edges, *[(name, i) for i in range(len(keys))])
    return HighLevelGraph.merge(loads, HighLevelGraph({name: layer}, {name: set(loads.layers)})), out


def _edges(bins: Any, range_: tuple[float, float] | None) -> np.ndarray:
    """Edges from a :class:`~laddu_dask.Bin`, a sequence of edges, or a count over ``range_``."""
    if isinstance(bins, Bin):
        return np.asarray(bins.edges)
    if isinstance(bins, int) and not isinstance(bins, bool):
        if range_ is None:
            raise ModelError("pass range=(low, high) with a number of bins, or bins as edges")
        low, high = map(float, range_)
        return np.asarray(Bin.uniform(bins, low=low, high=high).edges)
    return np.asarray(Bin(bins).edges)


def _pulls(data: Histogram, fit: Histogram) -> np.ndarray:
    d, f = np.asarray(data.counts), np.asarray(fit.counts)
    sigma = np.hypot(np.asarray(data.errors), np.asarray(fit.errors))
    out = np.zeros_like(d)
    np.divide(d - f, sigma, out=out, where=sigma > 0)
    return out


def projection_histograms(likelihood: Any, term_name: str, parameters: ParameterValues, expr: Expr, *,
                          bins: int | Sequence[float] | Bin = 40, range: tuple[float, float] | None = None,  # noqa: A002
                          waves: Sequence[str] | None = None,
                          label: str | None = None) -> ProjectionHistograms:
    """Fill data, fit (total and per tagged wave) and residual histograms of ``expr``.

    Parameters
    ----------
    likelihood : Likelihood
    term_name : str
        The term (its data, accepted Monte Carlo and model).
    parameters : sequence or mapping
        The fitted point (e.g. ``fit.values``).
    expr : Expr
        A real per-event expression of the columns (e.g. a mass); a complex one is
        histogrammed by its real part, as laddu does.
    bins : int, sequence of float or Bin
        A number of bins over ``range``, or the edges (laddu's ``Bin``, or a sequence).
    range : (float, float), optional
        The histogram's limits (needed with a number of bins).
    waves : sequence of str, optional
        The tagged waves to draw alone (default: every tag of the model; ``[]`` none).
    label : str, optional
        The axis label (default: the expression's text).

    Raises
    ------
    ModelError
        For an unknown term or wave, bad bins, or an expression that is not an ``Expr``.
    SchemaError
        When the data or the Monte Carlo lacks a column of ``expr``.
    """
    if not isinstance(expr, Expr):
        raise ModelError(f"projection_histograms needs an expression to histogram, got "
                         f"{type(expr).__name__}")
    term = find_term(likelihood, term_name)
    edges = _edges(bins, range)
    waves = term.model.tags if waves is None else (check_tags(term.model, waves, term_name) if waves else [])
    point = likelihood.resolve(parameters)
    total = Selection(likelihood, term_name)
    selections = {w: Selection(likelihood, term_name, [w]) for w in waves}
    graphs, keys = [], []
    for ds, sel, tag in [(term.data, None, "data"), (term.accepted_mc, total, "fit"),
                         *[(term.accepted_mc, s, f"wave{i}") for i, s in enumerate(selections.values())]]:
        g, k = _layer(ds, expr, edges, sel, None if sel is None else sel.local(point), tag)
        graphs.append(g)
        keys.append(k)
    hists = likelihood.execution.get(HighLevelGraph.merge(*graphs), keys, progress="histograms")
    data, fit = hists[0], hists[1]
    scale = 1.0
    if not isinstance(term, ExtendedNLL):
        integral = total.integral("accepted", point)
        if integral == 0:
            raise ModelError(f"term {term_name!r}: the accepted-MC integral of the model is zero")
        scale = term.data.sum_weights() / integral
    fit = fit.scaled(scale)
    wave_hists = {w: h.scaled(scale) for w, h in zip(selections, hists[2:], strict=True)}
    return ProjectionHistograms(edges=edges, data=data, fit=fit, waves=wave_hists,
                                residuals=_pulls(data, fit), label=label if label is not None else repr(expr),
                                scale=scale)
