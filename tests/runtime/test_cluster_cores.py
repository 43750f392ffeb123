"""A cluster worker with two threads reduces on both, and does the local pool's work, no more.

One worker process of two threads holds every prepared partition of four KsKs NLL
terms over one sample (data and accepted MC reduced event by event, 2 + 16 partitions
of 12,500 events each); its value-and-gradient evaluations equal the local thread pool's
to the last bit.  What keeps the worker's cores busy is what its evaluation handler
decides, and that is what is asserted, never a CPU-utilisation percentage or a time
(which depend on the machine's other work):

* both threads of the worker's pool reduce, at the same time: each reduction is held
  until a second one is in flight (a worker that reduces on one thread never gets
  there, and fails after a bound that no load reaches);
* every event is reduced exactly once per evaluation, in pieces that two threads taking
  the largest first keep busy for at least 80% of the evaluation's reduction (the
  issue's figure: 1.6 of 2 cores), counted in events;
* one call per evaluation, carrying only the parameters (the reducers and the layout
  go once), answered with one buffer of partial sums: what kept the worker idle
  between its reductions (~14 ms of a 46 ms evaluation before the one-frame transport).

The time an evaluation takes against the local pool and the cores the worker is busy
on are measured by ``benchmarks/bench_cluster.py`` (``laddu_dask_bench.cluster_bench``).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from cluster_helpers import local_cluster

import laddu_dask as ld
from laddu_dask import ksks
from laddu_dask.runtime.worker import HANDLER, PLUGIN

distributed = pytest.importorskip("distributed")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

POINT = np.array([ksks.TRUTH[n] for n in ksks.TRUTH]) * 1.01
#: Likelihood terms over the same sample, so that an evaluation's work (about 0.9 M events
#: with their gradient) dwarfs the fixed cost of a call (a few milliseconds).
TERMS = 4
N_DATA, N_MC, CHUNK = 25_000, 200_000, 12_500
THREADS = 2
#: Seconds a held reduction waits for a second one: a bound on a hang, never reached under load.
OVERLAP_BOUND = 60.0


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return ksks.write_sample(tmp_path_factory.mktemp("cores"), n_data=N_DATA, n_mc=N_MC, seed=21)


@pytest.fixture(scope="module")
def one_worker_two_threads():
    yield from local_cluster(n_workers=1, threads=THREADS)


def _likelihood(sample, execution):
    # the same events in TERMS terms: TERMS times the work in each evaluation, still one call
    data = ld.read_parquet(sample["data"], chunk_size=CHUNK, memory_policy="resident")
    mc = ld.read_parquet(sample["accmc"], chunk_size=CHUNK, memory_policy="resident")
    return ld.Likelihood([ld.NLL(ksks.model(), data=data, accepted_mc=mc, name=f"ksks{k}")
                          for k in range(TERMS)], execution=execution)


#: On the worker: what its evaluation handler did (see :func:`_watch`).
_SEEN: dict = {}


def _watch(dask_worker) -> int:
    """On the worker: record every call of the evaluation handler (whether it carried
    objects, the bytes of its points and of its reply) and every reduction unit (the
    thread that ran it, its events); hold each unit until a second one is in flight in
    the same call, at most :data:`OVERLAP_BOUND` seconds (then ``stalled``).  Returns the
    size of the handler's thread pool."""
    import laddu_dask.runtime.worker as worker_module

    plugin = dask_worker.plugins[PLUGIN]
    if _SEEN:
        return plugin.pool._max_workers
    changed = threading.Condition()
    _SEEN.update(calls=[], live=0, most=0, stalled=False)
    reduce_partitions, handler = worker_module.reduce_partitions, dask_worker.handlers[HANDLER]

    def unit(reducer, parts, *rest):
        call = _SEEN["calls"][-1]
        with changed:
            _SEEN["live"] += 1
            _SEEN["most"] = max(_SEEN["most"], _SEEN["live"])
            changed.notify_all()
            if not changed.wait_for(lambda: _SEEN["most"] >= 2 or _SEEN["stalled"], OVERLAP_BOUND):
                _SEEN["stalled"] = True
            call["units"].append((threading.current_thread().name, sum(p.n for p in parts)))
        try:
            return reduce_partitions(reducer, parts, *rest)
        finally:
            with changed:
                _SEEN["live"] -= 1

    async def reduce(request):
        with changed:
            _SEEN["most"] = 0
            _SEEN["calls"].append({"objects": bool(request.get("objects")), "units": [], "most": 0,
                                   "points": sum(len(p) for p in request["points"])})
        reply = await handler(request=request)
        _SEEN["calls"][-1].update(most=_SEEN["most"], reply=sorted(reply),
                                  data=len(reply.get("data", b"")))
        return reply

    worker_module.reduce_partitions = unit
    dask_worker.handlers[HANDLER] = reduce
    return plugin.pool._max_workers


def _seen() -> dict:
    return {"calls": _SEEN["calls"], "stalled": _SEEN["stalled"]}


@pytest.fixture(scope="module")
def evaluations(sample, one_worker_two_threads):
    """Three evaluations on the watched worker, after one that prepared the partitions and
    sent the reducers, each bitwise equal to the local pool's; what the worker saw."""
    client = one_worker_two_threads
    remote = _likelihood(sample, ld.Execution(client=client, normalization="general"))
    local = _likelihood(sample, ld.Execution(num_workers=THREADS, normalization="general"))
    remote.value_and_gradient(POINT * 1.01)  # prepared, reducers and layout sent: the handler is there
    [pool] = client.run(_watch).values()
    points = [POINT, POINT * 1.001, POINT * 0.999]
    for point in points:
        v_remote, g_remote = remote.value_and_gradient(point)
        v_local, g_local = local.value_and_gradient(point)
        assert v_remote == v_local and np.array_equal(g_remote, g_local)
    [seen] = client.run(_seen).values()
    return pool, seen


def _busy_fraction(units: list[int], threads: int) -> float:
    """The share of ``threads`` threads' time busy when each takes the next unit, the
    largest first, as soon as it is free (the handler's rule), the time counted in events."""
    loads = [0] * threads
    for events in sorted(units, reverse=True):
        loads[loads.index(min(loads))] += events
    return sum(units) / (threads * max(loads))


def test_busy_fraction_of_a_hand_computed_split():
    assert _busy_fraction([3, 3, 2, 2, 2], 2) == pytest.approx(12 / 14)  # 3+2+2 | 3+2
    assert _busy_fraction([5, 1], 2) == pytest.approx(0.6)
    assert _busy_fraction([4, 4], 2) == 1.0


def test_one_worker_with_two_threads_reduces_on_both_at_once(evaluations):
    pool, seen = evaluations
    assert pool == THREADS
    assert not seen["stalled"], "a reduction waited for a second one in vain: one thread reduces"
    for call in seen["calls"]:
        assert call["most"] == THREADS, call  # two reductions in flight at once, never more
        threads = {name for name, _ in call["units"]}
        assert len(threads) == THREADS and all(n.startswith("laddu-dask-reduce") for n in threads)


def test_one_worker_with_two_threads_keeps_both_busy_on_80_percent(evaluations):
    _, seen = evaluations
    for call in seen["calls"]:
        units = [events for _, events in call["units"]]
        assert sum(units) == TERMS * (N_DATA + N_MC)  # every event once per evaluation
        assert _busy_fraction(units, THREADS) >= 0.8, units  # 1.6 of 2 cores (the figure)


def test_one_worker_with_two_threads_gets_one_call_of_parameters_per_evaluation(evaluations):
    _, seen = evaluations
    calls = seen["calls"]
    assert len(calls) == 3  # one call per evaluation (the worker holds every partition)
    assert not any(c["objects"] for c in calls)  # the reducers and layout went with the first
    # one job per term and dataset, each carrying one point of 8-byte parameters
    assert {c["points"] for c in calls} == {2 * TERMS * POINT.size * 8}
    for call in calls:
        assert call["reply"] == ["counts", "data", "events", "jobs", "shapes"]  # nothing missing, no error
        # one buffer of exact partial sums of 8 jobs (25 KiB measured), not the partitions'
        # per-event arrays (14 MB) nor one message per partition
        assert 0 < call["data"] < 2**16
