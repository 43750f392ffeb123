"""laddu-dask on a distributed cluster: a LocalCluster of two worker processes.

The prepared partitions are Dask data in worker memory (managed memory, named by
dataset); results equal the local scheduler's to the last bit; a worker killed mid-fit
costs nothing but Dask's recomputation of its partitions; an error raised on a worker
reaches the client with its type and message.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from cluster_helpers import holders, local_cluster, recomputed, wait_until

import laddu_dask as ld
from laddu_dask import ksks

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client():
    """The cluster shared by the tests that leave it as they found it."""
    yield from local_cluster()


@pytest.fixture
def own_client():
    """A cluster of its own for a test that kills a worker (later tests count worker processes)."""
    yield from local_cluster()


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return ksks.write_sample(tmp_path_factory.mktemp("cluster"), n_data=4000, n_mc=20000, seed=77)


def _likelihood(sample, execution, policy="fastest", chunk=(1000, 4000)):
    data = ld.read_parquet(sample["data"], chunk_size=chunk[0], memory_policy=policy)
    mc = ld.read_parquet(sample["accmc"], chunk_size=chunk[1], memory_policy=policy)
    return ld.Likelihood([ld.NLL(ksks.model(), data=data, accepted_mc=mc, name="ksks")],
                         execution=execution)


POINT = np.array([ksks.TRUTH[n] for n in ksks.TRUTH]) * 1.01


@pytest.mark.parametrize("policy", ["resident", "streaming"])
def test_cluster_equals_local_to_the_last_bit(client, sample, policy):
    local = _likelihood(sample, ld.Execution(), policy)
    remote = _likelihood(sample, ld.Execution(client=client), policy)
    v_local, g_local = local.value_and_gradient(POINT)
    v_remote, g_remote = remote.value_and_gradient(POINT)
    assert v_remote == v_local
    assert np.array_equal(g_remote, g_local)
    assert remote.value(POINT) == local.value(POINT)
    decisions = remote.execution.memory_decisions()
    assert [d.strategy for d in decisions] == [policy, policy]


def test_partitions_are_dask_managed_memory(client, sample):
    from dask.utils import key_split

    ex = ld.Execution(client=client)
    lik = _likelihood(sample, ex, "resident")
    lik.value(POINT)
    prepared = lik.terms[0].prepare(ex).data
    assert prepared.stats.local_events == 0 and prepared.stats.global_events == 4000
    assert all(isinstance(f, distributed.Future) for f in prepared.partitions)
    assert {key_split(f.key) for f in prepared.partitions} == {"prepared-ksks-data"}
    placed = holders(client, prepared)
    assert len(placed) == 2 and sorted(i for v in placed.values() for i in v) == list(range(4))

    def held(dask_worker, keys):
        return os.getpid(), sum(type(dask_worker.data[k]).__name__ == "PreparedPartition"
                                for k in keys if k in dask_worker.data)

    pids = client.run(held, keys=[f.key for f in prepared.partitions])
    assert os.getpid() not in {pid for pid, _ in pids.values()}
    assert sum(n for _, n in pids.values()) == 4  # in the workers' own data stores
    managed = client.run_on_scheduler(lambda dask_scheduler: {
        k: ts.nbytes for k, ts in dask_scheduler.tasks.items() if ts.state == "memory"})
    mine = sum(managed[f.key] for f in prepared.partitions)
    assert mine >= 0.9 * prepared.stats.resident_bytes > 0
    # what the dashboard's Workers page shows as managed memory, summed over the workers
    total = client.run_on_scheduler(
        lambda dask_scheduler: sum(ws.memory.managed for ws in dask_scheduler.workers.values()))
    assert total >= mine >= 0.9 * prepared.stats.resident_bytes


def test_fit_survives_a_killed_worker(own_client, sample):
    client = own_client
    reference = _likelihood(sample, ld.Execution()).fit(initial=ksks.displaced_start(),
                                                        method="migrad")
    ex = ld.Execution(client=client)
    lik = _likelihood(sample, ex, "resident")
    killed = []

    def kill_once(calls, value):
        if calls == 8 and not killed:
            pids = client.run(os.getpid)
            addr = sorted(pids)[0]
            os.kill(pids[addr], 9)
            killed.append(addr)

    result = lik.fit(initial=ksks.displaced_start(), method="migrad", progress=kill_once)
    assert killed, "the worker was not killed"
    prepared = lik.terms[0].prepare(ex).data
    assert recomputed(client, prepared) > 0  # Dask recomputed them from their source files
    assert killed[0] not in holders(client, prepared)
    assert result.valid
    assert result.fval == reference.fval
    assert np.array_equal(result.values, reference.values)


def test_worker_errors_reach_the_client(client, sample):
    x = ld.scalar("x")
    model = ld.Model(ld.parameter("a", initial=1.0) * x)
    data = ld.Dataset.from_arrays(scalars={"x": np.array([1.0, 2.0, -3.0, 4.0])}, chunk_size=2)
    mc = ld.Dataset.from_arrays(scalars={"x": np.array([1.0, 2.0])})
    lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)],
                        execution=ld.Execution(client=client))
    with pytest.raises(ld.NonPositiveIntensityError, match="at event 2"):
        lik.value([1.0])


def test_bad_file_on_a_worker_fails_the_evaluation(client, tmp_path, sample):
    import shutil

    folder = tmp_path / "parts"
    folder.mkdir()
    for i in range(2):
        shutil.copy(sample["data"], folder / f"part-{i}.parquet")
    data = ld.read_parquet(folder, memory_policy="streaming")
    mc = ld.read_parquet(sample["accmc"])
    lik = ld.Likelihood([ld.NLL(ksks.model(), data=data, accepted_mc=mc)],
                        execution=ld.Execution(client=client))
    lik.value(POINT)
    (folder / "part-1.parquet").write_bytes(b"not parquet any more")
    with pytest.raises(ld.DataChangedError, match=r"part-1\.parquet changed on disk"):
        lik.value(POINT)


def test_one_call_per_worker_per_evaluation(client, sample):
    """Every term's data and accepted MC (four datasets here) travel in one call per worker."""
    ex = ld.Execution(client=client, normalization="general")
    terms = []
    for name in ("one", "two"):
        data = ld.read_parquet(sample["data"], chunk_size=1000, memory_policy="resident")
        mc = ld.read_parquet(sample["accmc"], chunk_size=4000, memory_policy="resident")
        terms.append(ld.NLL(ksks.model(), data=data, accepted_mc=mc, name=name))
    lik = ld.Likelihood(terms, execution=ex)
    lik.value_and_gradient(POINT)  # prepared and placed

    def calls(dask_worker):
        return dask_worker.plugins["laddu-dask"].calls

    before = client.run(calls)
    for _ in range(5):
        lik.value_and_gradient(POINT)
    after = client.run(calls)
    assert {a: after[a] - before[a] for a in after} == {a: 5 for a in after}
    assert len(after) == 2


def _sized_here(fn):
    """``[fn()]`` followed by every message that distributed sized (``safe_sizeof``, to decide
    whether to serialize it in another thread) in this thread meanwhile."""
    import threading

    from distributed.comm import utils

    real, here, sized = utils.safe_sizeof, threading.get_ident(), []

    def counting(*args, **kwargs):
        if threading.get_ident() == here:
            sized.append(args[0])
        return real(*args, **kwargs)

    utils.safe_sizeof = counting
    try:
        return [fn(), *sized]
    finally:
        utils.safe_sizeof = real


def test_evaluations_call_workers_from_their_own_thread(client, sample):
    """An evaluation's worker calls run on the calling thread's own event loop (no hand-over
    to the client's loop thread, ``client.sync``); inside a running event loop (a Jupyter
    cell) and with ``laddu-dask.cluster.direct-calls`` off they go through ``client.sync``.
    Every way gives the local bits, and closed comms are opened again."""
    import asyncio

    import dask

    local = _likelihood(sample, ld.Execution())
    remote = _likelihood(sample, ld.Execution(client=client))
    expected = local.value_and_gradient(POINT)
    remote.value_and_gradient(POINT)  # prepared and placed
    synced = []
    real_sync = client.sync

    def counting_sync(*args, **kwargs):
        synced.append(args[0])
        return real_sync(*args, **kwargs)

    client.sync = counting_sync
    try:
        def same(got):
            return got[0] == expected[0] and np.array_equal(got[1], expected[1])

        assert same(remote.value_and_gradient(POINT))
        assert synced == []  # called from this thread's own loop
        sized = _sized_here(lambda: same(remote.value_and_gradient(POINT)))
        assert sized == [True]  # and its comms skip the offload check's sizeof of each message
        calls = remote.execution._runner.direct
        calls.close()  # as at the end of a session: the next evaluation opens its comms again
        assert same(remote.value_and_gradient(POINT)) and synced == []

        async def in_a_cell():
            return remote.value_and_gradient(POINT)

        assert same(asyncio.run(in_a_cell()))
        assert len(synced) == 1
        with dask.config.set({"laddu-dask.cluster.direct-calls": False}):
            assert same(remote.value_and_gradient(POINT))
        assert len(synced) == 2
    finally:
        client.sync = real_sync


def test_a_partition_moved_under_a_new_key_is_read_under_it(client, sample):
    """A rebalance gives a moved partition a new key (the old one is released). A worker asked
    for the same partitions again must be sent the new keys, not the layout cached for the
    old ones: the sums stay the local ones, bit for bit."""
    from distributed import wait

    from laddu_dask.runtime.cluster import _same

    local = _likelihood(sample, ld.Execution(), "resident")
    remote = _likelihood(sample, ld.Execution(client=client), "resident")
    expected = local.value_and_gradient(POINT)
    remote.value_and_gradient(POINT)  # prepared, placed, its layouts cached on the workers
    runner = remote.execution._runner
    prepared = remote.terms[0].prepare(remote.execution).data
    old = prepared.partitions[1]
    holder = runner.holder[old.key]
    new = client.submit(_same, old, key=(f"{old.key[0]}-moved", old.key[1]), workers=[holder], pure=False)
    wait([new])
    runner.holder[new.key] = holder  # as a rebalance does: same worker, same index, a new key
    runner._replace(prepared, 1, new)
    old_key = old.key
    del old
    # the old key released (what the scheduler says, no event announces it); a key still
    # held after the bound fails the test rather than letting it run on the old key
    wait_until(lambda: not client.who_has([old_key]).get(old_key), 120, "the old key's release")
    got = remote.value_and_gradient(POINT)
    assert got[0] == expected[0] and np.array_equal(got[1], expected[1])


def test_the_workers_shares_are_worked_out_once_per_placement(client, sample, monkeypatch):
    """Which worker reduces which partitions is worked out at the first evaluation and again
    only when the placement changes (here: a partition moved under a new key), so the client's
    work per evaluation does not grow with the partitions; the numbers stay the local ones."""
    import laddu_dask.runtime.cluster as cluster_module

    local = _likelihood(sample, ld.Execution(), "resident")
    remote = _likelihood(sample, ld.Execution(client=client), "resident")
    expected = local.value_and_gradient(POINT)
    remote.value_and_gradient(POINT)
    remote.value(POINT)
    original, calls = cluster_module.assign_shares, []

    def counted(*args):
        calls.append(args[1])
        return original(*args)

    monkeypatch.setattr(cluster_module, "assign_shares", counted)
    for _ in range(3):  # a value and a gradient, then a value alone: two sets of jobs, both kept
        got = remote.value_and_gradient(POINT)
        assert got[0] == expected[0] and np.array_equal(got[1], expected[1])
        assert remote.value(POINT) == expected[0]
    assert calls == []
    runner = remote.execution._runner
    prepared = remote.terms[0].prepare(remote.execution).data
    old = prepared.partitions[0]
    moved = client.submit(cluster_module._same, old, key=(f"{old.key[0]}-moved", old.key[1]),
                          workers=[runner.holder[old.key]], pure=False)
    distributed.wait([moved])
    runner.holder[moved.key] = runner.holder[old.key]
    runner._replace(prepared, 0, moved)
    got = remote.value_and_gradient(POINT)
    assert got[0] == expected[0] and np.array_equal(got[1], expected[1])
    assert len(calls) == 1 and all(ids == list(range(len(ids))) for ids in calls[0].values())
