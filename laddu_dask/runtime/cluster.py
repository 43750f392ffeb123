"""Worker-resident prepared state on a ``distributed`` cluster.

A round trip through the scheduler costs tens of milliseconds, too much for the
few hundred evaluations of a fit.  Instead, each worker holds one
:class:`PartitionStore` (a Dask actor) with the prepared partitions assigned to it:
an evaluation calls every store directly (about a millisecond), each store reduces
its own partitions in place and returns exact partial sums, and only those few
numbers travel back.  Nothing of the data ever reaches the client.

When a worker is lost, its partitions are rebuilt from their sources (files or
the arrays the dataset was built from) in new stores on the surviving workers,
and the evaluation is repeated; the numbers do not change, since every merge is
exact.  A worker lost while it prepares its partitions is noticed the same way
(its pinned task would never finish) and its partitions go to the others.  When
all workers are gone, the rebuild waits for new ones (``worker-timeout``).  An
error raised inside a store (a bad file, a non-positive intensity) fails the
evaluation with that error on the client.  Every wait here has a timeout and a
typed error (see :mod:`laddu_dask.runtime.cluster_waits`).

Examples
--------
>>> from laddu_dask.runtime.cluster import assign_partitions
>>> assign_partitions(5, ["tcp://a", "tcp://b"])
{'tcp://a': [0, 2, 4], 'tcp://b': [1, 3]}
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from laddu_dask.compile.plan import ReductionPlan
from laddu_dask.data.dataset import Dataset
from laddu_dask.errors import ClusterError
from laddu_dask.runtime.accumulate import CertifiedPartials, ExactPartials, fsum_rows
from laddu_dask.runtime.cluster_waits import (
    POLL,
    Deadline,
    check_scheduler,
    running_workers,
    scheduler_workers,
    wait_for_futures,
    wait_for_workers,
)
from laddu_dask.runtime.jobs import ReductionJob, Runner
from laddu_dask.runtime.memory import MemoryDecision
from laddu_dask.runtime.preparation import PreparedDataset, PreparedStats, prepare_partition
from laddu_dask.runtime.reducer import Params, PartitionReducer

#: Errors that mean "the worker (or its connection) is gone", not "the work failed".
_LOST = ("CommClosedError", "KilledWorker", "FutureCancelledError", "StreamClosedError",
         "OSError", "ConnectionError", "TimeoutError", "CancelledError")


def assign_partitions(n_partitions: int, workers: Sequence[str]) -> dict[str, list[int]]:
    """Round-robin assignment of partition indices to worker addresses."""
    if not workers:
        raise RuntimeError("the cluster has no workers")
    out: dict[str, list[int]] = {w: [] for w in workers}
    for i in range(n_partitions):
        out[workers[i % len(workers)]].append(i)
    return {w: idx for w, idx in out.items() if idx}


class PartitionStore:
    """The prepared partitions of one dataset held by one worker (inside a :class:`WorkerHub`).

    Parameters
    ----------
    reducer : PartitionReducer
        The model's per-partition kernels (rebuilt on the worker from the expression).
    dataset : Dataset
        The source events (paths and row ranges, or array slices).
    indices : list of int
        The partitions this store owns.
    storage : {"resident", "streaming"}
        Keep the prepared partitions, or re-read them on every evaluation.
    threads : int
        Partitions reduced at once inside the store.
    """

    def __init__(self, reducer: PartitionReducer, dataset: Dataset, indices: list[int],
                 storage: str, threads: int = 1) -> None:
        self.reducer = reducer
        self.dataset = dataset
        self.indices = list(indices)
        self.storage = storage
        self.threads = max(1, int(threads))
        self.parts: list[Any] = []
        if storage == "resident":
            self.parts = self._map(
                lambda i: prepare_partition(reducer.compiled, dataset, i, reducer.precision,
                                            reducer.device, reducer.gpu)
            )

    def _map(self, fn: Any) -> list[Any]:
        if self.threads == 1 or len(self.indices) == 1:
            return [fn(i) for i in self.indices]
        with ThreadPoolExecutor(self.threads) as pool:
            return list(pool.map(fn, self.indices))

    def info(self) -> dict[str, Any]:
        """Events, bytes held, exact weight sum (as an expansion) and the worker's pid."""
        if self.storage == "resident":
            weights = [np.asarray(p.weights, dtype=np.float64) for p in self.parts]
            nbytes = int(sum(p.nbytes for p in self.parts))
        else:
            weights = [np.asarray(self.dataset.load_partition(i, columns=[]).weights,
                                  dtype=np.float64) for i in self.indices]
            nbytes = 0
        total = ExactPartials.from_terms(np.concatenate(weights) if weights else np.zeros(1))
        return {"events": int(sum(len(w) for w in weights)), "nbytes": nbytes,
                "weights": total.to_expansion(), "pid": os.getpid(), "indices": self.indices}

    def reduce(self, params: Params, plan: ReductionPlan, with_gradient: bool,
               exact: bool) -> CertifiedPartials:
        """Partial sums over this store's partitions, merged exactly."""
        reducer = self.reducer
        if self.storage == "resident":
            parts = [reducer.partials(p, params, plan, with_gradient, exact) for p in self.parts]
        else:
            def one(i: int) -> CertifiedPartials:
                part = prepare_partition(reducer.compiled, self.dataset, i, reducer.precision,
                                         reducer.device, reducer.gpu)
                return reducer.partials(part, params, plan, with_gradient, exact)

            parts = self._map(one)
        if not parts:
            return reducer.empty(with_gradient)
        return CertifiedPartials.merge(parts)


class WorkerHub:
    """Actor: everything one worker holds for one execution (a store per dataset).

    One call per worker serves every reduction of an evaluation.
    """

    def __init__(self) -> None:
        self.stores: dict[str, PartitionStore] = {}

    def add(self, key: str, reducer: PartitionReducer, dataset: Dataset, indices: list[int],
            storage: str, threads: int) -> dict[str, Any]:
        """Prepare (or register, when streaming) a store; returns its :meth:`PartitionStore.info`."""
        self.stores[key] = PartitionStore(reducer, dataset, indices, storage, threads)
        return self.stores[key].info()

    def drop(self, key: str) -> None:
        """Forget a store."""
        self.stores.pop(key, None)

    def reduce(self, jobs: list[tuple]) -> list[CertifiedPartials]:
        """``[(store key, params, plan, with_gradient, exact), ...]`` -> partial sums each."""
        return [self.stores[key].reduce(p, plan, wg, ex) for key, p, plan, wg, ex in jobs]


class WorkerLostError(ClusterError):
    """A worker holding stores went away; the evaluation rebuilds them and is repeated."""


def is_lost_worker_error(err: BaseException) -> bool:
    """Whether ``err`` means a worker or its connection went away."""
    if isinstance(err, WorkerLostError):
        return True
    if isinstance(err, ClusterError):  # a lost scheduler, a timeout: final
        return False
    names = {type(e).__name__ for e in _chain(err)}
    text = str(err).lower()
    return bool(names & set(_LOST)) or "worker" in text and ("lost" in text or "died" in text)


def _chain(err: BaseException) -> list[BaseException]:
    out = []
    while err is not None and err not in out:
        out.append(err)
        err = err.__cause__ or err.__context__
    return out


def _add_to_hub(hub_key: str, key: str, reducer: PartitionReducer, dataset: Dataset,
                indices: list[int], storage: str, threads: int) -> dict[str, Any]:
    """Task run on a hub's worker: prepare a store inside the worker's hub."""
    from distributed import get_worker

    worker = get_worker()
    if hub_key not in worker.state.actors:  # a worker restarted at the same address
        raise WorkerLostError(f"worker {worker.address} no longer holds its hub {hub_key}")
    return worker.state.actors[hub_key].add(key, reducer, dataset, indices, storage, threads)


def _show_progress(futures: list[Any]) -> None:
    """distributed's progress of ``futures``: a widget in a notebook, else a text bar.

    The text bar blocks until its tasks end, so it runs in a thread of its own: the
    caller's wait (with its timeout) decides when preparation is over.
    """
    import threading

    from distributed import progress
    from distributed.utils import is_kernel

    if is_kernel():
        try:
            progress(futures)
            return
        except ImportError:  # a notebook without ipywidgets
            pass
    threading.Thread(target=progress, args=(futures,), kwargs={"notebook": False},
                     name="laddu-dask-progress", daemon=True).start()


class Hubs:
    """The :class:`WorkerHub` actor of each worker, created on demand (one set per execution)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.hubs: dict[str, Any] = {}  # worker -> its hub actor
        self.keys: dict[str, str] = {}  # worker -> the hub actor's task key
        self.futures: dict[str, Any] = {}  # worker -> the hub actor's future

    def workers(self) -> dict[str, int]:
        """Running worker addresses and their threads."""
        return running_workers(self.client)

    def wait_for_workers(self, what: str) -> dict[str, int]:
        """Running workers, waiting up to ``worker-timeout`` while there is none."""
        return wait_for_workers(self.client, what)

    def start(self, addrs: Sequence[str], deadline: Deadline, what: str) -> list[str]:
        """Start a hub on each of ``addrs`` that has none; returns those whose hub is ready."""
        pending = {}
        for addr in addrs:
            if addr not in self.hubs:
                pending[addr] = (addr, self.client.submit(WorkerHub, actor=True, workers=[addr],
                                                          allow_other_workers=False, pure=False))
        started, _ = wait_for_futures(self.client, pending, deadline, what, is_lost_worker_error)
        for addr, actor in started.items():
            self.hubs[addr] = actor
            self.keys[addr] = pending[addr][1].key
            self.futures[addr] = pending[addr][1]
        return [addr for addr in addrs if addr in self.hubs]

    def forget_dead(self) -> set[str]:
        """Drop hubs whose worker is gone; returns the addresses whose hub lives."""
        alive = scheduler_workers(self.client)
        for addr in [a for a in self.hubs if a not in alive]:
            del self.hubs[addr]
            self.keys.pop(addr, None)
            # its task waits for a worker that never returns; a call still waiting on it ends
            self.futures.pop(addr).cancel()
        return set(self.hubs)

    def result(self, future: Any, addr: str, deadline: Deadline, what: str) -> Any:
        """The result of a call to the hub on ``addr``, within ``deadline``.

        Raises
        ------
        WorkerLostError
            When the worker went away (its call would never return).
        SchedulerLostError, ClusterTimeoutError
            When the scheduler is gone, or the deadline passed.
        """
        while True:
            try:
                return future.result(timeout=min(POLL, deadline.remaining()))
            except TimeoutError:
                if future.done():  # the worker's own TimeoutError
                    raise
            if addr not in scheduler_workers(self.client):
                raise WorkerLostError(f"worker {addr} went away during {what}")
            if deadline.expired():
                raise deadline.error(what, f"worker {addr}")


_KEYS = iter(range(1, 1 << 62))


class ClusterStores:
    """The stores of one prepared dataset (one per worker), and how to rebuild them.

    Partitions whose store was lost with its worker wait in :attr:`missing` until
    they are built again; an evaluation never runs while some are missing.
    """

    def __init__(self, hubs: Hubs, reducer: PartitionReducer, dataset: Dataset, storage: str,
                 progress: bool = False, name: str = "dataset") -> None:
        self.progress = progress
        self.hubs = hubs
        self.reducer = reducer
        self.dataset = dataset
        self.storage = storage
        self.name = name
        self.owned: dict[tuple[str, str], list[int]] = {}  # (worker, store key) -> partitions
        self.infos: dict[tuple[str, str], dict[str, Any]] = {}
        self.missing: list[int] = list(range(dataset.n_partitions))
        self.rebuilt = 0
        self.build()

    def build(self, what: str = "the preparation") -> None:
        """Create stores for the :attr:`missing` partitions on the running workers.

        The partitions of a worker lost meanwhile are built again on the others.
        ``what`` names the wait in errors.

        Raises
        ------
        ClusterTimeoutError
            When the cluster has had no worker for ``worker-timeout``, or the preparation
            took longer than ``preparation-timeout``.
        """
        what = f"{what} of dataset {self.name!r} on the cluster"
        deadline = Deadline("preparation-timeout")
        client = self.hubs.client
        while self.missing:
            if deadline.expired():
                raise deadline.error(what, f"{len(self.missing)} of its {self.dataset.n_partitions} "
                                     "partitions, whose workers were lost")
            workers = self.hubs.wait_for_workers(what)
            ready = self.hubs.start(sorted(workers), deadline, what)
            if not ready:
                continue
            todo = sorted(self.missing)
            pending: dict[tuple[str, str], tuple[str, Any]] = {}
            parts: dict[tuple[str, str], list[int]] = {}
            for addr, positions in assign_partitions(len(todo), ready).items():
                where = (addr, f"store-{next(_KEYS)}")
                parts[where] = [todo[k] for k in positions]
                threads = workers[addr] if self.storage == "resident" else 1
                # an ordinary task on the hub's worker fills the hub, so that preparation shows
                # in the dashboard and in distributed's progress bar or widget
                pending[where] = (addr, client.submit(
                    _add_to_hub, self.hubs.keys[addr], where[1], self.reducer, self.dataset,
                    parts[where], self.storage, threads, workers=[addr], allow_other_workers=False,
                    pure=False))
            if self.progress:
                _show_progress([f for _, f in pending.values()])
            done, lost = wait_for_futures(client, pending, deadline, what, is_lost_worker_error)
            for where, info in done.items():
                self.infos[where] = info
                self.owned[where] = parts[where]
            self.missing = sorted(i for where in lost for i in parts[where])
            self.rebuilt += len(self.missing)

    def rebuild_lost(self) -> None:
        """Replace the stores whose worker has gone (rebuilt from the sources)."""
        alive = self.hubs.forget_dead()
        for where in [w for w in self.owned if w[0] not in alive]:
            lost = self.owned.pop(where)
            self.infos.pop(where, None)
            self.missing.extend(lost)
            self.rebuilt += len(lost)
        if self.missing:
            self.build("the rebuild (after lost workers)")

    def info(self) -> dict[str, Any]:
        """Totals over the stores: events, resident bytes, exact weight sum."""
        infos = list(self.infos.values())
        weights = np.hstack([i["weights"] for i in infos]) if infos else np.zeros((1, 1))
        return {"events": sum(i["events"] for i in infos),
                "nbytes": sum(i["nbytes"] for i in infos),
                "sum_weights": float(fsum_rows(weights)[0])}

    def store_infos(self) -> list[dict[str, Any]]:
        """What each store reported when it was built (pid, events, bytes, partitions)."""
        return list(self.infos.values())


def reduce_on_cluster(hubs: Hubs, jobs: list[tuple[ClusterStores, Params, ReductionPlan, bool, bool]]
                      ) -> list[list[CertifiedPartials]]:
    """One hub call per worker for all ``jobs``; returns each job's per-store partials.

    Raises
    ------
    WorkerLostError
        When a worker holding stores went away (rebuild them and call again).
    SchedulerLostError, ClusterTimeoutError
        When the scheduler is gone, or a worker did not answer within ``evaluation-timeout``.
    """
    check_scheduler(hubs.client)
    per_worker: dict[str, list[tuple[int, tuple]]] = {}
    for j, (stores, p, plan, wg, ex) in enumerate(jobs):
        for (addr, key) in stores.owned:
            per_worker.setdefault(addr, []).append((j, (key, p, plan, wg, ex)))
    futures = {}
    for addr, items in per_worker.items():
        if addr not in hubs.hubs:
            raise WorkerLostError(f"worker {addr} is gone")
        futures[addr] = hubs.hubs[addr].reduce([job for _, job in items])
    deadline = Deadline("evaluation-timeout")
    out: list[list[CertifiedPartials]] = [[] for _ in jobs]
    for addr, fut in futures.items():
        for (j, _), partial in zip(per_worker[addr], hubs.result(fut, addr, deadline, "an evaluation")):
            out[j].append(partial)
    return out


#: How often an evaluation is repeated after workers were lost.
MAX_RETRIES = 3


class ClusterRunner(Runner):
    """Evaluations on a ``distributed`` cluster: one call per worker for all jobs."""

    def __init__(self, client: Any, progress: bool = False) -> None:
        self.client = client
        self.progress = progress
        self.hubs = Hubs(client)

    @property
    def workers(self) -> int:
        """Threads of the running workers."""
        return max(1, sum(self.hubs.workers().values()))

    def get(self, graph: Any, keys: Any, num_workers: int | None = None,
            progress: str | None = None) -> Any:
        """Run ``graph`` on the cluster, within ``laddu-dask.cluster.preparation-timeout``."""
        from dask.utils import key_split

        from laddu_dask.runtime.cluster_waits import gather

        first = keys[0] if isinstance(keys, list) and keys else keys
        futures = self.client.get(dict(graph), keys, sync=False)
        return gather(self.client, futures, f"the tasks {key_split(first)!r} on the cluster")

    def prepare(self, reducer: PartitionReducer, dataset: Dataset, name: str,
                decision: MemoryDecision, stream_workers: int) -> PreparedDataset:
        """One store (actor) per worker holds its partitions."""
        stores = ClusterStores(self.hubs, reducer, dataset, decision.strategy,
                               progress=self.progress, name=name)
        # (streaming stores reduce their partitions one at a time: the budget holds one)
        info = stores.info()
        stats = PreparedStats(local_events=0, global_events=dataset.n_events,
                              batches=dataset.n_partitions, sum_weights=info["sum_weights"],
                              resident_bytes=int(info["nbytes"]), storage=decision.strategy)
        return PreparedDataset(dataset, name, stats, decision, [], 1, stores=stores)

    def run(self, jobs: list[ReductionJob]) -> list[CertifiedPartials]:
        """One call per worker serves every job; rebuild lost stores and retry.

        Stores lost with their workers (during this evaluation or an earlier one that
        failed) are rebuilt first, waiting for workers to join when none is left.
        """
        for attempt in range(MAX_RETRIES + 1):
            for job in jobs:
                if job.prepared.stores.missing:
                    job.prepared.stores.rebuild_lost()
            todo = [(job.prepared.stores, job.params, job.plan, job.with_gradient, job.exact)
                    for job in jobs]
            try:
                partials = reduce_on_cluster(self.hubs, todo)
            except Exception as err:
                if not is_lost_worker_error(err):
                    raise
                if attempt == MAX_RETRIES:
                    raise ClusterError(f"an evaluation lost workers {MAX_RETRIES + 1} times in a row "
                                       f"(last: {err})") from err
                for job in jobs:
                    job.prepared.stores.rebuild_lost()
                continue
            return [CertifiedPartials.merge(parts) if parts else job.empty()
                    for job, parts in zip(jobs, partials)]
        raise AssertionError("unreachable")  # pragma: no cover
