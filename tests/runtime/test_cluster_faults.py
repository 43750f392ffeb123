"""Faults on a distributed cluster: lost workers, no workers, a lost scheduler.

Each test runs on a fresh LocalCluster of two worker processes (a SubprocessCluster
for the lost scheduler), kills processes with SIGKILL at a controlled moment, and
runs the library's calls in a thread joined with a bound, so that a hang fails the test
instead of stalling the suite.  A worker is held at that moment by a :class:`Signal` (a
FIFO it blocks on), never by a sleep; no test asserts how long anything took.  Numbers
after Dask recomputed the lost partitions equal the local scheduler's to the last bit
(every merge is exact).
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import dask
import numpy as np
import pytest
from cluster_helpers import Signal, holders, recomputed, set_signal, wait_signal, wait_until

import laddu_dask as ld
from laddu_dask import ksks

distributed = pytest.importorskip("distributed")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]  # a hang fails in minutes

ROOT = Path(__file__).resolve().parents[2]  # the repository (tests/<package>/test_*.py)
POINT = np.array([ksks.TRUTH[n] for n in ksks.TRUTH]) * 1.01


def _in_thread(fn, *args) -> tuple[threading.Thread, dict]:
    """Start ``fn(*args)`` in a thread; the dict receives its value or its error."""
    out: dict = {}

    def body():
        try:
            out["value"] = fn(*args)
        except BaseException as err:  # noqa: BLE001 - handed to the test
            out["error"] = err

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, out


def _joined(thread: threading.Thread, out: dict, seconds: float, what: str):
    """The value (or error) of a :func:`_in_thread` call; a failure if it runs past ``seconds``."""
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"{what} still ran after {seconds} s: it hangs")
    if "error" in out:
        raise out["error"]
    return out["value"]


def _within(seconds: float, fn, *args):
    """``fn(*args)`` in a thread with a deadline, so that a hang fails the test."""
    return _joined(*_in_thread(fn, *args), seconds, getattr(fn, "__name__", repr(fn)))


@pytest.fixture
def cluster():
    lc = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=50)
    client = distributed.Client(lc)
    yield lc, client
    client.close(timeout=60)
    lc.close(timeout=120)


def _likelihood(sample, execution, policy="resident"):
    data = ld.read_parquet(sample["data"], chunk_size=750, memory_policy=policy)
    mc = ld.read_parquet(sample["accmc"], chunk_size=1000, memory_policy=policy)
    return ld.Likelihood([ld.NLL(ksks.model(), data=data, accepted_mc=mc, name="ksks")],
                         execution=execution)


def _kill_all(client) -> set[str]:
    """SIGKILL every worker process; returns their addresses."""
    pids = client.run(os.getpid)
    for pid in pids.values():
        os.kill(pid, signal.SIGKILL)
    return set(pids)


#: The release signals this worker process has seen: a held call after its release goes on at once.
_RELEASED: set[str] = set()


def _hold(started: str, release: str) -> None:
    """On a worker: set the ``started`` signal, then block until the test sets ``release``
    (at most two minutes: then the task fails, it never goes on unreleased)."""
    if release in _RELEASED:
        return
    set_signal(started)
    if not wait_signal(release, 120):
        raise RuntimeError(f"the test never set {release}")
    _RELEASED.add(release)


def _block_preparation(marker: str, release: str) -> None:
    """On a worker: partition preparation (the preparation graph's task) waits in :func:`_hold`."""
    import laddu_dask.runtime.preparation as preparation

    original = preparation.prepare_loaded

    def blocked(*args, **kwargs):
        _hold(marker, release)
        return original(*args, **kwargs)

    preparation.prepare_loaded = blocked


def _block_reduction(marker: str, release: str) -> None:
    """On a worker: the reductions of its evaluation handler wait in :func:`_hold`."""
    import laddu_dask.runtime.worker as worker

    for name in ("reduce_partitions", "stream_partitions"):
        original = getattr(worker, name)

        def blocked(*args, _original=original, **kwargs):
            _hold(marker, release)
            return _original(*args, **kwargs)

        setattr(worker, name, blocked)


@pytest.fixture
def signals(tmp_path):
    """``(started, release)``: a held worker sets the first and waits for the second."""
    started, release = Signal(tmp_path / "started"), Signal(tmp_path / "release")
    yield started, release
    release.set()  # whatever the test did, nothing stays held
    started.close()
    release.close()


def _blocked_worker(client, signals, hook=_block_preparation) -> tuple[str, int]:
    pids = client.run(os.getpid)
    addr = sorted(pids)[0]
    started, release = signals
    client.run(hook, started.path, release.path, workers=[addr])
    return addr, pids[addr]


@pytest.mark.parametrize("moment, policy", [("preparation", "resident"), ("evaluation", "resident"),
                                            ("evaluation", "streaming")])
def test_worker_killed_while_it_works_is_replaced(cluster, ksks_sample, signals, moment, policy):
    _, client = cluster
    reference = _likelihood(ksks_sample, ld.Execution(), policy).value_and_gradient(POINT)
    lik = _likelihood(ksks_sample, ld.Execution(client=client), policy)
    if moment == "evaluation":
        lik.value(POINT * 1.01)  # prepared: the next evaluation blocks on one worker
    hook = _block_preparation if moment == "preparation" else _block_reduction
    addr, pid = _blocked_worker(client, signals, hook)
    started, release = signals
    thread, result = _in_thread(lik.value_and_gradient, POINT)
    try:
        started.wait(120, f"the worker to start its {moment}")
        os.kill(pid, signal.SIGKILL)  # while it prepares, or reduces, its partitions
        value, gradient = _joined(thread, result, 120, f"the {moment} with a killed worker")
    finally:
        release.set()
    assert value == reference[0] and np.array_equal(gradient, reference[1])
    prepared = lik.terms[0].prepare(lik.execution).data
    if policy == "resident":
        placed = holders(client, prepared)
        assert addr not in placed
        assert sorted({i for idx in placed.values() for i in idx}) == [0, 1, 2, 3]
        if moment == "evaluation":  # the killed worker's partitions, recomputed by Dask
            assert recomputed(client, prepared) >= 1


def test_preparation_past_its_timeout_names_the_dataset(cluster, ksks_sample, signals):
    """The held worker never finishes its preparation task (it waits for a release the test
    sends only afterwards), so the 2 s timeout is the one way out, however loaded the machine."""
    _, client = cluster
    addr, _ = _blocked_worker(client, signals)
    release = signals[1]
    lik = _likelihood(ksks_sample, ld.Execution(client=client))
    try:
        with dask.config.set({"laddu-dask.cluster.preparation-timeout": "2s"}):
            with pytest.raises(ld.ClusterTimeoutError,
                               match=rf"preparation of dataset 'ksks/data' .*within 2\.00 s .*"
                                     rf"laddu-dask\.cluster\.preparation-timeout.*task\(s\) on {addr}"):
                _within(120, lik.value, POINT)
    finally:
        release.set()


def test_fit_survives_losing_all_workers(cluster, ksks_sample):
    _, client = cluster
    reference = _likelihood(ksks_sample, ld.Execution()).fit(initial=ksks.displaced_start(),
                                                             method="migrad")
    lik = _likelihood(ksks_sample, ld.Execution(client=client))
    killed: list[set[str]] = []

    def kill_all_once(calls, value):
        if calls == 5 and not killed:
            killed.append(_kill_all(client))  # the nannies restart them, at new addresses

    result = _within(120, lambda: lik.fit(initial=ksks.displaced_start(), method="migrad",
                                         progress=kill_all_once))
    assert killed, "the workers were not killed"
    prepared = lik.terms[0].prepare(lik.execution).data
    assert recomputed(client, prepared) >= 1  # (one may have moved since, under a new key)
    assert not set(holders(client, prepared)) & killed[0]
    assert result.valid
    assert result.fval == reference.fval
    assert np.array_equal(result.values, reference.values)


def test_no_worker_within_the_timeout(cluster, ksks_sample):
    lc, client = cluster
    reference = _likelihood(ksks_sample, ld.Execution()).value(POINT)
    lik = _likelihood(ksks_sample, ld.Execution(client=client))
    lik.value(POINT)
    for nanny in lc.workers.values():
        nanny.close_gracefully()  # no restart
    _kill_all(client)
    wait_until(lambda: not client.scheduler_info()["workers"], 120, "the workers to leave")
    # no worker can come back, so the 1 s worker-timeout is the one way out: the message
    # names it, and a wait past it (a hang) fails the thread's bound
    with dask.config.set({"laddu-dask.cluster.worker-timeout": "1s"}):
        with pytest.raises(ld.ClusterTimeoutError,
                           match=r"dataset 'ksks/data'.*no running worker for 1\.00 s .*"
                                 r"laddu-dask\.cluster\.worker-timeout.*at least 1 worker"):
            _within(120, lik.value, POINT)
    lc.scale(4)  # two new workers: the same likelihood goes on, with the same numbers
    client.wait_for_workers(2, timeout=120)
    assert _within(120, lik.value, POINT) == reference


def test_lost_scheduler_raises_at_once(ksks_sample, monkeypatch):
    from distributed.deploy.subprocess import SubprocessCluster

    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the workers import this laddu_dask
    sc = SubprocessCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0",
                           silence_logs=50)
    client = distributed.Client(sc)
    try:
        client.wait_for_workers(1, timeout=120)
        address = sc.scheduler_address
        lik = _likelihood(ksks_sample, ld.Execution(client=client))
        lik.value(POINT)
        os.kill(sc.scheduler.process.pid, signal.SIGKILL)
        wait_until(lambda: client.status != "running", 120, "the client to see the loss")
        # "at once": a wait for a reconnection would take the 10-minute connect timeout set
        # here, far past the thread's bound (a clock-free check: no elapsed time is asserted)
        with dask.config.set({"distributed.comm.timeouts.connect": "600s"}):
            for _ in range(2):  # every evaluation, not only the first
                with pytest.raises(ld.SchedulerLostError, match=f"scheduler at {address} is gone"):
                    _within(120, lik.value, POINT)
    finally:
        for worker in sc.workers.values():
            if worker.process is not None and worker.process.returncode is None:
                os.kill(worker.process.pid, signal.SIGKILL)
        client.close(timeout=5)
        try:  # its scheduler is dead: a close can only time out (1 s, not the 5 it waited)
            sc.close(timeout=1)
        except Exception:  # noqa: BLE001 - its scheduler is gone on purpose
            pass
