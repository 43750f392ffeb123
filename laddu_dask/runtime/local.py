"""Evaluations on a persistent thread pool in this process (the default without a client).

An evaluation has the tasks of the threaded scheduler's graph
(:func:`~laddu_dask.runtime.threaded.evaluation_graph`: a few groups of partitions per
thread).  For resident datasets they go straight to a pool of threads kept for the
execution's lifetime, without building the graph; the calling thread runs the first
group (every group when the evaluation is small,
:data:`~laddu_dask.runtime.jobs.INLINE_EVENTS`) and the exact merges.  The results are
those of Dask's scheduler, at a fraction of its per-call cost.  Streamed datasets still
run on Dask's threaded scheduler, which bounds how many partitions are read at once.

Examples
--------
>>> import laddu_dask as ld
>>> type(ld.Execution().runner).__name__
'PoolRunner'
"""

from __future__ import annotations

from collections.abc import Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from laddu_dask.runtime.jobs import (
    INLINE_EVENTS,
    PointPartials,
    ReductionJob,
    reduce_partitions,
    resident_groups,
)
from laddu_dask.runtime.reduction import merge_list
from laddu_dask.runtime.threaded import ThreadedRunner, evaluation_graph, with_empty


def run_on_pool(pool: ThreadPoolExecutor, graph: dict, keys: list[Hashable], threads: int) -> list[Any]:
    """Run an evaluation graph's leaves on ``pool`` and its merges here; values of ``keys``.

    When there are no more leaves than ``threads``, this thread runs the first one itself
    while the pool runs the others: it would otherwise only wait, and an evaluation of a
    single partition then costs no thread hand-over at all.
    """
    is_merge = {k for k, task in graph.items() if task[0] is merge_list}
    leaves = [k for k in graph if k not in is_merge]
    here = leaves[:1] if len(leaves) <= threads else []
    futures = {k: pool.submit(graph[k][0], *graph[k][1:]) for k in leaves[len(here):]}
    values = {k: graph[k][0](*graph[k][1:]) for k in here}
    values.update((k, f.result()) for k, f in futures.items())
    for k in graph:  # tree_graph adds merges after their inputs
        if k in is_merge:
            values[k] = merge_list([values[c] for c in graph[k][1]])
    return [values[k] for k in keys]


class PoolRunner(ThreadedRunner):
    """Evaluations on a persistent thread pool (preparations on Dask's threaded scheduler)."""

    def __init__(self, num_workers: int, split_every: int, progress: bool = False) -> None:
        super().__init__(num_workers, split_every, progress)
        self._pool: ThreadPoolExecutor | None = None

    @property
    def pool(self) -> ThreadPoolExecutor:
        """The persistent thread pool (created on first use)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.num_workers, thread_name_prefix="laddu-dask")
        return self._pool

    def run(self, jobs: list[ReductionJob]) -> list[PointPartials]:
        """One graph for all ``jobs``: on the pool, or on Dask's scheduler when one streams."""
        if all(job.prepared.storage == "resident" for job in jobs):
            return self._run_resident(jobs)
        graph, roots, workers = evaluation_graph(jobs, self.num_workers, self.split_every)
        keys = [r for r in roots if r is not None]
        if workers is not None or not keys:
            merged = self.get(graph, keys, num_workers=workers) if keys else []
        else:
            merged = run_on_pool(self.pool, graph, keys, self.num_workers)
        return with_empty(jobs, roots, merged)

    def _run_resident(self, jobs: list[ReductionJob]) -> list[PointPartials]:
        """The tasks of :func:`~laddu_dask.runtime.threaded.evaluation_graph` for resident
        jobs, without building the graph: a few groups of partitions per thread (all in this
        thread when the evaluation is small, :data:`~laddu_dask.runtime.jobs.INLINE_EVENTS`,
        else the first when there are no more groups than threads), then one exact merge
        per job (its sums do not depend on the shape of the merge)."""
        threads = self.num_workers
        tasks = [(j, parts) for j, job in enumerate(jobs) for parts in resident_groups(job, threads)]
        points = max((len(job.points) for job in jobs), default=1)
        if sum(p.n for _, parts in tasks for p in parts) * points <= INLINE_EVENTS:
            # small: every task in this thread, no closure, no pool (the same tasks and merges)
            per_job: list[list[PointPartials]] = [[] for _ in jobs]
            for j, parts in tasks:
                job = jobs[j]
                per_job[j].append(reduce_partitions(job.reducer, parts, job.points, job.plan,
                                                    job.with_gradient, job.exact))
            return [PointPartials.merge(parts) if parts else job.empty() for job, parts in zip(jobs, per_job)]

        def reduce(j: int, parts: list) -> PointPartials:
            job = jobs[j]
            return reduce_partitions(job.reducer, parts, job.points, job.plan, job.with_gradient,
                                     job.exact)

        here = tasks[:1] if len(tasks) <= threads else []
        futures = [self.pool.submit(reduce, j, parts) for j, parts in tasks[len(here):]]
        done = [reduce(j, parts) for j, parts in here] + [f.result() for f in futures]
        per_job = [[] for _ in jobs]
        for (j, _), result in zip(tasks, done):
            per_job[j].append(result)
        return [PointPartials.merge(parts) if parts else job.empty() for job, parts in zip(jobs, per_job)]
