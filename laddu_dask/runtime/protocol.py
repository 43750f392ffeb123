"""The worker protocol of cluster evaluations: one request type and one reply type.

A cluster evaluation is one call of the comm handler ``laddu_reduce``
(:mod:`~laddu_dask.runtime.worker`) per called worker, through distributed's connection
pools.  What travels are plain dictionaries (distributed's comms pack them with msgpack);
their keys are typed here, once, and both sides (:mod:`~laddu_dask.runtime.cluster`, the
client; :mod:`~laddu_dask.runtime.worker`, the handler; :mod:`~laddu_dask.runtime.tree`,
the merges of a reduction tree) build and read them through these types.

* :class:`Request`: the worker's share of every job of one evaluation.  Its *layout* (the
  list of :class:`~laddu_dask.runtime.jobs.WorkerJob`) and the reducers and streamed
  datasets it names travel once, pickled under ``objects``, and are named by their tokens
  afterwards, so that an evaluation carries only its parameter points.  In a reduction
  tree it also carries its subtree's requests under ``children``, or, once the worker
  holds it, the token of its cached ``route`` to them.
* :class:`Reply`: partial sums (``jobs``, ``shapes``, ``data``) with the bookkeeping of
  the worker that reduced them (``counts``, ``events``, ``missing``), or one of three
  answers without sums: ``need`` (the worker lacks objects: it restarted), ``error`` (a
  reduction failed: raised again on the client), ``lost`` (a child in a tree that broke).
  A tree's reply merges its members' sums, lists the bookkeeping of the members whose
  share is not complete under ``members`` and only counts the others.

Examples
--------
>>> needs(["layout-1"])
{'need': ['layout-1']}
>>> outcome({"need": ["layout-1"]}), outcome({"jobs": [0], "shapes": [], "data": b""})
('need', 'sums')
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["Member", "Reply", "Request", "answers", "needs", "outcome"]


class Request(TypedDict, total=False):
    """One worker's share of an evaluation, as the client (or its parent in a tree) sends it.

    Attributes
    ----------
    label : str
        The likelihood's terms, as the dashboard names the evaluation.
    layout : str
        The token of the worker's list of :class:`~laddu_dask.runtime.jobs.WorkerJob`.
    objects : bytes or None
        Pickled ``{token: object}`` the worker has not been sent yet (laddu-dask's own).
    points : list of bytes
        The parameter points of every job of the evaluation, by the client's job index
        (:func:`~laddu_dask.runtime.wire.encode_points`); the worker reads those of ``jobs``.
    dtype : str
        The points' dtype.
    jobs : list of int
        The client's index of each job of the layout.
    children : dict
        The requests of the workers below this one (a reduction tree), by address.
    route : str
        Instead of ``children``: the token of this worker's cached
        :data:`~laddu_dask.runtime.tree.Route`, from which it builds its children's requests.
    timeout : float
        Seconds the caller waits for the reply.
    inline : bool
        The call came through laddu-dask's own connection pool
        (:func:`~laddu_dask.runtime.direct_calls.inline_pool`): the worker's end of the
        connection sends its replies without sizing them for an offload first.
    """

    label: str
    layout: str
    objects: bytes | None
    points: list[bytes]
    dtype: str
    jobs: list[int]
    children: dict[str, Request]
    route: str
    timeout: float
    inline: bool


class Member(TypedDict, total=False):
    """One worker's bookkeeping of a reply: what it reduced, or why it gave nothing.

    Attributes
    ----------
    counts : list of int
        Partitions reduced per job of its layout.
    events : int
        Events reduced.
    missing : bytes
        The pickled keys of the partitions it did not hold (moved or lost).
    need : list of str
        Tokens of objects it lacks: sent again.
    error : Exception
        A failed reduction (serialized), raised again on the client.
    lost : Exception or str
        A call that broke (its partitions are asked for again).
    """

    counts: list[int]
    events: int
    missing: bytes
    need: list[str]
    error: Any
    lost: Any


class Reply(Member, total=False):
    """A worker's (or a subtree's) answer: exact partial sums of some jobs
    (:func:`~laddu_dask.runtime.wire.encode_partials`) and the bookkeeping of each member.

    Attributes
    ----------
    jobs : list of int
        The client's job indices of the sums.
    shapes, data
        The encoded partial sums.
    members : dict
        A tree's reply: the :class:`Member` of each member whose share is not complete, by
        address.
    complete : int
        A tree's reply: how many members reduced their whole share (they are not listed).
    partitions : int
        A tree's reply: the partitions those complete members reduced (``events``: their events).
    """

    jobs: list[int]
    shapes: list
    data: bytes
    members: dict[str, Member]
    complete: int
    partitions: int


#: The keys of an answer without partial sums, in the order the client acts on them.
ANSWERS = ("lost", "error", "need")


def needs(tokens: list[str]) -> Reply:
    """The reply of a worker that lacks the objects ``tokens`` (they are sent again)."""
    return {"need": tokens}


def answers(reply: Reply | Member) -> bool:
    """Whether ``reply`` is an answer without partial sums (``need``, ``error``, ``lost``)."""
    return any(k in reply for k in ANSWERS)


def outcome(reply: Reply | Member) -> str:
    """``"lost"``, ``"error"``, ``"need"`` or ``"sums"``: what the client does with ``reply``."""
    return next((k for k in ANSWERS if k in reply), "sums")
