"""Evaluations on a ``distributed`` cluster: Dask-managed partitions, one call per worker.

Preparation is ordinary Dask work: the graph of
:func:`~laddu_dask.runtime.preparation.preparation_graph` is submitted and its results
stay on the workers as Dask data, held by futures in the
:class:`~laddu_dask.runtime.preparation.PreparedDataset`.  Dask counts them as managed
memory (shown by key as ``prepared-<dataset>``), spills them under memory pressure,
moves them when a worker is retired (``retire_workers``, ``scale``, ``adapt``) and
recomputes them from their sources when a worker is lost.

A round trip through the scheduler costs tens of milliseconds, too much for the few
hundred evaluations of a fit, so an evaluation calls each worker directly, once, for
all the jobs of that evaluation (``rpc(worker).laddu_reduce`` from the evaluating thread,
:mod:`~laddu_dask.runtime.direct_calls`, served by
:mod:`laddu_dask.runtime.worker`).  Each worker reduces the partitions it holds, on all
its threads, and returns one exact partial sum per job and point.  Where each partition is comes
from Dask's ``who_has``, cached and refreshed only when the workers changed or a
worker did not hold what it was asked for (:mod:`laddu_dask.runtime.placement`); a
worker that joined is given its share of the partitions at the next evaluation.  When
a partition is not where it was (moved, or lost with its worker), the evaluation waits
for Dask to move or recompute it and asks again: the numbers do not change, since
every merge is exact.  Every wait has a timeout and a typed error
(:mod:`laddu_dask.cluster_waits`).

Examples
--------
>>> from laddu_dask.runtime.cluster import fan_in
>>> fan_in()
4
"""

from __future__ import annotations

import pickle
import time
import uuid
import weakref
from collections.abc import Hashable
from typing import Any

import numpy as np

from laddu_dask import config
from laddu_dask.cluster_waits import (
    POLL,
    Deadline,
    check_scheduler,
    running_workers,
    wait_for_futures,
    wait_for_workers,
    who_has,
)
from laddu_dask.data.dataset import Dataset
from laddu_dask.errors import ClusterError, ParameterError
from laddu_dask.runtime.accumulate import fsum_rows
from laddu_dask.runtime.dashboard import record_client_evaluation, record_fit_note
from laddu_dask.runtime.jobs import PointPartials, ReductionJob, Runner
from laddu_dask.runtime.memory import MemoryDecision
from laddu_dask.runtime.payloads import Payloads
from laddu_dask.runtime.placement import WorkerWatch, balance, choose
from laddu_dask.runtime.preparation import (
    Learned,
    PreparedDataset,
    PreparedStats,
    key_label,
    learn_on_cluster,
    partition_summary,
    preparation_graph,
    weight_sum,
)
from laddu_dask.runtime.protocol import Member, Request, outcome
from laddu_dask.runtime.reducer import PartitionReducer
from laddu_dask.runtime.reduction import merge_list, tree_graph
from laddu_dask.runtime.shares import Plan, SharePlans, Shares, assign_shares, held_by_dataset
from laddu_dask.runtime.tree import descendants, members, plan_tree, routes, with_children
from laddu_dask.runtime.wire import encode_points
from laddu_dask.runtime.worker_calls import call_all, is_lost_worker_error
from laddu_dask.views import show_progress

#: Worker states whose data an evaluation may read (a paused worker still answers calls).
SERVING = ("running", "paused")
#: Rounds an evaluation may take to reach all its partitions (each after a move or loss).
MAX_ROUNDS = 8


def _on_client_evaluation(client: Any, label: str, number: int, seconds: float) -> None:
    """Called on the client after each cluster evaluation: a Task Stream rectangle.

    ``label`` names the evaluation's datasets, ``number`` counts the runner's
    evaluations, ``seconds`` is the evaluation's wall time.  It stays cheap:
    :func:`~laddu_dask.runtime.dashboard.record_client_evaluation` only notes it; the note
    travels later, in the background.
    """
    record_client_evaluation(client, label, number, None, seconds)


def fan_in() -> int:
    """The Dask config ``laddu-dask.cluster.fan-in``: the most workers an evaluation's caller
    calls (:mod:`laddu_dask.runtime.tree`).

    Raises
    ------
    ParameterError
        Unless it is an integer of at least 2 (1 would chain the workers one after another).
    """
    value = config.count("cluster.fan-in")
    if value < 2:
        raise ParameterError("the Dask config laddu-dask.cluster.fan-in must be an integer >= 2, got "
                             f"{value!r}")
    return value


def _same(part: Any) -> Any:
    """Task that moves a prepared partition: its result is its input, on another worker."""
    return part


def _gathered(client: Any, futures: list[Any], what: str) -> list[Any]:
    """The results of ``futures`` in order, within ``preparation-timeout``."""
    done, _ = wait_for_futures(client, {i: (None, f) for i, f in enumerate(futures)},
                               Deadline("preparation-timeout"), what, lambda err: False)
    return [done[i] for i in range(len(futures))]


def _not_called(plan: Plan, listed: dict[str, Member]) -> dict[str, Member]:
    """The workers below a listed member that forwarded nothing (its call broke, or it lacked
    its route), each as unanswered: their partitions are asked for again."""
    return {a: Member(lost=None) for addr, m in listed.items()
            if "lost" in m or plan.routes.get(addr, ("",))[0] in m.get("need", ())
            for a in plan.below[addr] if a not in listed}


class ClusterRunner(Runner):
    """Preparations and evaluations on the cluster of ``client`` (see the module docstring).

    Attributes
    ----------
    calls : int
        Worker calls made by evaluations so far.
    moves : list of dict
        Every rebalance: partitions moved, their bytes, the seconds it took.
    """

    def __init__(self, client: Any, split_every: int, progress: bool = False) -> None:
        self.client = client
        self.split_every = split_every
        self.progress = progress
        self.watch = WorkerWatch.of(client)
        self.direct = self.watch.calls
        self.seen = -1  # the watch's generation when placement was last refreshed
        self._placements: dict[str, dict[str, list[int]]] = {}  # as last noted for the dashboard
        self.live: dict[str, int] = {}  # serving workers and their threads
        self.holder: dict[Hashable, str] = {}  # partition key -> the worker asked for it
        self.payloads = Payloads()  # what each worker is sent, and the objects it holds
        self.version = 0  # bumped at every change of the placement (live workers, holders)
        self.plans = SharePlans()  # the workers' shares of recent evaluations, by version
        self._datasets: weakref.WeakSet[PreparedDataset] = weakref.WeakSet()
        self.calls = 0
        self.evaluations = 0
        self.moves: list[dict[str, Any]] = []

    # -- set-up ------------------------------------------------------------------------
    def _ensure_plugin(self) -> None:
        """Register the worker plugin once per client (new workers receive it from Dask)."""
        if not self.watch.plugin_registered:
            from laddu_dask.runtime.worker import PLUGIN, LadduWorker

            check_scheduler(self.client)
            self.client.register_plugin(LadduWorker(), name=PLUGIN)
            self.watch.plugin_registered = True

    @property
    def workers(self) -> int:
        """Threads of the running workers."""
        return max(1, sum(running_workers(self.client).values()))

    def get(self, graph: Any, keys: Any, num_workers: int | None = None,
            progress: str | None = None) -> Any:
        """Run ``graph`` on the cluster, within ``laddu-dask.cluster.preparation-timeout``."""
        from dask.utils import key_split

        from laddu_dask.cluster_waits import gather

        first = keys[0] if isinstance(keys, list) and keys else keys
        futures = self.client.get(dict(graph), keys, sync=False)
        return gather(self.client, futures, f"the tasks {key_split(first)!r} on the cluster")

    # -- preparation -------------------------------------------------------------------
    def prepare(self, reducer: PartitionReducer, dataset: Dataset, name: str,
                decision: MemoryDecision, stream_workers: int,
                learned: Learned | None = None) -> PreparedDataset:
        """Prepared partitions as Dask data on the workers (resident; ``learned``: their
        futures when :meth:`learn` prepared them), or the weight sum only."""
        self._ensure_plugin()
        what = f"the preparation of dataset {name!r} on the cluster"
        parts = None if learned is None else learned.parts
        if decision.strategy == "resident":
            if parts:
                infos = [self.client.submit(partition_summary, f) for f in parts]
            else:
                graph, keys = preparation_graph(reducer, dataset, name)
                summaries = {("summary-" + key[0].removeprefix("prepared-"), key[1]):
                             (partition_summary, key) for key in keys}
                futures = self.client.get({**dict(graph), **summaries}, keys + list(summaries),
                                          sync=False) if keys else []
                parts, infos = futures[:len(keys)], futures[len(keys):]
            if self.progress and parts:
                show_progress(parts)
            rows = _gathered(self.client, infos, what)
            nbytes = sum(r[1] for r in rows)
            sum_w = float(fsum_rows(np.hstack([r[2] for r in rows]))[0]) if rows else 0.0
        else:
            parts = []
            loads, load_keys = dataset.partition_graph([], np.float64, name=f"load-{key_label(name)}")
            leaves = {("weights-" + key[0].removeprefix("load-"), key[1]): (weight_sum, key)
                      for key in load_keys}
            # the merges are named by the loads' token (the dataset's origin and layout), never by
            # the dataset's name alone: a key the client still holds from another dataset of the
            # same name would hand back that dataset's sum (Dask keeps the result it has)
            first = next(iter(leaves), (f"weights-{key_label(name)}",))[0]
            tree, root = tree_graph(leaves, self.split_every, merge_list, f"{first}-merge")
            [total] = _gathered(self.client, self.client.get({**dict(loads), **tree}, [root], sync=False),
                                what)
            nbytes, sum_w = 0, float(total.to_floats()[0])
        stats = PreparedStats(local_events=0, global_events=dataset.n_events, batches=dataset.n_partitions,
                              sum_weights=sum_w, resident_bytes=int(nbytes), storage=decision.strategy)
        prepared = PreparedDataset(dataset, name, stats, decision, parts, stream_workers)
        if parts:
            self._datasets.add(prepared)
            self.seen = -1  # place (and balance) it at the next evaluation
        return prepared

    def learn(self, reducer: PartitionReducer, dataset: Dataset, name: str, budget: int | None,
              bytes_per_event: int, spill: bool = False) -> Learned | None:
        """:func:`~laddu_dask.runtime.preparation.learn_on_cluster` (the workers' memory is
        Dask's to manage, spilled by Dask, so neither ``budget`` nor ``spill`` applies)."""
        return learn_on_cluster(self.client, reducer, dataset, name, _gathered)

    # -- placement ---------------------------------------------------------------------
    def _serving(self, what: str) -> dict[str, int]:
        live = running_workers(self.client, SERVING)
        return live or wait_for_workers(self.client, what)

    def _refresh(self, what: str) -> None:
        """Workers, who holds what, and a rebalance when the workers changed."""
        generation = self.watch.generation
        self.live = self._serving(what)
        self.watch.follow(self.live)
        for addr in [a for a in self.payloads.sent if a not in self.live]:
            del self.payloads.sent[addr]
        datasets = list(self._datasets)
        self._place([f for pd in datasets for f in pd.partitions])
        running = running_workers(self.client)
        if len(running) > 1:
            self._balance(datasets, running)
        self.seen = generation

    def _place(self, futures: list[Any]) -> list[Any]:
        """Refresh the holders of ``futures``; returns those no serving worker holds."""
        holders = who_has(self.client, [f.key for f in futures])
        self.version += 1  # (the workers serving are refreshed before each placement)
        load: dict[str, int] = {}
        orphans = []
        for f in futures:
            addr = choose(holders.get(f.key, ()), self.live, load)
            if addr is None:
                self.holder.pop(f.key, None)
                orphans.append(f)
            else:
                self.holder[f.key] = addr
        return orphans

    def _balance(self, datasets: list[PreparedDataset], running: dict[str, int]) -> None:
        """Move partitions so that each running worker holds a share (see :func:`balance`)."""
        start = time.perf_counter()
        pending: dict[tuple[int, int], tuple[None, Any]] = {}
        nbytes = 0
        for k, pd in enumerate(datasets):
            held: dict[str, list[int]] = {}
            for i, f in enumerate(pd.partitions):
                if f.key in self.holder:
                    held.setdefault(self.holder[f.key], []).append(i)
            for i, dest in balance(held, running):
                old = pd.partitions[i].key
                new = (f"{old[0].rsplit('-', 1)[0]}-{uuid.uuid4().hex}", old[1])
                pending[(k, i)] = (None, self.client.submit(
                    _same, pd.partitions[i], key=new, workers=[dest], allow_other_workers=True,
                    pure=False))
                self.holder[new] = dest
                nbytes += pd.stats.resident_bytes // max(pd.stats.batches, 1)
        if not pending:
            return
        wait_for_futures(self.client, pending, Deadline("preparation-timeout"),  # (the data stay there)
                         "the move of prepared partitions to new workers", lambda err: False, fetch=False)
        for (k, i), (_, fut) in pending.items():
            self._replace(datasets[k], i, fut)
        self.moves.append({"partitions": len(pending), "bytes": nbytes,
                           "seconds": time.perf_counter() - start})

    def _replace(self, pd: PreparedDataset, i: int, moved: Any) -> None:
        """Partition ``i`` of ``pd`` is now the future ``moved`` (a copy under a new key, whose
        holder is known): the old key is released, and Dask drops it."""
        self.holder.pop(pd.partitions[i].key, None)
        pd.partitions[i] = moved
        pd.groups.clear()
        self.version += 1  # the workers' shares are worked out again, with the new key

    def _await(self, missing: list[tuple[PreparedDataset, int]]) -> None:
        """Wait until Dask has moved or recomputed the ``missing`` partitions, and place them."""
        what = (f"the recomputation of dataset {missing[0][0].name!r} (partitions lost with their "
                "worker)")
        deadline = Deadline("preparation-timeout")
        while True:
            self.live = self._serving(what)
            orphans = {id(f) for f in self._place([pd.partitions[i] for pd, i in missing])}
            missing = [(pd, i) for pd, i in missing if id(pd.partitions[i]) in orphans]
            if not missing:
                return
            pending = {}
            for pd, i in missing:
                fut = pd.partitions[i]
                if fut.status != "finished":  # Dask recomputes it from its sources
                    pending[(id(pd), i)] = (None, fut)
            if pending:
                wait_for_futures(self.client, pending, deadline, what, lambda err: False)
            elif deadline.expired():
                raise deadline.error(what, f"{len(missing)} partition(s) that no worker holds")
            else:
                time.sleep(0.02)  # the scheduler has not yet seen the loss

    def _settle(self, failed: list[str], what: str) -> None:
        """After calls to ``failed`` broke: wait (briefly) for the scheduler to drop them."""
        end = time.monotonic() + 4 * POLL
        while any(a not in self.watch.removed for a in failed) and time.monotonic() < end:
            time.sleep(0.02)
        for addr in failed:
            self.payloads.sent.pop(addr, None)
        self._refresh(what)

    # -- evaluation --------------------------------------------------------------------
    def _note_placement(self, jobs: list[ReductionJob], shares: Shares) -> None:
        """Note, for the laddu-dask page, which worker reduces which partitions of each
        dataset, when that changed (at a new plan of shares)."""
        for name, workers in held_by_dataset(jobs, shares).items():
            if self._placements.get(name) != workers:
                self._placements[name] = workers
                record_fit_note(self.client, name.split("/")[0], "placement",
                                {"dataset": name, "workers": workers})

    def _requests(self, jobs: list[ReductionJob], plan: Plan, whole: bool, label: str, points: list[bytes],
                  dtype: str) -> dict[str, Request]:
        """The calls of one round: at most fan-in, each with its subtree's requests (under
        ``"children"``, with each relay's route among its objects) or, once every worker of
        ``plan`` holds its objects and route, naming the route (:mod:`~laddu_dask.runtime.tree`)."""
        shares = plan.shares
        if plan.ready:
            return {addr: self.payloads.request(jobs, shares[addr], addr, label, plan, points, dtype,
                                                plan.routes.get(addr), use_route=True) for addr in plan.tree}
        for addr, share in shares.items():
            self.payloads.layout(jobs, share, addr, plan)
        if whole:  # made again, so that they name the layouts as they are now
            plan.routes = routes(plan.tree, plan.layouts, {a: [j for j, _ in sh] for a, sh in shares.items()},
                                 lambda: f"route-{uuid.uuid4().hex}")
        return with_children({addr: self.payloads.request(jobs, share, addr, label, plan, points, dtype,
                                                          plan.routes.get(addr) if whole else None)
                              for addr, share in shares.items()}, plan.tree)

    def run(self, jobs: list[ReductionJob]) -> list[PointPartials]:
        """One call per worker for all ``jobs``; partitions moved or lost are asked for again.

        Raises
        ------
        SchedulerLostError
            At once, when the scheduler is gone.
        ClusterTimeoutError
            When a worker did not answer within ``evaluation-timeout``, no worker was left
            for ``worker-timeout``, or lost partitions were not recomputed within
            ``preparation-timeout``.
        """
        check_scheduler(self.client)
        start = time.perf_counter()
        names = list(dict.fromkeys(job.prepared.name for job in jobs))
        # the likelihood's terms, as the dashboard names the evaluation ("ksks" of "ksks/data")
        label = ", ".join(dict.fromkeys(name.split("/")[0] for name in names))
        what = f"the evaluation of dataset {names[0]!r}" + (f" and {len(names) - 1} more" if len(names) > 1
                                                             else "")
        if self.watch.generation != self.seen:
            self._refresh(what)
        deadline = Deadline("evaluation-timeout")
        todo = {j: list(range(job.prepared.stats.batches)) for j, job in enumerate(jobs)}
        partials: list[list[PointPartials]] = [[] for _ in jobs]
        events = calls = 0
        whole = True  # every partition of every job asked for: the shares may be those of a plan
        kinds = tuple((id(job.prepared), self.payloads.token(job.reducer), len(job.points), job.plan,
                       job.with_gradient, job.exact) for job in jobs)
        fan = fan_in()
        points = [encode_points(job.points) for job in jobs]
        dtype = next((job.points[0].array.dtype.str for job in jobs if job.points), "<f8")
        for _ in range(MAX_ROUNDS):
            plan = self.plans.get((self.version, kinds), jobs) if whole else None
            if plan is None:
                shares, missing = assign_shares(jobs, todo, self.live, self.holder)
                if missing:
                    self._await(missing)
                    continue
                plan = self.plans.put((self.version, kinds), jobs, shares) if whole else Plan(shares, ())
                self._note_placement(jobs, shares)
            shares = plan.shares
            if plan.fan_in != fan:  # at most fan-in calls from here (laddu_dask.runtime.tree)
                plan.tree, plan.fan_in, plan.ready = plan_tree(sorted(shares), fan), fan, False
                plan.below = descendants(plan.tree)
                plan.total = sum(plan.asked(addr) for addr in shares)
            requests = self._requests(jobs, plan, whole, label, points, dtype)
            for request in requests.values():
                request["timeout"] = deadline.remaining()
            replies = (self.direct.run(call_all, self.client, self.watch.removed, requests, deadline)
                       if requests else {})
            calls += len(replies)
            todo, failed, ready, planned, whole = {}, [], whole, whole, False
            answered: dict[str, Member] = {}
            reduced = 0  # partitions the complete members of subtrees reduced (not listed)
            for top, reply in replies.items():
                sums, listed, (complete, some_events, some) = members(top, reply)
                for j, partial in sums:
                    partials[j].append(partial)
                answered.update(listed)
                events, reduced = events + some_events, reduced + some
                below = _not_called(plan, listed)
                answered.update(below)
                accounted = complete + len(listed) + len(below)
                if accounted != 1 + len(plan.below[top]):
                    raise ClusterError(f"the reply of worker {top} accounts for {accounted} of the "
                                       f"{1 + len(plan.below[top])} workers it called")
            expected = plan.total - sum(plan.asked(addr) for addr in answered)
            if reduced != expected:  # of the members not listed: a partition lost would be a wrong number
                raise ClusterError(f"the workers reduced {reduced} partitions of {what} where {expected} "
                                   "were asked for")
            for addr, reply in answered.items():
                again = shares[addr]
                if "lost" in reply:  # the worker, or the call through its parent, broke
                    lost = reply["lost"]
                    if isinstance(lost, BaseException) and not is_lost_worker_error(lost):
                        raise lost
                    if lost is not None:  # None: unanswered below a call that broke, asked again
                        failed.append(addr)
                elif "error" in reply:
                    raise reply["error"]
                elif "need" in reply:  # the worker restarted at the same address
                    self.payloads.sent.setdefault(addr, set()).difference_update(reply["need"])
                else:
                    # "missing" is pickled by our own worker plugin
                    gone = set(pickle.loads(reply["missing"])) if reply.get("missing") else set()
                    again = [(j, [i for i in ids if jobs[j].prepared.storage == "resident"
                                  and jobs[j].prepared.partitions[i].key in gone] if gone else [])
                             for j, ids in again]
                    # every partition asked for is either in the sums or asked for again: a
                    # partition in neither would be a silently wrong number
                    for (j, ids), (_, retry), n in zip(shares[addr], again, reply["counts"]):
                        if n + len(retry) != len(ids):
                            raise ClusterError(f"worker {addr} reduced {n} and lacked {len(retry)} of the "
                                               f"{len(ids)} partitions of {jobs[j].prepared.name!r} "
                                               "it was asked for")
                    events += reply["events"]
                for j, ids in again:
                    if ids:
                        todo.setdefault(j, []).extend(ids)
                        ready = False
                ready = ready and outcome(reply) == "sums"
            if planned:  # every worker answered with its whole share: it holds its objects and route
                plan.ready = ready
            if not todo:
                break
            if failed:
                self._settle(failed, what)
            else:  # moved away (a retired worker handed them over): ask Dask where they are
                self._place([jobs[j].prepared.partitions[i] for j, ids in todo.items()
                             if jobs[j].prepared.storage == "resident" for i in ids])
        else:
            raise ClusterError(f"{what} could not reach all its partitions in {MAX_ROUNDS} rounds of "
                               "worker calls (workers kept leaving)")
        self.calls += calls
        # -- dashboard hook: one call per evaluation on the client ---------------------------
        self.evaluations += 1
        _on_client_evaluation(self.client, label, self.evaluations, time.perf_counter() - start)
        return [PointPartials.merge(p) if p else job.empty() for job, p in zip(jobs, partials)]
