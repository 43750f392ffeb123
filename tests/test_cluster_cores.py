"""A cluster worker with two threads reduces on both: cores used, and time against the local pool.

One worker process of two threads holds every prepared partition of four KsKs NLL
terms over one sample (data and accepted MC reduced event by event, 2 + 16 partitions
of 25,000 events each); repeated
value-and-gradient evaluations must keep both threads busy and take at most 1.3 times
as long as the local thread pool of two threads, measured in turn with it (1.5 times
where the machine gives the worker less than 1.8 cores: see the test).

Both threads: the two busiest threads of the worker process each did at least 30% of its
CPU time (psutil) during the evaluations; a worker that reduces on one thread fails this
on any machine.  Cores: the process's CPU time over the wall time should be at least 80%
of what two threads of GIL-free NumPy work get in the same process just before (1.6
cores on a machine that has two for it, the issue's figure); on this project's 2-core
machines the worker is busy 0.84-0.87 of the 1.94 cores available (1.63-1.69 cores;
0.77-0.82 on the slower machine of an earlier session). Each measurement is taken up to
three times (the best counts), so that a burst of other work does not decide it.
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np
import pytest
from cluster_helpers import local_cluster

import laddu_dask as ld
from laddu_dask import ksks

distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")

pytestmark = pytest.mark.slow

POINT = np.array([ksks.TRUTH[n] for n in ksks.TRUTH]) * 1.01
#: Wall seconds of evaluations per measurement.
SPAN = 1.5
#: Likelihood terms over the same sample, so that an evaluation's work (about 1.8 M events
#: with their gradient) dwarfs the fixed cost of a call (a few milliseconds).
TERMS = 4


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return ksks.write_sample(tmp_path_factory.mktemp("cores"), n_data=50_000, n_mc=400_000, seed=21)


@pytest.fixture(scope="module")
def one_worker_two_threads():
    yield from local_cluster(n_workers=1, threads=2)


def _likelihood(sample, execution):
    # the same events in TERMS terms: TERMS times the work in each evaluation, still one call
    data = ld.read_parquet(sample["data"], chunk_size=25_000, memory_policy="resident")
    mc = ld.read_parquet(sample["accmc"], chunk_size=25_000, memory_policy="resident")
    return ld.Likelihood([ld.NLL(ksks.model(), data=data, accepted_mc=mc, name=f"ksks{k}")
                          for k in range(TERMS)], execution=execution)


def _thread_seconds(proc) -> dict[int, float]:
    return {t.id: t.user_time + t.system_time for t in proc.threads()}


def _burn(seconds: float) -> None:
    """Two threads of NumPy sorts (which release the GIL) for ``seconds``."""
    import threading

    def sort():
        a = np.random.default_rng(0).random(1_000_000)
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            np.sort(a)

    threads = [threading.Thread(target=sort) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _busy(proc, evaluate) -> tuple[float, list[float]]:
    """Cores the process used while ``evaluate`` ran for :data:`SPAN` seconds, and the CPU
    seconds of its two busiest threads as fractions of the process's."""
    threads0, cpu0, t0 = _thread_seconds(proc), sum(proc.cpu_times()[:2]), time.perf_counter()
    while time.perf_counter() - t0 < SPAN:
        evaluate()
    wall, cpu = time.perf_counter() - t0, sum(proc.cpu_times()[:2]) - cpu0
    threads = _thread_seconds(proc)
    used = sorted((s - threads0.get(t, 0.0) for t, s in threads.items()), reverse=True)
    return cpu / wall, [u / cpu for u in used[:2]]


def _trials(sample, client) -> list[tuple[float, float, float, float]]:
    """Up to three measurements ``(cores / available, smaller thread share, cores, available)``;
    the values equal the local pool's to the last bit first."""
    remote = _likelihood(sample, ld.Execution(client=client, normalization="general"))
    local = _likelihood(sample, ld.Execution(num_workers=2, normalization="general"))
    v_remote, g_remote = remote.value_and_gradient(POINT)
    v_local, g_local = local.value_and_gradient(POINT)
    assert v_remote == v_local and np.array_equal(g_remote, g_local)
    [pid] = client.run(os.getpid).values()
    proc = psutil.Process(pid)
    trials = []
    for _ in range(3):
        available, _ = _busy(proc, lambda: client.run(_burn, SPAN))
        cores, shares = _busy(proc, lambda: remote.value_and_gradient(POINT))
        trials.append((cores / min(available, 2.0), min(shares), cores, available))
        if trials[-1][0] >= 0.8:
            break
    return trials


def test_one_worker_with_two_threads_reduces_on_both(sample, one_worker_two_threads):
    trials = _trials(sample, one_worker_two_threads)
    assert max(t[1] for t in trials) >= 0.3, trials  # the work is on two threads, not one


def test_one_worker_with_two_threads_is_busy_on_80_percent_of_the_cores(sample, one_worker_two_threads):
    trials = _trials(sample, one_worker_two_threads)
    # 1.6 cores on a machine that has two for it (the figure)
    assert max(t[0] for t in trials) >= 0.8, trials  # (fraction, smaller share, cores, available)


def test_one_worker_with_two_threads_is_within_1_3x_of_the_local_pool(sample, one_worker_two_threads):
    client = one_worker_two_threads
    remote = _likelihood(sample, ld.Execution(client=client, normalization="general"))
    local = _likelihood(sample, ld.Execution(num_workers=2, normalization="general"))
    [pid] = client.run(os.getpid).values()
    available, _ = _busy(psutil.Process(pid), lambda: client.run(_burn, SPAN))
    # where other work leaves less than two cores, the client's process takes its time from
    # the worker's, which the local pool does not pay: 1.5x there
    bound = 1.3 if available >= 1.8 else 1.5
    ratios = []
    for _ in range(3):
        times: dict[str, list[float]] = {"remote": [], "local": []}
        for _ in range(8):  # in turn, so that both see the same load
            for name, lik in (("remote", remote), ("local", local)):
                t0 = time.perf_counter()
                lik.value_and_gradient(POINT)
                times[name].append(time.perf_counter() - t0)
        ratios.append(statistics.median(times["remote"]) / statistics.median(times["local"]))
        if ratios[-1] <= bound:
            break
    assert min(ratios) <= bound, (ratios, available)
