"""Binned yields of a fitted term on joint axes (laddu's ``Yield.projection`` ->
``YieldProjection``, ``Yield.projection_set``, ``ComponentYieldProjection``).

In every bin of a grid of :class:`~laddu_dask.Axis` (row-major, the last axis fastest):

``selected``    ``sum_data w`` (the observed yield; errors ``sqrt(sum w^2)``)
``accepted``    ``sum_accmc w I(p)`` (errors ``sqrt(sum (w I)^2)``, the Monte Carlo's size)
``generated``   ``sum_genmc w I(p)``

and, for named components (coherent tag selections, ``{"S+D": ["S", "D"]}``), the accepted
and generated yields of that part of the model alone; components hold no data and need not
add up.  Values are raw yields (not divided by the bin volume).  With an ensemble every
quantity also has its draws; with a fit covariance, its ``"covariance"`` error is
propagated through each bin's exact gradient.  All grids, components and draws come from
one round over the three samples: one task per partition
(:mod:`laddu_dask.results.binned_fill`), merged exactly.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> m = ld.scalar("m")
>>> events = ld.Dataset.from_arrays(scalars={"m": np.array([0.25, 1.5, 1.75])}, weights=[1.0, 2.0, 1.0])
>>> lik = ld.Likelihood([ld.ExtendedNLL(ld.Model(ld.parameter("n", initial=1.0) * m), data=events,
...                                     accepted_mc=events, name="t")])
>>> p = lik.yield_context("t", generated_mc=events, parameters=[2.0]).projection(ld.Axis(m, edges=[0, 1, 2]))
>>> p.shape, p.selected, p.accepted, p.validity
([2], [1.0, 3.0], [0.5, 9.5], ['valid', 'valid'])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from dask.highlevelgraph import HighLevelGraph

from laddu_dask.errors import ModelError
from laddu_dask.likelihood.terms import ExtendedNLL
from laddu_dask.results.binned import (
    Axis,
    BinnedEstimate,
    Linear,
    YieldHistogramView,
    axis_group,
    bin_volumes,
)
from laddu_dask.results.binned_fill import Evaluation, EvaluationSums, GridFill, fill_layer, plan_fill
from laddu_dask.results.estimate import sample_id
from laddu_dask.results.integrals import Selection


def check_components(model: Any, term_name: str, components: Mapping[str, Sequence[str]] | None
                     ) -> dict[str, tuple[str, ...]]:
    """``components`` with canonical (sorted, distinct) tags, checked against the model.

    Raises
    ------
    ModelError
        For a component without a name or tags, or with a tag the model does not carry.
    """
    if components is None:
        return {}
    if not isinstance(components, Mapping):
        raise ModelError(f"components must map names to tag lists, got {type(components).__name__}")
    out = {}
    for name, tags in components.items():
        if isinstance(tags, str) or not isinstance(tags, Sequence) or not (isinstance(name, str)
                                                                          and name.strip()):
            raise ModelError(f"invalid component {name!r}: it needs a non-empty name and a list of tags")
        canonical = tuple(sorted(set(tags)))
        if not canonical or any(not isinstance(t, str) or not t.strip() for t in canonical):
            raise ModelError(f"invalid component {name!r}: its tags must be a non-empty list of tags")
        unknown = [t for t in canonical if t not in model.tags]
        if unknown:
            raise ModelError(f"term {term_name!r}: component {name!r} has unknown model tag {unknown[0]!r}; "
                             f"its tags: {', '.join(map(repr, model.tags)) or 'none'}")
        out[name] = canonical
    return out


def _validity(acc: np.ndarray, gen: np.ndarray, acc_count: np.ndarray, gen_count: np.ndarray,
              exposure: np.ndarray) -> list[str]:
    """laddu's per-bin support diagnostic, in its order of precedence."""
    out = []
    for a, g, na, ng, e in zip(acc, gen, acc_count, gen_count, exposure, strict=True):
        out.append("nonfinite_evaluation" if not (np.isfinite(a) and np.isfinite(g))
                   else "missing_generated_support" if ng == 0
                   else "invalid_exposure" if not (np.isfinite(e) and e > 0)
                   else "missing_accepted_support" if na == 0
                   else "nonpositive_accepted_support" if a <= 0
                   else "nonpositive_generated_support" if g <= 0 else "valid")
    return out


class _Binned:
    """One selection's accepted and generated sums on one grid (values at every point,
    squares, gradients by the likelihood's parameters)."""

    def __init__(self, acc: EvaluationSums, gen: EvaluationSums, sel: Selection) -> None:
        def gradients(sums: EvaluationSums) -> np.ndarray | None:
            return None if sums.gradients is None else sel.full_gradient(sums.gradients)

        self.accepted, self.accepted_squares = acc.values, acc.squares
        self.generated, self.generated_squares = gen.values, gen.squares
        self.accepted_gradients, self.generated_gradients = gradients(acc), gradients(gen)


class _Owner:
    """What the projections of one yield share: axes, draws' source, covariance, rate."""

    def __init__(self, axes: list[Axis], absolute: bool, source_id: int | None, covariance: Any,
                 names: tuple[str, ...], term_name: str) -> None:
        self.axes, self.absolute, self.source_id = axes, absolute, source_id
        self.covariance, self.names, self.term_name = covariance, names, term_name
        self.edges = [a.edges for a in axes]
        self.fill_ids: dict[str, int] = {}

    def estimate(self, values: np.ndarray, variances: dict[str, np.ndarray],
                 gradients: np.ndarray | None) -> BinnedEstimate:
        linear = None if gradients is None else Linear(gradients, self.covariance, self.names)
        return BinnedEstimate(values[0], draws=values[1:] if len(values) > 1 else None,
                              source_id=self.source_id if len(values) > 1 else None, axes=self.edges,
                              unit="yield", variances=variances, linear=linear, fill_ids=self.fill_ids)

    def rate(self, what: str) -> None:
        if not self.absolute:
            raise ModelError(f"likelihood term does not determine an absolute rate: {self.term_name!r} "
                             f"is not an ExtendedNLL, so it has no {what} yields")


class ComponentYieldProjection:
    """The fitted accepted and generated yields of one coherent tag selection on the axes
    of its :class:`YieldProjection` (laddu's ``ComponentYieldProjection``)."""

    def __init__(self, owner: _Owner, tags: tuple[str, ...], sums: _Binned, validity: list[str]) -> None:
        self._owner, self._tags, self._sums, self._validity = owner, tags, sums, validity

    @property
    def tags(self) -> list[str]:
        """The selection's tags, sorted."""
        return list(self._tags)

    @property
    def axes(self) -> list[list[float]]:
        """The edges of each axis."""
        return [list(e) for e in self._owner.edges]

    @property
    def shape(self) -> list[int]:
        """Bins per axis."""
        return [a.bins for a in self._owner.axes]

    @property
    def validity(self) -> list[str]:
        """Each bin's support diagnostic (``"valid"``, ``"missing_generated_support"``, ...)."""
        return list(self._validity)

    def _values(self, what: str) -> np.ndarray:
        self._owner.rate(what)
        return getattr(self._sums, what)

    @property
    def accepted(self) -> list[float]:
        """``sum_accmc w I`` of the selection in every bin."""
        return self._values("accepted")[0].tolist()

    @property
    def generated(self) -> list[float]:
        """``sum_genmc w I`` of the selection in every bin."""
        return self._values("generated")[0].tolist()

    @property
    def accepted_draws(self) -> list[list[float]]:
        """:attr:`accepted` at each ensemble draw."""
        return self._values("accepted")[1:].tolist()

    @property
    def generated_draws(self) -> list[list[float]]:
        """:attr:`generated` at each ensemble draw."""
        return self._values("generated")[1:].tolist()

    def _estimate(self, what: str, source: str) -> BinnedEstimate:
        return self._owner.estimate(self._values(what), {source: getattr(self._sums, f"{what}_squares")},
                                    getattr(self._sums, f"{what}_gradients"))

    @property
    def accepted_estimate(self) -> BinnedEstimate:
        """:attr:`accepted` with its draws and errors."""
        return self._estimate("accepted", "accepted_mc_fill")

    @property
    def generated_estimate(self) -> BinnedEstimate:
        """:attr:`generated` with its draws and errors."""
        return self._estimate("generated", "generated_mc_fill")

    def accepted_histogram(self) -> YieldHistogramView:
        """:attr:`accepted_estimate` with its default error budget."""
        return self.accepted_estimate.histogram()

    def generated_histogram(self) -> YieldHistogramView:
        """:attr:`generated_estimate` with its default error budget."""
        return self.generated_estimate.histogram()


class YieldProjection(ComponentYieldProjection):
    """Selected, accepted and generated yields of a term on shared axes, with paired draws
    and named components (laddu's ``YieldProjection``); see the module docstring."""

    def __init__(self, owner: _Owner, sums: _Binned, data: np.ndarray, validity: list[str],
                 components: dict[str, ComponentYieldProjection], diagnostics: dict[str, int], draws: int,
                 tags: tuple[str, ...] = ()) -> None:
        super().__init__(owner, tags, sums, validity)
        self._data, self._components, self._diagnostics, self._draws = data, components, diagnostics, draws

    @property
    def volumes(self) -> np.ndarray:
        """The volume of every bin (the product of its widths)."""
        return bin_volumes(self._owner.axes)

    @property
    def has_absolute_rate(self) -> bool:
        """Whether the term is extended (fitted yields are defined)."""
        return self._owner.absolute

    @property
    def has_replica_datasets(self) -> bool:
        """Always ``False``: the draws are parameter points evaluated on the term's own data."""
        return False

    @property
    def source_id(self) -> int | None:
        """The id of the ensemble of the draws."""
        return self._owner.source_id if self._draws else None

    @property
    def components(self) -> dict[str, ComponentYieldProjection]:
        """The named components."""
        return dict(self._components)

    @property
    def diagnostics(self) -> dict[str, int]:
        """Events with a non-finite coordinate and outside the axes, per sample."""
        return dict(self._diagnostics)

    @property
    def selected(self) -> list[float]:
        """``sum_data w`` in every bin."""
        return self._data[:, 0].tolist()

    @property
    def selected_draws(self) -> list[list[float]]:
        """:attr:`selected` at each draw (the same data for every draw)."""
        return [self.selected for _ in range(self._draws)]

    @property
    def selected_estimate(self) -> BinnedEstimate:
        """:attr:`selected` with its ``"data_fill"`` errors."""
        values = np.repeat(self._data[:, 0][None, :], self._draws + 1, axis=0)
        return self._owner.estimate(values, {"data_fill": self._data[:, 2]}, None)

    def selected_histogram(self) -> YieldHistogramView:
        """:attr:`selected_estimate` with its default error budget."""
        return self.selected_estimate.histogram()

    def __repr__(self) -> str:
        return (f"YieldProjection({self._owner.term_name!r}, shape {self.shape}, "
                f"{len(self._components)} components)")


def project_yields(yld: Any, requests: Mapping[str, Any],
                   components: Mapping[str, Sequence[str]] | None) -> dict[str, YieldProjection]:
    """The projections of a :class:`~laddu_dask.Yield` on named axis groups, in one round.

    Raises
    ------
    ModelError
        For no request, a bad axis group or component.
    SchemaError
        If a sample lacks a column of an axis or of the model.
    """
    if not isinstance(requests, Mapping) or not requests:
        raise ModelError("at least one projection is required (a name -> Axis or list of Axis mapping)")
    groups = {}
    for name, axes in requests.items():
        if not isinstance(name, str) or not name:
            raise ModelError(f"projection names must be non-empty strings, got {name!r}")
        groups[name] = axis_group(axes, f"projection {name!r}")
    full: Selection = yld._selection
    comps = check_components(full.term.model, full.name, components)
    tag_sets = list(dict.fromkeys(comps.values()))
    selections = [full, *(Selection(full.likelihood, full.name, list(t), full.generated_mc)
                          for t in tag_sets)]
    ints = yld._ints
    points = [ints.parameters] + ([] if ints.draw_points is None else list(ints.draw_points))
    evaluations = [Evaluation.of(s, points, ints.covariance is not None) for s in selections]
    grids = list(groups.values())
    layers = [fill_layer(full.dataset("data"), grids, [], "data")]
    workers = full.execution.workers
    for role in ("accepted", "generated"):
        dataset, can_run = plan_fill(full.execution, full.dataset(role), grids, evaluations,
                                     f"{full.name}/{role}_mc/projections")
        layers.append(fill_layer(dataset, grids, evaluations, role))
        workers = min(workers, can_run)
    graph = HighLevelGraph.merge(*[g for g, _ in layers])
    data, acc, gen = full.execution.get(graph, [k for _, k in layers], num_workers=workers,
                                        progress="yield projections")
    names = tuple(full.likelihood.parameter_names)
    return {name: _assemble(yld, g, groups[name], data, acc, gen, selections, evaluations, tag_sets, comps,
                            names)
            for g, name in enumerate(groups)}


def _assemble(yld: Any, g: int, axes: list[Axis], data: GridFill, acc: GridFill, gen: GridFill,
              selections: list[Selection], evaluations: list[Evaluation], tag_sets: list[tuple[str, ...]],
              comps: dict[str, tuple[str, ...]], names: tuple[str, ...]) -> YieldProjection:
    full = selections[0]
    owner = _Owner(axes, isinstance(full.term, ExtendedNLL), yld._ints.source_id, yld._ints.covariance, names,
                   full.name)
    owner.fill_ids = {f"{role}_fill" if role == "data" else f"{role}_mc_fill": sample_id(full.dataset(role))
                      for role in ("data", "accepted", "generated")}
    a, e = acc.sums[g], gen.sums[g]
    binned = [_Binned(x, y, s) for x, y, s in zip(EvaluationSums.split(a, evaluations),
                                                  EvaluationSums.split(e, evaluations), selections)]

    def validity(b: _Binned) -> list[str]:
        return _validity(b.accepted[0], b.generated[0], a[:, 1], e[:, 1], e[:, 0])

    by_tags = dict(zip(tag_sets, binned[1:], strict=True))
    components = {name: ComponentYieldProjection(owner, tags, by_tags[tags], validity(by_tags[tags]))
                  for name, tags in comps.items()}
    diagnostics = {f"{role}_{kind}": getattr(fill, kind)[g]
                   for role, fill in (("selected", data), ("accepted", acc), ("generated", gen))
                   for kind in ("nonfinite", "out_of_range")}
    return YieldProjection(owner, binned[0], data.sums[g], validity(binned[0]), components, diagnostics,
                           len(evaluations[0].points) - 1, tuple(full.tags or ()))
