"""``PreparedModel``: a compiled model bound to an execution, and its reductions.

Preparing a dataset maps the event-only part of the model over every partition
(:mod:`laddu_dask.runtime.preparation`).  Under ``resident`` storage the cached
columns are computed once and kept (in this process, or as Dask data on the workers
of a cluster); under ``disk`` they are computed once and written to the local disk
(:mod:`~laddu_dask.runtime.disk_tier`), mapped back one partition at a time by every
evaluation; under ``streaming`` each evaluation re-reads and re-prepares one
partition at a time.  Both keep memory bounded.  The choice, with its numbers, is
recorded on the execution.

An evaluation is then one round of the execution's runner for all its reductions
(:func:`run_jobs`): each partition's parameter-dependent kernel returns exact
partial sums of the value and of every gradient component, merged exactly.  The
round may carry K parameter points (a :func:`reduction_job` of K points): each partition is then
read once and reduced at every point.

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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from laddu_dask.cluster_waits import wait_for_workers
from laddu_dask.compile.compiled import CompiledModel, real_dtype
from laddu_dask.compile.layout import ParameterValues
from laddu_dask.compile.plan import ReductionPlan
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.dataset import Dataset
from laddu_dask.runtime.accumulate import Uncertified
from laddu_dask.runtime.disk_tier import disk_budget_bytes
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.jobs import ReductionJob
from laddu_dask.runtime.memory import MemoryPlan, decide_storage
from laddu_dask.runtime.partition import Params
from laddu_dask.runtime.preparation import PreparedDataset, prepare_batch
from laddu_dask.runtime.reducer import PartitionReducer
from laddu_dask.sums import work_bytes

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


def budget_chunk(chunk: int, group: int, per_event: int, fixed: int, budget: int,
                 bytes_of: Callable[[int], int] | None = None) -> int:
    """The automatic chunk size under a host budget, for a partition that holds
    ``per_event * events + fixed`` bytes (exactly ``bytes_of(events)`` where given) and row
    groups of ``group`` rows.

    A partition fits a quarter of the budget, so that four stream at once.  Since a
    partition decodes whole row groups, one the budget limits is cut at row-group
    boundaries (a multiple of ``group`` rows), and is a whole row group rather than
    less while one fits the budget: a smaller one would hold almost as much and decode
    the same rows several times.

    Examples
    --------
    >>> budget_chunk(100_000, 0, per_event=100, fixed=0, budget=4_000_000)
    40000
    >>> budget_chunk(100_000, 4096, per_event=100, fixed=0, budget=4_000_000)
    8192
    """
    quarter = (budget // 4 - fixed) // per_event
    if quarter >= chunk:
        return chunk
    if group and quarter >= group:
        return quarter // group * group
    if group:
        whole = min(group, chunk)
        if (bytes_of(whole) if bytes_of is not None else per_event * whole + fixed) <= budget:
            return whole
    return max(1024, min(chunk, (budget - fixed) // per_event))


@dataclass(frozen=True)
class ReductionEvaluation:
    """A reduced value and its gradient with respect to the free parameters."""

    value: float
    gradient: np.ndarray


def reduction_job(model: PreparedModel, points: Sequence[ParameterValues], prepared: PreparedDataset,
                  plan: ReductionPlan, with_gradient: bool = False) -> ReductionJob:
    """The one request type of an evaluation: ``model`` reduced over ``prepared`` at
    ``points`` (a sequence of points), with ``plan``, as the runners run it
    (:class:`~laddu_dask.runtime.jobs.ReductionJob`).

    Raises
    ------
    TypeError
        ``plan`` is not a :class:`~laddu_dask.compile.plan.ReductionPlan`.
    """
    if not isinstance(plan, ReductionPlan):
        raise TypeError(f"plan must be a ReductionPlan, got {type(plan).__name__}")
    return ReductionJob(model.reducer, prepared, tuple(model._params(point) for point in points), plan,
                        with_gradient)


def reduce_many(execution: Execution, jobs: list[ReductionJob]) -> list[tuple[float, Any]]:
    """Run several reductions, each at one point, in ONE round of the execution's runner
    (one graph locally, one call per worker on a cluster).

    Returns ``(value, gradient or None)`` per job (see :func:`run_jobs`).
    """
    return [at_points[0] for at_points in run_jobs(execution, jobs)]


def run_jobs(execution: Execution, jobs: list[ReductionJob]) -> list[list[tuple[float, Any]]]:
    """Run several reductions, each at its K points, in ONE round of the execution's runner:
    every partition is read once per round and reduced at each of its job's points.

    Returns, per job, ``(value, gradient or None)`` at each of its points: each one bitwise
    the result of that point alone.  Fast (fused) sums that cannot be certified correctly
    rounded are recomputed exactly (those points only), so a result never depends on the
    partitioning.  The jobs' points are trusted as they are (:func:`reduction_job` converts
    and checks them; the likelihood's lean path checks its points once, at the public
    boundary, :meth:`PreparedModel.trusted_points`)."""
    merged = execution.runner.run(jobs) if any(job.points for job in jobs) else [()] * len(jobs)
    _count_traversals(jobs)
    out: list[list[Any]] = [[None] * len(job.points) for job in jobs]
    redo: list[tuple[int, list[int]]] = []
    for j, (job, sums) in enumerate(zip(jobs, merged)):
        uncertified = []
        finished = job.reducer.finish_points(list(sums), list(job.points), job.with_gradient,
                                             job.prepared.label) if job.points else []
        for k, result in enumerate(finished):
            if isinstance(result, Uncertified):
                uncertified.append(k)
            else:
                out[j][k] = result
        if uncertified:
            redo.append((j, uncertified))
    if redo:
        exact = [replace(jobs[j], points=tuple(jobs[j].points[k] for k in ks), exact=True)
                 for j, ks in redo]
        _count_traversals(exact)
        for (j, ks), job, sums in zip(redo, exact, execution.runner.run(exact)):
            for k, params, m in zip(ks, job.points, sums):
                out[j][k] = job.reducer.finish(m, params, job.with_gradient, job.prepared.label)
    return out


def _count_traversals(jobs: list[ReductionJob]) -> None:
    """One more pass over the source of each streamed dataset a round reads (once per job,
    whatever its number of points)."""
    for job in jobs:
        if job.points and job.prepared.storage == "streaming":
            job.prepared.traversals += 1


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

    def compile_ahead(self, execution: Execution, with_gradient: bool, label: str) -> None:
        """Compile the kernel the first evaluation on ``execution`` calls while the
        datasets are prepared (:meth:`PartitionReducer.compile_ahead`); on a cluster the
        workers compile their own, so nothing starts here.  Compilations longer than a
        second are reported through :meth:`Execution.notify`."""
        if execution.client is None:
            self.reducer.compile_ahead(with_gradient, label, execution.notify)

    @property
    def parameter_names(self) -> list[str]:
        """The free parameters, in parameter-vector order."""
        return self.compiled.parameter_names

    def trusted_points(self, points: list[np.ndarray]) -> tuple[Params, ...]:
        """The kernels' points from float64 arrays in this model's parameter order that were
        checked already (finite, of the right length) and that nothing mutates afterwards:
        wrapped without a copy in f64, converted in f32."""
        if self.precision != "f64":
            return tuple(self._params(point) for point in points)
        return tuple(Params.trusted(point) for point in points)

    def _params(self, params: ParameterValues) -> Params:
        if isinstance(params, Params):
            return params
        if (isinstance(params, np.ndarray) and params.dtype == np.float64 and self.precision == "f64"
                and params.shape == (len(self.compiled.parameter_names),) and np.isfinite(params).all()):
            return Params.from_array(params)  # a resolved point (what a likelihood passes)
        return Params(self.compiled.parameter_vector(params, self.precision))

    # -- preparation --------------------------------------------------------------------
    def _bytes_per_event(self) -> tuple[int, int]:
        """Bytes per event: (resident, a streamed partition's working set).

        The working set counts the loaded columns, the prepared cache and the kernels'
        temporaries; with :meth:`_partition_bytes` it bounds what ``stream_partitions``
        holds at its peak (checked with tracemalloc in tests/runtime/test_streaming.py).
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
        """The automatic chunk size under a host budget (:func:`budget_chunk` with this
        model's streamed per-event and fixed bytes)."""
        per_event = self._bytes_per_event()[1]
        fixed = self._partition_bytes(MAX_AUTO_CHUNK, read_bytes) - per_event * MAX_AUTO_CHUNK
        return budget_chunk(chunk, group, per_event, fixed, budget,
                            lambda events: self._partition_bytes(events, read_bytes))

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
        given = dataset  # the user's: its memory_decision() is this preparation's
        dataset.schema.require(self.compiled.columns, ", ".join(dataset.sources))
        resident_bpe, stream_bpe = self._bytes_per_event()
        budget = execution.host_budget_bytes()
        if getattr(dataset, "memory", None) is not None:  # the read's own budget (laddu's memory=)
            own = MemoryPlan(host=dataset.memory).host_bytes()
            budget = own if budget is None or own is None else min(budget, own)
        learned = None
        policy = dataset.memory_policy
        if (not dataset.lengths_known and dataset.blocks is not None and self.device != "gpu"
                and policy != "streaming"):
            # rows unknown to Dask (a filtered frame): learned by reading each block once to
            # prepare it, in memory up to the budget, then on this machine's disk tier (on a
            # cluster, the disk tier is the workers' own spill of resident partitions); the
            # storage is decided after, on the learned size (None: counted)
            local = execution.client is None
            learned = execution.runner.learn(
                self.reducer, dataset, name,
                budget if policy == "fastest" else 0 if policy == "disk" and local else None,
                resident_bpe, spill=local and policy in ("fastest", "disk"))
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
            n_workers = len(wait_for_workers(execution.client, f"the preparation of dataset {name!r}"))
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
        wants_disk = policy == "disk" or (policy == "fastest" and budget is not None
                                          and resident_bytes > budget)
        decision = decide_storage(
            dataset=name,
            policy=policy,
            resident_bytes=resident_bytes,
            partition_bytes=partition_bytes,
            chunk_size=chunk,
            partitions=dataset.n_partitions,
            budget_bytes=budget,
            workers=stream_workers,
            resource="device" if self.device == "gpu" else "host",
            disk_bytes=disk_budget_bytes() if wants_disk and self.device != "gpu" else 0,
        )
        if decision.strategy == "disk" and execution.client is not None:
            decision = replace(decision, strategy="resident", peak_bytes=resident_bytes, reason=(
                f"{decision.reason}; on a cluster the disk tier is Dask's own: the prepared "
                f"partitions are worker data, which each worker spills to its local disk past "
                f"distributed.worker.memory.spill of its memory limit"))
        # kept only as the partitions they are: one per block (a chunk size that splits the
        # blocks makes other partitions, prepared the ordinary way)
        if (learned is not None and decision.strategy == learned.storage
                and len(learned.parts) == dataset.n_partitions):
            decision = replace(decision, reason=(
                f"{decision.reason}; the rows of its {dataset.n_partitions} blocks, unknown to "
                "Dask, were learned while each block was read once and prepared"
                + (" onto the disk" if learned.storage == "disk" else "")))
        elif learned is not None:
            if learned.store is not None:
                learned.store.close()
            learned = None  # (on a cluster, dropping the futures releases the partitions)
        execution.record(decision)
        given.note_memory_decision(decision.as_dict())
        return execution.runner.prepare(self.reducer, dataset, name, decision, stream_workers,
                                        learned=learned)

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
        [(value, _)] = reduce_many(execution, [reduction_job(self, [params], prepared, plan)])
        return value

    def reduce_with_gradient(
        self,
        execution: Execution,
        params: ParameterValues,
        prepared: PreparedDataset,
        plan: ReductionPlan,
    ) -> ReductionEvaluation:
        """The reduction and its exact gradient with respect to the free parameters."""
        [(value, grad)] = reduce_many(execution, [reduction_job(self, [params], prepared, plan, True)])
        return ReductionEvaluation(value, grad)
