"""Tests written against the surviving mutants of ``runtime/worker.py`` (issue 30, point 3).

The worker plugin's handler runs here in this process, on a stand-in worker (its data
store a dict) with a stand-in reducer whose partial sum of a partition is ``a * weights``
(``a`` the point's first parameter), so that every reply is checked against ``math.fsum``
over the events the worker holds: the inline path (a small share, in the calling thread),
the threads path (above :data:`~laddu_dask.runtime.jobs.INLINE_EVENTS`, every thread's share
of a partition cut into slices), streamed partitions, missing partitions, unknown objects,
failures and the bounded store of objects.  The cluster tests run the same handler in
worker processes, where mutmut does not see which test reaches it.
"""

from __future__ import annotations

import asyncio
import math
import pickle
import threading
from types import SimpleNamespace

import numpy as np
import pytest

from laddu_dask.runtime import jobs
from laddu_dask.runtime import worker as worker_module
from laddu_dask.runtime.accumulate import CertifiedPartials, ExactPartials
from laddu_dask.runtime.jobs import INLINE_EVENTS, WorkerJob
from laddu_dask.runtime.partition import Params, PreparedPartition
from laddu_dask.runtime.placement import TOPIC
from laddu_dask.runtime.wire import decode_partials, encode_points
from laddu_dask.runtime.worker import HANDLER, MAX_OBJECTS, LadduWorker, _run_share, _split

#: (thread name, plan, with_gradient, exact, offset, n) of every partition slice reduced
SEEN: list[tuple] = []


class WeightsReducer:
    """Partial sums of a partition: ``a * w`` (and ``w`` with the gradient), exactly."""

    compiled = precision = device = gpu = None

    def partials(self, part, params, plan, with_gradient, exact):
        SEEN.append((threading.current_thread().name, plan, with_gradient, exact, part.offset, part.n))
        rows = [params.array[0] * part.weights] + ([part.weights] if with_gradient else [])
        return CertifiedPartials.exact(ExactPartials.from_terms(np.array(rows)))


class FailingReducer(WeightsReducer):
    def partials(self, part, params, plan, with_gradient, exact):
        raise ValueError(f"bad partition at offset {part.offset}")


class FakeDataset:
    """A streamed dataset: partitions with their event counts (read by ``prepare_partition``)."""

    def __init__(self, parts):
        self.parts = parts
        self.partitions = [SimpleNamespace(n_events=p.n) for p in parts]


class FakeWorker:
    def __init__(self, nthreads, data):
        self.state = SimpleNamespace(nthreads=nthreads)
        self.handlers = {}
        self.data = data
        self.address = "tcp://fake:1"
        self.logged = []

    def log_event(self, topic, msg):
        self.logged.append((topic, msg))


class SpillBuffer(dict):
    """Dask's spill buffer: ``fast`` the in-memory part, the rest read through ``[]``."""

    def __init__(self, fast, slow):
        super().__init__(slow)
        self.fast = fast


def _part(n, offset, seed):
    weights = np.random.default_rng(seed).normal(1.0, 2.0, n)
    return PreparedPartition([], weights, n, offset, f"p{seed}.parquet")


def _plugin(nthreads, data):
    plugin = LadduWorker()
    plugin.setup(FakeWorker(nthreads, data))
    return plugin


def _request(jobs_, points, objects=None, label="lab"):
    return {"label": label, "layout": "layout",
            "objects": pickle.dumps({"layout": jobs_, **(objects or {})}) if objects is not None else None,
            "points": [encode_points([Params((a, 0.5)) for a in pts]) for pts in points],
            "jobs": list(range(len(points))), "dtype": "float64"}


def _values(reply):
    return [None if r is None else [p.certified_floats().tolist() for p in r]
            for r in decode_partials(reply["shapes"], reply["data"])]


def _reduce(plugin, request):
    return asyncio.run(plugin.reduce(request=request))


@pytest.fixture(autouse=True)
def _clear_seen():
    SEEN.clear()


def test_setup_adds_the_handler_logs_the_worker_and_teardown_removes_it():
    plugin = _plugin(0, {})  # a worker reporting no threads still gets one
    worker = plugin.worker
    assert plugin.threads == 1 and plugin.pool._max_workers == 1
    assert plugin.name == "laddu-dask"
    assert worker.handlers == {HANDLER: plugin.reduce}
    assert worker.logged == [(TOPIC, {"worker": "tcp://fake:1"})]
    assert plugin.calls == 0 and len(plugin.objects) == 0
    plugin.teardown(worker)
    assert worker.handlers == {}
    three = _plugin(3, {})
    assert three.threads == 3 and three.pool._max_workers == 3


def test_teardown_leaves_a_handler_that_is_not_its_own():
    plugin = _plugin(2, {})
    other = object()
    plugin.worker.handlers[HANDLER] = other
    plugin.teardown(plugin.worker)
    assert plugin.worker.handlers == {HANDLER: other}


def test_small_share_runs_inline_and_sums_the_held_partitions_of_every_job(monkeypatch):
    """Two jobs (one with the gradient), two points; a partition both jobs use, one missing."""
    notes = []
    monkeypatch.setattr(worker_module, "record_worker_evaluation",
                        lambda worker, label, seconds, events: notes.append((worker, label, seconds, events)))
    p, q = _part(100, 0, 1), _part(50, 100, 2)
    plugin = _plugin(2, SpillBuffer({"p": p}, {"q": q}))
    job_a = WorkerJob("red", 2, "plan-a", False, False, keys=["p", "q", "gone"])
    job_b = WorkerJob("red", 2, "plan-b", True, True, keys=["q", "gone"])
    reply = _reduce(plugin, _request([job_a, job_b], [(2.0, -3.0), (0.5, 4.0)], {"red": WeightsReducer()}))
    wp, wq = p.weights.tolist(), q.weights.tolist()
    assert _values(reply) == [
        [[math.fsum(2.0 * w for w in wp + wq)], [math.fsum(-3.0 * w for w in wp + wq)]],
        [[math.fsum(0.5 * w for w in wq), math.fsum(wq)], [math.fsum(4.0 * w for w in wq), math.fsum(wq)]],
    ]
    assert reply["events"] == 100 + 50 + 50
    assert reply["counts"] == [2, 1]
    assert pickle.loads(reply["missing"]) == ["gone", "gone"]
    main = threading.current_thread().name
    a_calls = [(main, "plan-a", False, False, 0, 100), (main, "plan-a", False, False, 100, 50)]
    assert sorted(SEEN) == sorted(a_calls * 2 + [(main, "plan-b", True, True, 100, 50)] * 2)
    assert len(notes) == 1
    assert notes[0][0] is plugin.worker and notes[0][1] == "lab" and notes[0][3] == 200
    assert 0.0 <= notes[0][2] < 60.0
    assert plugin.calls == 1


def test_a_job_without_held_partitions_replies_none_and_the_label_defaults_to_empty(monkeypatch):
    notes = []
    monkeypatch.setattr(worker_module, "record_worker_evaluation",
                        lambda worker, label, seconds, events: notes.append((label, events)))
    p = _part(10, 0, 3)
    plugin = _plugin(1, {"p": p})
    request = _request([WorkerJob("red", 1, None, False, False, keys=["x"]),
                        WorkerJob("red", 1, None, False, False, keys=["p"])], [(1.0,), (1.0,)],
                       {"red": WeightsReducer()})
    del request["label"]
    reply = _reduce(plugin, request)
    assert _values(reply) == [None, [[math.fsum(p.weights.tolist())]]]
    assert reply["counts"] == [0, 1]
    assert pickle.loads(reply["missing"]) == ["x"]
    assert notes == [("", 10)]


def test_a_share_of_all_held_partitions_has_no_missing_entry():
    p = _part(10, 0, 4)
    reply = _reduce(_plugin(1, {"p": p}), _request([WorkerJob("red", 1, None, False, False, keys=["p"])],
                                                   [(3.0,)], {"red": WeightsReducer()}))
    assert "missing" not in reply
    assert set(reply) == {"jobs", "shapes", "data", "events", "counts"}


@pytest.mark.parametrize("n, threaded", [(INLINE_EVENTS, False), (INLINE_EVENTS + 1, True)])
def test_a_share_above_the_inline_threshold_is_cut_into_one_slice_per_thread(n, threaded):
    """One partition: at the threshold it is reduced whole in the calling thread; one event
    above, each of the two threads gets a slice; the sum holds every event either way."""
    p = _part(n, 7, 5)
    plugin = _plugin(2, {"p": p})
    reply = _reduce(plugin, _request([WorkerJob("red", 1, "plan", True, False, keys=["p"])], [(1.5,)],
                                     {"red": WeightsReducer()}))
    w = p.weights.tolist()
    assert _values(reply) == [[[math.fsum(1.5 * x for x in w), math.fsum(w)]]]
    assert reply["events"] == n and reply["counts"] == [1]
    if threaded:
        half = round(n / 2)
        assert sorted(s[4:] for s in SEEN) == [(7, half), (7 + half, n - half)]
        assert all(s[0].startswith("laddu-dask-reduce") and s[1:4] == ("plan", True, False) for s in SEEN)
    else:
        assert SEEN == [(threading.current_thread().name, "plan", True, False, 7, n)]


def test_streamed_partitions_are_read_in_runs_and_summed(monkeypatch):
    parts = [_part(n, o, 10 + i) for i, (n, o) in enumerate(((30, 0), (20, 30), (40, 50)))]
    read = []

    def prepare(compiled, dataset, index, precision, device, gpu):
        read.append(index)
        return dataset.parts[index]

    monkeypatch.setattr(jobs, "prepare_partition", prepare)
    plugin = _plugin(2, {})
    job = WorkerJob("red", 1, "plan", False, True, dataset="ds", indices=[0, 1, 2], stream_threads=2)
    reply = _reduce(plugin, _request([job], [(2.0,)], {"red": WeightsReducer(), "ds": FakeDataset(parts)}))
    assert _values(reply) == [[[math.fsum(2.0 * w for p in parts for w in p.weights.tolist())]]]
    assert reply["events"] == 90 and reply["counts"] == [3]
    assert sorted(read) == [0, 1, 2]
    assert all(s[0].startswith("laddu-dask-reduce") and s[1:4] == ("plan", False, True) for s in SEEN)


def test_unknown_layout_then_unknown_objects_are_asked_for():
    plugin = _plugin(1, {"p": _part(5, 0, 6)})
    assert _reduce(plugin, _request([], [], None)) == {"need": ["layout"]}
    jobs_ = [WorkerJob("zred", 1, None, False, False, dataset="ads", indices=[0]),
             WorkerJob("bred", 1, None, False, False, keys=["p"])]
    reply = _reduce(plugin, _request(jobs_, [(1.0,), (1.0,)], {}))
    assert reply == {"need": ["layout", "ads", "bred", "zred"]}
    assert plugin.calls == 2


def test_objects_sent_once_serve_later_calls():
    p = _part(8, 0, 7)
    plugin = _plugin(1, {"p": p})
    job = WorkerJob("red", 1, None, False, False, keys=["p"])
    first = _request([job], [(1.0,)], {"red": WeightsReducer()})
    _reduce(plugin, first)
    again = dict(first, objects=None, points=[encode_points([Params((-1.0,))])])
    assert _values(_reduce(plugin, again)) == [[[math.fsum(-w for w in p.weights.tolist())]]]


def test_the_store_keeps_the_most_recently_used_objects():
    p = _part(8, 0, 8)
    plugin = _plugin(1, {"p": p})
    plugin.objects.update({f"old{i}": i for i in range(MAX_OBJECTS + 5)})
    reply = _reduce(plugin, _request([WorkerJob("red", 1, None, False, False, keys=["p"])], [(1.0,)],
                                     {"red": WeightsReducer()}))
    assert "shapes" in reply
    assert len(plugin.objects) == MAX_OBJECTS
    kept = list(plugin.objects)
    assert kept[-2:] in (["layout", "red"], ["red", "layout"])
    assert kept[0] == "old7"  # the oldest seven dropped (64 + 5 old + 2 new = 71)
    assert "old6" not in plugin.objects


@pytest.mark.parametrize("n", [10, INLINE_EVENTS + 10])
def test_a_failing_reduction_is_sent_back(n):
    plugin = _plugin(2, {"p": _part(n, 3, 9)})
    reply = _reduce(plugin, _request([WorkerJob("red", 1, None, False, False, keys=["p"])], [(1.0,)],
                                     {"red": FailingReducer()}))
    assert set(reply) == {"error"}
    err = reply["error"].data
    assert isinstance(err, ValueError) and str(err) == "bad partition at offset 3"


def test_run_share_takes_units_until_none_is_left():
    from collections import deque

    pending = deque([(0, lambda x: x + 1, (1,), 5), (2, lambda x, y: x * y, (3, 4), 1)])
    assert _run_share(pending) == [(0, 2), (2, 12)]
    assert not pending
    assert _run_share(deque()) == []


def test_split_in_contiguous_runs():
    assert _split([0, 1, 2, 3, 4], 2) == [[0, 1], [2, 3, 4]]
    assert _split([5, 6, 7], 3) == [[5], [6], [7]]
    assert _split([5, 6], 5) == [[5], [6]]
    assert _split([5, 6, 7, 8, 9, 10, 11], 3) == [[5, 6], [7, 8, 9], [10, 11]]
    assert _split([4], 0) == [[4]]
    assert _split([1, 2, 3], 1) == [[1, 2, 3]]
    assert _split([], 2) == []


@pytest.mark.timeout(20)  # a teardown that waits for the running reduction never returns
def test_teardown_neither_waits_for_the_running_reduction_nor_starts_the_queued_ones():
    plugin = _plugin(1, {})
    started, release = threading.Event(), threading.Event()

    def blocker():
        started.set()
        return release.wait()

    running = plugin.pool.submit(blocker)
    queued = plugin.pool.submit(lambda: "ran")
    assert started.wait(10)
    plugin.teardown(plugin.worker)  # returns while ``running`` still runs
    assert not running.done()
    assert queued.cancelled()
    release.set()
    assert running.result(timeout=10) is True
    with pytest.raises(RuntimeError, match="cannot schedule new futures after"):
        plugin.pool.submit(lambda: None)


def test_streamed_and_resident_jobs_in_one_request(monkeypatch):
    """Two streamed jobs and a resident one after them: every job gets its own sums."""
    parts = [_part(n, o, 20 + i) for i, (n, o) in enumerate(((30, 0), (20, 30), (40, 50)))]
    monkeypatch.setattr(jobs, "prepare_partition",
                        lambda compiled, dataset, index, precision, device, gpu: dataset.parts[index])
    held = _part(25, 0, 30)
    plugin = _plugin(2, {"h": held})
    jobs_ = [WorkerJob("red", 1, None, False, False, dataset="ds", indices=[0, 1], stream_threads=2),
             WorkerJob("red", 1, None, False, False, dataset="ds", indices=[2]),
             WorkerJob("red", 1, None, False, False, keys=["h"])]
    reply = _reduce(plugin, _request(jobs_, [(2.0,), (3.0,), (5.0,)],
                                     {"red": WeightsReducer(), "ds": FakeDataset(parts)}))
    w = [p.weights.tolist() for p in (*parts, held)]
    assert _values(reply) == [[[math.fsum(2.0 * x for x in w[0] + w[1])]],
                              [[math.fsum(3.0 * x for x in w[2])]],
                              [[math.fsum(5.0 * x for x in w[3])]]]
    assert reply["counts"] == [2, 1, 1] and reply["events"] == 30 + 20 + 40 + 25


def test_float32_points_are_read_in_their_precision():
    p = _part(12, 0, 31)
    plugin = _plugin(1, {"p": p})
    request = {"label": "f32", "layout": "layout",
               "objects": pickle.dumps({"layout": [WorkerJob("red", 2, None, False, False, keys=["p"])],
                                        "red": WeightsReducer()}),
               "points": [encode_points([Params((np.float32(1.5), np.float32(0.25))),
                                         Params((np.float32(-2.0), np.float32(4.0)))])],
               "jobs": [0], "dtype": "float32"}
    w = p.weights.tolist()
    expected = [[[math.fsum(1.5 * x for x in w)], [math.fsum(-2.0 * x for x in w)]]]
    assert _values(_reduce(plugin, request)) == expected


def test_the_thread_takes_the_largest_unit_first():
    """One thread, two partitions above the inline threshold together: two units, the larger
    (the second partition) taken first, so that a slow thread leaves the small ones to others."""
    small, large = _part(10_000, 0, 40), _part(20_000, 10_000, 41)
    plugin = _plugin(1, {"s": small, "l": large})
    reply = _reduce(plugin, _request([WorkerJob("red", 1, None, False, False, keys=["s", "l"])], [(1.0,)],
                                     {"red": WeightsReducer()}))
    assert [s[4:] for s in SEEN] == [(10_000, 20_000), (0, 10_000)]
    assert _values(reply) == [[[math.fsum(small.weights.tolist() + large.weights.tolist())]]]
