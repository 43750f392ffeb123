"""Evaluations on Dask's threaded scheduler, in this process.

An evaluation is one hand-built graph (:func:`evaluation_graph`): for every job a few
tasks per thread, each reducing a group of partitions (resident ones in place, or
streamed from their sources one at a time), then a tree of exact merges of fan-in
``split_every``.  :class:`ThreadedRunner` runs it with :func:`dask.threaded.get`; the
persistent pool of :mod:`laddu_dask.runtime.local` runs the same graph.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> ex = ld.Execution(scheduler="dask")
>>> type(ex.runner).__name__
'ThreadedRunner'
>>> model = ld.PreparedModel.prepare(ld.CompiledModel.from_expr(ld.parameter("a") * ld.scalar("x")), ex)
>>> ds = model.prepare_dataset(ex, ld.Dataset.from_arrays(scalars={"x": np.arange(4.0)}))
>>> model.reduce(ex, [2.0], ds, ld.ReductionPlan.weighted_real())
12.0
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import dask
import dask.threaded
from dask.sizeof import sizeof
from dask.task_spec import TaskRef

from laddu_dask.data.dataset import Dataset
from laddu_dask.runtime.disk_tier import DiskStore
from laddu_dask.runtime.jobs import (
    PointPartials,
    ReductionJob,
    Runner,
    disk_partitions,
    reduce_partitions,
    resident_groups,
    stream_partitions,
    task_groups,
)
from laddu_dask.runtime.memory import MemoryDecision
from laddu_dask.runtime.preparation import (
    Learned,
    PreparedDataset,
    PreparedStats,
    disk_graph,
    preparation_graph,
    prepare_learning,
    weight_sum,
)
from laddu_dask.runtime.reducer import PartitionReducer
from laddu_dask.runtime.reduction import merge_list, tree_graph, unique_name
from laddu_dask.sums import ExactPartials
from laddu_dask.views import on_terminal


def evaluation_graph(jobs: list[ReductionJob], threads: int, split_every: int
                     ) -> tuple[dict, list[Hashable | None], int | None]:
    """The graph of one evaluation of ``jobs`` on ``threads`` threads.

    Returns the graph, the root key of every job (``None`` for a job without
    partitions) and the threads streaming allows (``None`` when nothing streams).
    """
    graph: dict = {}
    roots: list[Hashable | None] = []
    workers = None
    for job in jobs:
        pd = job.prepared
        token = unique_name("reduce")
        if pd.storage == "resident":
            leaves = {
                (token, g): (reduce_partitions, job.reducer, parts, job.points, job.plan,
                             job.with_gradient, job.exact)
                for g, parts in enumerate(resident_groups(job, threads))
            }
        else:
            groups = task_groups(pd.stats.batches, pd.stream_workers)
            if pd.storage == "disk":  # mapped back from the local disk, one partition a thread
                leaves = {
                    (token, g): (disk_partitions, job.reducer, pd.dataset,
                                 [pd.partitions[i] for i in group], job.points, job.plan,
                                 job.with_gradient, job.exact)
                    for g, group in enumerate(groups)
                }
            else:
                leaves = {
                    (token, g): (stream_partitions, job.reducer, pd.dataset, list(group), job.points,
                                 job.plan, job.with_gradient, job.exact)
                    for g, group in enumerate(groups)
                }
            workers = pd.stream_workers if workers is None else min(workers, pd.stream_workers)
        if not leaves:
            roots.append(None)
            continue
        sub, root = tree_graph(leaves, split_every, merge_list, f"{token}-merge")
        graph.update(sub)
        roots.append(root)
    return graph, roots, workers


def fetched(graph: Mapping[Hashable, Any]) -> tuple[Mapping[Hashable, Any], dict[Hashable, Any]]:
    """``graph`` without its distributed futures, and their values (a dataset persisted on a
    cluster, prepared in this process); ``(graph, {})`` when it holds none."""
    held = {k: v for k, v in graph.items() if isinstance(v, TaskRef) and hasattr(v, "result")}
    if not held:
        return graph, {}
    from laddu_dask.cluster_waits import gather

    futures = list(held.values())
    values = gather(futures[0].client, futures, "the persisted partitions of a dataset held by a cluster")
    return {k: v for k, v in graph.items() if k not in held}, dict(zip(held, values))


def with_empty(jobs: list[ReductionJob], roots: list[Hashable | None], merged: list[Any]
               ) -> list[PointPartials]:
    """One result per job: the merged ones in order, the empty sums where a job had no root."""
    results = iter(merged)
    return [next(results) if root is not None else job.empty() for root, job in zip(roots, jobs)]


class ThreadedRunner(Runner):
    """Evaluations and preparations on Dask's threaded scheduler.

    Parameters
    ----------
    num_workers : int
        Threads.
    split_every : int
        Fan-in of the merge trees.
    progress : bool
        Show Dask's progress bar while datasets are prepared.
    """

    def __init__(self, num_workers: int, split_every: int, progress: bool = False) -> None:
        self.num_workers = num_workers
        self.split_every = split_every
        self.progress = progress

    @property
    def workers(self) -> int:
        """Threads."""
        return self.num_workers

    def get(self, graph: Mapping[Hashable, Any], keys: Any, num_workers: int | None = None,
            progress: str | None = None) -> Any:
        """Run ``graph`` on ``num_workers`` threads (all by default); ``progress`` labels a bar.

        A graph on a dataset persisted on a cluster holds its futures: they are fetched
        first (within ``laddu-dask.cluster.preparation-timeout``) and given to the
        scheduler as computed values.
        """
        workers = num_workers or self.num_workers
        graph, cache = fetched(graph)
        if progress and self.progress:
            from dask.diagnostics import ProgressBar

            print(progress, flush=True)
            if not on_terminal():  # Dask's bar rewrites its line with \r: no bar in a file or pipe
                return dask.threaded.get(graph, keys, num_workers=workers, cache=cache)
            with ProgressBar(minimum=0.5):
                return dask.threaded.get(graph, keys, num_workers=workers, cache=cache)
        return dask.threaded.get(graph, keys, num_workers=workers, cache=cache)

    def prepare(self, reducer: PartitionReducer, dataset: Dataset, name: str,
                decision: MemoryDecision, stream_workers: int,
                learned: Learned | None = None) -> PreparedDataset:
        """Prepare every partition in this process (resident), or onto the local disk (at most
        ``stream_workers`` partitions in memory at once), or only sum the weights; ``learned``:
        the partitions prepared already under that storage while learning the lengths."""
        store = None
        disk_bytes = 0
        parts = None if learned is None else learned.parts
        if decision.strategy == "disk":
            if learned is not None and learned.store is not None:
                store, written = learned.store, learned.parts
            else:
                store = DiskStore.create(name)
                graph, keys = disk_graph(reducer, dataset, name, store)
                written = self.get(dict(graph), keys, progress=f"preparing {name} onto the disk",
                                   num_workers=stream_workers)
            parts = [handle for handle, _ in written]
            sum_w = float(ExactPartials.merge([s for _, s in written]).to_floats()[0]) if written else 0.0
            nbytes = 0
            disk_bytes = sum(handle.size for handle in parts)
            reads = 1
        elif decision.strategy == "resident":
            if parts is None:
                graph, keys = preparation_graph(reducer, dataset, name)
                parts = self.get(dict(graph), keys, progress=f"preparing {name}",
                                 num_workers=1 if reducer.device == "gpu" else None)
            sums = [weight_sum(p) for p in parts]
            nbytes = sum(sizeof(p) for p in parts)  # Dask's measure, as a cluster's scheduler has it
            sum_w = float(ExactPartials.merge(sums).to_floats()[0]) if sums else 0.0
            reads = 1
        else:
            parts = []
            nbytes = 0
            # a pass over the weights, unless there are none or their sum is known already
            reads = int(dataset.schema.has_weight and dataset._sum_weights is None)
            sum_w = dataset.sum_weights(num_workers=stream_workers)  # as many reads at once
        stats = PreparedStats(local_events=dataset.n_events, global_events=dataset.n_events,
                              batches=dataset.n_partitions, sum_weights=sum_w,
                              resident_bytes=int(nbytes), storage=decision.strategy,
                              disk_bytes=disk_bytes)
        prepared = PreparedDataset(dataset, name, stats, decision, list(parts), stream_workers, reads)
        prepared.store = store  # the disk tier's files live as long as the prepared dataset
        return prepared

    def learn(self, reducer: PartitionReducer, dataset: Dataset, name: str, budget: int | None,
              bytes_per_event: int, spill: bool = False) -> Learned | None:
        """:func:`~laddu_dask.runtime.preparation.prepare_learning` on this process's threads
        (``spill``: past ``budget``, onto the local disk tier)."""
        return prepare_learning(reducer, dataset, self.num_workers, budget, bytes_per_event,
                                name if spill else None)

    def run(self, jobs: list[ReductionJob]) -> list[PointPartials]:
        """One graph for all ``jobs``, on the threaded scheduler."""
        graph, roots, workers = evaluation_graph(jobs, self.num_workers, self.split_every)
        keys = [r for r in roots if r is not None]
        merged = self.get(graph, keys, num_workers=workers) if keys else []
        return with_empty(jobs, roots, merged)
