"""The low-level jobs of an evaluation, and what every place that runs them provides.

An evaluation is a list of :class:`ReductionJob` (one per dataset to reduce: a model's
reducer, the prepared dataset, the parameter point, the plan, whether the gradient
is wanted and whether the sums must be exact).  A *runner* takes them all at once and
returns one :class:`~laddu_dask.runtime.accumulate.CertifiedPartials` per job; three
exist, one per place an evaluation runs, chosen once by the
:class:`~laddu_dask.runtime.execution.Execution`:

* :class:`~laddu_dask.runtime.local.PoolRunner`: a persistent thread pool in this process;
* :class:`~laddu_dask.runtime.threaded.ThreadedRunner`: Dask's threaded scheduler;
* :class:`~laddu_dask.runtime.cluster.ClusterRunner`: a ``distributed`` cluster.

The task functions here (:func:`reduce_partitions`, :func:`stream_partitions`) are the
work of one group of partitions, wherever it runs.

Examples
--------
>>> [list(g) for g in task_groups(5, 2)]
[[0], [1], [2, 3], [4]]
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from laddu_dask.compile.plan import ReductionPlan
from laddu_dask.data.dataset import Dataset
from laddu_dask.runtime.accumulate import CertifiedPartials
from laddu_dask.runtime.memory import MemoryDecision
from laddu_dask.runtime.preparation import PreparedDataset, prepare_partition
from laddu_dask.runtime.reducer import Params, PartitionReducer, PreparedPartition


@dataclass(frozen=True)
class ReductionJob:
    """One reduction of an evaluation: a model over a prepared dataset at a point."""

    reducer: PartitionReducer
    prepared: PreparedDataset
    params: Params
    plan: ReductionPlan
    with_gradient: bool
    exact: bool = False

    def empty(self) -> CertifiedPartials:
        """The partial sums of a job without partitions."""
        return self.reducer.empty(self.with_gradient)


@dataclass(frozen=True)
class WorkerJob:
    """One job's share on one cluster worker, as it travels: resident ``keys``, or streamed
    partition ``indices``; the reducer and the dataset by the token they were sent under."""

    reducer: str
    params: Params
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


def reduce_partitions(reducer: PartitionReducer, parts: list[PreparedPartition], params: Params,
                      plan: ReductionPlan, with_gradient: bool, exact: bool) -> CertifiedPartials:
    """Task: partial sums over a group of resident partitions, merged exactly."""
    return CertifiedPartials.merge(
        [reducer.partials(part, params, plan, with_gradient, exact) for part in parts]
    )


def stream_partitions(reducer: PartitionReducer, dataset: Dataset, indices: list[int],
                      params: Params, plan: ReductionPlan, with_gradient: bool,
                      exact: bool) -> CertifiedPartials:
    """Task: read, prepare and reduce a group of partitions one at a time, keeping nothing."""
    out = []
    for index in indices:
        part = prepare_partition(reducer.compiled, dataset, index, reducer.precision,
                                 reducer.device, reducer.gpu)
        out.append(reducer.partials(part, params, plan, with_gradient, exact))
        del part
    return CertifiedPartials.merge(out)


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
                decision: MemoryDecision, stream_workers: int) -> PreparedDataset:
        """Prepare ``dataset`` under the storage of ``decision`` (kept resident, or streamed)."""
        raise NotImplementedError

    def run(self, jobs: list[ReductionJob]) -> list[CertifiedPartials]:
        """The merged partial sums of every job (all of them in one round)."""
        raise NotImplementedError
