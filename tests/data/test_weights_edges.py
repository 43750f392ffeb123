"""Tests that kill the surviving mutants of ``laddu_dask/data/weights.py`` (docs/mutation.md).

Every sum is compared with ``math.fsum`` over the weights, the independent reference.
"""

from __future__ import annotations

import math
import threading

import dask
import dask.array as da
import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.data.arrays import ArrayPartition
from laddu_dask.errors import NonFiniteError


def _cancelling_weights(n: int) -> np.ndarray:
    """Weights whose plain float sum is wrong: huge pairs that cancel, across partitions."""
    w = np.random.default_rng(7).normal(size=n)
    w[::7] = 1e16
    w[3::7] = -1e16
    return w


def test_sum_of_many_partitions_is_fsum_of_every_weight():
    w = _cancelling_weights(1000)
    ds = ld.Dataset.from_arrays(scalars={"x": np.zeros(1000)}, weights=w, chunk_size=96)
    assert ds.n_partitions > 2
    assert ds.sum_weights() == math.fsum(w.tolist())


def _reading_threads(monkeypatch) -> set[str]:
    """The names of the threads that read a partition (``ArrayPartition.load``), filled as they read."""
    threads: set[str] = set()
    load = ArrayPartition.load

    def recording_load(self, *args, **kwargs):
        threads.add(threading.current_thread().name)
        return load(self, *args, **kwargs)

    monkeypatch.setattr(ArrayPartition, "load", recording_load)
    return threads


@pytest.mark.parametrize("num_workers", [1, 2, 3])
def test_streamed_sum_reads_partitions_on_threads_and_is_fsum(monkeypatch, num_workers):
    """sum_weights(num_workers=N) runs on Dask's threaded scheduler even when the default is sync."""
    w = _cancelling_weights(1000)
    ds = ld.Dataset.from_arrays(scalars={"x": np.zeros(1000)}, weights=w, chunk_size=96)
    threads = _reading_threads(monkeypatch)
    with dask.config.set(scheduler="sync"):
        total = ds.sum_weights(num_workers=num_workers)
    assert total == math.fsum(w.tolist())
    # every partition was read once, and not on the main thread (the sync scheduler's)
    assert threads and threading.main_thread().name not in threads
    assert len(threads) <= num_workers


def test_streamed_sum_with_one_worker_reads_on_one_thread(monkeypatch):
    """num_workers=1 bounds the pool to one thread: a second reader never arrives.

    The first read waits (bounded) for a second thread; with a pool of one there is none, so
    the wait runs out and every read happens on the one thread.
    """
    w = _cancelling_weights(1000)
    ds = ld.Dataset.from_arrays(scalars={"x": np.zeros(1000)}, weights=w, chunk_size=96)
    threads: set[str] = set()
    second = threading.Event()
    first = threading.Lock()
    load = ArrayPartition.load

    def recording_load(self, *args, **kwargs):
        threads.add(threading.current_thread().name)
        if len(threads) > 1:
            second.set()
        if first.acquire(blocking=False):
            second.wait(timeout=1.0)
        return load(self, *args, **kwargs)

    monkeypatch.setattr(ArrayPartition, "load", recording_load)
    with dask.config.set(scheduler="sync"):
        assert ds.sum_weights(num_workers=1) == math.fsum(w.tolist())
    assert len(threads) == 1 and not second.is_set()


def test_sum_without_num_workers_follows_the_configured_scheduler(monkeypatch):
    w = _cancelling_weights(500)
    ds = ld.Dataset.from_arrays(scalars={"x": np.zeros(500)}, weights=w, chunk_size=96)
    threads = _reading_threads(monkeypatch)
    with dask.config.set(scheduler="sync"):
        assert ds.sum_weights() == math.fsum(w.tolist())
    assert threads == {threading.main_thread().name}


def test_sum_of_a_dask_collection_is_fsum_of_its_blocks():
    w = _cancelling_weights(1200)
    ds = ld.Dataset.from_dask(p4s={"k": da.from_array(np.ones((1200, 4)), chunks=(250, 4))},
                              weights=da.from_array(w, chunks=250))
    assert ds.n_partitions == 5
    assert ds.sum_weights() == math.fsum(w.tolist())


def test_overflowing_sum_is_a_non_finite_error_naming_the_source():
    ds = ld.Dataset.from_arrays(scalars={"x": np.zeros(4)}, weights=[1e308, 1e308, 1e308, 1.0],
                                chunk_size=2)
    with pytest.raises(NonFiniteError, match="sum to more than the largest double"):
        ds.sum_weights()


@pytest.mark.parametrize(("n_partitions", "num_workers", "groups"),
                         [(11, 2, [3, 3, 3, 2]), (11, 1, [6, 5]), (5, 3, [1, 1, 1, 1, 1]), (2, 4, [1, 1])])
def test_streamed_sum_makes_two_tasks_a_thread(monkeypatch, n_partitions, num_workers, groups):
    """The memory plan: ceil(partitions / (2 * num_workers)) partitions a task, in order."""
    import laddu_dask.data.weights as weights

    w = _cancelling_weights(10 * n_partitions)
    ds = ld.Dataset.from_arrays(scalars={"x": np.zeros(w.size)}, weights=w, chunk_size=10)
    assert ds.n_partitions == n_partitions
    seen: list[int] = []
    load_partials = weights._load_partials

    def recording(*partitions):
        seen.append(len(partitions))
        return load_partials(*partitions)

    monkeypatch.setattr(weights, "_load_partials", recording)
    with dask.config.set(scheduler="sync"):
        assert ds.sum_weights(num_workers=num_workers) == math.fsum(w.tolist())
    assert sorted(seen, reverse=True) == groups
