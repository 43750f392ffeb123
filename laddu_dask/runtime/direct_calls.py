"""Worker calls made from the evaluating thread, on its own event loop and connection pool.

An evaluation on a cluster is one call per worker.  Sent through ``client.sync``, it is
handed to the client's event-loop thread and its replies handed back: two thread
switches that cost 0.3-0.5 ms of an evaluation of a few milliseconds.  :class:`DirectCalls`
runs the same coroutine in the calling thread instead, on an event loop and a
:class:`distributed.core.ConnectionPool` of that thread (with the client's security
settings), opened at the first call and kept for the next ones.  The comms speak
Dask's protocol to the workers' own servers: nothing new listens anywhere.

Those comms are this thread's own, so they skip distributed's offload check: before each
message, a comm sizes it (``dask.sizeof``, some 40 microseconds for a request of a few
dozen bytes, more than packing it) to decide whether to serialize it in another thread,
which here would only make the same waiting thread wait longer.  The requests sent on them
say so (``inline``): the worker's end of such a connection, which serves laddu-dask's calls
alone, skips the check for its replies too.  A relay of a reduction tree calls its children
through a pool of the same kind (:func:`inline_pool`).

Where the calling thread already runs an event loop (a Jupyter cell, an asynchronous
client), the coroutine goes through ``client.sync`` as before; so it does when
``laddu-dask.cluster.direct-calls`` is false.

Examples
--------
>>> from laddu_dask.runtime.direct_calls import loop_running
>>> loop_running()
False
"""

from __future__ import annotations

import asyncio
import functools
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from laddu_dask import config

if TYPE_CHECKING:  # distributed is imported when a client first evaluates, not with laddu_dask
    from distributed.core import ConnectionPool


def loop_running() -> bool:
    """Whether this thread is inside a running event loop (a coroutine cannot be run here)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@functools.cache
def _inline_pool() -> type:
    """:class:`distributed.core.ConnectionPool` whose comms (de)serialize in the calling
    thread without sizing each message first (``allow_offload`` off, see the module)."""
    from distributed.core import ConnectionPool

    class InlinePool(ConnectionPool):
        async def connect(self, addr: str, timeout: float | None = None) -> Any:
            comm = await super().connect(addr, timeout)
            comm.allow_offload = False
            return comm

    return InlinePool


def inline_pool(connection_args: dict, timeout: Any) -> ConnectionPool:
    """A new (unstarted) connection pool of laddu-dask's own worker calls: its comms skip
    the offload sizing, and its requests say so (``inline``) so that the worker's end of
    each connection skips it too."""
    return _inline_pool()(limit=64, deserialize=True, connection_args=connection_args, timeout=timeout)


def is_inline(pool: Any) -> bool:
    """Whether ``pool`` is one of :func:`inline_pool`'s (so laddu-dask's calls alone use it)."""
    return isinstance(pool, _inline_pool())


def abort_comms(pool: ConnectionPool) -> None:
    """Abort every comm of ``pool`` at once (no close handshake: nothing awaits here)."""
    for comms in (*pool.available.values(), *pool.occupied.values()):
        for comm in list(comms):
            comm.abort()


def _close(opened: list[tuple[asyncio.AbstractEventLoop, ConnectionPool]]) -> None:
    """Abort the comms of every pool and close the loops (none of them is running)."""
    while opened:
        loop, pool = opened.pop()
        abort_comms(pool)
        if not loop.is_running():
            loop.close()


class DirectCalls:
    """The worker calls of one client's evaluations (one per client, kept by its
    :class:`~laddu_dask.runtime.placement.WorkerWatch`)."""

    def __init__(self, client: Any) -> None:
        self._client = weakref.ref(client)
        self._local = threading.local()
        self._opened: list[tuple[asyncio.AbstractEventLoop, ConnectionPool]] = []
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _close, self._opened)

    def _mine(self) -> tuple[asyncio.AbstractEventLoop, ConnectionPool]:
        opened = getattr(self._local, "opened", None)
        if opened is None or opened[0].is_closed():
            client = self._client()
            loop = asyncio.new_event_loop()
            pool = inline_pool(client.connection_args, client.rpc.timeout)
            loop.run_until_complete(pool.start())
            opened = self._local.opened = (loop, pool)
            with self._lock:
                self._opened.append(opened)
        return opened

    def run(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """``fn(rpc, *args)`` to completion, ``rpc`` being this thread's connection pool (or
        the client's, through ``client.sync``, where this thread runs an event loop)."""
        client = self._client()
        if client is None or client.asynchronous or loop_running() or not config.get("cluster.direct-calls"):
            return client.sync(fn, client.rpc, *args)
        loop, pool = self._mine()
        return loop.run_until_complete(fn(pool, *args))

    def close(self) -> None:
        """Close every thread's comms and loop (each is opened again at its next call)."""
        with self._lock:
            _close(self._opened)
