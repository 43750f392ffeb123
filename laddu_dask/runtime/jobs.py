"""The low-level jobs of an evaluation, and what every place that runs them provides.

An evaluation is a list of :class:`ReductionJob` (one per dataset to reduce: a model's
reducer, the prepared dataset, the parameter points, the plan, whether the gradient
is wanted and whether the sums must be exact).  A *runner* takes them all at once and
returns one :class:`PointPartials` per job (the
:class:`~laddu_dask.runtime.accumulate.CertifiedPartials` of each of its points); three
exist, one per place an evaluation runs, chosen once by the
:class:`~laddu_dask.runtime.execution.Execution`:

* :class:`~laddu_dask.runtime.local.PoolRunner`: a persistent thread pool in this process;
* :class:`~laddu_dask.runtime.threaded.ThreadedRunner`: Dask's threaded scheduler;
* :class:`~laddu_dask.runtime.cluster.ClusterRunner`: a ``distributed`` cluster.

The task functions here (:func:`reduce_partitions`, :func:`stream_partitions`) are the
work of one group of partitions, wherever it runs.  A job carries K parameter points
(one for a plain evaluation, one per walker of an MCMC step): each task reads each of
its partitions once and runs the kernel at every point, so K points cost one round
and one pass over the data, and each point's sums are those of a one-point job.

Examples
--------
>>> [list(g) for g in task_groups(5, 2)]
[[0], [1], [2, 3], [4]]
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from laddu_dask.compile.plan import ReductionPlan
from laddu_dask.data.dataset import Dataset
from laddu_dask.runtime.accumulate import CertifiedPartials
from laddu_dask.runtime.disk_tier import DiskPartition
from laddu_dask.runtime.memory import MemoryDecision
from laddu_dask.runtime.partition import Params, PreparedPartition
from laddu_dask.runtime.preparation import Learned, PreparedDataset, prepare_partition
from laddu_dask.runtime.reducer import PartitionReducer

#: An evaluation (or a worker's share of one) of at most this many resident events runs
#: in the thread that asked for it: thread hand-overs would cost more than the work.
INLINE_EVENTS = 16_384


class PointPartials(tuple):
    """The partial sums of one job at each of its points (a tuple of
    :class:`~laddu_dask.runtime.accumulate.CertifiedPartials`), merged point by point."""

    @staticmethod
    def merge(parts: list[PointPartials]) -> PointPartials:
        """Exact merge, point by point (one part is its own merge)."""
        if len(parts) == 1:
            return parts[0]
        return PointPartials(CertifiedPartials.merge(list(sums)) for sums in zip(*parts))


@dataclass(frozen=True)
class ReductionJob:
    """One reduction of an evaluation: a model over a prepared dataset at K points."""

    reducer: PartitionReducer
    prepared: PreparedDataset
    points: tuple[Params, ...]
    plan: ReductionPlan
    with_gradient: bool
    exact: bool = False

    def empty(self) -> PointPartials:
        """The partial sums of a job without partitions."""
        return PointPartials(self.reducer.empty(self.with_gradient) for _ in self.points)


@dataclass(frozen=True)
class WorkerJob:
    """One job's share on one cluster worker, as it travels (once, while the placement
    holds): resident ``keys``, or streamed partition ``indices``; the reducer and the
    dataset by the token they were sent under.  Its ``n_points`` points travel with every
    evaluation (:mod:`~laddu_dask.runtime.wire`)."""

    reducer: str
    n_points: int
    plan: ReductionPlan
    with_gradient: bool
    exact: bool
    keys: list[Hashable] = field(default_factory=list)
    dataset: str | None = None
    indices: list[int] = field(default_factory=list)
    stream_threads: int = 1

    @property
    def streaming(self) -> bool:
        """Whether the partitions are re-read from the dataset instead of held."""
        return self.dataset is not None


def at_points(reducer: PartitionReducer, part: PreparedPartition, points: tuple[Params, ...],
              plan: ReductionPlan, with_gradient: bool, exact: bool) -> PointPartials:
    """One partition's partial sums at every point (its data read once)."""
    return PointPartials(reducer.partials(part, params, plan, with_gradient, exact) for params in points)


def reduce_partitions(reducer: PartitionReducer, parts: list[PreparedPartition],
                      points: tuple[Params, ...], plan: ReductionPlan, with_gradient: bool,
                      exact: bool) -> PointPartials:
    """Task: partial sums over a group of resident partitions at every point, merged exactly."""
    return PointPartials.merge([at_points(reducer, part, points, plan, with_gradient, exact)
                                for part in parts])


def stream_partitions(reducer: PartitionReducer, dataset: Dataset, indices: list[int],
                      points: tuple[Params, ...], plan: ReductionPlan, with_gradient: bool,
                      exact: bool) -> PointPartials:
    """Task: read, prepare and reduce a group of partitions one at a time (each at every
    point), keeping nothing."""
    out = []
    for index in indices:
        part = prepare_partition(reducer.compiled, dataset, index, reducer.precision,
                                 reducer.device, reducer.gpu)
        out.append(at_points(reducer, part, points, plan, with_gradient, exact))
        del part
    return PointPartials.merge(out)


def disk_partitions(reducer: PartitionReducer, dataset: Dataset, handles: list[DiskPartition],
                    points: tuple[Params, ...], plan: ReductionPlan, with_gradient: bool,
                    exact: bool) -> PointPartials:
    """Task: map a group of disk-tier partitions back one at a time and reduce each at every
    point, keeping nothing; a partition whose file is lost is prepared again from
    ``dataset`` (and its file written again when its folder still exists)."""
    out = []
    for handle in handles:
        part = handle.load()
        if part is None:
            part = prepare_partition(reducer.compiled, dataset, handle.index, reducer.precision)
            handle.restore(part)
        out.append(at_points(reducer, part, points, plan, with_gradient, exact))
        del part
    return PointPartials.merge(out)


def resident_groups(job: ReductionJob, threads: int) -> list[list[PreparedPartition]]:
    """The resident partitions of ``job`` in the groups one task each reduces
    (:func:`thread_groups`), the same wherever the tasks run; kept on the prepared dataset
    for its partitions as they are (an evaluation's fixed cost)."""
    parts = job.prepared.partitions
    cache = job.prepared.groups
    hit = cache.get(threads)
    if hit is None or hit[0] is not parts or hit[1] != len(parts):
        hit = cache[threads] = (parts, len(parts), thread_groups(parts, threads))
    return hit[2]


def task_groups(n: int, workers: int) -> list[range]:
    """Contiguous groups of partition indices, a few per worker thread.

    The number of tasks of an evaluation then depends on the workers, not on the
    partitions, so its scheduling cost stays flat with hundreds of partitions.

    Examples
    --------
    >>> [list(g) for g in task_groups(5, 1)]
    [[0, 1], [2, 3, 4]]
    """
    groups = min(n, max(1, 2 * workers))
    edges = [round(k * n / groups) for k in range(groups + 1)]
    return [range(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]


#: Events below which a thread's share is not cut out of a partition.
MIN_SLICE_EVENTS = 8192


def slices(part: PreparedPartition, edges: list[int]) -> list[PreparedPartition]:
    """``part`` cut at the event ``edges`` (``[0, ..., part.n]``) into contiguous slices:
    views of its arrays, with their events' offsets and source, so that an error still
    names the event."""
    return [PreparedPartition([c[a:b] for c in part.cache], part.weights[a:b], b - a, part.offset + a,
                              part.source) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def thread_groups(parts: list[PreparedPartition], threads: int) -> list[list[PreparedPartition]]:
    """Groups of ``parts``, each reduced by one task, for ``threads`` threads.

    Many partitions make a few contiguous groups per thread (:func:`task_groups`), so that
    a thread slowed by other work leaves more to the others.  Fewer than two per thread
    (a bin of a binned fit, a small sample in one or two partitions) would leave threads
    idle or unevenly loaded: the events are then cut into one equal share per thread
    (slices of the host partitions, at least ``MIN_SLICE_EVENTS`` each).  The sums do not
    change: every merge is exact.

    Examples
    --------
    >>> import numpy as np
    >>> parts = [PreparedPartition([np.arange(n, dtype=float)], np.ones(n), n, o, "x.parquet")
    ...          for n, o in ((16384, 0), (6282, 16384))]
    >>> [[(p.offset, p.n) for p in group] for group in thread_groups(parts, 2)]
    [[(0, 11333)], [(11333, 5051), (16384, 6282)]]
    """
    total = sum(p.n for p in parts)
    shares = min(threads, total // MIN_SLICE_EVENTS)
    if len(parts) >= 2 * threads or shares < 2 or not all(isinstance(p.weights, np.ndarray) for p in parts):
        return [[parts[i] for i in group] for group in task_groups(len(parts), threads)]
    cuts = [round(k * total / shares) for k in range(1, shares)]
    groups: list[list[PreparedPartition]] = [[]]
    start = 0
    for part in parts:
        inside = [c - start for c in cuts if start < c < start + part.n]
        pieces = slices(part, [0, *inside, part.n])
        for k, piece in enumerate(pieces):
            if k:
                groups.append([])
            groups[-1].append(piece)
        start += part.n
        if start in cuts:
            groups.append([])
    return [g for g in groups if g]


class Runner:
    """What every place that runs evaluations provides (see the module docstring)."""

    @property
    def workers(self) -> int:
        """How many partition tasks run at once (threads here, or the cluster's threads)."""
        raise NotImplementedError

    def get(self, graph: Mapping[Hashable, Any], keys: Any, num_workers: int | None = None,
            progress: str | None = None) -> Any:
        """Run a task graph (a preparation, a weight sum) and return the values of ``keys``."""
        raise NotImplementedError

    def prepare(self, reducer: PartitionReducer, dataset: Dataset, name: str,
                decision: MemoryDecision, stream_workers: int,
                learned: Learned | None = None) -> PreparedDataset:
        """Prepare ``dataset`` under the storage of ``decision`` (kept resident, on the disk
        tier, or streamed); ``learned``: its partitions, prepared already under that storage
        while its lengths were learned (:meth:`learn`)."""
        raise NotImplementedError

    def learn(self, reducer: PartitionReducer, dataset: Dataset, name: str, budget: int | None,
              bytes_per_event: int, spill: bool = False) -> Learned | None:
        """Prepare a dataset whose lengths Dask does not know, learning them on the way (see
        :func:`~laddu_dask.runtime.preparation.prepare_learning`; ``spill``: past ``budget``,
        on to this machine's disk tier): its prepared partitions, or None (nothing kept: the
        caller counts the rows and prepares as usual)."""
        return None

    def run(self, jobs: list[ReductionJob]) -> list[PointPartials]:
        """The merged partial sums of every job at each of its points (all in one round)."""
        raise NotImplementedError
