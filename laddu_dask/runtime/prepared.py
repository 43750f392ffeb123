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
from laddu_dask.expr.arrayfuncs import array_module
from laddu_dask.runtime.accumulate import ExactPartials
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.memory import MemoryDecision, decide_storage
from laddu_dask.runtime.reduction import merge_list, tree_graph, unique_name


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


class PreparedPartition:
    """The cached event-only columns and weights of one partition."""

    __slots__ = ("cache", "weights", "n", "offset", "source")

    def __init__(self, cache: list, weights: Any, n: int, offset: int, source: str) -> None:
        self.cache = cache
        self.weights = weights
        self.n = n
        self.offset = offset
        self.source = source

    @property
    def nbytes(self) -> int:
        """Bytes held."""
        return int(sum(c.nbytes for c in self.cache) + self.weights.nbytes)


class _Params:
    """Parameter scalars travelling in a task graph (opaque to Dask's graph parsing)."""

    __slots__ = ("values",)

    def __init__(self, values: tuple) -> None:
        self.values = values


# ---------------------------------------------------------------------------
# partition tasks
# ---------------------------------------------------------------------------
def prepare_batch(compiled: CompiledModel, batch: EventBatch, precision: str) -> PreparedPartition:
    """Run the event-only part of ``compiled`` on one batch."""
    dt = real_dtype(precision)
    cols = {name: batch.columns[name] for name in compiled.columns}
    cache = compiled.event_cache(cols, precision) if cols else []
    xp = batch.xp
    weights = xp.ascontiguousarray(batch.weights, dtype=dt)
    return PreparedPartition(cache, weights, batch.n_events, batch.offset, batch.source)


def prepare_partition(
    compiled: CompiledModel, dataset: Dataset, index: int, precision: str
) -> PreparedPartition:
    """Load partition ``index`` (only the needed columns) and prepare it."""
    batch = dataset.load_partition(index, columns=compiled.columns, dtype=real_dtype(precision))
    return prepare_batch(compiled, batch, precision)


def reduce_partition(
    compiled: CompiledModel,
    part: PreparedPartition,
    params: _Params,
    plan: ReductionPlan,
    with_gradient: bool,
) -> ExactPartials:
    """Exact partial sums of ``w t(Re v)`` (and of its gradient) over one partition."""
    p = params.values
    if not with_gradient:
        value = compiled.values(part.cache, p, part.n)
        real = array_module(value).real(value)
        return ExactPartials.from_terms(
            plan.terms(real, part.weights, offset=part.offset, source=part.source)
        )

    def seed(value: Any) -> Any:
        real = array_module(value).real(value)
        plan.check(real, offset=part.offset, source=part.source)
        return plan.seed(real, part.weights)

    value, grads = compiled.values_and_vjp(part.cache, p, seed, part.n)
    xp = array_module(value)
    real = xp.real(value)
    with np.errstate(all="ignore"):
        terms = plan.terms(real, part.weights, offset=part.offset, source=part.source)
    rows = xp.stack([terms, *grads]) if grads else terms[None, :]
    return ExactPartials.from_terms(rows)


def stream_partition(
    compiled: CompiledModel,
    dataset: Dataset,
    index: int,
    precision: str,
    params: _Params,
    plan: ReductionPlan,
    with_gradient: bool,
) -> ExactPartials:
    """Read, prepare and reduce one partition, keeping nothing afterwards."""
    part = prepare_partition(compiled, dataset, index, precision)
    return reduce_partition(compiled, part, params, plan, with_gradient)


def _weight_sum(part: PreparedPartition) -> ExactPartials:
    return ExactPartials.from_terms(np.asarray(part.weights, dtype=np.float64))


# ---------------------------------------------------------------------------
# prepared objects
# ---------------------------------------------------------------------------
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
    ) -> None:
        self.dataset = dataset
        self.name = name
        self.stats = stats
        self.decision = decision
        self.partitions = partitions
        self.stream_workers = stream_workers

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

    def _params(self, params: ParameterValues) -> _Params:
        return _Params(self.compiled.parameter_vector(params, self.precision))

    # -- preparation --------------------------------------------------------------------
    def _bytes_per_event(self) -> tuple[int, int]:
        """(resident bytes per event, streaming working-set bytes per event)."""
        size = np.dtype(real_dtype(self.precision)).itemsize
        resident = self.compiled.cache_bytes_per_event(self.precision) + size
        k = len(self.compiled.parameter_names)
        temps = 2 * size * (len(self.compiled.split.mixed_nodes) + k + 4)
        loaded = size * (len(self.compiled.columns) + 1)
        return resident, resident + temps + loaded

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
        chunk = max((p.n_events for p in dataset.partitions), default=0)
        budget = execution.host_budget_bytes()
        workers = execution.workers
        # streaming runs as many partitions at once as the budget holds (at least one)
        stream_workers = workers
        if budget is not None:
            stream_workers = max(1, min(workers, budget // max(stream_bpe * max(chunk, 1), 1)))
        decision = decide_storage(
            dataset=name,
            policy=dataset.memory_policy,
            resident_bytes=resident_bpe * dataset.n_events,
            partition_bytes=stream_bpe * max(chunk, 1),
            chunk_size=chunk,
            partitions=dataset.n_partitions,
            budget_bytes=budget,
            workers=stream_workers,
            resource="host",
        )
        execution.record(decision)
        token = unique_name(f"prepare-{name}")
        leaves = {
            (token, i): (prepare_partition, self.compiled, dataset, i, self.precision)
            for i in range(dataset.n_partitions)
        }
        if decision.strategy == "resident":
            if execution.client is not None:
                parts = execution.client.get(leaves, list(leaves), sync=False)
                sums = execution.client.gather(
                    [execution.client.submit(_weight_sum, f) for f in parts]
                )
                nbytes = resident_bpe * dataset.n_events
            else:
                parts = execution.get(leaves, list(leaves))
                sums = [_weight_sum(p) for p in parts]
                nbytes = sum(p.nbytes for p in parts)
            sum_w = float(ExactPartials.merge(sums).to_floats()[0]) if sums else 0.0
            storage = "resident"
        else:
            parts = []
            nbytes = 0
            sum_w = dataset.sum_weights()
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

    # -- per-batch evaluation --------------------------------------------------------------
    def evaluate_batch(self, params: ParameterValues, batch: EventBatch) -> Any:
        """The model's value for every event of ``batch``."""
        part = prepare_batch(self.compiled, batch, self.precision)
        return self.compiled.values(part.cache, self._params(params).values, part.n)

    def evaluate_batch_with_gradient(
        self, params: ParameterValues, batch: EventBatch
    ) -> tuple[Any, Any]:
        """Values ``(n,)`` and derivatives ``(n, n_free)`` (complex for complex models)."""
        part = prepare_batch(self.compiled, batch, self.precision)
        return self.compiled.values_and_jacobian(part.cache, self._params(params).values, part.n)

    # -- reductions -----------------------------------------------------------------------
    def _partials(
        self,
        execution: Execution,
        params: ParameterValues,
        prepared: PreparedDataset,
        plan: ReductionPlan,
        with_gradient: bool,
    ) -> np.ndarray:
        if not isinstance(plan, ReductionPlan):
            raise TypeError(f"plan must be a ReductionPlan, got {type(plan).__name__}")
        p = self._params(params)
        token = unique_name("reduce")
        if prepared.storage == "resident":
            leaves = {
                (token, i): (reduce_partition, self.compiled, part, p, plan, with_gradient)
                for i, part in enumerate(prepared.partitions)
            }
            workers = None
        else:
            leaves = {
                (token, i): (
                    stream_partition, self.compiled, prepared.dataset, i, self.precision, p,
                    plan, with_gradient,
                )
                for i in range(prepared.stats.batches)
            }
            workers = prepared.stream_workers
        if not leaves:
            k = 1 + (len(self.parameter_names) if with_gradient else 0)
            return ExactPartials.zeros(k).to_floats()
        graph, root = tree_graph(leaves, execution.split_every, merge_list, f"{token}-merge")
        return execution.get(graph, root, num_workers=workers).to_floats()

    def reduce(
        self,
        execution: Execution,
        params: ParameterValues,
        prepared: PreparedDataset,
        plan: ReductionPlan,
    ) -> float:
        """``sum_events w t(Re value)`` over a prepared dataset, summed exactly."""
        return float(self._partials(execution, params, prepared, plan, False)[0])

    def reduce_with_gradient(
        self,
        execution: Execution,
        params: ParameterValues,
        prepared: PreparedDataset,
        plan: ReductionPlan,
    ) -> ReductionEvaluation:
        """The reduction and its exact gradient with respect to the free parameters."""
        sums = self._partials(execution, params, prepared, plan, True)
        return ReductionEvaluation(float(sums[0]), np.array(sums[1:], dtype=np.float64))
