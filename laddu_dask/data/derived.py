"""Datasets derived from another, partition by partition and lazily: selections, bins,
random subsamples and Poisson-bootstrap replicas.

A :class:`RowRule` says, for every event of a parent dataset, whether it is kept and by
what its weight is multiplied.  A :class:`DerivedOrigin` applies one rule to every
partition of a parent :class:`~laddu_dask.data.dataset.Dataset`: each
:class:`DerivedPartition` loads its parent partition when it is loaded (so a streamed
parent streams its selection too), keeps the rows the rule keeps and returns them as an
ordinary :class:`~laddu_dask.data.batch.EventBatch`.  Nothing is copied when a derived
dataset is made: only the columns a selection reads are loaded once, to count the events
each partition keeps.

Random rules (``subsample``, ``bootstrap``) draw one uniform number per event from a
counter-based generator keyed by the seed and the event's index in the parent dataset
(SplitMix64 of the index), so the same seed keeps the same events and gives the same
weights whatever the partitioning, the worker count or the order of loading.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.data.dataset import Dataset
>>> import laddu_dask as ld
>>> ds = Dataset.from_arrays(scalars={"x": np.arange(10.0)}, chunk_size=4)
>>> kept = ds.select(ld.scalar("x") >= 3.0)
>>> kept.n_events, [p.n_events for p in kept.partitions]
(7, [1, 4, 2])
>>> kept.column("x")[:3]
array([3., 4., 5.])
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from dask._task_spec import Task
from dask.base import tokenize

from laddu_dask.cluster_waits import compute
from laddu_dask.compile.selection import predicate_mask
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.checks import check_dtype, split_rows
from laddu_dask.data.partition import Partition
from laddu_dask.data.schema import Schema
from laddu_dask.data.shared_loads import expression_memo, parent_batch
from laddu_dask.errors import DataError, ModelError
from laddu_dask.expr.predicate import Predicate

__all__ = ["DerivedOrigin", "DerivedPartition", "RowRule", "event_uniforms", "map_batches", "poisson_one"]

_MASK64 = (1 << 64) - 1
#: Distinct streams for the two random rules, so one seed gives independent draws.
_STREAMS = {"subsample": 0x5355425341, "bootstrap": 0x424F4F54}


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer on uint64 arrays (wrapping arithmetic)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def event_uniforms(seed: int, stream: str, start: int, n: int) -> np.ndarray:
    """Uniform numbers in ``[0, 1)`` for the events ``start .. start + n - 1`` of a dataset.

    Each depends only on ``seed``, the rule (``stream``) and the event's index: the 53 high
    bits of SplitMix64 of ``index * golden + key``.

    Examples
    --------
    >>> a = event_uniforms(7, "subsample", 0, 6)
    >>> bool((event_uniforms(7, "subsample", 2, 3) == a[2:5]).all()), bool(((a >= 0) & (a < 1)).all())
    (True, True)
    """
    key = _mix(np.array([(seed ^ _STREAMS[stream]) & _MASK64], dtype=np.uint64))[0]
    index = np.arange(start, start + n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        bits = _mix(index * np.uint64(0x9E3779B97F4A7C15) + key)
    return (bits >> np.uint64(11)).astype(np.float64) * 2.0**-53


def _poisson_table() -> np.ndarray:
    terms = [math.exp(-1.0)]
    for k in range(1, 30):
        terms.append(terms[-1] / k)
    return np.array([math.fsum(terms[: k + 1]) for k in range(len(terms))])


_POISSON_CDF = _poisson_table()


def poisson_one(u: np.ndarray) -> np.ndarray:
    """Poisson(1) counts from uniforms ``u`` by inversion of the cumulative distribution.

    Examples
    --------
    >>> poisson_one(np.array([0.1, 0.5, 0.9, 0.95])).tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    return np.searchsorted(_POISSON_CDF, u, side="right").astype(np.float64)


def _seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed <= _MASK64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    return int(seed)


@dataclass(frozen=True)
class RowRule:
    """Which events of a parent a derived dataset keeps, and by what their weights are multiplied.

    Build one with :meth:`select`, :meth:`subsample` or :meth:`bootstrap`.
    """

    kind: str
    predicate: Predicate | None = None
    fraction: float = 1.0
    seed: int = 0
    label: str = ""

    @staticmethod
    def select(predicate: Predicate, label: str = "selected") -> RowRule:
        """Keep the events where ``predicate`` holds (event-only: it may read no parameter)."""
        if not isinstance(predicate, Predicate):
            raise ModelError(f"select needs a Predicate (e.g. ld.scalar('x') < 1.0), "
                             f"got {type(predicate).__name__}")
        return RowRule("select", predicate=predicate, label=label)

    @staticmethod
    def subsample(fraction: float, seed: int) -> RowRule:
        """Keep each event with probability ``fraction``, independently."""
        if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0.0 <= fraction <= 1.0:
            raise ValueError(f"fraction must be a number in [0, 1], got {fraction!r}")
        return RowRule("subsample", fraction=float(fraction), seed=_seed(seed),
                       label=f"subsample {fraction:g}, seed {seed}")

    @staticmethod
    def bootstrap(seed: int) -> RowRule:
        """Keep every event with its weight times an independent Poisson(1) count."""
        return RowRule("bootstrap", seed=_seed(seed), label=f"bootstrap, seed {seed}")

    @property
    def columns(self) -> list[str]:
        """The columns the rule reads."""
        return self.predicate.columns if self.predicate is not None else []

    @property
    def counts(self) -> bool:
        """Whether the number of kept events must be counted (it drops events)."""
        return self.kind != "bootstrap"

    def token(self) -> str:
        return tokenize(self.kind, repr(self.predicate), self.fraction, self.seed)

    def keep(self, batch: EventBatch | None, offset: int, n: int) -> np.ndarray | None:
        """The boolean mask of kept rows of ``n`` parent rows starting at index ``offset``
        (None: all); ``batch`` holds the columns the rule reads."""
        if self.kind == "select":
            mask = predicate_mask(self.predicate, batch, memo=expression_memo(batch))
            return np.asarray(mask)
        if self.kind == "subsample":
            return event_uniforms(self.seed, "subsample", offset, n) < self.fraction
        return None

    def factor(self, offset: int, n: int) -> np.ndarray | None:
        """The weight factors of ``n`` parent rows starting at index ``offset`` (None: 1)."""
        if self.kind == "bootstrap":
            return poisson_one(event_uniforms(self.seed, "bootstrap", offset, n))
        return None


@dataclass(frozen=True, eq=False)
class DerivedPartition(Partition):
    """Rows ``start:stop`` of what ``rule`` keeps of the parent partition ``parent``."""

    parent: Partition = field(repr=False)
    rule: RowRule = field(repr=False)
    start: int = 0
    stop: int = 0
    schema: Schema = field(repr=False, default=None)  # type: ignore[assignment]

    @property
    def decoded_rows(self) -> int:
        return self.parent.decoded_rows

    @property
    def read_bytes(self) -> int:
        return self.parent.read_bytes + self.parent.n_events * 8 * (len(self.rule.columns) + 1)

    def _columns(self, columns: Sequence[str] | None) -> tuple[list[str], list[str]]:
        """The columns asked for, and those the parent must load (with the rule's)."""
        wanted = self.schema.flat_columns() if columns is None else [c for c in columns if c != "weight"]
        self.schema.require(wanted, self.source, needed_by="load")
        return wanted, list(dict.fromkeys([*wanted, *self.rule.columns]))

    def load(self, columns: Sequence[str] | None = None, dtype: Any = np.float64) -> EventBatch:
        wanted, need = self._columns(columns)
        return self.derive(parent_batch(self.parent, need), wanted, check_dtype(dtype))

    def graph_task(self, key: Any, columns: list[str], dtype: np.dtype) -> Task:
        """A task on the parent partition's task: in a graph of a Dask-backed or persisted
        parent, it runs where the parent's block is (on a cluster, on its worker)."""
        wanted, need = self._columns(columns)
        parent_key = (f"{key[0]}-parent", *key[1:])
        if type(self.parent).graph_task is Partition.graph_task:  # a partition that loads itself
            parent = Task(parent_key, parent_batch, self.parent, need)  # shared by the selections
        else:
            parent = self.parent.graph_task(parent_key, need, np.dtype(np.float64))
        return Task(key, self.derive, parent, wanted, dtype)

    def derive(self, batch: EventBatch, wanted: list[str], dt: np.dtype) -> EventBatch:
        """The batch of this partition from its parent partition's ``batch`` (float64, with
        the rule's columns)."""
        keep = self.rule.keep(batch, self.parent.offset, self.parent.n_events)
        rows: Any = slice(self.start, self.stop)
        if keep is not None:
            rows = np.flatnonzero(keep)[rows]
        weights = batch.weights
        factor = self.rule.factor(self.parent.offset, self.parent.n_events)
        if factor is not None:
            weights = weights * factor
        out = {c: np.ascontiguousarray(batch.columns[c][rows], dtype=dt) for c in wanted}
        w = np.ascontiguousarray(weights[rows], dtype=dt)
        if w.shape[0] != self.n_events:
            raise DataError(f"{self.source}: the parent partition now keeps {w.shape[0]} events, "
                            f"not the {self.n_events} counted when the selection was made (the "
                            "source changed?)")
        return EventBatch(out, w, offset=self.offset, source=self.source)


def _loaded(func: Any, part: Partition, columns: list[str], batch: EventBatch | None = None) -> Any:
    return func(part, batch if batch is not None else part.load(columns, np.float64))


def map_batches(dataset: Any, columns: list[str], func: Any) -> list[Any]:
    """``func(partition, batch)`` for every partition of ``dataset`` (its ``columns`` loaded in
    float64), as Dask tasks: on the blocks' keys for a Dask-backed or persisted dataset (on a
    cluster, where they are), else each loading its partition."""
    import dask
    from dask.delayed import Delayed

    parts = dataset.partitions
    if dataset._origin.graph() is None:
        tasks = [dask.delayed(functools.partial(_loaded, func, p, columns))() for p in parts]
    else:
        graph, keys = dataset.partition_graph(columns, np.float64, name="laddu-map")
        tasks = [dask.delayed(functools.partial(_loaded, func, p, columns))(Delayed(k, graph, layer=k[0]))
                 for p, k in zip(parts, keys, strict=True)]
    return list(compute(*tasks, what="a pass over the partitions of a dataset"))


def _kept(rule: RowRule, part: Partition, batch: EventBatch) -> int:
    return int(np.count_nonzero(rule.keep(batch, part.offset, part.n_events)))


def kept_counts(rule: RowRule, parent: Any) -> list[int]:
    """Events ``rule`` keeps of each partition of the dataset ``parent`` (Dask tasks)."""
    if not rule.counts:
        return [p.n_events for p in parent.partitions]
    return [int(n) for n in map_batches(parent, rule.columns, functools.partial(_kept, rule))]


class DerivedOrigin:
    """The events ``rule`` keeps of ``parent``'s partitions (a dataset's origin; see the module).

    ``counts`` are the kept events per parent partition, when already known (``bin_by``
    counts every bin in one pass).
    """

    has_blocks = True

    def __init__(self, parent: Any, rule: RowRule, counts: Sequence[int] | None = None) -> None:
        self.parent_partitions: tuple[Partition, ...] = tuple(parent.partitions)
        self.rule = rule
        self.counts = list(counts) if counts is not None else kept_counts(rule, parent)
        schema = parent.schema
        if rule.kind == "bootstrap" and not schema.has_weight:
            schema = Schema(schema.p4s, schema.scalars, True, schema.non_numeric)
        self.schema = schema
        self.sources = tuple(parent.sources)
        self.n_events = sum(self.counts)
        self.chosen_by_user = bool(parent.chunk_size_given)
        self._graph = parent._origin.graph()
        self.token = f"derived-{tokenize(parent._origin.token, parent._layout(), rule.token())}"

    def make_partitions(self, chunk_size: int | None) -> tuple[Partition, ...]:
        out: list[Partition] = []
        offset = 0
        for part, kept in zip(self.parent_partitions, self.counts, strict=True):
            for a, b in split_rows(kept, chunk_size or max(kept, 1)):
                out.append(DerivedPartition(
                    n_events=b - a, offset=offset, source=f"{part.source} ({self.rule.label})",
                    parent=part, rule=self.rule, start=a, stop=b, schema=self.schema))
                offset += b - a
        if not out:  # nothing kept: one empty partition keeps the dataset well formed
            part = self.parent_partitions[0]
            out.append(DerivedPartition(n_events=0, offset=0, source=f"{part.source} ({self.rule.label})",
                                        parent=part, rule=self.rule, start=0, stop=0, schema=self.schema))
        return tuple(out)

    def graph(self) -> Any:
        """The graph the parent's partitions depend on (a Dask collection's, persisted keys)."""
        return self._graph
