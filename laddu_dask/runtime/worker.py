"""The worker side of cluster evaluations: a handler that reduces what its worker holds.

:class:`LadduWorker` is a ``distributed`` worker plugin (``client.register_plugin``).
On every worker, present and future, it adds the comm handler ``laddu_reduce`` that
the client calls directly (``client.rpc(worker).laddu_reduce(...)``): one call per
worker per evaluation carries all its jobs.  The handler *reads* the prepared
partitions from its worker's own data store (``worker.data[key]``: Dask-managed data,
computed by ordinary tasks, which the scheduler places, moves, spills and recomputes),
reduces them on a pool of as many threads as the worker has (the fused kernels
release the GIL) and returns one exact partial sum per job and point.  It owns no data: only the
reducers and the streamed datasets the client sent it, under a token each, so that an
evaluation carries only parameters.

A call carries a :class:`~laddu_dask.runtime.protocol.Request` (this worker's share of every
job, and in a reduction tree its children's requests or the token of its cached route to
them, which it forwards and whose replies it merges, :mod:`~laddu_dask.runtime.tree`) and returns a
:class:`~laddu_dask.runtime.protocol.Reply`: one exact partial sum per job and point, or
why it has none (:mod:`~laddu_dask.runtime.protocol`).

Examples
--------
>>> from laddu_dask.runtime.worker import HANDLER, PLUGIN
>>> HANDLER, PLUGIN
('laddu_reduce', 'laddu-dask')
"""

from __future__ import annotations

import asyncio
import pickle
import time
from collections import OrderedDict, deque
from collections.abc import Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin
from distributed.protocol import to_serialize

from laddu_dask.runtime.dashboard import record_worker_evaluation
from laddu_dask.runtime.direct_calls import abort_comms, inline_pool
from laddu_dask.runtime.jobs import (
    INLINE_EVENTS,
    PointPartials,
    WorkerJob,
    reduce_partitions,
    stream_partitions,
    thread_groups,
)
from laddu_dask.runtime.placement import TOPIC
from laddu_dask.runtime.protocol import Reply, Request, needs
from laddu_dask.runtime.tree import child_requests, merge_replies
from laddu_dask.runtime.wire import decode_points, encode_partials

#: The name of the comm handler on every worker.
HANDLER = "laddu_reduce"
#: The plugin's name (``worker.plugins[PLUGIN]``).
PLUGIN = "laddu-dask"
#: Reducers and streamed datasets a worker keeps (the least recently used go first).
MAX_OBJECTS = 64


def _on_worker_evaluation(worker: Any, label: str, seconds: float, events: int) -> None:
    """Called on the worker after each evaluation call it served: a Task Stream rectangle.

    ``label`` names the evaluation's datasets, ``seconds`` is the time the call took on
    the worker, ``events`` how many events it reduced.  It stays cheap (it runs on the
    worker's event loop): :func:`~laddu_dask.runtime.dashboard.record_worker_evaluation`
    only notes it; the note travels later, batched.
    """
    record_worker_evaluation(worker, label, seconds, events)


class LadduWorker(WorkerPlugin):
    """Worker plugin adding the ``laddu_reduce`` handler (see the module docstring)."""

    name = PLUGIN

    def setup(self, worker: Any) -> None:
        self.worker = worker
        self.threads = max(1, int(worker.state.nthreads))
        self.pool = ThreadPoolExecutor(self.threads, thread_name_prefix="laddu-dask-reduce")
        self.objects: OrderedDict[str, Any] = OrderedDict()
        self.calls = 0
        self.children: Any = None  # the pool of a relay's calls to its children, at its first
        worker.handlers[HANDLER] = self.reduce
        worker.log_event(TOPIC, {"worker": worker.address})  # clients rebalance onto it

    def teardown(self, worker: Any) -> None:
        if worker.handlers.get(HANDLER) == self.reduce:
            del worker.handlers[HANDLER]
        self.pool.shutdown(wait=False, cancel_futures=True)
        if self.children is not None:
            abort_comms(self.children)

    async def reduce(self, comm: Any = None, request: Request | None = None) -> Reply:
        """The handler: reduce this worker's share of every job of one evaluation, and, for a
        request with ``"children"`` or a ``"route"`` to them (a reduction tree,
        :mod:`laddu_dask.runtime.tree`), forward theirs meanwhile and merge their replies into
        this one.  ``comm`` is the caller's connection (distributed passes it to a handler
        whose first argument has that name): where the request comes through laddu-dask's
        own pool (``inline``), this end sends its replies without sizing them first."""
        if comm is not None and request.get("inline"):
            comm.allow_offload = False
        if request.get("objects"):  # pickled by laddu-dask's client (Dask unpickles alike)
            self.objects.update(pickle.loads(request["objects"]))
        children = request.get("children")
        if not children and request.get("route"):
            route = self.objects.get(request["route"])
            if route is None:  # a restarted worker: the client sends it again
                return needs([request["route"]])
            self.objects.move_to_end(request["route"])
            children = child_requests(request, route)
        if not children:
            return await self._reduce_own(request)
        timeout = 0.9 * float(request.get("timeout", 600.0))  # this reply must beat the caller's wait
        if self.children is None:
            self.children = inline_pool(self.worker.connection_args, self.worker.rpc.timeout)
            await self.children.start()
        relays = {addr: asyncio.ensure_future(self._relay(addr, child, timeout))
                  for addr, child in children.items()}
        await asyncio.sleep(0)  # the children's requests leave before this worker's own share
        own = await self._reduce_own(request)
        replies = {addr: await call for addr, call in relays.items()}
        return merge_replies(self.worker.address, own, replies)

    async def _relay(self, addr: str, request: Request, timeout: float) -> Reply | Exception:
        """A child's reply, or the exception of a call that broke or took longer than ``timeout``."""
        request = Request(request, timeout=timeout, inline=True)
        try:  # the request is written in this task's first step (no task of a wait_for between)
            async with asyncio.timeout(timeout):
                return await self.children(addr).laddu_reduce(request=request)
        except Exception as err:  # noqa: BLE001 - reported as lost: the client asks again
            return err

    async def _reduce_own(self, request: Request) -> Reply:
        """This worker's own share of the request."""
        self.calls += 1
        start = time.perf_counter()
        layout = self.objects.get(request["layout"])
        if layout is None:
            return needs([request["layout"]])
        jobs: list[WorkerJob] = layout
        tokens = {t for job in jobs for t in (job.reducer, job.dataset) if t is not None}
        need = sorted(t for t in tokens if t not in self.objects)
        if need:
            return needs([request["layout"], *need])
        tokens.add(request["layout"])
        raw = request["points"]
        points = [decode_points(raw[j], job.n_points, request["dtype"])
                  for j, job in zip(request["jobs"], jobs, strict=True)]
        for token in tokens:
            self.objects.move_to_end(token)
        while len(self.objects) > MAX_OBJECTS:  # the least recently used: sent again if needed
            self.objects.popitem(last=False)
        data = self.worker.data
        # the in-memory part of Dask's spill buffer: a hit there skips the buffer's per-read
        # metrics (a read still marks the key as recently used, so that it is spilled last)
        fast = getattr(data, "fast", None)
        held: dict[Hashable, Any] = {}  # each partition looked up once (terms share datasets)
        missing: list[Hashable] = []
        units: list[tuple[int, Any, tuple, int]] = []  # (job, task function, its arguments, events)
        resident: list[tuple[int, Any, list, tuple]] = []  # (job, reducer, its parts held here, tail)
        counts = [len(job.indices) for job in jobs]  # partitions reduced per job (resident: held)
        for j, job in enumerate(jobs):
            reducer = self.objects[job.reducer]
            tail = (points[j], job.plan, job.with_gradient, job.exact)
            if job.streaming:  # at most stream_threads partitions read at once (the budget)
                dataset = self.objects[job.dataset]
                units += [(j, stream_partitions, (reducer, dataset, group, *tail),
                           sum(dataset.partitions[i].n_events for i in group))
                          for group in _split(job.indices, job.stream_threads)]
                continue
            parts = []
            for key in job.keys:
                if key not in held:
                    try:  # from disk, Dask's buffer unspills it
                        held[key] = fast[key] if fast is not None and key in fast else data[key]
                    except KeyError:
                        held[key] = None
                if held[key] is None:
                    missing.append(key)
                else:
                    parts.append(held[key])
            resident.append((j, reducer, parts, tail))
            counts[j] = len(parts)
        events = sum(unit[3] for unit in units) + sum(p.n for *_, parts, _ in resident for p in parts)
        if events <= INLINE_EVENTS and not units:
            # a small share: handing it to threads would cost more than the work, and one
            # unit per job saves the merges of its groups
            units = [(j, reduce_partitions, (reducer, parts, *tail), 0)
                     for j, reducer, parts, tail in resident if parts]
            try:
                done: list[Any] = [_run_share(deque(units))]
            except Exception as err:  # noqa: BLE001 - sent back and raised on the client
                done = [err]
        else:  # one hand-over per thread; each takes the next unit, the largest first, until
            # none is left, so that a thread slowed by other work leaves more to the others
            units += [(j, reduce_partitions, (reducer, group, *tail), sum(p.n for p in group))
                      for j, reducer, parts, tail in resident for group in thread_groups(parts, self.threads)]
            pending = deque(sorted(units, key=lambda unit: -unit[3]))
            done = await asyncio.gather(*(asyncio.wrap_future(self.pool.submit(_run_share, pending))
                                          for _ in range(min(self.threads, len(units)))),
                                        return_exceptions=True)
        errors = [d for d in done if isinstance(d, BaseException)]
        if errors:
            return Reply(error=to_serialize(errors[0]))
        per_job: list[list[PointPartials]] = [[] for _ in jobs]
        for share in done:
            for j, partial in share:
                per_job[j].append(partial)
        results = [PointPartials.merge(p) if p else None for p in per_job]
        # -- dashboard hook: one call per evaluation served by this worker ------------------
        _on_worker_evaluation(self.worker, request.get("label", ""), time.perf_counter() - start, events)
        # one buffer of doubles: far cheaper to send than the arrays of every partial sum
        shapes, data = encode_partials(results)
        reply = Reply(jobs=request["jobs"], shapes=shapes, data=data, events=events, counts=counts)
        if missing:
            reply["missing"] = pickle.dumps(missing, protocol=pickle.HIGHEST_PROTOCOL)
        return reply


def _run_share(pending: deque) -> list[tuple[int, PointPartials]]:
    """One thread's share of an evaluation: the units it took from ``pending`` (shared by
    the threads; ``popleft`` is atomic), as ``(job, partial sums)``."""
    out = []
    while True:
        try:
            j, fn, args, _events = pending.popleft()
        except IndexError:
            return out
        out.append((j, fn(*args)))


def _split(indices: list[int], groups: int) -> list[list[int]]:
    """``indices`` in at most ``groups`` contiguous runs (streamed one partition at a time each)."""
    n = max(1, min(groups, len(indices)))
    edges = [round(k * len(indices) / n) for k in range(n + 1)]
    return [indices[a:b] for a, b in zip(edges[:-1], edges[1:]) if b > a]
