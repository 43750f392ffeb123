"""A fit's evaluations on Dask's dashboard, checked through the scheduler's Task Stream state.

The worker-side and client-side functions of :mod:`laddu_dask.runtime.dashboard` are called
as the per-evaluation call and the client would; the checks read what the dashboard's Task
Stream draws from (the scheduler's ``TaskStreamPlugin`` buffer, through
``Client.get_task_stream`` and the dashboard's own drawing code), never timings.  The notes
travel in the background; a test waits for them with :func:`_until`, a condition the
scheduler checks each time an event arrives, never with a sleep.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import distributed
import pytest
from dask.utils import key_split
from distributed.diagnostics.task_stream import rectangles

from laddu_dask.runtime import dashboard
from laddu_dask.runtime.dashboard import (
    TOPIC,
    EvaluationStream,
    record_client_evaluation,
    record_worker_evaluation,
    task_name,
)

ROOT = Path(__file__).resolve().parents[2]  # the repository (tests/<package>/test_*.py)
N = 30
NAME = "laddu-dask-ksks-nll"


def _evaluations(dask_worker, label: str, n: int, seconds: float, events: int) -> str:
    """n per-evaluation calls on this worker, as the evaluation call reports them."""
    for _ in range(n):
        record_worker_evaluation(dask_worker, label, seconds, events)
    return dask_worker.address


class _Waiter(distributed.diagnostics.plugin.SchedulerPlugin):
    """Sets ``done`` once ``ready(scheduler)`` holds, checked after each event arrives (every
    note reaches the scheduler as an event; the check runs once every plugin, the Task
    Stream's feeder among them, has taken that event, whatever the plugins' order)."""

    def __init__(self, scheduler, ready) -> None:
        self.scheduler, self.ready, self.done = scheduler, ready, asyncio.Event()

    def log_event(self, topic, msg) -> None:
        asyncio.get_running_loop().call_soon(self._check)

    def _check(self) -> None:
        if self.ready(self.scheduler):
            self.done.set()


async def _until(dask_scheduler, ready, seconds: float, what: str) -> None:
    """Wait until ``ready(dask_scheduler)``; an AssertionError naming ``what`` after ``seconds``
    (a hang).  Runs on the scheduler's loop (``Client.run_on_scheduler``)."""
    scheduler = dask_scheduler
    waiter = _Waiter(scheduler, ready)
    scheduler.add_plugin(waiter, name="laddu-dask-test-waiter")
    try:
        if not ready(scheduler):
            await asyncio.wait_for(waiter.done.wait(), seconds)
    except TimeoutError:
        raise AssertionError(f"waited {seconds} s for {what}") from None
    finally:
        scheduler.remove_plugin(name="laddu-dask-test-waiter")


def _stream(scheduler) -> list[dict]:
    """The laddu-dask records of the scheduler's Task Stream buffer."""
    plugin = scheduler.plugins.get("task-stream")
    return [r for r in (plugin.buffer if plugin else []) if key_split(r["key"]).startswith("laddu-dask")]


def _ours(client, ready, what: str, seconds: float = 120.0) -> list[dict]:
    """The Task Stream's laddu-dask records, once ``ready(records)`` holds."""
    client.run_on_scheduler(_until, ready=lambda s: ready(_stream(s)), seconds=seconds, what=what)
    return [r for r in client.get_task_stream() if key_split(r["key"]).startswith("laddu-dask")]


def _simulate_fit(client) -> list[dict]:
    """N evaluations of "ksks nll" (and 3 of another likelihood) on every worker and the client."""
    client.run(_evaluations, label="ksks nll", n=N, seconds=0.002, events=500)
    client.run(_evaluations, label="bins", n=3, seconds=0.001, events=7)
    for i in range(1, N + 1):
        record_client_evaluation(client, "ksks nll", i, 1000.0 - i, 0.003)
    expected = (N + 3) * len(client.scheduler_info()["workers"]) + N
    return _ours(client, lambda records: sum(r["calls"] for r in records) >= expected,
                 f"{expected} calls")


def _check(records: list[dict], workers: list[str]) -> None:
    """The records of :func:`_simulate_fit`, aggregated (``dashboard.aggregate``): per worker
    and name, every call counted once, the busy time and the events summed; the client's
    row ends with the last evaluation's value."""
    rows = {(key_split(r["key"]), r["worker"]) for r in records}
    client_rows = [w for name, w in rows if name == NAME + "-evaluation"]
    assert len(client_rows) == 1 and client_rows[0].startswith("laddu-dask client Client-")
    assert rows == {*((NAME, w) for w in workers), *(("laddu-dask-bins", w) for w in workers),
                    (NAME + "-evaluation", client_rows[0])}
    for w in workers:
        mine = [r for r in records if r["worker"] == w and key_split(r["key"]) == NAME]
        assert sum(r["calls"] for r in mine) == N and len(mine) <= N
        assert len({r["key"] for r in mine}) == len(mine)  # one rectangle per key
        assert max(int(r["key"].rsplit("-", 1)[1]) for r in mine) == N
        busy = sum(s["stop"] - s["start"] for r in mine for s in r["startstops"])
        assert busy == pytest.approx(0.002 * N, abs=1e-6 * N)  # times are ~1.8e9 s: ulp 2.4e-7
        assert sum(r["events"] for r in mine) == 500 * N
        bins = [r for r in records if r["worker"] == w and key_split(r["key"]) == "laddu-dask-bins"]
        assert sum(r["calls"] for r in bins) == 3
    fit = sorted((r for r in records if key_split(r["key"]) == NAME + "-evaluation"),
                 key=lambda r: int(r["key"].rsplit("-", 1)[1]))
    assert sum(r["calls"] for r in fit) == N
    assert fit[-1]["value"] == 1000.0 - N
    assert all(r["value"] in {1000.0 - i for i in range(1, N + 1)} for r in fit)
    # as the dashboard draws them: one rectangle per record, named by likelihood, in ms
    drawn = rectangles(records)
    assert set(drawn["name"]) == {NAME, "laddu-dask-bins", NAME + "-evaluation"}
    assert sum(d for d, n in zip(drawn["duration"], drawn["name"]) if n == NAME) == pytest.approx(
        1000 * N * 0.002 * len(workers), rel=1e-4)


def test_task_name_is_the_name_the_dashboard_shows():
    for label, name in [("nll", "laddu-dask-nll"),
                        ("ksks NLL (data, accmc)", "laddu-dask-ksks-NLL-data-accmc"),
                        ("bin 3: nll", "laddu-dask-bin-nll"),  # key_split keeps letters-only words
                        ("fit deadbeef", "laddu-dask-fit"),  # and stops at 8 hex letters
                        ("ksks/data, ksks/accepted-mc", "laddu-dask-ksks-data-ksks-mc"),  # a-f + 7
                        ("", "laddu-dask")]:
        assert task_name(label) == name
        assert key_split(f"{name}-17") == name
        assert key_split(f"{name}-evaluation-17") == f"{name}-evaluation"


@pytest.mark.timeout(180)
@pytest.mark.parametrize("processes", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["threads", "2-processes"])
def test_evaluations_reach_the_task_stream(processes):
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=processes,
                                  dashboard_address=None, silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        records = _simulate_fit(client)
        _check(records, sorted(client.scheduler_info()["workers"]))
        assert client.run_on_scheduler(lambda dask_scheduler: EvaluationStream.name in dask_scheduler.plugins)
        assert client.get_events(TOPIC)  # the notes as events too, for subscribers


@pytest.mark.timeout(180)
def test_the_dashboards_task_stream_draws_them():
    pytest.importorskip("bokeh")
    from distributed.dashboard.components.scheduler import TaskStream

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address="127.0.0.1:0", silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        stream = TaskStream(cluster.scheduler, n_rectangles=1000)  # the /status page's plot
        records = _simulate_fit(client)
        stream.update()
        names = Counter(stream.source.data["name"])
        for name in (NAME, NAME + "-evaluation"):  # one rectangle per aggregated record
            assert 1 <= names[name] == sum(key_split(r["key"]) == name for r in records)


@pytest.mark.timeout(180)
def test_harmless_without_bokeh_or_dashboard():
    script = textwrap.dedent(f"""
        import sys
        sys.modules["bokeh"] = None  # as if bokeh were not installed
        sys.path[:0] = {[str(ROOT), str(ROOT / "tests"), str(Path(__file__).resolve().parent)]!r}
        import distributed
        from test_dashboard import _simulate_fit, _check
        if __name__ == "__main__":
            with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                          dashboard_address=None, silence_logs=50) as cluster, \\
                    distributed.Client(cluster) as client:
                _check(_simulate_fit(client), sorted(client.scheduler_info()["workers"]))
            print("checked")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "checked" in out.stdout and "Traceback" not in out.stderr


@pytest.mark.timeout(180)
def test_harmless_when_the_scheduler_is_gone(caplog, monkeypatch):
    monkeypatch.setattr(dashboard, "SEND_TIMEOUT", 1.0)  # a send to nowhere gives up sooner
    async def main() -> float:
        async with distributed.Scheduler(host="127.0.0.1", port=0, dashboard=False) as s, \
                distributed.Worker(s.address, nthreads=1, dashboard=False) as w, \
                distributed.Client(s.address, asynchronous=True) as c:
            for i in range(5):  # notes still waiting to be sent when the scheduler goes
                record_worker_evaluation(w, "nll", 0.001, 10)
                record_client_evaluation(c, "nll", i, 1.0, 0.001)
            await s.close()
            # synchronous calls on the loop: a wait on the network here would hang the loop
            # (the test's timeout), not return late
            for i in range(1000):
                record_worker_evaluation(w, "nll", 0.001, 10)
                record_client_evaluation(c, "nll", i, 1.0, 0.001)
            boxes = [dashboard._outboxes[w], dashboard._outboxes[c]]
            for box in boxes:  # the pending flushes, run now: they find no scheduler
                await box._flush()
            return sum(len(box._notes) for box in boxes)

    with caplog.at_level("WARNING", logger="laddu_dask"):
        left = asyncio.run(asyncio.wait_for(main(), 120))
    assert left == 0  # taken by the flushes (and dropped: no scheduler)
    assert not [r for r in caplog.records if r.name.startswith("laddu_dask")]


@pytest.mark.timeout(180)
def test_a_scheduler_that_refuses_the_plugin_warns_once(caplog, monkeypatch):
    async def refuse(self, scheduler):
        raise ModuleNotFoundError("No module named 'laddu_dask'")

    monkeypatch.setattr(EvaluationStream, "start", refuse)

    async def main() -> int:
        async with distributed.Scheduler(host="127.0.0.1", port=0, dashboard=False) as s, \
                distributed.Worker(s.address, nthreads=1, dashboard=False) as w:
            def delivered(scheduler) -> int:
                return sum(r[5]["calls"] for _, msg in scheduler.get_events(TOPIC) for r in msg["records"])

            for k in range(1, 4):
                for _ in range(4):
                    record_worker_evaluation(w, "nll", 0.001, 10)
                await dashboard._outboxes[w]._flush()  # one flush each, now
                await _until(s, lambda s, n=4 * k: delivered(s) >= n, 120, f"{4 * k} records delivered")
            assert EvaluationStream.name not in s.plugins
            return delivered(s)

    with caplog.at_level("WARNING", logger="laddu_dask"):
        delivered = asyncio.run(asyncio.wait_for(main(), 120))
    assert delivered == 12  # still sent, as events
    warnings = [r.getMessage() for r in caplog.records if r.name.startswith("laddu_dask")]
    assert len(warnings) == 1
    assert "will not show in the dashboard's Task Stream" in warnings[0] and "laddu_dask" in warnings[0]


def test_a_worker_or_client_that_is_not_running_does_not_raise_and_queues_nothing():
    """A note from a closed worker or client (or from no worker at all) is dropped at once:
    no exception, no outbox kept for it, nothing scheduled on its loop; a running one's
    note is queued (the control that shows the probes see a note)."""
    from distributed.core import Status

    from laddu_dask.runtime import dashboard

    class Loop:
        def __init__(self):
            self.callbacks = []

        def add_callback(self, callback):
            self.callbacks.append(callback)

    class Owner:
        def __init__(self, status):
            self.status = status
            self.loop = Loop()

    stopped = [Owner("closed"), Owner(Status.closed), Owner(Status.closing), Owner(Status.failed)]
    for owner in stopped:
        record_worker_evaluation(owner, "nll", 0.001, 10)
        record_client_evaluation(owner, "nll", 1, 1.0, 0.001)
    record_worker_evaluation(None, "nll", 0.001, 10)  # no worker: dropped, not raised
    record_client_evaluation(None, "nll", 1, 1.0, 0.001)
    assert [len(owner.loop.callbacks) for owner in stopped] == [0] * len(stopped)
    assert not [owner for owner in stopped if owner in dashboard._outboxes]

    running = Owner(Status.running)
    record_worker_evaluation(running, "nll", 0.5, 10, stop=5.0, thread=7)
    assert len(running.loop.callbacks) == 1
    assert dashboard._outboxes[running]._notes == [("laddu-dask-nll", 1, 4.5, 5.0, 7, {"events": 10})]


@pytest.mark.timeout(180)
def test_a_likelihood_on_a_cluster_shows_each_evaluation():
    """The real path: every evaluation on the client's row, each worker's share on its own."""
    import numpy as np

    import laddu_dask as ld

    x = ld.scalar("x")
    model = ld.Model(ld.parameter("a", initial=1.0) * x * x + 1.0)
    data = ld.Dataset.from_arrays(scalars={"x": np.linspace(0.1, 1.0, 400)}, chunk_size=100)
    mc = ld.Dataset.from_arrays(scalars={"x": np.linspace(0.0, 1.0, 800)}, chunk_size=100)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None, silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc, name="dash")],
                            execution=ld.Execution(client=client, normalization="general"))
        for a in (1.0, 1.5, 2.0, 2.5, 3.0):
            lik.value_and_gradient([a])
        workers = sorted(client.scheduler_info()["workers"])

        def arrived(records) -> bool:  # the notes travel in the background: all of them
            mine = [key_split(r["key"]).endswith("-evaluation") for r in records]
            on_client = sum(r["calls"] for r, client_row in zip(records, mine) if client_row)
            events = sum(r.get("events", 0) for r, client_row in zip(records, mine) if not client_row)
            return on_client >= 5 and events >= 5 * (400 + 800)

        records = _ours(client, arrived, "the five evaluations' records")
    by_name = Counter(key_split(r["key"]) for r in records)
    client_rows = {n: c for n, c in by_name.items() if n.endswith("-evaluation")}
    assert len(client_rows) == 1
    assert sum(r["calls"] for r in records if key_split(r["key"]).endswith("-evaluation")) == 5
    name = next(iter(client_rows)).removesuffix("-evaluation")
    assert name == task_name("dash") == "laddu-dask-dash"  # named for the likelihood's term
    worker_rows = [r for r in records if key_split(r["key"]) == name]
    assert {r["worker"] for r in worker_rows} == set(workers)  # both workers hold partitions
    assert sum(r["events"] for r in worker_rows) == 5 * (400 + 800)
