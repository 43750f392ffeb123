"""The disk tier: prepared partitions kept on the local disk, mapped back each evaluation.

What a user relies on: the same bits as resident and streaming storage for any
partitioning, ``fastest`` choosing memory, then disk, then source by the two budgets
and saying why, a lost file costing time and not the evaluation, private files that go
with the prepared dataset, and typed errors before anything is written.
"""

from __future__ import annotations

import gc
import math
import os

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from laddu_dask import (
    NLL,
    CompiledModel,
    Execution,
    Likelihood,
    MemoryPlan,
    PreparedModel,
    ReductionPlan,
    ksks,
    read_parquet,
)
from laddu_dask.errors import BudgetError, DiskTierError, NonFiniteError
from laddu_dask.runtime.disk_tier import MAGIC, DiskStore
from laddu_dask.runtime.partition import PreparedPartition


@pytest.fixture
def tier(tmp_path):
    """The disk tier in a folder of this test, with an unlimited disk budget."""
    folder = tmp_path / "tier"
    with dask.config.set({"laddu-dask.disk.directory": str(folder), "laddu-dask.disk.budget": None}):
        yield folder


def _fit_value(data_path, mc_path, policy, chunk):
    data = read_parquet(data_path, chunk_size=chunk, memory_policy=policy)
    mc = read_parquet(mc_path, chunk_size=chunk, memory_policy=policy)
    ex = Execution()
    lik = Likelihood([NLL(ksks.model("rbw"), data=data, accepted_mc=mc)], execution=ex)
    point = [ksks.TRUTH[name] * 1.05 for name in lik.parameter_names]
    value, gradient = lik.value_and_gradient(point)
    return value, gradient, {d.strategy for d in ex.memory_decisions()}


def test_disk_gives_the_resident_bits_for_any_partitioning(ksks_sample, tier):
    n = pq.read_metadata(ksks_sample["accmc"]).num_rows
    reference = None
    for parts in (1, 3, 7):
        chunk = math.ceil(n / parts)
        for policy in ("resident", "disk", "streaming"):
            value, gradient, strategies = _fit_value(ksks_sample["data"], ksks_sample["accmc"], policy, chunk)
            assert strategies == {policy}
            if reference is None:
                reference = (value, gradient)
            assert value == reference[0] and np.array_equal(gradient, reference[1]), (parts, policy)
    assert not any(os.scandir(tier))  # every dataset's files went with it


def _prepared(path, ex, policy="fastest", chunk=400, name="mc"):
    pm = PreparedModel.prepare(CompiledModel.from_expr(ksks.model("bw")), ex)
    return pm, pm.prepare_dataset(ex, read_parquet(path, chunk_size=chunk, memory_policy=policy), name)


GROUP = 2000


@pytest.fixture(scope="module")
def big_accmc(ksks_sample, tmp_path_factory):
    """The accepted MC 40 times over in row groups of GROUP events: a streamed partition is
    smaller than the whole sample held resident."""
    path = tmp_path_factory.mktemp("big") / "accmc.parquet"
    pq.write_table(pa.concat_tables([pq.read_table(ksks_sample["accmc"])] * 40), path,
                   row_group_size=GROUP)
    return path


def _sizes(path):
    """(resident bytes, streamed peak) of the accepted MC as the planner estimates them."""
    ex = Execution(num_workers=1)
    _prepared(path, ex, "streaming", chunk=GROUP)
    (d,) = ex.memory_decisions()
    return d.estimated_bytes, d.peak_bytes


def test_fastest_chooses_memory_then_disk_then_source(big_accmc, tier):
    resident, peak = _sizes(big_accmc)
    budget = (resident + peak) // 2
    assert peak < budget < resident

    ex = Execution(num_workers=1)
    _, pd = _prepared(big_accmc, ex, chunk=GROUP)
    assert pd.storage == "resident"

    ex = Execution(num_workers=1, memory=MemoryPlan(host=budget))
    _, pd = _prepared(big_accmc, ex, chunk=GROUP)
    (d,) = ex.memory_decisions()
    assert pd.storage == d.strategy == "disk" and d.requested_policy == "fastest"
    assert d.reason.startswith(f"disk: resident storage would need {resident / 2**20:.2f} MiB")
    assert "fit no disk budget, read back each evaluation" in d.reason
    assert d.peak_bytes <= budget
    assert pd.stats.resident_bytes == 0
    assert pd.stats.disk_bytes >= resident - 64 * pd.stats.batches  # its arrays, and headers

    with dask.config.set({"laddu-dask.disk.budget": "1 KiB"}):
        ex = Execution(num_workers=1, memory=MemoryPlan(host=budget))
        _, pd = _prepared(big_accmc, ex, chunk=GROUP)
    (d,) = ex.memory_decisions()
    assert pd.storage == "streaming"
    assert "and the disk budget of 1.00 kiB (1024 bytes) (laddu-dask.disk.budget) is smaller too" in d.reason


def test_disk_beyond_the_disk_budget_raises_before_writing(ksks_sample, tier):
    with dask.config.set({"laddu-dask.disk.budget": "1 KiB"}), pytest.raises(
            BudgetError, match=r"dataset 'mc' needs .* of disk to keep its prepared partitions there, "
                               r"but the disk budget of 1.00 kiB .* is smaller; raise the disk budget "
                               r"or use memory_policy='streaming'"):
        _prepared(ksks_sample["accmc"], Execution(), "disk")
    assert not tier.exists() or not any(os.scandir(tier))


def test_a_lost_or_replaced_file_is_prepared_again(ksks_sample, tier):
    ex = Execution(num_workers=2)
    pm, pd = _prepared(ksks_sample["accmc"], ex, "disk")
    plan = ReductionPlan.weighted_real()
    point = [1.0] * len(pm.parameter_names)
    expected = pm.reduce_with_gradient(ex, point, pd, plan)
    first, second, third = pd.partitions[:3]
    sizes = [h.size for h in (first, second, third)]
    os.remove(first.path)  # lost
    with open(second.path, "r+b") as f:  # truncated
        f.truncate(100)
    with open(third.path, "r+b") as f:  # the same size, another header
        f.write(b"X" * len(MAGIC))
    again = pm.reduce_with_gradient(ex, point, pd, plan)
    assert again.value == expected.value and np.array_equal(again.gradient, expected.gradient)
    assert [os.path.getsize(h.path) for h in (first, second, third)] == sizes  # written again
    assert all(h.load() is not None for h in (first, second, third))


def test_files_are_private_and_go_with_the_prepared_dataset(ksks_sample, tier):
    ex = Execution()
    pm, pd = _prepared(ksks_sample["accmc"], ex, "disk")
    folder = pd.store.folder
    assert os.path.dirname(folder) == str(tier)
    assert os.stat(tier).st_mode & 0o777 == 0o700 and os.stat(folder).st_mode & 0o777 == 0o700
    assert sorted(os.listdir(folder)) == [f"part-{i:06d}.ldprep" for i in range(pd.stats.batches)]
    del pm, pd
    gc.collect()
    assert not os.path.exists(folder)


def test_an_unsafe_disk_folder_is_refused(ksks_sample, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with dask.config.set({"laddu-dask.disk.directory": str(shared)}), pytest.raises(
            DiskTierError, match=rf"the disk tier folder {shared} is writable by its group or others "
                                 rf"\(mode 0o777\).*chmod go-w {shared}.*laddu-dask.disk.directory"):
        _prepared(ksks_sample["accmc"], Execution(), "disk")
    assert os.listdir(shared) == []


def test_an_error_still_names_the_event(tmp_path, tier):
    n, bad = 1500, 1000
    x = np.full(n, 1.0)
    w = np.ones(n)
    w[bad] = 1e300
    paths = []
    for name, weights in (("data", np.ones(n)), ("mc", w)):
        paths.append(tmp_path / f"{name}.parquet")
        pq.write_table(pa.table({"x": x * 30.0 if name == "mc" else x, "weight": weights}), paths[-1])
    from laddu_dask import parameter, scalar

    model = (parameter("a", initial=1.0) * scalar("x")).exp()
    data = read_parquet(paths[0], chunk_size=300)
    mc = read_parquet(paths[1], chunk_size=300, memory_policy="disk")
    lik = Likelihood([NLL(model, data=data, accepted_mc=mc)])
    with pytest.raises(NonFiniteError, match=rf"non-finite term w t\(I\) inf at event {bad} "
                                             rf"\(.*mc.parquet \[rows 900:1200\]\)"):
        lik.value_and_gradient([1.0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.complex64])
def test_a_partition_comes_back_bit_for_bit(tier, dtype):
    rng = np.random.default_rng(7)
    n = 37
    cache = [rng.normal(size=n).astype(dtype), rng.normal(size=(n, 3)).astype(dtype) * (1 + 1j if
             np.dtype(dtype).kind == "c" else 1), np.empty(0, dtype)]
    part = PreparedPartition(cache, rng.uniform(size=n), n, 1234, "sample.parquet [rows 1234:1271]")
    store = DiskStore.create("roundtrip")
    handle = store.write(part, 5)
    back = handle.load()
    assert (back.n, back.offset, back.source) == (n, 1234, "sample.parquet [rows 1234:1271]")
    for a, b in zip([*part.cache, part.weights], [*back.cache, back.weights]):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        assert b.flags.writeable and b.flags.c_contiguous
    back.cache[0][0] = 99  # copy-on-write: the file keeps its bytes
    assert handle.load().cache[0].tobytes() == part.cache[0].tobytes()
    assert os.path.getsize(handle.path) % 64 == 0 and handle.size == os.path.getsize(handle.path)
    store.close()
    assert handle.load() is None


def test_on_a_cluster_the_disk_tier_is_dasks_spill(ksks_sample, tier):
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        ex = Execution(client=client)
        _, pd = _prepared(ksks_sample["accmc"], ex, "disk")
        (d,) = ex.memory_decisions()
        assert pd.storage == d.strategy == "resident"
        assert d.reason.startswith("disk as requested") and "Dask's own" in d.reason
        assert "distributed.worker.memory.spill" in d.reason
