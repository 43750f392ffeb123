"""A reduction tree across workers: who forwards an evaluation to whom, and how replies merge.

A cluster evaluation sends one request per worker that holds partitions. With more such
workers than ``laddu-dask.cluster.fan-in``, the client calls only that many (the *leaders*);
each forwards the requests of the workers below it (:func:`plan_tree`) and merges their
replies with its own (:func:`merge_replies`): the partial sums of the whole subtree added
exactly per job (:meth:`PointPartials.merge <laddu_dask.runtime.jobs.PointPartials.merge>`,
so the result is bitwise that of the flat fan-in).

So that neither the client's work nor a relay's grows with the workers below it:

* **Requests name routes.** The first evaluation of a placement carries each subtree's
  requests under ``"children"`` (:func:`with_children`), and gives every relay its
  *route* (:func:`routes`: each child's layout token, jobs and own route), cached with the
  worker's other objects. Later evaluations send a leader only the evaluation's label and
  points and the token of its route; each relay builds its children's requests from it
  (:func:`child_requests`). A relay that lacks its route (it restarted) says so, forwards
  nothing, and the client asks its subtree again with ``"children"``.
* **Replies list anomalies only.** A member that reduced its whole share is counted
  (``"complete"``, with its events and partitions); only the others are listed under
  ``"members"`` with their bookkeeping (partitions missing, or why they gave nothing), so
  that the client retries a lost or moved share exactly as after a flat call
  (:func:`members`) and checks that every member and partition is accounted for. A child
  that cannot be reached, or answers too late, is listed ``"lost"``; its partitions, and
  those of the workers below it, are asked for again.

Every reply with partial sums names the jobs they belong to (``"jobs"``, the client's job
indices), so that replies of workers holding different jobs merge by job.

Examples
--------
>>> plan_tree(["a", "b", "c", "d", "e"], 2)
{'a': {'b': {}}, 'c': {'d': {}, 'e': {}}}
>>> plan_tree(["a", "b", "c", "d", "e", "f", "g"], 2)
{'a': {'b': {'c': {}}, 'd': {}}, 'e': {'f': {}, 'g': {}}}
>>> plan_tree(["a", "b"], 4)
{'a': {}, 'b': {}}
>>> tree = plan_tree(["a", "b", "c", "d", "e"], 2)
>>> descendants(tree)
{'b': [], 'a': ['b'], 'd': [], 'e': [], 'c': ['d', 'e']}
>>> names = iter(["route-1", "route-2"])
>>> made = routes(tree, {x: f"layout-{x}" for x in "abcde"}, {x: [0] for x in "abcde"}, lambda: next(names))
>>> made["a"]
('route-1', {'b': ('layout-b', [0], None)})
>>> made["c"][1]["e"]
('layout-e', [0], None)
>>> child_requests({"label": "nll", "dtype": "<f8", "points": [b""]}, {"b": ("layout-b", [0], None)})
{'b': {'label': 'nll', 'dtype': '<f8', 'points': [b''], 'layout': 'layout-b', 'jobs': [0]}}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from distributed.protocol import to_serialize

from laddu_dask.runtime.jobs import PointPartials
from laddu_dask.runtime.protocol import ANSWERS, Member, Reply, Request, answers
from laddu_dask.runtime.wire import decode_partials, encode_partials

__all__ = ["Route", "child_requests", "descendants", "members", "merge_replies", "plan_tree",
           "routes", "with_children"]

#: A relay's children: ``{address: (layout token, client job indices, its own route's token or None)}``.
Route = dict[str, tuple[str, list[int], str | None]]

def plan_tree(addresses: list[str], fan_in: int) -> dict[str, dict]:
    """Who calls whom: ``{address: its children's tree}``, at most ``fan_in`` calls per
    caller, the addresses in contiguous balanced groups (deterministic for the same list)."""
    if fan_in < 2:
        raise ValueError(f"fan-in must be at least 2, got {fan_in}")
    if len(addresses) <= fan_in:
        return {a: {} for a in addresses}
    edges = [round(k * len(addresses) / fan_in) for k in range(fan_in + 1)]
    out: dict[str, dict] = {}
    for lo, hi in zip(edges[:-1], edges[1:]):
        group = addresses[lo:hi]
        if group:
            out[group[0]] = plan_tree(group[1:], fan_in)
    return out


def with_children(payloads: dict[str, Request], tree: dict[str, dict]) -> dict[str, Request]:
    """The requests the caller sends: each top address's payload, its subtree's requests
    under ``"children"``."""
    out = {}
    for addr, below in tree.items():
        request = Request(payloads[addr])
        if below:
            request["children"] = with_children(payloads, below)
        out[addr] = request
    return out


def child_requests(request: Request, route: Route) -> dict[str, Request]:
    """The requests a relay forwards to its children when its request names a cached route:
    each child's layout, jobs and own route from ``route``, the evaluation's label, dtype and
    points from ``request`` (the caller sets the timeout)."""
    base = {k: request[k] for k in ("label", "dtype", "points") if k in request}
    out = {}
    for addr, (layout, jobs, below) in route.items():
        child = Request(base, layout=layout, jobs=jobs)
        if below is not None:
            child["route"] = below
        out[addr] = child
    return out


def routes(tree: dict[str, dict], layouts: dict[str, str], jobs: dict[str, list[int]],
           token: Callable[[], str]) -> dict[str, tuple[str, Route]]:
    """Every relay of ``tree`` (a caller with children) and its route, ``(token, route)``:
    what it needs to build its children's requests from the evaluation's label and points
    alone (:func:`child_requests`). ``token()`` names a new route; the routes of deeper
    relays are made first, so that their parent's route can name them."""
    out: dict[str, tuple[str, Route]] = {}

    def walk(below: dict[str, dict]) -> None:
        for addr, grand in below.items():
            if grand:
                walk(grand)
                out[addr] = (token(), {c: (layouts[c], jobs[c], out[c][0] if c in out else None)
                                       for c in grand})

    walk(tree)
    return out


def descendants(tree: dict[str, dict]) -> dict[str, list[str]]:
    """Every address of ``tree`` and the addresses below it (each relay's whole subtree)."""
    out: dict[str, list[str]] = {}

    def walk(below: dict[str, dict]) -> list[str]:
        everyone = []
        for addr, grand in below.items():
            out[addr] = walk(grand)
            everyone += [addr, *out[addr]]
        return everyone

    walk(tree)
    return out


def merge_replies(own_address: str, own: Reply, children: dict[str, Reply | Exception]) -> Reply:
    """A relay's reply: its own and its children's partial sums merged per job; each member
    whose share is not complete (it lacked partitions, or gave an answer without sums, or its
    call broke: ``{"lost": ...}``) listed under ``"members"``, and the complete ones only
    counted (``"complete"``, with their ``"events"`` and ``"partitions"``), so that a
    subtree's reply stays as small as its anomalies."""
    by_job: dict[int, list[PointPartials]] = {}
    out_members: dict[str, Member] = {}
    complete = events = partitions = 0

    def take(addr: str, reply: Any) -> None:
        nonlocal complete, events, partitions
        if isinstance(reply, BaseException):
            out_members[addr] = {"lost": f"{type(reply).__name__}: {reply}"}
            return
        if answers(reply):
            out_members[addr] = {k: to_serialize(reply[k]) if k == "error" else reply[k]
                                 for k in ANSWERS if k in reply}
            return
        for j, partial in zip(reply["jobs"], decode_partials(reply["shapes"], reply["data"]), strict=True):
            if partial is not None:
                by_job.setdefault(j, []).append(partial)
        if "members" in reply:  # a subtree: its listed members as they are (errors sent on again)
            out_members.update({a: {k: to_serialize(v) if k == "error" else v for k, v in m.items()}
                                for a, m in reply["members"].items()})
            complete += reply["complete"]
            events += reply["events"]
            partitions += reply["partitions"]
        elif reply.get("missing"):
            out_members[addr] = {k: reply[k] for k in ("counts", "events", "missing")}
        else:
            complete += 1
            events += reply["events"]
            partitions += sum(reply["counts"])

    take(own_address, own)
    for addr, reply in children.items():
        take(addr, reply)
    jobs = sorted(by_job)
    shapes, data = encode_partials([PointPartials.merge(by_job[j]) for j in jobs])
    return Reply(jobs=jobs, shapes=shapes, data=data, members=out_members, complete=complete,
                 events=events, partitions=partitions)


def members(addr: str, reply: Reply | Exception) -> tuple[list[tuple[int, PointPartials]], dict[str, Member],
                                                          tuple[int, int, int]]:
    """What the client reads of one call's reply: the partial sums as ``(job, sums)``, the
    bookkeeping of each listed member (for a flat call, the worker itself; an exception:
    ``"lost"``) and the complete members of a subtree as ``(members, events, partitions)``."""
    if isinstance(reply, BaseException):
        return [], {addr: {"lost": reply}}, (0, 0, 0)
    if answers(reply):
        return [], {addr: reply}, (0, 0, 0)
    partials = [(j, p) for j, p in zip(reply["jobs"], decode_partials(reply["shapes"], reply["data"]),
                                       strict=True) if p is not None]
    if "members" in reply:
        return partials, reply["members"], (reply["complete"], reply["events"], reply["partitions"])
    return partials, {addr: reply}, (0, 0, 0)
