"""``PreparedModel`` and ``PreparedDataset``: a compiled model bound to an execution.

Preparing a dataset maps the event-only part of the model over every partition.
Under ``resident`` storage the cached columns are computed once and kept (in this
process, or in worker memory on a cluster); under ``streaming`` each evaluation
re-reads and re-prepares one partition at a time, so memory stays bounded.  The
choice, with its numbers, is recorded on the execution.

Each evaluation then submits one small graph: a task per partition runs the
parameter-dependent kernel and returns exact partial sums of the value and of every
gradient component, merged by a tree reduction.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> a = ld.parameter("a", initial=2.0)
>>> ds = ld.Dataset.from_arrays(scalars={"x": np.array([1.0, 2.0, 3.0])})
>>> ex = ld.Execution()
>>> pm = ld.PreparedModel.prepare(ld.CompiledModel.from_expr(a * x), ex)
>>> pd = pm.prepare_dataset(ex, ds)
>>> pm.reduce(ex, [2.0], pd, ld.ReductionPlan.weighted_real())
12.0
>>> pm.reduce_with_gradient(ex, [2.0], pd, ld.ReductionPlan.weighted_real()).gradient
array([6.])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from laddu_dask.compile.compiled import CompiledModel, real_dtype
from laddu_dask.compile.layout import ParameterValues
from laddu_dask.compile.plan import ReductionPlan
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.dataset import Dataset
from laddu_dask.errors import ClusterError
from laddu_dask.runtime.accumulate import ExactPartials, work_bytes
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.memory import MemoryDecision, decide_storage
from laddu_dask.runtime.reducer import (
    CertifiedPartials,
    Params,
    PartitionReducer,
    PreparedPartition,
    Uncertified,
)
from laddu_dask.runtime.reduction import merge_list, tree_graph, unique_name

#: Bounds of the chunk size the runtime picks when the user chose none: partitions
#: small enough that every worker gets two, large enough that a task's fixed cost
#: (tens of microseconds) stays below a few percent of its work.
MIN_AUTO_CHUNK = 16_384
MAX_AUTO_CHUNK = 262_144


def auto_chunk_size(n_events: int, workers: int) -> int:
    """Events per partition for ``n_events`` on ``workers`` (two partitions a worker).

    Examples
    --------
    >>> auto_chunk_size(100_000, 2), auto_chunk_size(1_000_000, 2), auto_chunk_size(1000, 2)
    (25000, 250000, 16384)
    """
    target = -(-max(n_events, 1) // (2 * max(workers, 1)))
    return int(min(MAX_AUTO_CHUNK, max(MIN_AUTO_CHUNK, target)))


@dataclass(frozen=True)
class ReductionEvaluation:
    """A reduced value and its gradient with respect to the free parameters."""

    value: float
    gradient: np.ndarray


@dataclass(frozen=True)
class PreparedStats:
    """What a prepared dataset holds.

    Attributes
    ----------
    local_events, global_events : int
        Events prepared in this process / in the whole dataset.
    batches : int
        Partitions.
    sum_weights : float
        Exact sum of the event weights.
    resident_bytes : int
        Bytes held by the cached columns and weights (0 when streaming).
    storage : {"resident", "streaming"}
        Where the prepared partitions live.
    """

    local_events: int
    global_events: int
    batches: int
    sum_weights: float
    resident_bytes: int
    storage: str


# ---------------------------------------------------------------------------
# partition tasks
# ---------------------------------------------------------------------------
def prepare_batch(compiled: CompiledModel, batch: EventBatch, precision: str,
                  device: str = "cpu", gpu: int = 0) -> PreparedPartition:
    """Run the event-only part of ``compiled`` on one batch (on the GPU for ``device="gpu"``)."""
    dt = real_dtype(precision)
    if device == "gpu":
        import cupy

        with cupy.cuda.Device(gpu):
            staged = batch.map_arrays(lambda a: cupy.asarray(a, dtype=dt))
            cols = {name: staged.columns[name] for name in compiled.columns}
            cache = compiled.event_cache(cols, precision) if cols else []
            weights = cupy.ascontiguousarray(staged.weights, dtype=dt)
        return PreparedPartition(cache, weights, batch.n_events, batch.offset, batch.source)
    cols = {name: batch.columns[name] for name in compiled.columns}
    cache = compiled.event_cache(cols, precision) if cols else []
    xp = batch.xp
    weights = xp.ascontiguousarray(batch.weights, dtype=dt)
    return PreparedPartition(cache, weights, batch.n_events, batch.offset, batch.source)


def prepare_partition(compiled: CompiledModel, dataset: Dataset, index: int, precision: str,
                      device: str = "cpu", gpu: int = 0) -> PreparedPartition:
    """Load partition ``index`` (only the needed columns) and prepare it."""
    batch = dataset.load_partition(index, columns=compiled.columns, dtype=real_dtype(precision))
    return prepare_batch(compiled, batch, precision, device, gpu)


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
    """Contiguous groups of partition indices, a few per worker.

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


def _weight_sum(part: PreparedPartition) -> ExactPartials:
    return ExactPartials.from_terms(np.asarray(part.weights, dtype=np.float64))


@dataclass(frozen=True)
class ReductionRequest:
    """One reduction of an evaluation: a model over a prepared dataset at a point."""

    model: PreparedModel
    params: Any
    prepared: PreparedDataset
    plan: ReductionPlan
    with_gradient: bool = False


def reduce_many(execution: Execution, requests: list[ReductionRequest]) -> list[tuple[float, Any]]:
    """Run several reductions as ONE task graph (all partitions share the workers).

    Returns ``(value, gradient or None)`` per request.  Fast (fused) sums that cannot be
    certified correctly rounded are recomputed exactly, so the result never depends on
    the partitioning.
    """
    for req in requests:
        if not isinstance(req.plan, ReductionPlan):
            raise TypeError(f"plan must be a ReductionPlan, got {type(req.plan).__name__}")
    points = [req.model._params(req.params) for req in requests]
    merged = _run(execution, requests, points, [False] * len(requests))
    out: list[Any] = [None] * len(requests)
    redo = []
    labels = [f"{req.prepared.name} ({', '.join(req.prepared.dataset.sources)})" for req in requests]
    for k, (req, p, m) in enumerate(zip(requests, points, merged)):
        try:
            out[k] = req.model.reducer.finish(m, p, req.with_gradient, labels[k])
        except Uncertified:
            redo.append(k)
    if redo:
        again = _run(execution, [requests[k] for k in redo], [points[k] for k in redo],
                     [True] * len(redo))
        for k, m in zip(redo, again):
            out[k] = requests[k].model.reducer.finish(m, points[k], requests[k].with_gradient,
                                                      labels[k])
    return out


def _run(execution: Execution, requests: list[ReductionRequest], points: list[Params],
         exact: list[bool]) -> list[CertifiedPartials]:
    if any(req.prepared.stores is not None for req in requests):
        return _run_on_cluster(requests, points, exact)
    graph: dict = {}
    roots: list[Any] = []
    workers = None
    for req, p, ex in zip(requests, points, exact):
        pm, pd = req.model, req.prepared
        token = unique_name("reduce")
        if pd.storage == "resident":
            groups = task_groups(len(pd.partitions), execution.workers)
            leaves = {
                (token, g): (reduce_partitions, pm.reducer, [pd.partitions[i] for i in group], p,
                             req.plan, req.with_gradient, ex)
                for g, group in enumerate(groups)
            }
        else:
            groups = task_groups(pd.stats.batches, pd.stream_workers)
            leaves = {
                (token, g): (stream_partitions, pm.reducer, pd.dataset, list(group), p, req.plan,
                             req.with_gradient, ex)
                for g, group in enumerate(groups)
            }
            workers = pd.stream_workers if workers is None else min(workers, pd.stream_workers)
        if not leaves:
            roots.append(None)
            continue
        sub, root = tree_graph(leaves, execution.split_every, merge_list, f"{token}-merge")
        graph.update(sub)
        roots.append(root)
    keys = [r for r in roots if r is not None]
    if execution.scheduler == "pool" and workers is None and keys:
        merged = _run_on_pool(execution, graph, keys)
    else:
        merged = execution.get(graph, keys, num_workers=workers) if keys else []
    results = iter(merged)
    return [next(results) if root is not None else req.model.reducer.empty(req.with_gradient)
            for root, req in zip(roots, requests)]


def _run_on_pool(execution: Execution, graph: dict, keys: list) -> list:
    """Run an evaluation graph on the execution's persistent thread pool.

    The leaf tasks (groups of partitions) run in parallel; the merge tasks, cheap
    additions of a few numbers, run in the calling thread in the graph's order.  Same
    tasks and results as the Dask scheduler, at a fraction of its per-call cost.
    """
    is_merge = {k for k, task in graph.items() if task[0] is merge_list}
    leaves = [k for k in graph if k not in is_merge]
    pool = execution.pool()
    futures = {k: pool.submit(graph[k][0], *graph[k][1:]) for k in leaves}
    values = {k: f.result() for k, f in futures.items()}
    for k in graph:  # tree_graph adds merges after their inputs
        if k in is_merge:
            values[k] = merge_list([values[c] for c in graph[k][1]])
    return [values[k] for k in keys]


#: How often an evaluation is repeated after workers were lost.
MAX_RETRIES = 3


def _run_on_cluster(requests: list[ReductionRequest], points: list[Params],
                    exact: list[bool]) -> list[CertifiedPartials]:
    """One call per worker serves every request; rebuild lost stores and retry.

    Stores lost with their workers (during this evaluation or an earlier one that
    failed) are rebuilt first, waiting for workers to join when none is left.
    """
    from laddu_dask.runtime.cluster import is_lost_worker_error, reduce_on_cluster

    hubs = requests[0].prepared.stores.hubs
    for attempt in range(MAX_RETRIES + 1):
        for req in requests:
            if req.prepared.stores.missing:
                req.prepared.stores.rebuild_lost()
        jobs = [(req.prepared.stores, p, req.plan, req.with_gradient, ex)
                for req, p, ex in zip(requests, points, exact)]
        try:
            partials = reduce_on_cluster(hubs, jobs)
        except Exception as err:
            if not is_lost_worker_error(err):
                raise
            if attempt == MAX_RETRIES:
                raise ClusterError(f"an evaluation lost workers {MAX_RETRIES + 1} times in a row "
                                   f"(last: {err})") from err
            for req in requests:
                req.prepared.stores.rebuild_lost()
            continue
        return [CertifiedPartials.merge(parts) if parts else req.model.reducer.empty(req.with_gradient)
                for req, parts in zip(requests, partials)]
    raise AssertionError("unreachable")  # pragma: no cover


class PreparedDataset:
    """A dataset prepared for one model under one execution.

    Attributes
    ----------
    dataset : Dataset
        The source events.
    name : str
        Label used in memory decisions and errors.
    stats : PreparedStats
        Events, batches, weights, bytes and storage.
    decision : MemoryDecision
        Why this storage was chosen.
    partitions : list of PreparedPartition or of futures
        The resident partitions (empty when streaming).
    """

    def __init__(
        self,
        dataset: Dataset,
        name: str,
        stats: PreparedStats,
        decision: MemoryDecision,
        partitions: list,
        stream_workers: int,
        stores: Any = None,
    ) -> None:
        self.dataset = dataset
        self.name = name
        self.stats = stats
        self.decision = decision
        self.partitions = partitions
        self.stream_workers = stream_workers
        #: on a cluster: the worker-resident stores (:class:`~laddu_dask.runtime.cluster.ClusterStores`)
        self.stores = stores

    @property
    def storage(self) -> str:
        """``"resident"`` or ``"streaming"``."""
        return self.stats.storage

    def __repr__(self) -> str:
        s = self.stats
        return (
            f"PreparedDataset({self.name!r}: {s.global_events} events in {s.batches} batches, "
            f"{s.storage}, {s.resident_bytes} resident bytes)"
        )


class PreparedModel:
    """A compiled model bound to an execution (device and precision).

    Use :meth:`prepare`, then :meth:`prepare_dataset` for each dataset.
    """

    def __init__(self, compiled: CompiledModel, execution: Execution) -> None:
        self.compiled = compiled
        self.precision = execution.precision
        self.device = execution.device
        self.gpu = execution.gpu
        self.reducer = PartitionReducer(compiled, execution.precision, execution.kernel,
                                        execution.device, execution.gpu)

    @property
    def kernel(self) -> str:
        """``"fused"`` or ``"numpy"``: which kernels evaluate the model."""
        return self.reducer.kernel

    @classmethod
    def prepare(cls, compiled: CompiledModel, execution: Execution) -> PreparedModel:
        """Bind ``compiled`` to ``execution``."""
        if not isinstance(compiled, CompiledModel):
            compiled = CompiledModel.from_expr(compiled)
        return cls(compiled, execution)

    @property
    def parameter_names(self) -> list[str]:
        """The free parameters, in parameter-vector order."""
        return self.compiled.parameter_names

    def _params(self, params: ParameterValues) -> Params:
        if isinstance(params, Params):
            return params
        return Params(self.compiled.parameter_vector(params, self.precision))

    # -- preparation --------------------------------------------------------------------
    def _bytes_per_event(self) -> tuple[int, int]:
        """Bytes per event: (resident, a streamed partition's working set).

        The working set counts the loaded columns, the prepared cache and the kernels'
        temporaries; with :meth:`_partition_bytes` it bounds what ``stream_partitions``
        holds at its peak (checked with tracemalloc in tests/test_streaming.py).
        """
        size = np.dtype(real_dtype(self.precision)).itemsize
        resident = self.compiled.cache_bytes_per_event(self.precision) + size
        k = len(self.compiled.parameter_names)
        if self.reducer.kernel == "fused":
            # the event kernel's temporaries (16 float64: 2 to 11 measured on the K_S K_S
            # and test models; the fast sums keep only block buffers), and the terms of
            # the exact redo of a sum that cannot be certified (one float64 per summed row)
            temps = 16 * 8 + 8 * self.reducer.rows(True)
        else:
            temps = 2 * size * (len(self.compiled.split.mixed_nodes) + k + 4)
        loaded = size * (len(self.compiled.columns) + 1)
        return resident, resident + temps + loaded

    def _partition_bytes(self, chunk: int, read_bytes: int) -> int:
        """Peak bytes of one streamed partition of ``chunk`` events.

        Its per-event working set, what reading it holds besides its arrays
        (``read_bytes``, see :attr:`Partition.read_bytes`), and the exact summation's
        work for each summed row.
        """
        per_event = self._bytes_per_event()[1]
        return per_event * max(chunk, 1) + read_bytes + self.reducer.rows(True) * work_bytes(chunk)

    def _budget_chunk(self, chunk: int, group: int, read_bytes: int, budget: int) -> int:
        """The automatic chunk size under a host budget, for row groups of ``group`` rows.

        A partition fits a quarter of the budget, so that four stream at once.  Since a
        partition decodes whole row groups, one the budget limits is cut at row-group
        boundaries (a multiple of ``group`` rows), and is a whole row group rather than
        less while one fits the budget: a smaller one would hold almost as much and decode
        the same rows several times.
        """
        per_event = self._bytes_per_event()[1]
        fixed = self._partition_bytes(MAX_AUTO_CHUNK, read_bytes) - per_event * MAX_AUTO_CHUNK
        quarter = (budget // 4 - fixed) // per_event
        if quarter >= chunk:
            return chunk
        if group and quarter >= group:
            return quarter // group * group
        if group and self._partition_bytes(min(group, chunk), read_bytes) <= budget:
            return min(group, chunk)
        return max(1024, min(chunk, (budget - fixed) // per_event))

    def prepare_dataset(
        self, execution: Execution, dataset: Dataset, name: str = "dataset"
    ) -> PreparedDataset:
        """Prepare ``dataset`` (map the event-only part over its partitions).

        Raises
        ------
        SchemaError
            When the dataset lacks a column the model reads (named, with its file).
        BudgetError
            When the host budget cannot hold even one partition.
        """
        if not isinstance(dataset, Dataset):
            raise TypeError(f"prepare_dataset needs a Dataset, got {type(dataset).__name__}")
        dataset.schema.require(self.compiled.columns, ", ".join(dataset.sources))
        resident_bpe, stream_bpe = self._bytes_per_event()
        budget = execution.host_budget_bytes()
        # the largest row group, whatever the chunk size (every one is read by a partition)
        group = max((p.decoded_rows for p in dataset.partitions), default=0)
        read_bytes = max((p.read_bytes for p in dataset.partitions), default=0)
        if not dataset.chunk_size_given:
            chunk = auto_chunk_size(dataset.n_events, execution.workers)
            if budget is not None:
                chunk = self._budget_chunk(chunk, group, read_bytes, budget)
            dataset = dataset.with_chunk_size(chunk)
        chunk = max((p.n_events for p in dataset.partitions), default=0)
        partition_bytes = self._partition_bytes(chunk, read_bytes)
        workers = execution.workers
        resident_bytes = resident_bpe * dataset.n_events
        if execution.client is not None:
            # on a cluster the budget is per worker: each holds about 1/n of the partitions
            n_workers = len(execution.hubs().wait_for_workers(f"the preparation of dataset {name!r}"))
            resident_bytes = resident_bpe * chunk * -(-dataset.n_partitions // n_workers)
            workers = max(1, workers // n_workers)
        # streaming runs as many partitions at once as the budget holds (at least one)
        stream_workers = workers
        if budget is not None:
            stream_workers = max(1, min(workers, budget // max(partition_bytes, 1)))
        if self.device == "gpu":
            # the host only stages partitions on their way to the device, one at a time
            execution.record(decide_storage(
                dataset=name, policy="streaming", resident_bytes=resident_bytes,
                partition_bytes=partition_bytes, chunk_size=chunk,
                partitions=dataset.n_partitions, budget_bytes=budget, workers=1, resource="host",
            ))
            stream_workers = 1
            budget = execution.memory.device_bytes()
            partition_bytes = stream_bpe * max(chunk, 1)
        decision = decide_storage(
            dataset=name,
            policy=dataset.memory_policy,
            resident_bytes=resident_bytes,
            partition_bytes=partition_bytes,
            chunk_size=chunk,
            partitions=dataset.n_partitions,
            budget_bytes=budget,
            workers=stream_workers,
            resource="device" if self.device == "gpu" else "host",
        )
        execution.record(decision)
        if execution.client is not None:
            return self._prepare_on_cluster(execution, dataset, name, decision)
        token = unique_name(f"prepare-{name}")
        leaves = {
            (token, i): (prepare_partition, self.compiled, dataset, i, self.precision, self.device,
                         self.gpu)
            for i in range(dataset.n_partitions)
        }
        if decision.strategy == "resident":
            parts = execution.get(leaves, list(leaves), progress=f"preparing {name}",
                                  num_workers=1 if self.device == "gpu" else None)
            sums = [_weight_sum(p) for p in parts]
            nbytes = sum(p.nbytes for p in parts)
            sum_w = float(ExactPartials.merge(sums).to_floats()[0]) if sums else 0.0
            storage = "resident"
        else:
            parts = []
            nbytes = 0
            sum_w = dataset.sum_weights(num_workers=stream_workers)  # as many reads at once
            storage = "streaming"
        stats = PreparedStats(
            local_events=dataset.n_events,
            global_events=dataset.n_events,
            batches=dataset.n_partitions,
            sum_weights=sum_w,
            resident_bytes=int(nbytes),
            storage=storage,
        )
        return PreparedDataset(dataset, name, stats, decision, list(parts), stream_workers)

    def _prepare_on_cluster(self, execution: Execution, dataset: Dataset, name: str,
                            decision: MemoryDecision) -> PreparedDataset:
        """One store (actor) per worker holds its partitions (see runtime.cluster)."""
        from laddu_dask.runtime.cluster import ClusterStores

        stores = ClusterStores(execution.hubs(), self.reducer, dataset, decision.strategy,
                               progress=execution.progress, name=name)
        # (streaming stores reduce their partitions one at a time: the budget holds one)
        info = stores.info()
        stats = PreparedStats(
            local_events=0,
            global_events=dataset.n_events,
            batches=dataset.n_partitions,
            sum_weights=info["sum_weights"],
            resident_bytes=int(info["nbytes"]),
            storage=decision.strategy,
        )
        return PreparedDataset(dataset, name, stats, decision, [], 1, stores=stores)

    # -- per-batch evaluation --------------------------------------------------------------
    def evaluate_batch(self, params: ParameterValues, batch: EventBatch) -> Any:
        """The model's value for every event of ``batch``."""
        part = prepare_batch(self.compiled, batch, self.precision, self.device, self.gpu)
        return self.reducer.values(part, self._params(params))

    def evaluate_batch_with_gradient(
        self, params: ParameterValues, batch: EventBatch
    ) -> tuple[Any, Any]:
        """Values ``(n,)`` and derivatives ``(n, n_free)`` (complex for complex models)."""
        part = prepare_batch(self.compiled, batch, self.precision, self.device, self.gpu)
        with self.reducer.device_context():
            return self.compiled.values_and_jacobian(part.cache, self._params(params).values,
                                                     part.n)

    # -- reductions -----------------------------------------------------------------------
    def reduce(
        self,
        execution: Execution,
        params: ParameterValues,
        prepared: PreparedDataset,
        plan: ReductionPlan,
    ) -> float:
        """``sum_events w t(Re value)`` over a prepared dataset, summed exactly."""
        [(value, _)] = reduce_many(execution, [ReductionRequest(self, params, prepared, plan)])
        return value

    def reduce_with_gradient(
        self,
        execution: Execution,
        params: ParameterValues,
        prepared: PreparedDataset,
        plan: ReductionPlan,
    ) -> ReductionEvaluation:
        """The reduction and its exact gradient with respect to the free parameters."""
        [(value, grad)] = reduce_many(
            execution, [ReductionRequest(self, params, prepared, plan, True)]
        )
        return ReductionEvaluation(value, grad)
