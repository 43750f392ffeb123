"""A reduction tree across workers: who forwards an evaluation to whom, and how replies merge.

A cluster evaluation sends one request per worker that holds partitions. With more such
workers than ``laddu-dask.cluster.fan-in``, the client calls only that many (the *leaders*);
each request carries, under ``"children"``, the requests of the workers below it
(:func:`plan_tree`), which the leader forwards and whose replies it merges with its own
(:func:`merge_replies`): the partial sums of the whole subtree added exactly per job
(:meth:`PointPartials.merge <laddu_dask.runtime.jobs.PointPartials.merge>`, so the result is
bitwise that of the flat fan-in), and each member's bookkeeping (partitions reduced and
missing, events, or why it gave nothing) kept per member, so that the client retries a lost
or moved share exactly as it does after a flat call (:func:`members`). A child that cannot
be reached, or answers too late, is reported ``"lost"``; its partitions are asked for again.

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
"""

from __future__ import annotations

from typing import Any

from distributed.protocol import to_serialize

from laddu_dask.runtime.jobs import PointPartials
from laddu_dask.runtime.protocol import ANSWERS, Member, Reply, Request, answers
from laddu_dask.runtime.wire import decode_partials, encode_partials

__all__ = ["members", "merge_replies", "plan_tree", "with_children"]

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


def merge_replies(own_address: str, own: Reply, children: dict[str, Reply | Exception]) -> Reply:
    """A leader's reply: its own and its children's partial sums merged per job, and every
    member's bookkeeping under ``"members"`` (a child's exception as ``{"lost": ...}``)."""
    by_job: dict[int, list[PointPartials]] = {}
    out_members: dict[str, Member] = {}

    def take(addr: str, reply: Any) -> None:
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
        if "members" in reply:  # a subtree: its members as they are (errors sent on again)
            out_members.update({a: {k: to_serialize(v) if k == "error" else v for k, v in m.items()}
                                for a, m in reply["members"].items()})
        else:
            out_members[addr] = {k: reply[k] for k in ("counts", "events", "missing") if k in reply}

    take(own_address, own)
    for addr, reply in children.items():
        take(addr, reply)
    jobs = sorted(by_job)
    shapes, data = encode_partials([PointPartials.merge(by_job[j]) for j in jobs])
    return Reply(jobs=jobs, shapes=shapes, data=data, members=out_members)


def members(addr: str, reply: Reply | Exception) -> tuple[list[tuple[int, PointPartials]], dict[str, Member]]:
    """What the client reads of one call's reply: the partial sums as ``(job, sums)`` and each
    member's bookkeeping (for a flat call, the worker itself; an exception: ``"lost"``)."""
    if isinstance(reply, BaseException):
        return [], {addr: {"lost": reply}}
    if answers(reply):
        return [], {addr: reply}
    partials = [(j, p) for j, p in zip(reply["jobs"], decode_partials(reply["shapes"], reply["data"]),
                                       strict=True) if p is not None]
    if "members" in reply:
        return partials, reply["members"]
    return partials, {addr: reply}
