"""A cluster equals the local path to the last bit, at every size (issue 30, point 2).

The property walks the sizes at which the runtime changes path, on both sides of each:

* ``INLINE_EVENTS`` (16,384): a cluster worker's share (data and MC together) at most this
  large runs inline on the worker's event loop, above it on the worker's threads, one unit
  per thread share; the local pool runs an evaluation of at most this many events in the
  calling thread;
* ``MIN_SLICE_EVENTS`` (8,192): a worker or pool with fewer than two partitions per thread
  cuts them into ``min(threads, events // 8192)`` slices, so 2 x 8,192 (2 threads) and
  3 x 8,192 (3 threads) are where one thread share becomes several;
* the exact sums' pass of ``2**15`` events: a partition longer than that is summed in
  several passes;
* resident and streaming storage (streamed partitions always go to the worker's threads,
  at most ``stream_threads`` groups).

Events per partition are 1, T - 1, T, T + 1, 2 T, 2 T + 1, 3 x 8,192 (+ 1) and k T + r
(T = 16,384), in one to three partitions plus a remainder, data and accepted MC sized
independently, with unit weights, or negative and mixed-magnitude ones (2**-20 to 2**20),
evaluated at one, two or three points in one round (the local inline test counts events
times points).  The value and gradient of an NLL of ``I = a x^2 + b y + c`` on a cluster
(two workers, of two and three threads) must equal those of the local path with the same
partitions (one to three threads) and of a one-partition local evaluation with ``==``, and
all of them the ``math.fsum`` reference over the per-event terms computed here with NumPy
(closed-form gradient), so that the paths cannot agree by being equally wrong.

A reported exact sum is held to the same: the data and fit histograms of a projection
(per-bin sums of ``w``, ``w^2`` and the scaled ``w I``), local and on the cluster, against
``math.fsum`` per bin.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import laddu_dask as ld
from laddu_dask.runtime.jobs import INLINE_EVENTS as T
from laddu_dask.runtime.jobs import MIN_SLICE_EVENTS
from laddu_dask.sums.bins import SUB as EXACT_PASS

distributed = pytest.importorskip("distributed")

#: Events per partition: each threshold, one below and one above it, and k T + r.
EDGE_SIZES = sorted({1, T - 1, T, T + 1, 2 * MIN_SLICE_EVENTS, 3 * MIN_SLICE_EVENTS,
                     3 * MIN_SLICE_EVENTS + 1, EXACT_PASS, EXACT_PASS + 1})
PER_PARTITION = st.sampled_from(EDGE_SIZES) | st.builds(lambda k, r: k * T + r, st.integers(1, 2),
                                                       st.integers(1, T - 1))
#: Full partitions, then what is left over (none, one event, half a partition).
PARTITIONS = st.integers(1, 3)
REMAINDER = st.sampled_from(["none", "one", "half"])
WEIGHTS = st.sampled_from(["unit", "mixed"])
MAX_EVENTS = 3 * (3 * T) + 3 * T // 2

POINT = (1.3, 0.7, 0.25)
#: The points of a K-point evaluation (one round, as MCMC walkers): K = 1, 2 or 3.
POINTS = (POINT, (0.6, 1.9, 0.125), (2.5, 0.3, 1.75))
#: Worker threads of the module's cluster: one worker of each.
WORKER_THREADS = (2, 3)


def _columns(seed: int) -> dict[str, np.ndarray]:
    """``x``, ``y`` and mixed weights for the largest sample, sliced by every example."""
    rng = np.random.default_rng(seed)
    n = MAX_EVENTS
    sign = rng.choice([-1.0, 1.0], n, p=[0.25, 0.75])
    # negative weights at most 1, positive ones up to 2**20, the first 2**20: the sums stay positive
    exponent = np.where(sign > 0, rng.integers(-20, 21, n), rng.integers(-20, 1, n))
    weight = sign * np.ldexp(rng.uniform(0.5, 1.0, n), exponent)
    weight[0] = 2.0**20
    return {"x": rng.uniform(-1.0, 1.0, n), "y": rng.uniform(0.0, 2.0, n), "w": weight}


COLUMNS = {"data": _columns(301), "mc": _columns(302)}


@pytest.fixture(scope="module")
def client():
    """One in-process cluster for the module: two workers, of two and of three threads."""
    workers = {f"w{k}": {"cls": distributed.Worker, "options": {"nthreads": threads}}
               for k, threads in enumerate(WORKER_THREADS)}
    scheduler = {"cls": distributed.Scheduler, "options": {"protocol": "inproc://",
                                                           "dashboard_address": None}}
    with distributed.SpecCluster(workers=workers, scheduler=scheduler, silence_logs=50) as cluster:
        with distributed.Client(cluster) as c:
            c.wait_for_workers(len(WORKER_THREADS), timeout=60)
            assert sorted(c.nthreads().values()) == sorted(WORKER_THREADS)
            yield c


def _model() -> ld.Model:
    x, y = ld.scalar("x"), ld.scalar("y")
    a, b, c = (ld.parameter(name, initial=v) for name, v in zip("abc", POINT))
    return ld.Model(a * x * x + b * y + c)


def _arrays(kind: str, n: int, weights: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cols = COLUMNS[kind]
    w = cols["w"][:n] if weights == "mixed" else np.ones(n)
    if kind == "data":
        w = np.abs(w)  # data weights: mixed magnitudes; negative ones only in the MC
    return cols["x"][:n], cols["y"][:n], w


def _size(per_partition: int, partitions: int, remainder: str) -> int:
    return per_partition * partitions + {"none": 0, "one": 1, "half": per_partition // 2}[remainder]


def _dataset(kind: str, n: int, chunk: int, weights: str, policy: str) -> ld.Dataset:
    x, y, w = _arrays(kind, n, weights)
    return ld.Dataset.from_arrays(scalars={"x": x, "y": y}, weights=w, chunk_size=chunk,
                                  memory_policy=policy)


def _evaluate(execution: ld.Execution, sizes: dict, chunks: dict, weights: str, policy: str,
              k: int) -> tuple[np.ndarray, np.ndarray]:
    """Values ``(k,)`` and gradients ``(k, 3)`` at the first ``k`` points, in one round."""
    data = _dataset("data", sizes["data"], chunks["data"], weights, policy)
    mc = _dataset("mc", sizes["mc"], chunks["mc"], weights, policy)
    lik = ld.Likelihood([ld.NLL(_model(), data=data, accepted_mc=mc, name="prop")], execution=execution)
    if k == 1:
        value, grad = lik.value_and_gradient(np.array(POINT))
        values, grads = np.array([value]), np.array([grad])
    else:
        values, grads = lik.values_and_gradients(np.array(POINTS[:k]))
    assert {d.strategy for d in execution.memory_decisions()} == {policy}
    return values, grads


def _reference(sizes: dict, weights: str, point: tuple) -> tuple[float, np.ndarray]:
    """``-2 (sum_data w ln I - N_w ln sum_mc w I)`` and its gradient, each sum ``math.fsum``
    over per-event terms, rounded as the chain rule from the outside in rounds them: with
    ``u = w / I`` on data and ``u = w`` on MC, ``dI/da = (u x) x``, ``dI/db = u y``, ``dI/dc = u``."""
    a, b, c = point
    xd, yd, wd = _arrays("data", sizes["data"], weights)
    xm, ym, wm = _arrays("mc", sizes["mc"], weights)
    i_data, i_mc = a * xd * xd + b * yd + c, a * xm * xm + b * ym + c
    s_data, n_w, s_mc = math.fsum(wd * np.log(i_data)), math.fsum(wd), math.fsum(wm * i_mc)
    u = wd / i_data
    g_data = np.array([math.fsum(t) for t in (u * xd * xd, u * yd, u)])
    g_mc = np.array([math.fsum(t) for t in (wm * xm * xm, wm * ym, wm)])
    return -2.0 * (s_data - n_w * math.log(s_mc)), -2.0 * (g_data - n_w * g_mc / s_mc)


@pytest.mark.timeout(300)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data_n=PER_PARTITION, data_parts=PARTITIONS, data_rest=REMAINDER,
       mc_n=PER_PARTITION, mc_parts=st.integers(1, 2), mc_rest=REMAINDER,
       weights=WEIGHTS, policy=st.sampled_from(["resident", "streaming"]),
       local_threads=st.integers(1, 3), k=st.integers(1, 3))
# one partition just above the inline threshold: the worker holding it cuts it into one
# share per thread; just at it: inline; a streamed run of several partitions: threads
@example(data_n=T + 1, data_parts=1, data_rest="none", mc_n=1, mc_parts=1, mc_rest="none",
         weights="mixed", policy="resident", local_threads=2, k=1)
@example(data_n=T, data_parts=1, data_rest="none", mc_n=T, mc_parts=1, mc_rest="none",
         weights="unit", policy="resident", local_threads=1, k=1)
@example(data_n=3 * MIN_SLICE_EVENTS + 1, data_parts=2, data_rest="one", mc_n=T - 1, mc_parts=2,
         mc_rest="half", weights="mixed", policy="resident", local_threads=3, k=2)
@example(data_n=T - 1, data_parts=3, data_rest="one", mc_n=T + 1, mc_parts=2, mc_rest="none",
         weights="mixed", policy="streaming", local_threads=2, k=3)
# the local pool's inline test counts events (data and MC) times points: 8,192 + 8,192
# events are inline at one point, on the pool's threads at two
@example(data_n=MIN_SLICE_EVENTS, data_parts=1, data_rest="none", mc_n=MIN_SLICE_EVENTS,
         mc_parts=1, mc_rest="none", weights="mixed", policy="resident", local_threads=2, k=1)
@example(data_n=MIN_SLICE_EVENTS, data_parts=1, data_rest="none", mc_n=MIN_SLICE_EVENTS,
         mc_parts=1, mc_rest="none", weights="mixed", policy="resident", local_threads=2, k=2)
def test_cluster_equals_local_bitwise_at_every_size(client, data_n, data_parts, data_rest, mc_n,
                                                   mc_parts, mc_rest, weights, policy, local_threads,
                                                   k):
    sizes = {"data": _size(data_n, data_parts, data_rest), "mc": _size(mc_n, mc_parts, mc_rest)}
    chunks = {"data": data_n, "mc": mc_n}
    whole = {"data": sizes["data"], "mc": sizes["mc"]}  # one partition each
    one = _evaluate(ld.Execution(normalization="general", threads=1), sizes, whole, weights,
                    policy, k)
    local = _evaluate(ld.Execution(normalization="general", threads=local_threads), sizes, chunks,
                      weights, policy, k)
    remote = _evaluate(ld.Execution(client=client, normalization="general"), sizes, chunks,
                       weights, policy, k)
    for values, grads in (local, remote):
        assert np.array_equal(values, one[0]) and np.array_equal(grads, one[1]), (values, one[0])
    refs = [_reference(sizes, weights, point) for point in POINTS[:k]]
    ref_values, ref_grads = np.array([v for v, _ in refs]), np.array([g for _, g in refs])
    # every sum is one correctly rounded sum over the events: the reference's, to the bit
    assert np.array_equal(one[0], ref_values) and np.array_equal(one[1], ref_grads), (one, refs)


EDGES = np.linspace(-1.0, 1.0, 9)


def _binned(values: np.ndarray, terms: np.ndarray) -> np.ndarray:
    """``math.fsum`` of ``terms`` in each bin of ``EDGES`` (half-open, the last closed)."""
    index = np.searchsorted(EDGES, values, side="right") - 1
    index[values == EDGES[-1]] = len(EDGES) - 2
    return np.array([math.fsum(terms[index == k]) for k in range(len(EDGES) - 1)])


def _projection(execution: ld.Execution, sizes: dict, chunks: dict, weights: str):
    data = _dataset("data", sizes["data"], chunks["data"], weights, "resident")
    mc = _dataset("mc", sizes["mc"], chunks["mc"], weights, "resident")
    lik = ld.Likelihood([ld.NLL(_model(), data=data, accepted_mc=mc, name="proj")], execution=execution)
    return ld.projection_histograms(lik, "proj", list(POINT), ld.scalar("x"), bins=EDGES)


@pytest.mark.timeout(300)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data_n=PER_PARTITION, data_parts=PARTITIONS, mc_n=PER_PARTITION, mc_parts=st.integers(1, 2),
       weights=WEIGHTS)
@example(data_n=T + 1, data_parts=2, mc_n=T - 1, mc_parts=2, weights="mixed")
def test_projection_histograms_on_a_cluster_equal_the_local_ones_bitwise(client, data_n, data_parts,
                                                                       mc_n, mc_parts, weights):
    """A reported exact sum: the data and fit histograms of a projection, per bin."""
    sizes = {"data": data_n * data_parts, "mc": mc_n * mc_parts}
    chunks = {"data": data_n, "mc": mc_n}
    one = _projection(ld.Execution(normalization="general", threads=1), sizes, sizes, weights)
    local = _projection(ld.Execution(normalization="general"), sizes, chunks, weights)
    remote = _projection(ld.Execution(client=client, normalization="general"), sizes, chunks, weights)
    xd, _, wd = _arrays("data", sizes["data"], weights)
    xm, ym, wm = _arrays("mc", sizes["mc"], weights)
    a, b, c = POINT
    fit_terms = wm * (a * xm * xm + b * ym + c)
    ref_data = _binned(xd, wd)
    ref_fit = _binned(xm, fit_terms) * (math.fsum(wd) / math.fsum(fit_terms))
    for h in (one, local, remote):
        assert np.array_equal(np.asarray(h.data.counts), ref_data), (h.data.counts, ref_data)
        assert np.array_equal(np.asarray(h.fit.counts), ref_fit), (h.fit.counts, ref_fit)
        assert np.array_equal(np.asarray(h.data.errors), np.sqrt(_binned(xd, wd * wd)))
        assert np.array_equal(np.asarray(h.fit.errors), np.asarray(one.fit.errors))


@pytest.mark.timeout(120)
def test_a_streamed_dataset_never_gets_the_weight_sum_of_another_of_the_same_name(client, monkeypatch):
    """Regression: the streamed weight sum's merge was keyed by the dataset's name alone
    (``("weights-prop-data", 0, 0)`` for every term ``prop``).  While the client still held
    that key from an earlier dataset (its future not yet released: on a loaded machine, kept
    by the cycle of a timed-out wait until the garbage collector ran, see the next test; or a
    preparation in another thread), Dask handed back the earlier sum, and the NLL came out
    with the earlier ``N_w`` (33,003 for a one-event sample: 64936.3459206 for 2.1236559, as
    in a full-suite run).  The earlier futures are held here for the whole test."""
    held = []
    get = client.get

    def holding_get(*args, **kwargs):
        futures = get(*args, **kwargs)
        held.append(futures)
        return futures

    monkeypatch.setattr(client, "get", holding_get)
    for n in (3 * 11001, 1):  # the larger sample first; unit weights: N_w = n
        sizes = {"data": n, "mc": n}
        values, grads = _evaluate(ld.Execution(client=client, normalization="general"), sizes, sizes,
                                  "unit", "streaming", 1)
        value, grad = _reference(sizes, "unit", POINT)
        assert values[0] == value and np.array_equal(grads[0], grad), (n, values, value)
    assert held  # the preparations went through the client, whose futures were kept


@pytest.mark.timeout(120)
def test_a_timed_out_wait_does_not_keep_the_preparation_futures(client, monkeypatch):
    """On a loaded machine the 0.5 s polls of a preparation's wait time out; distributed's
    ``sync`` raised that TimeoutError with a cycle through its traceback that kept the
    futures (and their keys on the cluster) until the garbage collector ran, long enough
    for the next dataset of the same name to be handed their sums.  Here every poll times
    out and the collector is off: the keys must still go when the evaluation is done."""
    import asyncio
    import gc

    timeouts = []
    wait = distributed.wait

    def short_wait(futures, timeout=None, return_when="ALL_COMPLETED"):
        try:
            return wait(futures, timeout=1e-4, return_when=return_when)
        except TimeoutError:
            timeouts.append(1)
            raise

    monkeypatch.setattr(distributed, "wait", short_wait)
    gc.collect()
    gc.disable()
    try:
        sizes = {"data": 5, "mc": 5}
        _evaluate(ld.Execution(client=client, normalization="general"), sizes, sizes, "unit",
                  "streaming", 1)
        client.sync(asyncio.sleep, 0)  # the client's loop has run the releases queued before
        held = [k for k in client.refcount if "weights-" in str(k)]
    finally:
        gc.enable()
    assert timeouts, "no wait timed out: the test's premise failed"
    assert held == []
