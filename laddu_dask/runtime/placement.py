"""Where a cluster's prepared partitions are, and where they should be.

Dask places the prepared partitions (they are ordinary task results) and moves or
recomputes them when workers leave.  The client only needs to know, at each
evaluation, which worker holds which partition, so that it asks each worker for
exactly its own.  It caches Dask's ``who_has`` and asks again only when something
changed: a worker joined or left (events that :class:`WorkerWatch` counts as they
arrive, at no cost to an evaluation), or a worker did not hold what it was asked for.

When the workers changed, :func:`balance` says which partitions to move so that each
worker holds a share proportional to its threads (a new worker gets its share at the
next evaluation).

Examples
--------
>>> balance({"a": [0, 1, 2, 3], "b": []}, {"a": 1, "b": 1})
[(2, 'b'), (3, 'b')]
>>> balance({"a": [0, 1], "b": [2, 3]}, {"a": 1, "b": 1})
[]
"""

from __future__ import annotations

import functools
import threading
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from laddu_dask.runtime.direct_calls import DirectCalls

#: The scheduler's events (on the topic of a worker's address) that change the worker set.
WORKER_EVENTS = ("add-worker", "remove-worker")
#: The topic on which a worker announces that it joined (``{"worker": address}``).
TOPIC = "laddu-dask-worker-joined"


def targets(n: int, threads: Mapping[str, int]) -> dict[str, int]:
    """Partitions each worker should hold: ``n`` shared in proportion to threads.

    Largest remainders first, ties to the earlier address, so the result is
    deterministic.

    Examples
    --------
    >>> targets(5, {"a": 2, "b": 1, "c": 1})
    {'a': 3, 'b': 1, 'c': 1}
    """
    total = sum(threads.values())
    if not total:
        return {}
    addrs = sorted(threads)
    exact = {a: n * threads[a] / total for a in addrs}
    out = {a: int(exact[a]) for a in addrs}
    rest = n - sum(out.values())
    for a in sorted(addrs, key=lambda a: (-(exact[a] - out[a]), a))[:rest]:
        out[a] += 1
    return out


def balance(held: Mapping[str, Sequence[int]], threads: Mapping[str, int]) -> list[tuple[int, str]]:
    """Moves ``(partition, destination)`` that bring ``held`` (worker -> partitions) to
    :func:`targets`; workers missing from ``threads`` are left alone (they are leaving).
    """
    n = sum(len(v) for a, v in held.items() if a in threads)
    want = targets(n, threads)
    spare = [i for a in sorted(held) if a in want for i in sorted(held[a])[want[a]:]]
    moves = []
    for addr in sorted(want):
        for _ in range(want[addr] - len(held.get(addr, ()))):
            if spare:
                moves.append((spare.pop(0), addr))
    return moves


def choose(holders: Sequence[str], live: Mapping[str, int], load: dict[str, int]) -> str | None:
    """The live holder with the least assigned so far (``load`` is updated), or ``None``."""
    alive = [h for h in holders if h in live]
    if not alive:
        return None
    best = min(alive, key=lambda h: (load.get(h, 0), h))
    load[best] = load.get(best, 0) + 1
    return best


class WorkerWatch:
    """Counts the workers that joined or left one client's cluster, as events arrive.

    A worker that joins announces itself on the topic :data:`TOPIC` (the plugin of
    :mod:`laddu_dask.runtime.worker` does it when it is set up); a worker that leaves
    is announced by the scheduler on the topic named by the worker's address, to which
    the watch subscribes for every worker it has seen (:meth:`follow`).  No event
    costs an evaluation anything: the counts are read at its start.  (The scheduler's
    topic ``"all"`` would carry both, but its subscribers are sent their own
    ``remove-client`` event while they close, which the scheduler logs as an error.)

    Attributes
    ----------
    generation : int
        Incremented by every worker that joins or leaves.
    removed : dict of str to float
        Workers that left, and when (``time.monotonic``).
    """

    _watches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    _lock = threading.Lock()

    def __init__(self, client: Any) -> None:
        self.generation = 0
        self.removed: dict[str, float] = {}
        self.followed: set[str] = set()
        self.plugin_registered = False
        self.calls = DirectCalls(client)  # the client's evaluation calls, from each thread
        self._client = weakref.ref(client)
        client.subscribe_topic(TOPIC, self._joined)

    def _joined(self, event: Any) -> None:
        msg = event[1] if isinstance(event, tuple) and len(event) == 2 else {}
        self.generation += 1
        if isinstance(msg, dict):
            self.removed.pop(msg.get("worker"), None)

    def _worker_event(self, addr: str, event: Any) -> None:
        msg = event[1] if isinstance(event, tuple) and len(event) == 2 else {}
        if isinstance(msg, dict) and msg.get("action") in WORKER_EVENTS:
            self.generation += 1
            if msg["action"] == "remove-worker":
                self.removed[addr] = time.monotonic()
            else:
                self.removed.pop(addr, None)

    def follow(self, addrs: Iterable[str]) -> None:
        """Be told when any of the workers ``addrs`` leaves."""
        client = self._client()
        for addr in set(addrs) - self.followed:
            if client is not None and addr not in client._event_handlers:  # a user's handler stays
                client.subscribe_topic(addr, functools.partial(self._worker_event, addr))
            self.followed.add(addr)

    @classmethod
    def of(cls, client: Any) -> WorkerWatch:
        """The watch of ``client`` (one per client, created on first use)."""
        with cls._lock:
            watch = cls._watches.get(client)
            if watch is None:
                watch = cls._watches[client] = cls(client)
            return watch
