"""Every wait on a cluster is bounded and typed (issue 23, items 4-6, 8).

A stalled worker (SIGSTOP: alive to the scheduler, never answering) and a scheduler
that closes mid-run: the Generator, ``Dataset.select``/``bin_by`` on the default client
and the fits of ``fit_bins`` raise ``ClusterTimeoutError`` or ``SchedulerLostError`` within
the configured timeout.  Numeric settings reject NaN and infinities (TOML, Dask config,
keywords).
"""

from __future__ import annotations

import os
import signal
import threading
import time

import dask
import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.cluster_waits import cluster_timeout
from laddu_dask.errors import ParameterError
from laddu_dask.validate import duration, integer, number

NAN, INF = float("nan"), float("inf")


# -- one NaN- and infinity-safe check ------------------------------------------------------

@pytest.mark.parametrize("value", [NAN, INF, -INF, np.float64("nan"), "0.1", True, None])
def test_a_number_check_refuses_nan_infinities_and_non_numbers(value):
    with pytest.raises(ParameterError, match=r"tolerance must be a finite number > 0, got"):
        number(value, "tolerance", above=0.0)


def test_a_number_check_keeps_finite_numbers_in_range():
    assert number(np.float32(0.5), "x", minimum=0.0, maximum=1.0) == 0.5
    assert number(INF, "bound", finite=False) == INF
    with pytest.raises(ParameterError, match=r"x must be a finite number >= 0 and <= 1, got 1.5"):
        number(1.5, "x", minimum=0.0, maximum=1.0)
    assert integer(np.int64(3), "n", minimum=1) == 3
    with pytest.raises(ParameterError, match=r"n must be an integer >= 1, got 0"):
        integer(0, "n", minimum=1)
    assert duration("2 minutes", "t") == 120.0
    for bad in (NAN, INF, "inf", "nan", 0, -1, "1e400s", True):
        with pytest.raises(ParameterError, match=r"t must be a positive, finite duration"):
            duration(bad, "t")


@pytest.mark.parametrize("key", ["worker-timeout", "preparation-timeout", "evaluation-timeout",
                                 "fit-timeout"])
@pytest.mark.parametrize("value", [NAN, INF, "nan", "inf"])
def test_dask_config_timeouts_refuse_nan_and_infinity(key, value):
    with dask.config.set({f"laddu-dask.cluster.{key}": value}):
        with pytest.raises(ParameterError, match=rf"Dask config laddu-dask\.cluster\.{key} must be a "
                                                 r"positive, finite duration"):
            cluster_timeout(key)


def test_compile_timeout_refuses_nan():
    from laddu_dask import config

    with dask.config.set({"laddu-dask.compile-timeout": NAN}):
        with pytest.raises(ParameterError, match=r"laddu-dask\.compile-timeout must be a positive"):
            config.duration("compile-timeout")


# -- fit keywords --------------------------------------------------------------------------

def _likelihood():
    rng = np.random.default_rng(3)
    data = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0.0, 1.0, 400)})
    mc = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0.0, 1.0, 800)})
    model = (ld.parameter("a", initial=0.3) * ld.scalar("x") + 1.0)
    return model, data, mc, ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc, name="t")])


@pytest.mark.parametrize(("keyword", "value", "message"), [
    ("tolerance", NAN, r"tolerance must be a finite number > 0, got nan"),
    ("tolerance", INF, r"tolerance must be a finite number > 0, got inf"),
    ("tolerance", 0.0, r"tolerance must be a finite number > 0, got 0.0"),
    ("max_calls", 0, r"max_calls must be an integer >= 1, got 0"),
    ("max_calls", 10.5, r"max_calls must be an integer >= 1, got 10.5"),
    ("strategy", 3, r"strategy must be an integer >= 0 and <= 2, got 3"),
])
def test_fit_keywords_refuse_nan_and_out_of_range(keyword, value, message):
    """A NaN tolerance gave valid=True 1.6 above the minimum; now every fit entry refuses it
    (restarts and bins too, where a ParameterError would otherwise be a failed fit)."""
    model, data, mc, lik = _likelihood()
    with pytest.raises(ParameterError, match=message):  # MIGRAD's options: MIGRAD's fit
        lik.fit(method="migrad", **{keyword: value})
    with pytest.raises(ParameterError, match=message):
        ld.fit_restarts(lik, restarts=2, method="migrad", **{keyword: value})
    with pytest.raises(ParameterError, match=message):
        ld.fit_bins(model, data=data, accepted_mc=mc, by=ld.scalar("x"), bins=[0.0, 0.5, 1.0],
                    method="migrad", **{keyword: value})


# -- waits on a stalled worker, and a lost scheduler ----------------------------------------

@pytest.fixture
def stalled():
    """A LocalCluster of one worker process, its client, and a function that stops the
    worker (SIGSTOP: the scheduler still counts it); the worker is continued in teardown."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=50)
    client = distributed.Client(cluster)
    pids = list(client.run(os.getpid).values())
    stopped: list[int] = []

    def stop() -> None:
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)

    try:
        yield cluster, client, stop
    finally:
        closed = cluster.scheduler.status.name in ("closing", "closed")
        for pid in stopped:
            os.kill(pid, signal.SIGKILL if closed else signal.SIGCONT)
        client.close(timeout=10)
        try:
            cluster.close(timeout=1 if closed else 20)  # closed: it can only time out
        except (TimeoutError, OSError):
            if not closed:  # a closed scheduler's cluster cannot close its nannies cleanly
                raise


def _bounded(fn, seconds: float):
    """``fn()`` in a thread; its error (the test expects one), failing if it runs past ``seconds``."""
    out: dict = {}

    def body():
        try:
            out["value"] = fn()
        except BaseException as err:  # noqa: BLE001 - handed to the test
            out["error"] = err

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still waiting after {seconds} s: the wait has no bound")
    if "error" in out:
        raise out["error"]
    return out["value"]


def _generator():
    """A parent of mass 1.8 at rest decaying isotropically to K_S K_S."""
    return ld.Generator(ld.Channel("X -> K_S K_S", edges=[
        ld.Edge("X", particle=ld.Particle(mass=1.8),
                initial_momentum=ld.InitialMomentum.momentum([0.0, 0.0, 0.0])),
        ld.Edge("ks1", particle=ld.particles.K_SHORT), ld.Edge("ks2", particle=ld.particles.K_SHORT)],
        vertices=[ld.Vertex("decay", incoming=["X"], outgoing=["ks1", "ks2"],
                            generation=ld.VertexProposal.isotropic())]))


@pytest.mark.slow
def test_a_stalled_worker_bounds_the_generator_and_selections(stalled):
    """The Generator on a client, and select/bin_by on the default client, with a worker that
    never answers: ClusterTimeoutError after preparation-timeout (1 s), not a hang."""
    _, client, stop = stalled
    ds = ld.Dataset.from_arrays(scalars={"x": np.linspace(0.0, 1.0, 100)}, chunk_size=25)
    assert ds.select(ld.Predicate.between(ld.scalar("x"), low=0.0, high=0.5)).n_events == 50
    stop()
    # the stalled client named as Dask's default scheduler for the selections' passes (as a
    # Client does when it is made), whatever another test's client did to the global config
    with dask.config.set({"laddu-dask.cluster.preparation-timeout": "1s", "scheduler": client}):
        with pytest.raises(ld.ClusterTimeoutError, match=r"Generator's partitions did not finish within "
                                                         r"1\.00 s .*preparation-timeout"):
            _bounded(lambda: _generator().weighted(100, seed=1, execution=ld.Execution(client=client)), 30)
        with pytest.raises(ld.ClusterTimeoutError, match=r"partitions of a dataset did not finish"):
            _bounded(lambda: ds.select(ld.Predicate.between(ld.scalar("x"), low=0.0, high=0.2)).n_events,
                     30)
        with pytest.raises(ld.ClusterTimeoutError, match=r"preparation-timeout"):
            _bounded(lambda: ds.bin_by(ld.scalar("x"), bins=[0.0, 0.3, 1.0]), 30)


@pytest.mark.slow
def test_the_scheduler_closing_during_a_generator_run_is_scheduler_lost(stalled):
    """distributed cancels the futures (FutureCancelledError, scheduler-connection-lost):
    the README promises SchedulerLostError."""
    cluster, client, stop = stalled
    stop()  # the tasks stay pending until the scheduler goes
    errors: dict = {}
    started = threading.Event()

    def run():
        started.set()
        try:
            _generator().weighted(100, seed=1, execution=ld.Execution(client=client))
        except BaseException as err:  # noqa: BLE001 - handed to the test
            errors["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    started.wait(10)
    from cluster_helpers import wait_until

    wait_until(lambda: bool(cluster.scheduler.tasks), 20, "the Generator's tasks to reach the scheduler")
    cluster.sync(cluster.scheduler.close)
    thread.join(30)
    assert not thread.is_alive(), "the Generator still waits on a closed scheduler"
    assert isinstance(errors.get("error"), ld.SchedulerLostError), repr(errors.get("error"))
    assert "is gone" in str(errors["error"])


#: (the fit task started, the test lets it go on): module globals, so that the task pickles
#: :func:`_held_fits` by reference and the in-process worker sees the same events.
_HELD = (threading.Event(), threading.Event())
_HELD_FITS = type("HeldFits", (), {"fits": None})


def _held_fits(*args, **kwargs):
    _HELD[0].set()
    _HELD[1].wait(30)
    return _HELD_FITS.fits(*args, **kwargs)


@pytest.mark.slow
def test_the_scheduler_closing_during_fit_bins_is_scheduler_lost(monkeypatch):
    """fit_bins' fits run as tasks; the scheduler closes while they run (held by an event
    on an in-process worker): SchedulerLostError, not distributed's FutureCancelledError."""
    distributed = pytest.importorskip("distributed")
    from laddu_dask.analysis import tasks

    entered, release = _HELD
    entered.clear()
    release.clear()
    monkeypatch.setattr(_HELD_FITS, "fits", tasks._fits_on_worker)
    monkeypatch.setattr(tasks, "_fits_on_worker", _held_fits)
    model, data, mc, _ = _likelihood()
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                       dashboard_address=":0", silence_logs=50)
    client = distributed.Client(cluster)
    out: dict = {}

    def run():
        try:
            ld.fit_bins(model, data=data, accepted_mc=mc, by=ld.scalar("x"), bins=[0.0, 0.5, 1.0],
                        execution=ld.Execution(client=client))
        except BaseException as err:  # noqa: BLE001 - handed to the test
            out["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    try:
        thread.start()
        assert entered.wait(60), "the fit task never started"
        cluster.sync(cluster.scheduler.close)
        thread.join(30)
        assert not thread.is_alive(), "fit_bins still waits on a closed scheduler"
    finally:
        release.set()
        client.close(timeout=5)
        try:
            cluster.close(timeout=1)  # its scheduler is closed: this can only time out
        except (TimeoutError, OSError):
            pass  # its scheduler was closed on purpose
    assert isinstance(out.get("error"), ld.SchedulerLostError), repr(out.get("error"))
    assert "is gone" in str(out["error"])


def test_mcmc_refuses_an_infinite_scale_and_a_nan_step_count():
    *_, lik = _likelihood()
    with pytest.raises(ParameterError, match=r"scale must be a finite number > 0, got inf"):
        lik.walker_positions([0.3], 4, scale=INF)
    with pytest.raises(ld.errors.GaneshConfigError, match=r"ESSConfig max_shrink_steps must be an integer"):
        ld.ganesh.ESSConfig(max_shrink_steps=NAN)
    with pytest.raises(ld.errors.GaneshConfigError, match=r"ESSConfig bracket_width must be a finite number"):
        ld.ganesh.ESSConfig(bracket_width=INF)


@pytest.mark.parametrize("value", [NAN, "inf", "1e400", -1, True])
def test_task_bytes_refuses_what_is_not_a_size(value):
    from laddu_dask import config

    with dask.config.set({"laddu-dask.analysis.task-bytes": value}):
        with pytest.raises(ParameterError,
                           match=r"Dask config laddu-dask\.analysis\.task-bytes must be a size"):
            config.nbytes("analysis.task-bytes")
    with dask.config.set({"laddu-dask.analysis.task-bytes": "1 KiB"}):
        assert config.nbytes("analysis.task-bytes") == 1024


@pytest.mark.parametrize("value", [0, -2, 1.5, "3", True, NAN])
def test_tasks_per_thread_refuses_what_is_not_a_positive_integer(value):
    from laddu_dask import config

    assert config.count("analysis.tasks-per-thread") == 2  # the default
    with dask.config.set({"laddu-dask.analysis.tasks-per-thread": value}):
        with pytest.raises(ParameterError,
                           match=r"laddu-dask\.analysis\.tasks-per-thread must be an integer >= 1"):
            config.count("analysis.tasks-per-thread")


def _slow_gathers(monkeypatch, distributed, seconds):
    """``Client._gather`` delayed by ``seconds`` (None: for ever); the calls and the
    cancellations it saw."""
    import asyncio

    original, seen = distributed.Client._gather, {"calls": 0, "cancelled": 0}

    async def slow(self, *args, **kwargs):
        seen["calls"] += 1
        try:
            await asyncio.sleep(3600 if seconds is None else seconds)
        except asyncio.CancelledError:
            seen["cancelled"] += 1
            raise
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(distributed.Client, "_gather", slow)
    return seen


def test_a_slow_fetch_is_waited_for_not_cancelled(monkeypatch):
    """A worker slow to send finished results (a busy one holding 2,000 tasks' results): their
    fetch, longer than a poll, is started once and waited for, never cancelled. distributed
    shares one pending fetch among all of a client's, and a cancelled one failed every later
    fetch at once: a preparation spun there at full CPU until its timeout."""
    distributed = pytest.importorskip("distributed")
    from laddu_dask.cluster_waits import POLL, Deadline, wait_for_futures

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        futures = {i: (None, client.submit(sum, [i, 1])) for i in range(3)}
        distributed.wait([f for _, f in futures.values()], timeout=30)
        seen = _slow_gathers(monkeypatch, distributed, 3 * POLL)
        done, lost = wait_for_futures(client, futures, Deadline("preparation-timeout"), "a test",
                                      lambda err: False)
        assert done == {0: 1, 1: 2, 2: 3} and lost == []
        assert seen == {"calls": 1, "cancelled": 0}  # one fetch of the three, never cancelled
        monkeypatch.undo()
        assert client.gather(futures[2][1]) == 3


def test_a_fetch_that_never_ends_is_bounded_by_the_deadline(monkeypatch):
    distributed = pytest.importorskip("distributed")
    from laddu_dask.cluster_waits import Deadline, wait_for_futures

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        future = client.submit(sum, [1, 2, 3])
        distributed.wait([future], timeout=30)
        seen = _slow_gathers(monkeypatch, distributed, None)
        started = time.monotonic()
        with dask.config.set({"laddu-dask.cluster.preparation-timeout": "2s"}), \
                pytest.raises(ld.ClusterTimeoutError, match="a test"):
            wait_for_futures(client, {"k": (None, future)}, Deadline("preparation-timeout"), "a test",
                             lambda err: False)
        assert time.monotonic() - started < 10 and seen["calls"] == 1


def test_a_wait_without_fetching_leaves_the_results_on_the_workers(monkeypatch):
    """The move of prepared partitions to new workers waits for the moves only: no result is
    fetched to the client (each is a prepared partition)."""
    distributed = pytest.importorskip("distributed")
    from laddu_dask.cluster_waits import Deadline, wait_for_futures

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        futures = {i: (None, client.submit(np.ones, 1000 + i)) for i in range(3)}

        def refused(self, timeout=None):
            raise AssertionError("a result was fetched")

        monkeypatch.setattr(distributed.Future, "result", refused)
        done, lost = wait_for_futures(client, futures, Deadline("preparation-timeout"), "a test",
                                      lambda err: False, fetch=False)
    assert done == {0: None, 1: None, 2: None} and lost == []
