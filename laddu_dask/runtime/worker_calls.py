"""The calls of a cluster evaluation: every called worker at once, and what "lost" means.

:func:`call_all` calls the workers of one evaluation round through distributed's
connection pool, each with its :class:`~laddu_dask.runtime.protocol.Request`, and waits
for them all within the evaluation's deadline, giving up on a worker that left.
:func:`is_lost_worker_error` sorts a broken call into "the worker or its connection went
away" (its partitions are asked for again) and "the work failed" (raised).

Examples
--------
>>> is_lost_worker_error(OSError("Timed out trying to connect"))
True
>>> is_lost_worker_error(ValueError("bad file"))
False
"""

from __future__ import annotations

import asyncio
from collections.abc import Container
from typing import Any

from laddu_dask.cluster_waits import POLL, Deadline, check_scheduler
from laddu_dask.errors import ClusterError
from laddu_dask.runtime.direct_calls import is_inline
from laddu_dask.runtime.protocol import Reply, Request

__all__ = ["WorkerLostError", "call_all", "is_lost_worker_error"]

#: Errors that mean "the worker (or its connection) is gone", not "the work failed".
_LOST = ("CommClosedError", "KilledWorker", "FutureCancelledError", "StreamClosedError",
         "OSError", "ConnectionError", "TimeoutError", "CancelledError")


class WorkerLostError(ClusterError):
    """A worker went away while it served an evaluation; the evaluation asks again."""


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


async def call_all(rpc: Any, client: Any, removed: Container[str], payloads: dict[str, Request],
                   deadline: Deadline) -> dict[str, Reply | Exception]:
    """Call every worker of ``payloads`` at once through the connection pool ``rpc`` (of
    ``client``); a reply, or the error of a broken call, per worker.  A call to a worker
    that left (in ``removed``, or unknown to the scheduler while its call is slow) is
    given up as a :class:`WorkerLostError`.

    Raises
    ------
    SchedulerLostError, ClusterTimeoutError
        The scheduler is gone, or a call ran past ``deadline``.
    """

    inline = is_inline(rpc)

    async def one(addr: str, payload: Request) -> Reply | Exception:
        if inline:
            payload = Request(payload, inline=True)
        try:
            return await rpc(addr).laddu_reduce(request=payload)
        except Exception as err:  # noqa: BLE001 - a broken call is sorted out by the caller
            return err

    tasks = {addr: asyncio.ensure_future(one(addr, p)) for addr, p in payloads.items()}
    out: dict[str, Reply | Exception] = {}
    while tasks:
        done, _ = await asyncio.wait(list(tasks.values()), timeout=min(POLL, deadline.remaining()),
                                     return_when=asyncio.FIRST_COMPLETED)
        known: Any = ()
        if not done and client.status == "running":  # a slow call: is its worker still there?
            try:
                info = await asyncio.wait_for(rpc(client.scheduler.address).identity(n_workers=-1),
                                              POLL)
                known = info.get("workers", {})
            except (TimeoutError, OSError):
                known = tasks  # the scheduler is slow: assume they are
        for addr, task in list(tasks.items()):
            if task.done():
                out[addr] = task.result()
            elif addr in removed or (not done and addr not in known):
                task.cancel()  # it left: its call would never return
                out[addr] = WorkerLostError(f"worker {addr} left during an evaluation")
            else:
                continue
            del tasks[addr]
        if tasks and (deadline.expired() or client.status != "running"):
            for task in tasks.values():
                task.cancel()
            check_scheduler(client)
            raise deadline.error("an evaluation", f"worker(s) {', '.join(sorted(tasks))}")
    return out
