"""``Likelihood.diagnostics()``: how each dataset of a likelihood was prepared, and how often
the likelihood was evaluated (laddu 0.28.1's ``LikelihoodDiagnostics`` and ``DatasetDiagnostics``).

Every figure is read from what the runtime did: the events, partitions, exact weight sum
and resident bytes (Dask's ``sizeof``) of each prepared dataset, the passes over its source
(the preparation's, then one per evaluation round that streams it), the sufficient
statistics of the accepted-MC normalization when the model has them, and the value-only
and value-and-gradient evaluations the likelihood made (one per parameter point).

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> model = ld.Model((ld.parameter("a", initial=1.0) * x + ld.parameter("b", initial=0.5)).norm_sqr())
>>> data = ld.Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0, 0.9])}, weights=[1.0, 0.5, 2.0])
>>> mc = ld.Dataset.from_arrays(scalars={"x": np.linspace(0, 1, 101)})
>>> lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc, name="fit")])
>>> _ = lik.value([1.0, 0.5]), lik.value_and_gradient([1.0, 0.4])
>>> d = lik.diagnostics()
>>> d.objective_evaluations, d.gradient_evaluations
(1, 1)
>>> [(s.term, s.role, s.global_events, s.sum_weights) for s in d.datasets]
[('fit', 'observed', 3, 3.5), ('fit', 'accepted_mc', 101, 101.0)]
>>> d.datasets[1].normalization_strategy, d.datasets[1].normalization_basis_count
('hermitian', 4)
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

__all__ = ["DatasetDiagnostics", "LikelihoodDiagnostics", "likelihood_diagnostics"]


@dataclass(frozen=True)
class DatasetDiagnostics:
    """How one dataset of a likelihood term is prepared (laddu's ``DatasetDiagnostics``).

    Attributes
    ----------
    term : str
        The term's name.
    role : {"observed", "accepted_mc"}
        The term's data, or its accepted Monte Carlo.
    storage : {"resident", "streaming"}
        Where the prepared events live (sufficient statistics alone are ``"resident"``).
    local_events, local_batches : int
        Events and partitions prepared in this process (0 on a cluster, whose workers hold them).
    global_events : int
        Events in the dataset.
    sum_weights : float
        The exact (correctly rounded) sum of the event weights.
    resident_bytes : int
        Bytes held: the prepared partitions as Dask's ``sizeof`` counts them (on a cluster,
        the managed memory the scheduler reports), plus the normalization's statistics.
    source_traversals : int
        Passes over the dataset's source: its preparation's (and the statistics' one), then
        one per evaluation round that streams it.
    uses_quadratic_normalization, uses_precomputed_normalization : bool
        Whether the accepted-MC sum comes from sufficient statistics (amplitude products
        summed once), not from a loop over the events at each evaluation.
    normalization_strategy : {"hermitian", "general"} or None
        ``"hermitian"`` (the statistics) or ``"general"`` (the event loop); ``None`` for the data.
    normalization_basis_count : int or None
        Amplitude products summed per event for the statistics (``sum_j K_j^2``; 0 when general).
    normalization_coherent_group_count : int or None
        Coherent sums (squared moduli) the statistics hold.
    normalization_has_residual : bool or None
        ``False``: laddu-dask's statistics cover the whole intensity or are not used.
    normalization_retained_bytes : int or None
        Bytes of the summed statistics matrices.
    normalization_preparation_passes : int or None
        Passes over the accepted MC made to prepare its normalization.
    normalization_cache_reused : bool or None
        Whether this term reuses another term's preparation (a bootstrap replica's or
        ``with_data``'s twin shares its source term's).
    normalization_tag_reused_parent : bool or None
        ``False``: laddu-dask's projections never reuse the parent's statistics.
    normalization_fallback_reason : str or None
        Why the event loop is used, when it is.
    """

    term: str
    role: str
    storage: str
    local_events: int
    global_events: int
    local_batches: int
    sum_weights: float
    resident_bytes: int
    source_traversals: int
    uses_quadratic_normalization: bool = False
    uses_precomputed_normalization: bool = False
    normalization_strategy: str | None = None
    normalization_basis_count: int | None = None
    normalization_coherent_group_count: int | None = None
    normalization_has_residual: bool | None = None
    normalization_retained_bytes: int | None = None
    normalization_preparation_passes: int | None = None
    normalization_cache_reused: bool | None = None
    normalization_tag_reused_parent: bool | None = None
    normalization_fallback_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class LikelihoodDiagnostics:
    """A snapshot of a likelihood's preparation and evaluations (laddu's ``LikelihoodDiagnostics``).

    Attributes
    ----------
    datasets : list of DatasetDiagnostics
        Per term, in term order: its data, then its accepted Monte Carlo.
    objective_evaluations : int
        Parameter points at which the value alone was computed.
    gradient_evaluations : int
        Parameter points at which the value and gradient were computed.
    memory_decisions : list of dict
        The execution's memory decisions (:meth:`MemoryDecision.as_dict
        <laddu_dask.runtime.memory.MemoryDecision.as_dict>`), in the order they were made.
    """

    datasets: list[DatasetDiagnostics]
    objective_evaluations: int
    gradient_evaluations: int
    memory_decisions: list[dict[str, Any]]


def _stats_figures(prepared: Any, local: bool) -> dict[str, Any]:
    s = prepared.stats
    return {"storage": s.storage, "local_events": s.local_events, "global_events": s.global_events,
            "local_batches": s.batches if local else 0, "sum_weights": s.sum_weights,
            "resident_bytes": s.resident_bytes, "source_traversals": prepared.traversals}


def _accepted(term: Any, prep: Any, normalization: str, local: bool) -> DatasetDiagnostics:
    stats, mc = prep.stats, prep.mc
    if mc is not None:
        figures = _stats_figures(mc, local)
    else:  # the statistics alone: one pass over the events, the matrices kept
        ds = term.accepted_mc
        figures = {"storage": "resident", "local_events": ds.n_events if local else 0,
                   "global_events": ds.n_events, "local_batches": ds.n_partitions if local else 0,
                   "sum_weights": stats.sum_weights, "resident_bytes": 0, "source_traversals": 0}
    if stats is None:
        reason = ("normalization='general' was asked for" if normalization == "general" else
                  "the model is not a sum of squared moduli of amplitudes linear in parameter-only "
                  "coefficients")
        return DatasetDiagnostics(
            term.name, "accepted_mc", **figures, normalization_strategy="general",
            normalization_basis_count=0, normalization_coherent_group_count=0,
            normalization_has_residual=False, normalization_retained_bytes=0,
            normalization_preparation_passes=mc.preparation_passes,
            normalization_cache_reused=term._mc_from is not None, normalization_tag_reused_parent=False,
            normalization_fallback_reason=reason)
    figures["resident_bytes"] += stats.nbytes
    figures["source_traversals"] += 1
    return DatasetDiagnostics(
        term.name, "accepted_mc", **figures, uses_quadratic_normalization=True,
        uses_precomputed_normalization=True, normalization_strategy="hermitian",
        normalization_basis_count=sum(k * k for k in stats.decomposition.sizes),
        normalization_coherent_group_count=len(stats.decomposition.sizes),
        normalization_has_residual=False, normalization_retained_bytes=stats.nbytes,
        normalization_preparation_passes=1 + (mc.preparation_passes if mc is not None else 0),
        normalization_cache_reused=term._mc_from is not None, normalization_tag_reused_parent=False)


def likelihood_diagnostics(likelihood: Any) -> LikelihoodDiagnostics:
    """The diagnostics of ``likelihood`` (a :class:`~laddu_dask.likelihood.Likelihood`); its
    terms are prepared first, as its first evaluation would."""
    execution = likelihood.execution
    local = execution.client is None
    datasets = []
    for term in likelihood.terms:
        prep = term.prepare(execution)
        datasets.append(DatasetDiagnostics(term.name, "observed", **_stats_figures(prep.data, local)))
        datasets.append(_accepted(term, prep, execution.normalization, local))
    return LikelihoodDiagnostics(datasets, likelihood.objective_evaluations, likelihood.gradient_evaluations,
                                 [d.as_dict() for d in execution.memory_decisions()])
