"""What a cluster evaluation sends each worker: its share's layout by token, the objects it
lacks, the evaluation's points and, in a reduction tree, its route.

A worker's share of an evaluation (which partitions of which job, with which reducer) is a
*layout*, a list of :class:`~laddu_dask.runtime.jobs.WorkerJob`; the reducers, streamed
datasets, layouts and tree routes are laddu-dask's own objects, pickled once per worker and
named by a token afterwards (:class:`Payloads` remembers which worker holds which), so that
an evaluation's :class:`~laddu_dask.runtime.protocol.Request` carries only its parameter
points and a few tokens.

Examples
--------
>>> payloads = Payloads()
>>> obj = object()
>>> payloads.token(obj) == payloads.token(obj), payloads.token(obj).startswith("object-")
(True, True)
"""

from __future__ import annotations

import pickle
import uuid
from typing import Any

from laddu_dask.runtime.jobs import ReductionJob, WorkerJob
from laddu_dask.runtime.protocol import Request
from laddu_dask.runtime.shares import Plan

__all__ = ["MAX_LAYOUTS", "Payloads"]

#: Worker shares (layouts) the client keeps a token for.
MAX_LAYOUTS = 256


class Payloads:
    """The requests of one client's cluster evaluations (see the module).

    Attributes
    ----------
    sent : dict
        ``{worker: tokens of the objects it holds}``; a worker that says it lacks some
        (``"need"``), or left, loses its entry, and they are sent again.
    """

    def __init__(self) -> None:
        self.sent: dict[str, set[str]] = {}
        self._tokens: dict[int, tuple[Any, str]] = {}
        self._layouts: dict[tuple, str] = {}  # a worker's share of an evaluation -> its token
        self._layout_jobs: dict[str, list[WorkerJob]] = {}  # token -> the share, as it travels

    def token(self, obj: Any) -> str:
        """``obj``'s token (the same for the same object, as long as this client lives)."""
        hit = self._tokens.get(id(obj))
        if hit is None:
            hit = self._tokens[id(obj)] = (obj, f"{type(obj).__name__}-{uuid.uuid4().hex}")
        return hit[1]

    def layout(self, jobs: list[ReductionJob], share: list[tuple[int, list[int]]], addr: str,
               plan: Plan) -> str:
        """The token of ``addr``'s layout under ``plan`` (made at the plan's first evaluation)."""
        token = plan.layouts.get(addr)
        if token not in self._layout_jobs:  # this plan's first evaluation (or the layout was let go)
            signature = tuple(self._signature(jobs[j], ids) for j, ids in share)
            token = self._layouts.get(signature)
            if token is None:
                if len(self._layouts) >= MAX_LAYOUTS:  # placements come and go: keep the recent ones
                    self._layout_jobs.pop(self._layouts.pop(next(iter(self._layouts))), None)
                token = self._layouts[signature] = f"layout-{uuid.uuid4().hex}"
                self._layout_jobs[token] = [self._worker_job(jobs[j], ids) for j, ids in share]
            plan.layouts[addr] = token
        return token

    def request(self, jobs: list[ReductionJob], share: list[tuple[int, list[int]]], addr: str,
                label: str, plan: Plan, points: list[bytes], dtype: str,
                route: tuple[str, Any] | None = None, use_route: bool = False) -> Request:
        """The request to ``addr``: its share's layout by token, with the objects it lacks
        (pickled; ``route``, its ``(token, route)`` in a tree, among them) and the points of
        every job (:func:`~laddu_dask.runtime.wire.encode_points`); ``use_route``: the request
        names the route instead of carrying its children's requests."""
        sent = self.sent.setdefault(addr, set())
        used: dict[str, Any] = {}
        for j, _ids in share:
            job, pd = jobs[j], jobs[j].prepared
            used[self.token(job.reducer)] = job.reducer
            if pd.storage != "resident":
                used[self.token(pd.dataset)] = pd.dataset
        token = self.layout(jobs, share, addr, plan)
        used[token] = self._layout_jobs[token]
        if route is not None:
            used[route[0]] = route[1]
        objects = {t: obj for t, obj in used.items() if t not in sent}
        sent.update(objects)
        pickled = pickle.dumps(objects, protocol=pickle.HIGHEST_PROTOCOL) if objects else None
        request = Request(label=label, layout=token, jobs=[j for j, _ids in share], objects=pickled,
                          points=points, dtype=dtype)
        if route is not None and use_route:
            request["route"] = route[0]
        return request

    def _signature(self, job: ReductionJob, ids: list[int]) -> tuple:
        """What ``job``'s share of partitions ``ids`` on one worker is, as a dictionary key."""
        pd = job.prepared
        where = (tuple(pd.partitions[i].key for i in ids) if pd.storage == "resident"  # a moved
                 else self.token(pd.dataset))                                         # one: a new key
        return (self.token(job.reducer), where, len(job.points), job.plan, job.with_gradient, job.exact,
                tuple(ids))

    def _worker_job(self, job: ReductionJob, ids: list[int]) -> WorkerJob:
        """``job``'s share of partitions ``ids`` on one worker, as it travels."""
        pd = job.prepared
        head = (self.token(job.reducer), len(job.points), job.plan, job.with_gradient, job.exact)
        if pd.storage == "resident":
            return WorkerJob(*head, keys=[pd.partitions[i].key for i in ids])
        return WorkerJob(*head, dataset=self.token(pd.dataset), indices=ids,
                         stream_threads=pd.stream_workers)
