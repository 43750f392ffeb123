"""A fit on Dask's dashboard: its evaluations in the Task Stream and the fit itself on the
laddu-dask page, without adding latency.

On a cluster an evaluation is one direct call per worker, not a Dask task, so on its own it
leaves the dashboard's Task Stream and Progress panels empty. This module puts it there:

* on each worker, :func:`record_worker_evaluation` (called inside the per-evaluation call)
  notes the call's start, stop and thread; on the client, :func:`record_client_evaluation`
  (called once per evaluation) notes the evaluation's wall time, number and value, and
  :func:`record_fit_note` what the laddu-dask page shows (each point's -2 ln L and
  parameters, a finished fit's errors, placements, memory decisions, many-fit progress).
  Noting costs a lock and a list append (about a microsecond), nothing else on the
  evaluation's path;
* at most every :data:`FLUSH_INTERVAL` each process sends its notes to the scheduler as one
  event of the topic :data:`TOPIC`, fire and forget: a worker on its batched stream
  (``Worker.log_event``), the client through a background ``log_event`` call that no
  evaluation waits for; the first message also registers :class:`EvaluationStream`.
  The notes of one flush are aggregated first (:func:`aggregate`): one Task Stream record per name
  and thread, as long as the calls' busy time together, so that thousands of millisecond
  evaluations stay readable (the Task Stream would otherwise show only its last second);
* on the scheduler, :class:`EvaluationStream` (a scheduler plugin) turns each record into one
  of the Task Stream's own buffer (``TaskStreamPlugin``), the state the dashboard's Task
  Stream draws from (``/status``, ``/tasks``, ``/individual-task-stream``) and that
  ``Client.get_task_stream`` returns, and keeps the page's notes on its
  :class:`~laddu_dask.runtime.fit_board.FitBoard`; on start it serves the page
  (``/laddu-dask``, :mod:`laddu_dask.runtime.dashboard_page`).

Each worker row shows ``laddu-dask-<label>`` rectangles (the time that worker spent on the
evaluations, one rectangle per flush); a row of its own shows
``laddu-dask-<label>-evaluation`` as the client saw them (the gaps are the minimiser's own
time). The scheduler needs laddu-dask importable (a ``LocalCluster``'s scheduler runs in the
client's process). A failure to deliver is logged at debug level and never reaches the fit.

Examples
--------
>>> task_name("ksks NLL (data, accmc)")
'laddu-dask-ksks-NLL-data-accmc'
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from distributed.core import Status
from distributed.diagnostics.plugin import SchedulerPlugin
from distributed.diagnostics.task_stream import TaskStreamPlugin
from distributed.metrics import time
from distributed.protocol.pickle import dumps

from laddu_dask.runtime.fit_board import FitBoard

logger = logging.getLogger(__name__)

#: Scheduler event topic the notes travel under (``Client.get_events(TOPIC)`` lists them).
TOPIC = "laddu-dask-evaluations"
#: Seconds between two messages from one process (the dashboard redraws every 0.1 s or so).
FLUSH_INTERVAL = 0.1
#: Seconds a background message may take before it is dropped.
SEND_TIMEOUT = 10.0
#: Notes kept at most per process while none can be sent.
MAX_NOTES = 100_000
#: The name prefix of the notes for the laddu-dask page (:func:`record_fit_note`), which are
#: kept on the board, not drawn in the Task Stream.
FIT_NOTE = "laddu-dask-fit:"

_SERVING = (Status.running, Status.paused, Status.closing_gracefully)


@functools.lru_cache(maxsize=1024)
def task_name(label: str) -> str:
    """The Task Stream name of a likelihood's evaluations: ``laddu-dask-`` and ``label``'s words.

    The dashboard names a rectangle by Dask's ``key_split``, which keeps letters-only words
    joined by ``-``; so digits and punctuation of ``label`` are dropped.

    Examples
    --------
    >>> task_name("nll")
    'laddu-dask-nll'
    """
    # Dask's key_split takes an 8-letter word that starts with a-f for a hash, and stops there
    words = [w for w in re.findall(r"[A-Za-z]+", label) if not (len(w) == 8 and w[0] in "abcdef")]
    return "-".join(["laddu", "dask", *words])


class EvaluationStream(SchedulerPlugin):
    """Scheduler plugin: laddu-dask's evaluation notes become records of the Task Stream.

    Registered by the first message of a worker or client (idempotent); on start it also
    takes the notes the scheduler already holds under :data:`TOPIC`, so none is lost to
    the order in which messages arrive.
    """

    name = "laddu-dask-evaluations"
    idempotent = True

    def __init__(self) -> None:
        self.scheduler: Any = None
        #: What the laddu-dask page shows (:mod:`laddu_dask.runtime.fit_board`).
        self.board = FitBoard()

    async def start(self, scheduler: Any) -> None:
        self.scheduler = scheduler
        self.board = FitBoard()
        try:
            from laddu_dask.runtime.dashboard_page import install_page  # Bokeh: only on a scheduler

            install_page(scheduler)
        except Exception as exc:  # the Task Stream works without the page
            logger.warning("laddu-dask: no laddu-dask page on the dashboard (%r)", exc)
        for _, msg in scheduler.get_events(TOPIC):
            self._ingest(msg)

    def log_event(self, topic: str, msg: Any) -> None:
        if topic == TOPIC and self.scheduler is not None:
            self._ingest(msg)

    def _ingest(self, msg: dict[str, Any]) -> None:
        scheduler = self.scheduler
        if TaskStreamPlugin.name not in scheduler.plugins:  # as the dashboard's Task Stream does
            scheduler.add_plugin(TaskStreamPlugin(scheduler))
        stream = scheduler.plugins[TaskStreamPlugin.name]
        where = msg["worker"] if "worker" in msg else f"laddu-dask client {msg['client']}"
        for name, number, start, stop, thread, extra in msg["records"]:
            if name.startswith(FIT_NOTE):
                self.board.ingest(extra["label"], name[len(FIT_NOTE):], number, stop, extra["payload"])
                continue
            record = {"key": f"{name}-{number}", "worker": where, "thread": thread, "status": "OK",
                      "startstops": [{"action": "compute", "start": start, "stop": stop}]}
            record.update(extra)
            stream.buffer.append(record)
            stream.index += 1


class _Outbox:
    """One process's notes for one scheduler, sent together at most every FLUSH_INTERVAL.

    ``owner`` is the worker or client (held weakly); ``send(owner, notes)`` sends one batch.
    """

    def __init__(self, owner: Any, send: Callable[[Any, list], Awaitable[None] | None]) -> None:
        self._owner = weakref.ref(owner)
        self._send = send
        self._lock = threading.Lock()
        self._notes: list[tuple] = []
        self._counts: dict[str, int] = {}
        self._pending = False
        self._registered = False

    def add(self, name: str, number: int | None, start: float, stop: float, thread: int,
            extra: dict[str, Any]) -> None:
        """Keep one note (``number`` None: this process's next number for ``name``)."""
        with self._lock:
            if number is None:
                self._counts[name] = number = self._counts.get(name, 0) + 1
            if len(self._notes) < MAX_NOTES:
                self._notes.append((name, number, start, stop, thread, extra))
            if self._pending:
                return
            self._pending = True
        owner = self._owner()
        if owner is not None:
            owner.loop.add_callback(self._schedule)

    def _schedule(self) -> None:
        owner = self._owner()
        if owner is not None:
            owner.loop.call_later(FLUSH_INTERVAL, self._flush)

    async def _flush(self) -> None:
        with self._lock:
            notes, self._notes, self._pending = self._notes, [], False
        owner = self._owner()
        if owner is None or not notes:
            return
        notes = aggregate(notes)
        try:
            await asyncio.wait_for(self._deliver(owner, notes), SEND_TIMEOUT)
        except Exception as exc:  # a diagnostic never fails a fit
            logger.debug("laddu-dask: %d evaluation notes not delivered: %r", len(notes), exc)

    async def _deliver(self, owner: Any, notes: list[tuple]) -> None:
        if not self._registered:
            try:
                await owner.scheduler.register_scheduler_plugin(
                    plugin=dumps(EvaluationStream()), name=EvaluationStream.name, idempotent=True)
            except Exception as exc:
                if isinstance(exc, OSError) or not _running(owner):  # no scheduler now: next time
                    raise
                # the scheduler refused it (e.g. it cannot import laddu_dask): say so, once
                logger.warning("laddu-dask: evaluations will not show in the dashboard's Task Stream: "
                               "the scheduler did not take laddu_dask.runtime.dashboard.EvaluationStream "
                               "(%r)", exc)
            self._registered = True
        result = self._send(owner, notes)
        if result is not None:
            await result


def aggregate(notes: list[tuple]) -> list[tuple]:
    """One Task Stream record per name and thread for a flush's notes, so that a fit of
    thousands of millisecond evaluations stays readable: the record ends when the last
    call ended and lasts as long as the calls together (the busy time), carries their
    number as ``"calls"``, their events summed and the last ``"value"``; the board's notes
    (:data:`FIT_NOTE`) pass unchanged.

    Examples
    --------
    >>> aggregate([("n", 1, 0.0, 1.0, 7, {"events": 5}), ("n", 2, 2.0, 2.5, 7, {"events": 5})])
    [('n', 2, 1.0, 2.5, 7, {'events': 10, 'calls': 2})]
    """
    out: list[tuple] = []
    merged: dict[tuple, list] = {}
    for note in notes:
        name, number, start, stop, thread, extra = note
        if name.startswith(FIT_NOTE):
            out.append(note)
            continue
        acc = merged.get((name, thread))
        if acc is None:
            merged[(name, thread)] = [number, stop - start, stop, dict(extra), 1]
            continue
        acc[0], acc[1], acc[2] = number, acc[1] + (stop - start), max(acc[2], stop)
        for key, value in extra.items():
            acc[3][key] = acc[3].get(key, 0) + value if key == "events" else value
        acc[4] += 1
    for (name, thread), (number, busy, stop, extra, calls) in merged.items():
        out.append((name, number, stop - busy, stop, thread, {**extra, "calls": calls}))
    return out


def _running(owner: Any) -> bool:
    """Whether a worker or client is connected and working (a worker may be paused)."""
    return owner.status in _SERVING or owner.status == "running"


def _send_from_worker(worker: Any, notes: list) -> None:
    worker.log_event(TOPIC, {"records": notes})  # the batched stream; the scheduler adds "worker"


async def _send_from_client(client: Any, notes: list) -> None:
    if _running(client):
        await client.scheduler.log_event(topic=TOPIC, msg={"client": client.id, "records": notes})


_outboxes: weakref.WeakKeyDictionary[Any, _Outbox] = weakref.WeakKeyDictionary()
_outboxes_lock = threading.Lock()


def _outbox(owner: Any, send: Callable[[Any, list], Awaitable[None] | None]) -> _Outbox:
    box = _outboxes.get(owner)
    if box is None:
        with _outboxes_lock:
            box = _outboxes.get(owner)
            if box is None:
                _outboxes[owner] = box = _Outbox(owner, send)
    return box


def record_worker_evaluation(worker: Any, label: str, seconds: float, events: int, *,
                             stop: float | None = None, thread: int | None = None) -> None:
    """Note one evaluation call on a worker: a ``laddu-dask-<label>`` rectangle on its row.

    Call it on the worker, inside the per-evaluation call, once the call's work is done.
    It returns at once: the note reaches the scheduler with the others of the next
    :data:`FLUSH_INTERVAL` on the worker's batched stream.

    Parameters
    ----------
    worker : distributed.Worker
        The worker the call runs on (``distributed.get_worker()``).
    label : str
        Which likelihood: the same label as the client's :func:`record_client_evaluation`.
    seconds : float
        Time the call took on this worker.
    events : int
        Events this worker reduced in the call (kept in the record as ``"events"``).
    stop : float, optional
        When the call ended, ``distributed.metrics.time()``; default: now.
    thread : int, optional
        The thread it ran on (the row it is drawn in); default: the calling thread.

    Examples
    --------
    In a task running on a worker (``tests/runtime/test_dashboard.py`` runs it on a cluster)::

        from distributed import get_worker
        record_worker_evaluation(get_worker(), "ksks nll", 0.0012, 50_000)
    """
    try:
        if not _running(worker):
            return
        stop = time() if stop is None else stop
        thread = threading.get_ident() if thread is None else thread
        _outbox(worker, _send_from_worker).add(task_name(label), None, stop - seconds, stop, thread,
                                               {"events": int(events)})
    except Exception as exc:  # a diagnostic never fails an evaluation
        logger.debug("laddu-dask: evaluation note dropped: %r", exc)


def record_client_evaluation(client: Any, label: str, number: int, value: float | None,
                             seconds: float) -> None:
    """Note one evaluation on the client: a ``laddu-dask-<label>-evaluation`` rectangle.

    Call it on the client once per evaluation, when its value is known. It returns at
    once: the note reaches the scheduler with the others of the next :data:`FLUSH_INTERVAL`
    through a background call that nothing waits for; with the scheduler gone it is dropped.

    Parameters
    ----------
    client : distributed.Client
        The client the evaluation ran through.
    label : str
        Which likelihood (the Task Stream name is :func:`task_name` of it).
    number : int
        The evaluation's number (1, 2, ...; the record's key ends with it).
    value : float or None
        The likelihood's value (kept in the record as ``"value"``), if known here.
    seconds : float
        The evaluation's wall time on the client; it ended now.

    Examples
    --------
    With a ``distributed.Client`` ``client`` (``tests/runtime/test_dashboard.py`` runs it on a cluster)::

        record_client_evaluation(client, "ksks nll", 17, 1234.5, 0.0021)
    """
    try:
        if not _running(client):
            return
        stop = time()
        _outbox(client, _send_from_client).add(task_name(label) + "-evaluation", int(number),
                                               stop - seconds, stop, 0,
                                               {} if value is None else {"value": float(value)})
    except Exception as exc:  # a diagnostic never fails an evaluation
        logger.debug("laddu-dask: evaluation note dropped: %r", exc)


def record_fit_note(client: Any, label: str, kind: str, payload: dict[str, Any], number: int = 0) -> None:
    """Note something for the laddu-dask page of the dashboard (kept on the scheduler's
    :class:`~laddu_dask.runtime.fit_board.FitBoard`; the kinds are the board's).

    It returns at once, like :func:`record_client_evaluation`; a failure never reaches the fit.

    Parameters
    ----------
    client : distributed.Client
        The client the fit runs through.
    label : str
        Which likelihood (or many-fit run) the note is about.
    kind : str
        ``"point"``, ``"result"``, ``"placement"``, ``"decision"`` or ``"progress"``.
    payload : dict
        The note (plain numbers, strings, lists and dicts).
    number : int
        The evaluation's number, for a ``"point"``.

    Examples
    --------
    With a ``distributed.Client`` ``client`` (``tests/runtime/test_dashboard_page.py`` runs a fit)::

        record_fit_note(client, "ksks", "point", {"value": 1234.5, "parameters": [0.1, 0.2]}, 17)
    """
    try:
        if not _running(client):
            return
        now = time()
        _outbox(client, _send_from_client).add(FIT_NOTE + kind, int(number), now, now, 0,
                                               {"label": label, "payload": payload})
    except Exception as exc:  # a diagnostic never fails a fit
        logger.debug("laddu-dask: fit note dropped: %r", exc)
