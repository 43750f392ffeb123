"""Fits as Dask tasks: on a cluster, each fit of many runs on one worker, next to its data.

When a likelihood's execution has a ``distributed.Client`` and the data of one fit are
small (at most ``laddu-dask.analysis.task-bytes``, 256 MiB by default: a bin, a small
sample), :func:`fit_as_tasks` sends the fits of each likelihood to one task: the worker
loads the datasets from their sources, builds the same likelihood on a local execution
of one thread, prepares it once and runs the minimisers there (several in lockstep, as
:mod:`laddu_dask.analysis.batching` does), so no evaluation crosses the network.  The
likelihoods are dealt to at most ``laddu-dask.analysis.tasks-per-thread`` tasks per worker
thread (2 by default), and a task reads its sources once for all its likelihoods (the bins
of one analysis select from the same files).  The tasks run
concurrently on all the workers' threads and show on the dashboard (task stream and
progress, as ``laddu-dask-fit-<label>``).  A fit's result is bitwise the one a local fit
gives (the sums are exact).  A worker lost mid-fit costs a rerun of its fits elsewhere
(Dask reschedules them); each wait is bounded by ``laddu-dask.cluster.fit-timeout``.
Without a cluster, :func:`fit_as_local_tasks` runs the same tasks on Dask's threaded
scheduler (a closure study's replicas: many small, different likelihoods).

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> events = ld.Dataset.from_arrays(scalars={"t": np.linspace(0.1, 1.0, 50)})
>>> slope = ld.Model((ld.parameter("b", initial=-1.0) * ld.scalar("t")).exp())
>>> recipe = FitRecipe.of(ld.Likelihood([ld.ExtendedNLL(slope, data=events, accepted_mc=events)]))
>>> [t[0] for t in recipe.terms] == [ld.ExtendedNLL], recipe.likelihood().parameter_names
(True, ['b'])
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from laddu_dask import config
from laddu_dask.analysis.batching import fit_batched, fit_together
from laddu_dask.analysis.ensembles import failed_fit
from laddu_dask.analysis.replicas import replica_likelihoods, shared_load_limit
from laddu_dask.cluster_waits import gather, wait_for_workers
from laddu_dask.data.shared_loads import shared_parent_loads
from laddu_dask.likelihood.fit import FitResult
from laddu_dask.likelihood.likelihood import Likelihood
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.heap import roomy_heap

__all__ = ["FitRecipe", "fit_as_local_tasks", "fit_as_tasks", "fit_replicas_as_tasks", "runs_as_tasks"]

@dataclass(frozen=True)
class FitRecipe:
    """What a worker needs to build a likelihood again: each term's class, model, data,
    accepted MC and name, the execution's precision, kernel and normalization, and the
    likelihood's class (the public ones stay public on the worker)."""

    terms: tuple[tuple[type, Any, Any, Any, str], ...]
    precision: str
    kernel: str
    normalization: str
    penalties: tuple[Any, ...] = ()
    statistics: tuple[Any, ...] = field(default=(), compare=False)  # arrays: not compared
    likelihood_class: type = Likelihood

    @classmethod
    def of(cls, likelihood: Likelihood) -> FitRecipe:
        """The recipe of ``likelihood``, with the accepted MC's sufficient statistics of the
        terms already prepared (a worker then reads the data only)."""
        ex = likelihood.execution
        terms = tuple((type(t), t.model, t.data, t.accepted_mc, t.name) for t in likelihood.terms)
        statistics = tuple(t.prepared_statistics(ex) for t in likelihood.terms)
        return cls(terms, ex.precision, ex.kernel, ex.normalization, tuple(likelihood.penalties),
                   statistics if any(s is not None for s in statistics) else (), type(likelihood))

    def likelihood(self, threads: int = 1) -> Likelihood:
        """The likelihood on a local execution of ``threads`` threads, of the classes it had."""
        ex = Execution(precision=self.precision, kernel=self.kernel, normalization=self.normalization,
                       num_workers=threads)
        terms = [kind(m, data=d, accepted_mc=mc, name=n) for kind, m, d, mc, n in self.terms]
        for term, stats in zip(terms, self.statistics):
            if stats is not None:
                term.adopt_statistics(stats)
        return self.likelihood_class([*terms, *self.penalties], execution=ex)

    def nbytes(self) -> int:
        """Bytes the fit's datasets take loaded (every column, float64)."""
        return sum(d.estimate_nbytes() + mc.estimate_nbytes() for _, _, d, mc, _ in self.terms)


def runs_as_tasks(likelihood: Likelihood) -> bool:
    """Whether many fits of ``likelihood`` run as tasks: on a cluster, with a fit's data at
    most ``laddu-dask.analysis.task-bytes``."""
    if likelihood.execution.client is None:
        return False
    return FitRecipe.of(likelihood).nbytes() <= config.nbytes("analysis.task-bytes")


def _fits_on_worker(recipe: FitRecipe, starts: list[list[float]], method: str, options: dict,
                    failures: tuple[type[BaseException], ...]) -> list[FitResult]:
    """Every fit of one likelihood, prepared once on this worker; several run in lockstep."""
    likelihood = recipe.likelihood()
    if len(starts) > 1:
        results = fit_batched(likelihood, starts, method=method, failures=failures, **options)
    else:
        try:
            results = [likelihood.fit(initial=list(starts[0]), method=method, **options)]
        except failures as exc:
            results = [failed_fit(likelihood.parameter_names, starts[0], method, exc)]
    return [replace(r, minuit=None) for r in results]  # iminuit's object holds the likelihood


def _groups(likelihoods: Sequence[Likelihood]) -> list[list[int]]:
    """The indices of the fits of each distinct likelihood (one task each: prepared once)."""
    groups: dict[int, list[int]] = {}
    for i, lik in enumerate(likelihoods):
        groups.setdefault(id(lik), []).append(i)
    return list(groups.values())


def fit_as_local_tasks(likelihoods: Sequence[Likelihood], starts: Sequence[Sequence[float]], *, method: str,
                       label: str, failures: tuple[type[BaseException], ...], num_workers: int,
                       note: Callable | None = None, **options: Any) -> list[FitResult]:
    """:func:`fit_as_tasks` without a cluster: the same tasks (the fits of one likelihood
    each, built again on an execution of one thread) on Dask's threaded scheduler with
    ``num_workers`` threads; results in order, bitwise those of the cluster's tasks."""
    import functools
    import threading

    import dask.threaded

    groups = _groups(likelihoods)
    lock = threading.Lock()

    def run(members: list[int]) -> list[FitResult]:
        results = _fits_on_worker(FitRecipe.of(likelihoods[members[0]]), [list(starts[i]) for i in members],
                                  method, dict(options), failures)
        if note is not None:
            with lock:
                for i, result in zip(members, results, strict=True):
                    note(i, result)
        return results

    name = f"laddu-dask-fit-{label.replace(' ', '-')}"
    graph = {(name, n): (functools.partial(run, members),) for n, members in enumerate(groups)}
    outs = dask.threaded.get(graph, list(graph), num_workers=max(1, int(num_workers)))
    results: list[FitResult | None] = [None] * len(likelihoods)
    for members, out in zip(groups, outs, strict=True):
        for i, result in zip(members, out, strict=True):
            results[i] = result
    return results  # type: ignore[return-value]


def _chunk_on_worker(work: list[tuple[FitRecipe, list[list[float]]]], method: str, options: dict,
                     failures: tuple[type[BaseException], ...]) -> list[FitResult]:
    """The fits of several likelihoods in turn (:func:`_fits_on_worker`), their source
    partitions read once for all of them (the bins of one analysis select from the same
    files); the results one after another."""
    with roomy_heap(), shared_parent_loads(shared_load_limit(None)):
        return [r for recipe, starts in work
                for r in _fits_on_worker(recipe, starts, method, options, failures)]


def fit_as_tasks(likelihoods: Sequence[Likelihood], starts: Sequence[Sequence[float]], *, method: str,
                 label: str, failures: tuple[type[BaseException], ...], note: Callable | None = None,
                 **options: Any) -> list[FitResult]:
    """Run fit ``i`` of ``likelihoods[i]`` from ``starts[i]`` as tasks on the likelihoods'
    cluster: the fits of one likelihood together (prepared once), and the likelihoods dealt
    round-robin to at most ``laddu-dask.analysis.tasks-per-thread`` tasks per worker thread
    (each reads its sources once); results in order (see the module)."""
    client = likelihoods[0].execution.client
    groups = _groups(likelihoods)  # the fits of one likelihood are one task's: prepared once
    threads = sum(wait_for_workers(client, f"the fits ({label})").values()) or 1
    n_tasks = min(len(groups), threads * config.count("analysis.tasks-per-thread"))
    tasks = [groups[k::n_tasks] for k in range(n_tasks)]
    # keys unique to this call: an id() is reused once its object is collected, and a key a
    # client still holds would hand back the earlier fit's result
    batch = uuid.uuid4().hex
    futures = [client.submit(_chunk_on_worker,
                             [(FitRecipe.of(likelihoods[g[0]]), [list(starts[i]) for i in g]) for g in task],
                             method, dict(options), failures, pure=False,
                             key=f"laddu-dask-fit-{label.replace(' ', '-')}-{n}-{batch}")
               for n, task in enumerate(tasks)]
    return _gathered(client, futures, [[i for g in task for i in g] for task in tasks], len(likelihoods),
                     label, note)


def _gathered(client: Any, futures: list, groups: list[list[int]], n_fits: int, label: str,
              note: Callable | None) -> list[FitResult]:
    """The fits of the tasks ``futures`` (task ``n`` fits ``groups[n]``), in order, each
    noted as its task ends; every wait bounded by ``laddu-dask.cluster.fit-timeout``."""
    results: list[FitResult | None] = [None] * n_fits

    def arrived(n: int, fitted: list[FitResult]) -> None:
        for i, result in zip(groups[n], fitted, strict=True):
            results[i] = result
            if note is not None:
                note(i, result)

    gather(client, futures, f"the fits ({label}), each within laddu-dask.cluster.fit-timeout",
           timeout="fit-timeout", times=n_fits, on_result=arrived)
    return results  # type: ignore[return-value]


def _replicas_on_worker(recipe: FitRecipe, seeds: list[int], start: list[float], options: dict,
                        failures: tuple[type[BaseException], ...]) -> list[FitResult]:
    """The bootstrap replicas of ``seeds``, built on this worker from the likelihood's recipe
    (its accepted MC prepared once, its data read once) and fitted in lockstep."""
    source = recipe.likelihood()
    with roomy_heap(), shared_parent_loads(shared_load_limit(source.execution)):
        results = fit_together(replica_likelihoods(source, seeds), [start] * len(seeds), failures=failures,
                               **options)
    return [replace(r, minuit=None) for r in results]


def fit_replicas_as_tasks(likelihood: Likelihood, seeds: Sequence[int], start: Sequence[float], *,
                          label: str, failures: tuple[type[BaseException], ...],
                          note: Callable | None = None, **options: Any) -> list[FitResult]:
    """The bootstrap replicas of ``likelihood`` (one per seed, see
    :func:`~laddu_dask.analysis.replicas.replica_likelihoods`), each fitted from ``start``
    by laddu's default fit, as one task per worker thread of its cluster: each task builds
    the likelihood once and fits its share of the replicas in lockstep.  Results in seed
    order, bitwise those of the same fits locally."""
    client = likelihood.execution.client
    threads = sum(wait_for_workers(client, f"the fits ({label})").values()) or 1
    chunks = [list(range(len(seeds)))[k::threads] for k in range(min(threads, len(seeds)))]
    recipe, batch = FitRecipe.of(likelihood), uuid.uuid4().hex
    futures = [client.submit(_replicas_on_worker, recipe, [int(seeds[i]) for i in chunk], list(start),
                             dict(options), failures, pure=False,
                             key=f"laddu-dask-fit-{label.replace(' ', '-')}-{n}-{batch}")
               for n, chunk in enumerate(chunks)]
    return _gathered(client, futures, chunks, len(seeds), label, note)
