"""Partition preparation: the event-only part of a model mapped over a dataset.

A partition is prepared once: its columns are loaded and the model's event-only
nodes are evaluated into a :class:`~laddu_dask.runtime.partition.PreparedPartition`
(the cached columns and the weights).  :func:`preparation_graph` is the Dask graph
of it, one task per partition on top of :meth:`Dataset.partition_graph
<laddu_dask.data.dataset.Dataset.partition_graph>`, under keys that name the dataset
(``("prepared-ksks-data-<token>", i)``), so that a cluster's memory-by-key view says
what it holds.  :class:`PreparedDataset` is what an evaluation is given: the prepared
partitions (objects locally, futures on a cluster) or, when streaming, the dataset
they are re-read from.

Examples
--------
>>> import numpy as np
>>> import dask
>>> import laddu_dask as ld
>>> from laddu_dask.runtime.preparation import preparation_graph
>>> from laddu_dask.runtime.reducer import PartitionReducer
>>> reducer = PartitionReducer(ld.CompiledModel.from_expr(ld.parameter("a") * ld.scalar("x")), "f64")
>>> ds = ld.Dataset.from_arrays(scalars={"x": np.arange(5.0)}, chunk_size=2)
>>> graph, keys = preparation_graph(reducer, ds, "toy/data")
>>> keys[0][0].startswith("prepared-toy-data-"), [p.n for p in dask.get(graph, keys)]
(True, [2, 2, 1])
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from dask.highlevelgraph import HighLevelGraph
from dask.sizeof import sizeof

from laddu_dask.compile.compiled import CompiledModel, real_dtype
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.dataset import Dataset
from laddu_dask.errors import LadduDaskError
from laddu_dask.runtime.disk_tier import DiskPartition, DiskStore
from laddu_dask.runtime.memory import MemoryDecision
from laddu_dask.runtime.partition import PreparedPartition
from laddu_dask.runtime.reducer import PartitionReducer
from laddu_dask.sums import ExactPartials


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


def prepare_loaded(reducer: PartitionReducer, batch: EventBatch) -> PreparedPartition:
    """Task of :func:`preparation_graph`: prepare a loaded batch for ``reducer``'s model."""
    return prepare_batch(reducer.compiled, batch, reducer.precision, reducer.device, reducer.gpu)


@dataclass
class Learned:
    """What a preparation that learned a dataset's lengths (:func:`prepare_learning`) kept:
    its prepared partitions in memory (``parts``: futures on a cluster), or, with ``store``,
    on this machine's disk tier (``parts``: each block's :class:`DiskPartition` and the exact
    sum of its weights, as :func:`write_prepared` gives them)."""

    parts: list
    store: DiskStore | None = None

    @property
    def storage(self) -> str:
        """``"disk"`` or ``"resident"``."""
        return "disk" if self.store is not None else "resident"


def prepare_learning(reducer: PartitionReducer, dataset: Dataset, threads: int,
                     budget: int | None, bytes_per_event: int, spill: str | None = None) -> Learned | None:
    """Prepare every block of a dataset whose lengths Dask does not know, learning them.

    Each block of :attr:`Dataset.blocks` is computed once, read whole and prepared, at most
    ``threads`` at a time; its rows are then known, the partitions get their offsets, and
    the dataset records the lengths (:meth:`~laddu_dask.data.blocks.BlockOrigin.learn_lengths`):
    no pass only to count.  The prepared events stay in memory up to ``budget`` (at
    ``bytes_per_event``; None: no limit).  Past it, with ``spill`` (the dataset's name), the
    blocks go on to a new :class:`DiskStore` (those held so far first) and every block is
    still read once; without it the preparation stops.

    None, with nothing kept, when it stopped at the budget or at the disk tier's own
    (:func:`~laddu_dask.runtime.disk_tier.disk_budget_bytes`): the caller then counts the
    rows and decides the storage again; or when a block is rejected: the caller's ordinary
    preparation then reports it with the event's index in the whole dataset, which only
    the lengths of the blocks before give.
    """
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    from laddu_dask.runtime.disk_tier import disk_budget_bytes

    blocks, columns = dataset.blocks, list(reducer.compiled.columns)
    dtype = np.dtype(real_dtype(reducer.precision))
    store: DiskStore | None = None

    def one(i: int) -> Any:
        part = prepare_batch(reducer.compiled, blocks.load_block(i, columns, dtype), reducer.precision)
        target = store  # (set by the loop below once the budget is passed)
        return part if target is None else write_prepared(target, i, part)

    n = len(blocks.inputs)
    parts: list[Any] = [None] * n
    events, written, started, running, stopped = 0, 0, 0, {}, False
    with ThreadPoolExecutor(max(1, threads), thread_name_prefix="laddu-dask-prepare") as pool:
        while started < n or running:
            while started < n and len(running) < max(1, threads):
                running[pool.submit(one, started)] = started
                started += 1
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                i = running.pop(future)
                try:
                    parts[i] = future.result()
                except LadduDaskError:
                    started, stopped = n, True  # start nothing more; report it the ordinary way
                    continue
                if store is not None and isinstance(parts[i], PreparedPartition):
                    parts[i] = write_prepared(store, i, parts[i])  # started before the spill
                if store is None:
                    events += parts[i].n
                else:
                    written += parts[i][0].size
            if store is None and budget is not None and events * bytes_per_event > budget:
                if spill is None:
                    started, stopped = n, True
                else:  # on to the disk tier, with what is held so far
                    store = DiskStore.create(spill)
                    for k, part in enumerate(parts):
                        if isinstance(part, PreparedPartition):
                            parts[k] = write_prepared(store, k, part)
                            written += parts[k][0].size
            if store is not None and not stopped and written > disk_budget_bytes():
                started, stopped = n, True
    if stopped:
        if store is not None:
            store.close()
        return None
    if store is None:
        lengths = [p.n for p in parts]
        return Learned([placed_at(p, offset) for p, offset in zip(parts, learned_offsets(blocks, lengths),
                                                                  strict=True)])
    lengths = [handle.n for handle, _ in parts]
    return Learned([(handle.placed_at(offset), total) for (handle, total), offset
                    in zip(parts, learned_offsets(blocks, lengths), strict=True)], store)


def learned_offsets(blocks: Any, lengths: list[int]) -> list[int]:
    """Record the learned ``lengths`` on the dataset's blocks; the offsets of the blocks."""
    blocks.learn_lengths(lengths)
    return [int(o) for o in np.cumsum([0, *lengths[:-1]])] if lengths else []


def placed_at(part: PreparedPartition, offset: int) -> PreparedPartition:
    """Task: a partition prepared before its offset was known, at ``offset`` (no copy)."""
    return PreparedPartition(part.cache, part.weights, part.n, offset, part.source)


def part_events(part: PreparedPartition) -> int:
    """Task: the events of a prepared partition."""
    return part.n


def learn_on_cluster(client: Any, reducer: PartitionReducer, dataset: Dataset, name: str,
                     gathered: Callable[[Any, list, str], list]) -> Learned | None:
    """:func:`prepare_learning` on a cluster: every block read once and prepared on the
    workers (as worker data, which Dask's memory manager spills), the rows gathered, the
    lengths recorded and each partition given its offset where it is; the futures of the
    prepared partitions (:class:`Learned`), or None when a block is rejected (see
    :func:`prepare_learning`).
    ``gathered(client, futures, what)`` waits for results within the preparation timeout."""
    from dask.base import tokenize

    blocks, label = dataset.blocks, key_label(name)
    loads, keys = blocks.whole_block_graph(list(reducer.compiled.columns),
                                           np.dtype(real_dtype(reducer.precision)), f"load-whole-{label}")
    token = tokenize(keys[0][0] if keys else 0, reducer.compiled.kernels.source, reducer.precision)
    prepared = {(f"learning-{label}-{token}", i): (prepare_loaded, reducer, key)
                for i, key in enumerate(keys)}
    rows = {(f"rows-{label}-{token}", i): (part_events, key) for i, key in enumerate(prepared)}
    futures = client.get({**dict(loads), **prepared, **rows}, [*prepared, *rows], sync=False) if keys else []
    try:
        lengths = gathered(client, futures[len(keys):], f"the rows of dataset {name!r} on the cluster")
    except LadduDaskError:
        client.cancel(futures)
        return None
    offsets = learned_offsets(blocks, [int(n) for n in lengths])
    return Learned([client.submit(placed_at, f, offset, key=f"prepared-{label}-{token}-{i}")
                    for i, (f, offset) in enumerate(zip(futures[:len(keys)], offsets, strict=True))])


def key_label(name: str) -> str:
    """A dataset name as words that :func:`dask.utils.key_split` keeps (``"ksks-accepted-mc"``).

    Examples
    --------
    >>> key_label("ksks/accepted_mc"), key_label("bin 3/data")
    ('ksks-accepted-mc', 'bin-data')
    """
    return "-".join(re.findall(r"[A-Za-z]+", name)) or "dataset"


def preparation_graph(reducer: PartitionReducer, dataset: Dataset, name: str,
                      ) -> tuple[HighLevelGraph, list[tuple[str, int]]]:
    """The graph whose key ``i`` is partition ``i`` of ``dataset`` prepared for ``reducer``.

    Its layer ``prepared-<name>-<token>`` sits on the dataset's own
    :meth:`~laddu_dask.data.dataset.Dataset.partition_graph` (only the model's columns,
    in the model's precision); the token depends on the loads, the model and the
    device, so the same preparation has the same keys.
    """
    from dask.base import tokenize

    loads, load_keys = dataset.partition_graph(list(reducer.compiled.columns),
                                               real_dtype(reducer.precision),
                                               name=f"load-{key_label(name)}")
    token = tokenize(load_keys[0][0] if load_keys else dataset.n_partitions,
                     reducer.compiled.kernels.source, reducer.precision, reducer.device, reducer.gpu)
    layer = f"prepared-{key_label(name)}-{token}"
    tasks = {(layer, i): (prepare_loaded, reducer, key) for i, key in enumerate(load_keys)}
    layers = {**loads.layers, layer: tasks}
    dependencies = {**loads.dependencies, layer: set(loads.layers)}
    return HighLevelGraph(layers, dependencies), list(tasks)


def write_prepared(store: DiskStore, index: int, part: PreparedPartition
                   ) -> tuple[DiskPartition, ExactPartials]:
    """Task of :func:`disk_graph`: write a prepared partition to the disk tier; returns its
    handle and the exact sum of its weights (the partition itself is then released)."""
    return store.write(part, index), weight_sum(part)


def disk_graph(reducer: PartitionReducer, dataset: Dataset, name: str, store: DiskStore,
               ) -> tuple[HighLevelGraph, list[tuple[str, int]]]:
    """:func:`preparation_graph` with one more task a partition: writing it to ``store``
    (:func:`write_prepared`), so that only the partitions being written are in memory."""
    graph, keys = preparation_graph(reducer, dataset, name)
    layer = keys[0][0].replace("prepared-", "disk-", 1) if keys else f"disk-{key_label(name)}"
    tasks = {(layer, i): (write_prepared, store, i, key) for i, key in enumerate(keys)}
    layers = {**graph.layers, layer: tasks}
    dependencies = {**graph.dependencies, layer: {keys[0][0]} if keys else set()}
    return HighLevelGraph(layers, dependencies), list(tasks)


def weight_sum(part: PreparedPartition | EventBatch) -> ExactPartials:
    """The exact sum of a prepared partition's (or a loaded batch's) weights."""
    return ExactPartials.from_terms(np.asarray(part.weights, dtype=np.float64))


def partition_summary(part: PreparedPartition) -> tuple[int, int, np.ndarray]:
    """``(events, bytes, exact weight sum as an expansion)`` of a prepared partition; its
    bytes are Dask's :func:`~dask.sizeof.sizeof` (what the scheduler counts as managed memory)."""
    return part.n, sizeof(part), weight_sum(part).to_expansion()


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
        Bytes held by the prepared partitions, as Dask's ``sizeof`` measures them (0 when
        streaming or on the disk).
    storage : {"resident", "disk", "streaming"}
        Where the prepared partitions live.
    disk_bytes : int
        Bytes of the disk tier's files (0 unless on the disk).
    """

    local_events: int
    global_events: int
    batches: int
    sum_weights: float
    resident_bytes: int
    storage: str
    disk_bytes: int = 0


class PreparedDataset:
    """A dataset prepared for one model under one execution.

    Attributes
    ----------
    dataset : Dataset
        The source events.
    name : str
        Label used in memory decisions, errors and graph keys.
    stats : PreparedStats
        Events, batches, weights, bytes and storage.
    decision : MemoryDecision
        Why this storage was chosen.
    partitions : list of PreparedPartition, of DiskPartition, or of distributed futures
        The resident partitions (empty when streaming): in this process, or as Dask
        data on a cluster's workers; on the disk, the handles of their files.
    store : DiskStore or None
        The disk tier's folder of the partitions (removed with the prepared dataset).
    stream_workers : int
        Partitions streamed at once (per worker on a cluster) within the budget.
    traversals : int
        Passes over the dataset's source made for it: the preparation's (reading every
        partition, or, when streaming, their weights; none when the weight sum was known),
        then one per evaluation round that streams it (a round for K points reads once).
    preparation_passes : int
        The preparation's share of ``traversals``.
    groups : dict
        The resident partitions' thread groups by thread count
        (:func:`~laddu_dask.runtime.jobs.resident_groups`).
    """

    def __init__(self, dataset: Dataset, name: str, stats: PreparedStats, decision: MemoryDecision,
                 partitions: list, stream_workers: int, traversals: int = 1) -> None:
        self.dataset = dataset
        self.name = name
        self.stats = stats
        self.decision = decision
        self.partitions = partitions
        self.stream_workers = stream_workers
        self.traversals = traversals
        self.preparation_passes = traversals  # those of the preparation alone
        self.groups: dict[int, tuple] = {}
        self.store: DiskStore | None = None

    @property
    def storage(self) -> str:
        """``"resident"``, ``"disk"`` or ``"streaming"``."""
        return self.stats.storage

    @property
    def label(self) -> str:
        """The name and the sources, for error messages."""
        return f"{self.name} ({', '.join(self.dataset.sources)})"

    def __repr__(self) -> str:
        s = self.stats
        return (
            f"PreparedDataset({self.name!r}: {s.global_events} events in {s.batches} batches, "
            f"{s.storage}, {s.resident_bytes} resident bytes)"
        )
