"""Waits on a ``distributed`` cluster: each has a timeout and a typed error.

Three timeouts bound every wait on the cluster.  They are Dask config keys (set them
with ``dask.config.set``, a Dask YAML file, or ``DASK_LADDU_DASK__CLUSTER__...``
environment variables), read when a wait starts:

``laddu-dask.cluster.worker-timeout`` (default ``60s``)
    how long to wait for a worker when the cluster has none (at its start, or after
    all its workers died and before their nannies or the cluster restarted them), and
    for the scheduler to answer a question.
``laddu-dask.cluster.preparation-timeout`` (default ``1 hour``)
    how long the preparation of one dataset (or another graph of tasks) may take.
``laddu-dask.cluster.evaluation-timeout`` (default ``10 minutes``)
    how long one evaluation may wait for a worker's partial sums.

A wait that runs past its timeout raises :class:`~laddu_dask.errors.ClusterTimeoutError`
saying what it waited for; a scheduler that is gone raises
:class:`~laddu_dask.errors.SchedulerLostError` at once.  A long wait looks every
half second whether the scheduler and the workers it waits on are still there, so
a lost worker is noticed while its task would never finish; a short one (an
evaluation of a few milliseconds) costs no extra round trip to the scheduler.

Examples
--------
>>> import dask
>>> from laddu_dask.cluster_waits import cluster_timeout
>>> cluster_timeout("worker-timeout")
60.0
>>> with dask.config.set({"laddu-dask.cluster.worker-timeout": "5 minutes"}):
...     cluster_timeout("worker-timeout")
300.0
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable
from typing import Any

from dask.utils import format_time

from laddu_dask import config
from laddu_dask.config import DEFAULTS
from laddu_dask.errors import ClusterTimeoutError, SchedulerLostError

#: The cluster timeouts and their defaults (Dask config ``laddu-dask.cluster.<name>``).
TIMEOUTS = DEFAULTS["laddu-dask"]["cluster"]

#: Seconds a wait runs before it looks again at the scheduler and the workers.
POLL = 0.5


def cluster_timeout(name: str) -> float:
    """Seconds of the cluster timeout ``name`` (see :data:`TIMEOUTS`), from the Dask config.

    Raises
    ------
    ParameterError
        Naming the key unless it is a positive, finite duration.
    """
    return config.duration(f"cluster.{name}")


class Deadline:
    """The end of a wait bounded by the cluster timeout ``name``."""

    def __init__(self, name: str, times: int = 1) -> None:
        self.name = name
        self.seconds = cluster_timeout(name) * max(1, times)
        self.end = time.monotonic() + self.seconds

    def remaining(self) -> float:
        """Seconds left (never below a millisecond, so that it can be waited on)."""
        return max(self.end - time.monotonic(), 1e-3)

    def expired(self) -> bool:
        """Whether the timeout has passed."""
        return time.monotonic() >= self.end

    def error(self, what: str, waiting_for: str) -> ClusterTimeoutError:
        """The error of a wait for ``waiting_for`` that ran past this deadline."""
        return ClusterTimeoutError(
            f"{what} did not finish within {format_time(self.seconds)} (Dask config "
            f"laddu-dask.cluster.{self.name}): still waiting for {waiting_for}"
        )


def scheduler_address(client: Any) -> str:
    """The address of ``client``'s scheduler, for messages."""
    return getattr(getattr(client, "scheduler", None), "address", None) or "(unknown address)"


def check_scheduler(client: Any) -> None:
    """Raise :class:`SchedulerLostError` unless ``client`` is connected (no round trip)."""
    if client.status != "running":
        raise SchedulerLostError(
            f"the Dask scheduler at {scheduler_address(client)} is gone (the client is "
            f"{client.status}); what was prepared on its workers is lost: connect a new client "
            "and prepare again under a new Execution"
        )


def ask_scheduler(client: Any, method: Any, **kwargs: Any) -> Any:
    """``await method(**kwargs)`` on the scheduler, within ``worker-timeout``.

    Raises
    ------
    SchedulerLostError
        When the scheduler is gone or did not answer in time.
    """
    check_scheduler(client)
    seconds = cluster_timeout("worker-timeout")
    try:
        return client.sync(method, **kwargs, callback_timeout=seconds)
    except (OSError, TimeoutError) as err:
        check_scheduler(client)
        raise SchedulerLostError(
            f"the Dask scheduler at {scheduler_address(client)} did not answer within "
            f"{format_time(seconds)} (Dask config laddu-dask.cluster.worker-timeout): {err}"
        ) from err


def scheduler_workers(client: Any) -> dict[str, dict[str, Any]]:
    """The workers the scheduler knows (address -> its identity), asked with a timeout."""
    info = ask_scheduler(client, client.scheduler.identity, n_workers=-1)
    return dict(info.get("workers", {}))


def running_workers(client: Any, statuses: tuple[str, ...] = ("running",)) -> dict[str, int]:
    """Addresses of the workers in one of ``statuses`` (running ones) and their threads."""
    return {addr: int(w.get("nthreads", 1)) for addr, w in scheduler_workers(client).items()
            if w.get("status", "running") in statuses}


def who_has(client: Any, keys: list[Any]) -> dict[Any, list[str]]:
    """The workers holding each of ``keys`` (Dask's ``who_has``), asked with a timeout."""
    if not keys:
        return {}
    return dict(ask_scheduler(client, client.scheduler.who_has, keys=list(keys)))


def wait_for_workers(client: Any, what: str) -> dict[str, int]:
    """The running workers; waits up to ``worker-timeout`` while there is none.

    Raises
    ------
    ClusterTimeoutError
        When no worker joined within the timeout (the message says for how long).
    """
    deadline: Deadline | None = None
    delay = 0.05
    while True:
        workers = running_workers(client)
        if workers:
            return workers
        deadline = deadline or Deadline("worker-timeout")
        if deadline.expired():
            raise ClusterTimeoutError(
                f"{what}: the cluster at {scheduler_address(client)} had no running worker for "
                f"{format_time(deadline.seconds)} (Dask config laddu-dask.cluster.worker-timeout); "
                "waited for at least 1 worker"
            )
        time.sleep(min(delay, deadline.remaining()))
        delay = min(2 * delay, POLL)


def scheduler_lost(client: Any, err: BaseException) -> SchedulerLostError | None:
    """The :class:`SchedulerLostError` that ``err`` (raised by a wait) means, or None.

    distributed cancels every future of a client whose scheduler connection broke
    (``FutureCancelledError``, reason ``scheduler-connection-lost``), and a wait on a
    closed connection raises ``OSError``: both mean the scheduler is gone.
    """
    reason = str(getattr(err, "reason", "") or err)
    if "scheduler-connection-lost" in reason or (isinstance(err, OSError) and client.status != "running"):
        return SchedulerLostError(
            f"the Dask scheduler at {scheduler_address(client)} is gone (lost the connection while "
            "waiting); what was prepared or computed on its workers is lost: connect a new client "
            "and run again under a new Execution"
        )
    return None


def start_fetch(client: Any, futures: list[Any]) -> Any:
    """The fetch of finished ``futures``' results, started on the client's event loop: a
    :class:`concurrent.futures.Future` of their list, to wait on in slices, never cancelled.

    ``future.result(timeout)`` cancels a fetch that runs past its timeout, and distributed
    shares one pending fetch among all that a client makes at once: cancelled while it waited
    for its turn, that shared fetch stays cancelled, and every later fetch of the client fails
    at once with it (Python 3.11 turns the ``CancelledError`` into ``UnboundLocalError``). A
    slow worker (a busy one holding 2,000 tasks' results) made a preparation spin there.
    """
    return asyncio.run_coroutine_threadsafe(client.gather(futures, asynchronous=True),
                                            client.loop.asyncio_loop)


def wait_for_futures(client: Any, pending: dict[Hashable, tuple[str | None, Any]], deadline: Deadline,
                     what: str, is_lost: Callable[[BaseException], bool],
                     on_result: Callable[[Hashable, Any], None] | None = None, fetch: bool = True,
                     ) -> tuple[dict[Hashable, Any], list[Hashable]]:
    """Results of ``{key: (worker or None, future)}``, and the keys whose worker was lost
    (``fetch=False``: ``None`` for each finished task, whose result stays on its worker).

    A future pinned to a worker (``allow_other_workers=False``) never finishes once
    that worker is gone: it is cancelled and its key returned among the lost ones.  A
    task that fails with an error ``is_lost`` accepts is lost too; any other error is
    raised.  While the cluster has no worker at all (unpinned tasks wait for one),
    ``worker-timeout`` applies.  ``on_result(key, value)`` is called as each result comes.

    Raises
    ------
    ClusterTimeoutError
        When ``deadline`` passes (the message names the busy workers).
    SchedulerLostError
        When the scheduler is gone (also where distributed cancelled the futures for it).
    """
    from concurrent.futures import CancelledError

    try:
        return _wait_for_futures(client, pending, deadline, what, is_lost, on_result, fetch)
    except (CancelledError, OSError) as err:
        lost = scheduler_lost(client, err)
        if lost is None:
            raise
        raise lost from err


def _wait_for_futures(client: Any, pending: dict[Hashable, tuple[str | None, Any]], deadline: Deadline,
                      what: str, is_lost: Callable[[BaseException], bool],
                      on_result: Callable[[Hashable, Any], None] | None, fetch: bool = True,
                      ) -> tuple[dict[Hashable, Any], list[Hashable]]:
    from distributed import wait

    results: dict[Hashable, Any] = {}
    lost: list[Hashable] = []
    left = dict(pending)
    fetching: list[tuple[list[Hashable], Any]] = []  # batches of results on their way (start_fetch)
    started: set[Hashable] = set()
    no_workers: Deadline | None = None
    while left:
        try:  # all at once (one wait per pass: a wait for the first of 2,000 tasks, made 2,000
            # times, took seconds)
            wait([f for _, f in left.values()], timeout=min(POLL, deadline.remaining()))
            quiet = False
        except TimeoutError as err:
            # distributed's sync() raises it with its own frame in the traceback, a frame its
            # closure refers to: a cycle that kept these futures (and their keys on the
            # cluster) until the garbage collector ran.  Without the traceback they go at once.
            err.__traceback__ = None
            quiet = True
        ready: dict[str | None, list[Hashable]] = {}  # finished since the last pass, by worker
        for key, (addr, fut) in left.items() if fetch else ():
            if fut.status == "finished" and key not in started:
                ready.setdefault(addr, []).append(key)
        for keys in ready.values():  # one fetch each (a lost worker's is dropped below)
            fetching.append((keys, start_fetch(client, [left[key][1] for key in keys])))
            started.update(keys)
        patience = time.monotonic() + min(POLL, deadline.remaining())  # for all fetches of a pass
        for keys, fetched in list(fetching):
            try:
                values = fetched.result(timeout=max(0.0, patience - time.monotonic()))
            except TimeoutError:  # a worker slow to send them: the fetch goes on, the checks
                quiet = True      # below run (the deadline's among them)
                continue
            fetching.remove((keys, fetched))
            for key, value in zip(keys, values, strict=True):
                results[key] = value
                del left[key]
                if on_result is not None:
                    on_result(key, value)
        for key, (addr, fut) in list(left.items()):
            if key in started:  # its fetch is under way
                continue
            if fut.status == "finished" and not fetch:
                results[key] = None
            elif fut.status == "error":
                if not is_lost(fut.exception(timeout=POLL)):
                    fut.result()  # raises the task's own error, with its traceback
                lost.append(key)
            elif fut.status in ("cancelled", "lost") and addr is not None:
                lost.append(key)
            elif fut.status == "cancelled":
                check_scheduler(client)
                fut.result()  # raises distributed's FutureCancelledError, naming the task
            else:  # pending, or lost and being recomputed
                continue
            del left[key]
        if not left or not quiet:
            continue
        check_scheduler(client)
        workers = scheduler_workers(client)
        for key, (addr, fut) in list(left.items()):
            if addr is not None and addr not in workers:
                fut.cancel()
                lost.append(key)
                del left[key]
        fetching = [(keys, fetched) for keys, fetched in fetching if keys[0] in left]
        if not workers:
            no_workers = no_workers or Deadline("worker-timeout")
            if no_workers.expired():
                raise no_workers.error(what, "a worker to join the cluster, which has none")
        else:
            no_workers = None
        if left and deadline.expired():
            addrs = sorted({addr for addr, _ in left.values() if addr})
            if len(addrs) < len(left):  # tasks Dask places: say which workers are busy
                busy = ask_scheduler(client, client.scheduler.processing)
                addrs += sorted({a for a, keys in busy.items() if keys} - set(addrs)) or ["any worker"]
            raise deadline.error(what, f"{len(left)} task(s) on {', '.join(addrs)}")
    return results, lost


def gather(client: Any, futures: Any, what: str, timeout: str = "preparation-timeout",
           times: int = 1, on_result: Callable[[int, Any], None] | None = None) -> Any:
    """The results of ``futures`` (one or a list), within the cluster timeout ``timeout``
    (``times`` over, for as many tasks that each may take it); ``on_result(i, value)`` is
    called as the ``i``-th comes.  Every wait of laddu-dask on a cluster's futures goes
    through here (or :func:`wait_for_futures`).

    Raises
    ------
    ClusterTimeoutError, SchedulerLostError
        As :func:`wait_for_futures`; the futures are cancelled on a timeout.
    """
    single = not isinstance(futures, list)
    flat = [futures] if single else list(futures)
    pending = {k: (None, f) for k, f in enumerate(flat)}
    try:
        results, _ = wait_for_futures(client, pending, Deadline(timeout, times), what,
                                      lambda err: False, on_result)
    except ClusterTimeoutError:
        client.cancel(flat)
        raise
    out = [results[k] for k in range(len(flat))]
    return out[0] if single else out


def distributed_client(scheduler: Any = None) -> Any:
    """The ``distributed`` client that :func:`dask.compute` would run on (``scheduler``, or
    the current default), or None when it would run in this process."""
    if scheduler is not None and not hasattr(scheduler, "compute"):
        return None
    if scheduler is not None:
        return scheduler
    from dask.base import get_scheduler

    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - distributed is a dependency
        return None
    client = getattr(get_scheduler(), "__self__", None)
    return client if isinstance(client, Client) else None


def compute(*collections: Any, what: str, **kwargs: Any) -> tuple[Any, ...]:
    """:func:`dask.compute` of ``collections``; on a ``distributed`` cluster (the default
    client, or ``scheduler=client``) its wait has ``preparation-timeout`` and typed errors
    (see :func:`gather`)."""
    import dask

    client = distributed_client(kwargs.get("scheduler"))
    if client is None:
        return dask.compute(*collections, **kwargs)
    check_scheduler(client)
    return tuple(gather(client, client.compute(list(collections)), what))
