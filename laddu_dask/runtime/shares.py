"""Each worker's share of a cluster evaluation, worked out once per placement.

A cluster evaluation asks every worker for the partitions it holds of every job. Working
that out walks every partition: who holds it, whether that worker still serves, which keys
the worker is to read. For an NLL of a few thousand partitions that is milliseconds of the
client's time at every evaluation (2.4 microseconds a partition), although the placement
changes only when a worker joins or leaves or a partition moves. So :class:`SharePlans`
keeps the shares of the last few sets of jobs (a value and a gradient, the terms of many
fits) and each worker's layout token, under the placement's *version*, which the cluster
runner bumps at every change of who holds what; a changed placement, or another set of
jobs, works them out again.

Examples
--------
>>> from types import SimpleNamespace as NS
>>> class Prepared(NS): ...
>>> pd = Prepared(storage="resident", partitions=[NS(key=("p", i)) for i in range(4)])
>>> jobs = [NS(prepared=pd)]
>>> holder = {("p", 0): "w1", ("p", 1): "w1", ("p", 2): "w2", ("p", 3): "gone"}
>>> shares, missing = assign_shares(jobs, {0: [0, 1, 2, 3]}, {"w1": 1, "w2": 1}, holder)
>>> shares, [i for _, i in missing]
({'w1': [(0, [0, 1])], 'w2': [(0, [2])]}, [3])
>>> plans = SharePlans(2)
>>> plans.get(("v1",), jobs) is None
True
>>> plan = plans.put(("v1",), jobs, {"w1": [(0, [0, 1])]})
>>> plans.get(("v1",), jobs) is plan, plans.get(("v2",), jobs)
(True, None)
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Plan", "SharePlans", "Shares", "assign_shares", "held_by_dataset"]

#: ``{worker address: [(job index, its partition indices held there), ...]}``.
Shares = dict[str, list[tuple[int, list[int]]]]


def assign_shares(jobs: Sequence[Any], todo: Mapping[int, list[int]], live: Mapping[str, int],
                  holder: Mapping[Hashable, str]) -> tuple[Shares, list[tuple[Any, int]]]:
    """Each serving worker's share of ``todo`` (job index -> partition indices), and the
    partitions no serving worker holds, as ``(prepared dataset, index)``.

    A resident partition goes to the worker that holds it (``holder``, by key); a streamed or
    disk-tier one to the serving workers in turn, by index (``live``, sorted)."""
    shares: Shares = {}
    missing = []
    ring = sorted(live)
    for j, indices in todo.items():
        pd = jobs[j].prepared
        per: dict[str, list[int]] = {}
        if pd.storage == "resident":
            parts = pd.partitions
            for i in indices:
                addr = holder.get(parts[i].key)
                if addr in live:
                    per.setdefault(addr, []).append(i)
                else:
                    missing.append((pd, i))
        else:
            for i in indices:
                per.setdefault(ring[i % len(ring)], []).append(i)
        for addr, ids in per.items():
            shares.setdefault(addr, []).append((j, ids))
    return shares, missing


def held_by_dataset(jobs: Sequence[Any], shares: Shares) -> dict[str, dict[str, list[int]]]:
    """``{dataset name: {worker: the partitions it reduces}}`` of ``shares``, as the
    laddu-dask dashboard page shows them."""
    held: dict[str, dict[str, list[int]]] = {}
    for addr, share in shares.items():
        for j, ids in share:
            held.setdefault(jobs[j].prepared.name, {}).setdefault(addr, []).extend(ids)
    return held


@dataclass
class Plan:
    """The shares of one set of jobs under one placement, each worker's layout token (filled
    in by the first evaluation that sends it) and the reduction tree of its calls.

    Attributes
    ----------
    tree : dict
        Who calls whom (:func:`~laddu_dask.runtime.tree.plan_tree`), at fan-in ``fan_in``.
    below : dict
        Each worker's descendants in ``tree`` (:func:`~laddu_dask.runtime.tree.descendants`).
    total : int
        Partitions asked of all the workers.
    routes : dict
        Each relay's ``(token, route)`` (:func:`~laddu_dask.runtime.tree.routes`).
    ready : bool
        Every worker of the plan holds its objects and route (an evaluation of the whole
        plan succeeded): requests name routes instead of carrying their subtree's requests.
    """

    shares: Shares
    datasets: tuple[weakref.ref, ...]
    layouts: dict[str, str] = field(default_factory=dict)
    tree: dict[str, dict] = field(default_factory=dict)
    fan_in: int = 0
    below: dict[str, list[str]] = field(default_factory=dict)
    routes: dict[str, tuple[str, Any]] = field(default_factory=dict)
    ready: bool = False
    total: int = 0

    def asked(self, addr: str) -> int:
        """Partitions asked of the worker ``addr``."""
        return sum(len(ids) for _j, ids in self.shares.get(addr, ()))


class SharePlans:
    """The plans of the last ``size`` sets of jobs (see the module), by key.

    The key is the caller's: the placement's version and, per job, what its share's layout
    depends on besides the placement (reducer, points, reduction). Each job's prepared
    dataset is compared by identity too (held weakly: a plan keeps no dataset alive)."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._plans: OrderedDict[Hashable, Plan] = OrderedDict()

    def get(self, key: Hashable, jobs: Sequence[Any]) -> Plan | None:
        """The plan kept under ``key`` for these very ``jobs``' datasets, or None."""
        plan = self._plans.get(key)
        if plan is None or len(plan.datasets) != len(jobs) or any(
                ref() is not job.prepared for ref, job in zip(plan.datasets, jobs)):
            return None
        self._plans.move_to_end(key)
        return plan

    def put(self, key: Hashable, jobs: Sequence[Any], shares: Shares) -> Plan:
        """Keep ``shares`` of ``jobs`` under ``key`` (the least recently used plan goes)."""
        plan = self._plans[key] = Plan(shares, tuple(weakref.ref(job.prepared) for job in jobs))
        self._plans.move_to_end(key)
        while len(self._plans) > self.size:
            self._plans.popitem(last=False)
        return plan
