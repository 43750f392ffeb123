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
exact.  An error raised inside a store (a bad file, a non-positive intensity) fails
the evaluation with that error on the client.

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
from laddu_dask.runtime.accumulate import ExactPartials
from laddu_dask.runtime.reducer import CertifiedPartials, Params, PartitionReducer

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
        from laddu_dask.runtime.prepared import prepare_partition

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
        from laddu_dask.runtime.prepared import prepare_partition

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


def is_lost_worker_error(err: BaseException) -> bool:
    """Whether ``err`` means a worker or its connection went away."""
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

    hub = get_worker().state.actors[hub_key]
    return hub.add(key, reducer, dataset, indices, storage, threads)


class Hubs:
    """The :class:`WorkerHub` actor of each worker, created on demand (one set per execution)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.hubs: dict[str, Any] = {}
        self.keys: dict[str, str] = {}  # worker -> the hub actor's task key

    def workers(self) -> dict[str, int]:
        """Alive worker addresses and their threads."""
        info = self.client.scheduler_info()["workers"]
        return {addr: int(w.get("nthreads", 1)) for addr, w in info.items()}

    def hub(self, addr: str) -> Any:
        """The hub on worker ``addr``."""
        if addr not in self.hubs:
            future = self.client.submit(
                WorkerHub, actor=True, workers=[addr], allow_other_workers=False, pure=False
            )
            self.hubs[addr] = future.result()
            self.keys[addr] = future.key
        return self.hubs[addr]

    def forget_dead(self) -> set[str]:
        """Drop hubs whose worker is gone; returns the alive addresses."""
        alive = set(self.workers())
        for addr in list(self.hubs):
            if addr not in alive:
                del self.hubs[addr]
                self.keys.pop(addr, None)
        return alive


_KEYS = iter(range(1, 1 << 62))


class ClusterStores:
    """The stores of one prepared dataset (one per worker), and how to rebuild them."""

    def __init__(self, hubs: Hubs, reducer: PartitionReducer, dataset: Dataset, storage: str,
                 progress: bool = False) -> None:
        self.progress = progress
        self.hubs = hubs
        self.reducer = reducer
        self.dataset = dataset
        self.storage = storage
        self.owned: dict[tuple[str, str], list[int]] = {}  # (worker, store key) -> partitions
        self.infos: dict[tuple[str, str], dict[str, Any]] = {}
        self.rebuilt = 0
        self.build(list(range(dataset.n_partitions)))

    def build(self, indices: list[int]) -> None:
        """Create stores for ``indices`` on the current workers (prepared in parallel)."""
        workers = self.hubs.workers()
        plan = assign_partitions(len(indices), sorted(workers))
        pending = []
        client = self.hubs.client
        for addr, positions in plan.items():
            idx = [indices[k] for k in positions]
            key = f"store-{next(_KEYS)}"
            threads = workers[addr] if self.storage == "resident" else 1
            self.hubs.hub(addr)
            # an ordinary task on the hub's worker fills the hub, so that preparation shows
            # in the dashboard and in distributed's progress bar or widget
            fut = client.submit(_add_to_hub, self.hubs.keys[addr], key, self.reducer, self.dataset,
                                idx, self.storage, threads, workers=[addr],
                                allow_other_workers=False, pure=False)
            pending.append(((addr, key), idx, fut))
        if self.progress and pending:
            from distributed import progress

            futures = [f for _, _, f in pending]
            try:
                progress(futures)  # a widget in a notebook, a text bar in a terminal
            except ImportError:  # a notebook without ipywidgets
                progress(futures, notebook=False)
        for where, idx, fut in pending:
            self.infos[where] = fut.result()
            self.owned[where] = idx

    def rebuild_lost(self) -> None:
        """Replace the stores whose worker has gone (rebuilt from the sources)."""
        alive = self.hubs.forget_dead()
        indices: list[int] = []
        for where in [w for w in self.owned if w[0] not in alive]:
            indices.extend(self.owned.pop(where))
            self.infos.pop(where, None)
        if indices:
            self.rebuilt += len(indices)
            self.build(sorted(indices))

    def info(self) -> dict[str, Any]:
        """Totals over the stores: events, resident bytes, exact weight sum."""
        from laddu_dask.runtime.accumulate import fsum_rows

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
    """One hub call per worker for all ``jobs``; returns each job's per-store partials."""
    per_worker: dict[str, list[tuple[int, tuple]]] = {}
    for j, (stores, p, plan, wg, ex) in enumerate(jobs):
        for (addr, key) in stores.owned:
            per_worker.setdefault(addr, []).append((j, (key, p, plan, wg, ex)))
    futures = {addr: hubs.hub(addr).reduce([job for _, job in items])
               for addr, items in per_worker.items()}
    out: list[list[CertifiedPartials]] = [[] for _ in jobs]
    for addr, fut in futures.items():
        for (j, _), partial in zip(per_worker[addr], fut.result()):
            out[j].append(partial)
    return out
