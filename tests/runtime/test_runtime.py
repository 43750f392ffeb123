"""Tests of the runtime: exact, partition-independent reductions, storage and memory budgets.

References are independent of the runtime: ``math.fsum`` of per-event terms computed
with NumPy (or with :meth:`PreparedModel.evaluate_batch`), and results of the same
reduction under other chunkings, tree shapes and storages, compared with ``==``.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from laddu_dask import ksks
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.compile.plan import ReductionPlan
from laddu_dask.data.dataset import Dataset
from laddu_dask.data.parquet import read_parquet
from laddu_dask.errors import BudgetError, NonPositiveIntensityError, ParameterError
from laddu_dask.expr import parameter, scalar
from laddu_dask.runtime.compilations import numba_available
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.memory import MemoryPlan
from laddu_dask.runtime.prepared import PreparedModel, ReductionEvaluation

REAL = ReductionPlan.weighted_real()
POSITIVE = ReductionPlan.weighted_positive_real()
LOG = ReductionPlan.weighted_log_positive_real()

#: Per-partition kernels: generated NumPy array code, and fused Numba loops.
KERNELS = (
    "numpy",
    pytest.param("fused", marks=pytest.mark.skipif(not numba_available(), reason="needs Numba")),
)

#: A point away from the truth, so that no gradient component vanishes by symmetry.
OFF_TRUTH = {**ksks.TRUTH, "s_mass": 1.49, "d_width": 0.095, "d1_im": 0.62}


def _reduce(ds: Dataset, model, params, plan, ex: Execution | None = None) -> ReductionEvaluation:
    ex = ex if ex is not None else Execution()
    pm = PreparedModel.prepare(CompiledModel.from_expr(model), ex)
    pd = pm.prepare_dataset(ex, ds)
    return pm.reduce_with_gradient(ex, params, pd, plan)


def _log(kernel: str, values: np.ndarray) -> np.ndarray:
    """Logs as the kernel takes them: NumPy's ufunc, or the C library's (Numba) per event,
    both of the value widened to float64 (a float32 value's log is not rounded to float32)."""
    if kernel == "numpy":
        return np.log(values.astype(np.float64))
    return np.array([math.log(v) for v in values.tolist()])


def _assert_identical(a: ReductionEvaluation, b: ReductionEvaluation) -> None:
    assert a.value == b.value
    assert a.gradient.shape == b.gradient.shape
    for i, (ga, gb) in enumerate(zip(a.gradient, b.gradient)):
        assert ga == gb, f"gradient component {i}: {ga!r} != {gb!r}"


# ---------------------------------------------------------------------------
# bitwise independence of partitioning and tree shape
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("lineshape", ["bw", "rbw"])
@pytest.mark.parametrize(("key", "plan"), [("data", LOG), ("accmc", REAL)])
def test_reduction_identical_across_chunkings_and_trees(ksks_sample, lineshape, key, plan, kernel):
    model = ksks.model(lineshape)
    ds = read_parquet(ksks_sample[key])
    n = ds.n_events
    reference = _reduce(ds.with_chunk_size(n), model, OFF_TRUTH, plan, Execution(kernel=kernel))
    assert np.all(np.isfinite(reference.gradient)) and reference.gradient.shape == (10,)
    assert np.all(reference.gradient != 0.0)
    runs = 0
    for chunk in (97, 1000, 4096, n):
        chunked = ds.with_chunk_size(chunk)
        assert chunked.n_partitions == math.ceil(n / chunk)
        for split_every in (2, 3, 8):
            ex = Execution(split_every=split_every, kernel=kernel)
            result = _reduce(chunked, model, OFF_TRUTH, plan, ex)
            _assert_identical(result, reference)
            runs += 1
    # value-only reductions agree with the value of the gradient reductions
    ex = Execution(split_every=5, kernel=kernel)
    pm = PreparedModel.prepare(CompiledModel.from_expr(model), ex)
    assert pm.kernel == kernel
    assert pm.reduce(ex, OFF_TRUTH, pm.prepare_dataset(ex, ds.with_chunk_size(97)), plan) == (
        reference.value
    )
    assert runs == 12


def test_reduction_identical_for_arrays_and_parquet_and_files(ksks_sample, ksks_arrays, tmp_path):
    """The same events from arrays, from one file and from a folder of three files."""
    model = ksks.model("bw")
    p4s, w = ksks_arrays["accmc"]
    folder = tmp_path / "split"
    folder.mkdir()
    n = len(w)
    cuts = [0, 1234, 2900, n]
    for j in range(3):
        sl = slice(cuts[j], cuts[j + 1])
        Dataset.from_arrays(p4s={k: v[sl] for k, v in p4s.items()}, weights=w[sl]).write_parquet(
            folder / f"part-{j}.parquet"
        )
    sources = [
        Dataset.from_arrays(p4s=p4s, weights=w, chunk_size=500),
        read_parquet(ksks_sample["accmc"], chunk_size=777),
        read_parquet(str(folder), chunk_size=1000),
    ]
    assert sources[2].n_partitions == 6  # partitions never span two files
    results = [_reduce(ds, model, OFF_TRUTH, POSITIVE) for ds in sources]
    for r in results[1:]:
        _assert_identical(r, results[0])


def test_reduction_identical_across_worker_counts(ksks_sample):
    model = ksks.model("rbw")
    ds = read_parquet(ksks_sample["data"], chunk_size=250)
    results = [
        _reduce(ds, model, OFF_TRUTH, LOG, Execution(num_workers=k, split_every=4)) for k in (1, 3, 8)
    ]
    for r in results[1:]:
        _assert_identical(r, results[0])


# ---------------------------------------------------------------------------
# exact sums
# ---------------------------------------------------------------------------
ILL = np.array([1e16, 1.0, -1e16, 3.0, 1e-3, 2.5e15, -2.5e15, 7.0, 1e-20, -3e-3] * 31 + [1e100, -1e100])


@pytest.mark.parametrize("chunk", [1, 2, 7, 64, 1000, None])
def test_ill_conditioned_sum_equals_fsum(chunk):
    expected = math.fsum(ILL)
    assert float(np.sum(ILL)) != expected  # naive summation loses it
    ds = Dataset.from_arrays(scalars={"x": ILL}, chunk_size=chunk)
    ex = Execution(split_every=3)
    pm = PreparedModel.prepare(CompiledModel.from_expr(scalar("x")), ex)
    pd = pm.prepare_dataset(ex, ds)
    assert pm.reduce(ex, [], pd, REAL) == expected
    result = pm.reduce_with_gradient(ex, [], pd, REAL)
    assert result.value == expected
    assert result.gradient.shape == (0,)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("chunk", [3, 50, None])
def test_ill_conditioned_weighted_sum_and_gradient_equal_fsum(chunk, kernel):
    """``a x`` with weights: value and gradient are exact sums on both kernels."""
    rng = np.random.default_rng(5)
    w = rng.normal(1.0, 2.0, ILL.size)
    a = parameter("a", initial=1.0)
    ds = Dataset.from_arrays(scalars={"x": ILL}, weights=w, chunk_size=chunk)
    result = _reduce(ds, a * scalar("x"), [1.0], REAL, Execution(kernel=kernel))
    terms = w * ILL  # the per-event products, rounded as the runtime rounds them
    assert result.value == math.fsum(terms)
    assert result.gradient[0] == math.fsum(terms)


@pytest.mark.parametrize("kernel", KERNELS)
def test_cancelling_log_sum_is_exact(kernel):
    """Weighted logs that cancel to far below their magnitude still sum exactly."""
    rng = np.random.default_rng(6)
    x = np.exp(rng.uniform(-30.0, 30.0, 500))
    w = np.concatenate([rng.uniform(1e10, 1e12, 250), -rng.uniform(1e10, 1e12, 250)])
    ds = Dataset.from_arrays(scalars={"x": x}, weights=w, chunk_size=64)
    result = _reduce(ds, parameter("a", initial=1.0) * scalar("x"), [1.0], LOG,
                     Execution(kernel=kernel))
    assert result.value == math.fsum(w * _log(kernel, x))


# ---------------------------------------------------------------------------
# storage: resident, streaming, fastest, budgets
# ---------------------------------------------------------------------------
def _prepare(ds: Dataset, model, ex: Execution, name: str = "sample"):
    pm = PreparedModel.prepare(CompiledModel.from_expr(model), ex)
    return pm, pm.prepare_dataset(ex, ds, name=name)


def test_resident_streaming_fastest_identical(ksks_sample):
    model = ksks.model("rbw")
    base = read_parquet(ksks_sample["data"], chunk_size=400)
    results = {}
    for policy in ("resident", "streaming", "fastest"):
        ex = Execution(split_every=4)
        pm, pd = _prepare(base.with_memory_policy(policy), model, ex, name=f"data-{policy}")
        expected_storage = "streaming" if policy == "streaming" else "resident"
        assert pd.stats.storage == expected_storage == pd.storage
        (decision,) = ex.memory_decisions()
        assert decision.dataset == f"data-{policy}"
        assert decision.strategy == expected_storage
        assert decision.requested_policy == policy
        assert decision.reason.startswith(expected_storage)
        results[policy] = (
            pm.reduce_with_gradient(ex, OFF_TRUTH, pd, LOG),
            pm.reduce(ex, OFF_TRUTH, pd, POSITIVE),
        )
    for policy in ("streaming", "fastest"):
        _assert_identical(results[policy][0], results["resident"][0])
        assert results[policy][1] == results["resident"][1]


def _sizes(ds: Dataset, model) -> tuple[int, int]:
    """(resident bytes, bytes of one streamed chunk) as the planner estimates them."""
    ex = Execution(num_workers=1)  # one chunk at a time: the peak is one chunk
    _prepare(ds.with_memory_policy("streaming"), model, ex)
    (decision,) = ex.memory_decisions()
    assert decision.strategy == "streaming"
    assert decision.partitions == ds.n_partitions
    return decision.estimated_bytes, decision.peak_bytes


GROUP = 2000


@pytest.fixture(scope="module")
def grouped_accmc(ksks_sample, tmp_path_factory):
    """The accepted MC 40 times over, in row groups of GROUP events: a streamed partition of
    GROUP decodes only itself, and its peak (6 MB: the reader's 3 MiB, the exact sums' work
    2.3 MB) stays below the resident sample's 10 MB."""
    path = tmp_path_factory.mktemp("grouped") / "accmc.parquet"
    pq.write_table(pa.concat_tables([pq.read_table(ksks_sample["accmc"])] * 40), path,
                   row_group_size=GROUP)
    return path


def test_fastest_streams_under_a_small_budget_and_says_why(grouped_accmc):
    model = ksks.model("bw")
    ds = read_parquet(grouped_accmc, chunk_size=GROUP)
    resident, chunk_bytes = _sizes(ds, model)
    assert chunk_bytes < resident
    budget = (chunk_bytes + resident) // 2
    ex = Execution(memory=MemoryPlan(host=budget))
    with dask.config.set({"laddu-dask.disk.budget": 0}):  # no disk tier (tests/runtime/test_disk_tier.py)
        pm, pd = _prepare(ds, model, ex, name="mc")
    assert pd.stats.storage == "streaming"
    assert pd.stats.resident_bytes == 0
    (decision,) = ex.memory_decisions()
    assert decision.strategy == "streaming" and decision.requested_policy == "fastest"
    assert decision.budget_bytes == budget
    assert decision.estimated_bytes == resident
    assert decision.peak_bytes <= budget
    assert f"({resident} bytes)" in decision.reason
    assert "resident storage would need" in decision.reason
    assert str(decision).startswith("mc: streaming")
    # same numbers as the unlimited, resident evaluation
    ex_free = Execution()
    pm_free, pd_free = _prepare(ds, model, ex_free)
    assert pd_free.stats.storage == "resident"
    _assert_identical(
        pm.reduce_with_gradient(ex, OFF_TRUTH, pd, POSITIVE),
        pm_free.reduce_with_gradient(ex_free, OFF_TRUTH, pd_free, POSITIVE),
    )


def test_budget_large_enough_keeps_fastest_resident(ksks_sample):
    model = ksks.model("bw")
    ds = read_parquet(ksks_sample["accmc"], chunk_size=50)
    resident, _ = _sizes(ds, model)
    ex = Execution(memory=resident)
    _, pd = _prepare(ds, model, ex)
    assert pd.stats.storage == "resident"
    assert "fit in the host budget" in ex.memory_decisions()[0].reason


@pytest.mark.parametrize("policy", ["fastest", "streaming", "resident"])
def test_budget_too_small_for_one_chunk_raises(grouped_accmc, policy):
    model = ksks.model("bw")
    ds = read_parquet(grouped_accmc, chunk_size=GROUP, memory_policy=policy)
    resident, chunk_bytes = _sizes(ds, model)
    ex = Execution(memory=MemoryPlan(host=chunk_bytes - 1))
    pm = PreparedModel.prepare(CompiledModel.from_expr(model), ex)
    if policy == "resident":
        match = rf"needs .*\({resident} bytes\) of host memory to stay resident.*{chunk_bytes - 1} bytes"
    else:
        match = rf"too small for one chunk.*chunk\(s\) of {GROUP} events.*\({chunk_bytes} bytes\)"
    with pytest.raises(BudgetError, match=match):
        pm.prepare_dataset(ex, ds, name="mc")


def test_resident_policy_with_small_budget_raises_naming_bytes(grouped_accmc):
    model = ksks.model("bw")
    ds = read_parquet(grouped_accmc, chunk_size=GROUP)
    resident, chunk_bytes = _sizes(ds, model)
    budget = (chunk_bytes + resident) // 2  # streaming would fit; resident does not
    ex = Execution(memory=budget)
    pm = PreparedModel.prepare(CompiledModel.from_expr(model), ex)
    with pytest.raises(BudgetError, match=rf"'mc' needs .*\({resident} bytes\).*\({budget} bytes\)"):
        pm.prepare_dataset(ex, ds.with_memory_policy("resident"), name="mc")
    with pytest.raises(BudgetError, match="memory_policy='streaming'"):
        pm.prepare_dataset(ex, ds.with_memory_policy("resident"), name="mc")


def test_budget_strings_are_parsed():
    ex = Execution(memory="2 GiB")
    assert ex.host_budget_bytes() == 2 * 2**30
    with pytest.raises(BudgetError, match="cannot parse memory size 'lots'"):
        Execution(memory="lots")


# ---------------------------------------------------------------------------
# stats
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("policy", ["resident", "streaming"])
def test_prepared_stats(policy):
    rng = np.random.default_rng(11)
    n = 1001
    x = rng.uniform(0.5, 2.0, n)
    w = rng.normal(0.0, 3.0, n) * 10.0 ** rng.integers(-8, 8, n)
    ds = Dataset.from_arrays(scalars={"x": x}, weights=w, chunk_size=100, memory_policy=policy)
    ex = Execution()
    _, pd = _prepare(ds, parameter("a", initial=1.0) * scalar("x"), ex)
    s = pd.stats
    assert (s.local_events, s.global_events, s.batches) == (n, n, 11)
    assert s.sum_weights == math.fsum(w)
    assert s.storage == policy
    if policy == "resident":
        assert s.resident_bytes > 0
        # at least the weights are held
        assert s.resident_bytes >= w.nbytes
    else:
        assert s.resident_bytes == 0
    assert f"{n} events in 11 batches" in repr(pd)


def test_stats_of_unweighted_parquet(ksks_sample):
    ds = read_parquet(ksks_sample["data"], chunk_size=1000)
    _, pd = _prepare(ds, ksks.model("bw"), Execution())
    assert pd.stats.global_events == ds.n_events
    assert pd.stats.batches == math.ceil(ds.n_events / 1000)
    assert pd.stats.sum_weights == float(ds.n_events)


# ---------------------------------------------------------------------------
# evaluate_batch against reduce
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", KERNELS)
def test_evaluate_batch_sums_to_reduce(ksks_sample, kernel):
    """Reductions equal math.fsum of evaluate_batch's per-event values, exactly."""
    model = ksks.model("rbw")
    ds = read_parquet(ksks_sample["data"], chunk_size=300)
    ex = Execution(kernel=kernel)
    pm, pd = _prepare(ds, model, ex)
    batch = ds.with_chunk_size(None).load_partition(0)
    real = np.real(pm.evaluate_batch(OFF_TRUTH, batch))
    values, jac = pm.evaluate_batch_with_gradient(OFF_TRUTH, batch)
    assert real.shape == (ds.n_events,) and jac.shape == (ds.n_events, 10)
    np.testing.assert_allclose(np.real(values), real, rtol=1e-13, atol=0)
    assert pm.reduce(ex, OFF_TRUTH, pd, REAL) == math.fsum(real)
    assert pm.reduce(ex, OFF_TRUTH, pd, LOG) == math.fsum(_log(kernel, real))
    r = pm.reduce_with_gradient(ex, OFF_TRUTH, pd, REAL)
    assert r.value == math.fsum(real)
    expected = [math.fsum(np.real(jac[:, k])) for k in range(10)]
    np.testing.assert_allclose(r.gradient, expected, rtol=1e-12)
    r = pm.reduce_with_gradient(ex, OFF_TRUTH, pd, LOG)
    assert r.value == math.fsum(_log(kernel, real))
    expected = [math.fsum(np.real(jac[:, k]) / real) for k in range(10)]
    np.testing.assert_allclose(r.gradient, expected, rtol=1e-11)


@pytest.mark.parametrize("kernel", KERNELS)
def test_evaluate_batch_equals_reduce_per_event(ksks_arrays, kernel):
    """A one-hot weight picks out one event's value and gradient from the reduction."""
    p4s, _ = ksks_arrays["data"]
    n = 200
    p4s = {k: v[:n] for k, v in p4s.items()}
    model = ksks.model("bw")
    ex = Execution(kernel=kernel)
    pm = PreparedModel.prepare(CompiledModel.from_expr(model), ex)
    batch = Dataset.from_arrays(p4s=p4s).load_partition(0)
    values = np.real(pm.evaluate_batch(OFF_TRUTH, batch))
    _, jac = pm.evaluate_batch_with_gradient(OFF_TRUTH, batch)
    for i in (0, 1, 57, 123, n - 1):
        w = np.zeros(n)
        w[i] = 1.0
        pd = pm.prepare_dataset(ex, Dataset.from_arrays(p4s=p4s, weights=w, chunk_size=32))
        assert pm.reduce(ex, OFF_TRUTH, pd, REAL) == values[i]
        r = pm.reduce_with_gradient(ex, OFF_TRUTH, pd, REAL)
        assert r.value == values[i]
        np.testing.assert_allclose(r.gradient, np.real(jac[i]), rtol=1e-13, atol=0)


def test_evaluate_batch_matches_numpy_truth_intensity(ksks_arrays):
    """The compiled model equals the generator's independent NumPy intensity (bw)."""
    p4s, _ = ksks_arrays["accmc"]
    pm = PreparedModel.prepare(CompiledModel.from_expr(ksks.model("bw")), Execution())
    values = np.real(pm.evaluate_batch(ksks.TRUTH, Dataset.from_arrays(p4s=p4s).load_partition(0)))
    expected = ksks.truth_intensity(*ksks.angles(p4s), ksks.TRUTH)
    np.testing.assert_allclose(values, expected, rtol=1e-11)


# ---------------------------------------------------------------------------
# precision
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", ["fused", "numpy"])
@pytest.mark.parametrize(("key", "plan"), [("accmc", POSITIVE), ("data", LOG)])
def test_f32_agrees_with_f64(ksks_sample, key, plan, kernel):
    """Per event, the f32 values are within the float32 error bound of tests/tolerances.py
    (``u D (1 + cond)`` relative) of the f64 values; the f32 reduction is the exact sum of
    those events' terms (bitwise); its gradient is within the bound summed over the events."""
    from conftest import read_p4s
    from tolerances import condition, f32_bound

    model = ksks.model("rbw")
    ds = read_parquet(ksks_sample[key], chunk_size=700)
    r64 = _reduce(ds, model, OFF_TRUTH, plan, Execution(precision="f64"))
    ex = Execution(precision="f32", kernel=kernel)
    pm = PreparedModel.prepare(CompiledModel.from_expr(model), ex)
    assert pm.kernel == kernel
    r32 = pm.reduce_with_gradient(ex, OFF_TRUTH, pm.prepare_dataset(ex, ds), plan)
    assert isinstance(r32.value, float)
    cm = pm.compiled
    p4s, w = read_p4s(ksks_sample[key])
    cols = {f"{k}_{c}": v[:, j] for k, v in p4s.items() for j, c in enumerate(("e", "px", "py", "pz"))}
    params = cm.parameter_vector(OFF_TRUTH)
    kappa = condition(cm, cols, params)
    value, jac = cm.values_and_jacobian(cm.event_cache({c: cols[c] for c in cm.columns}), params)
    v32 = np.real(pm.evaluate_batch(OFF_TRUTH, Dataset.from_arrays(p4s=p4s, weights=w).load_partition(0)))
    assert v32.dtype == np.float32
    assert np.all(np.abs(v32 - value.real) <= f32_bound(value.real, kappa, axis=None))
    # the terms are float64: w ln(float64(v32)) under the log, as every kernel takes it
    terms = w * (_log(pm.kernel, v32) if plan is LOG else v32.astype(np.float64))
    assert r32.value == math.fsum(terms.tolist()) != r64.value
    # a gradient term's sensitivity to a relative change of the event's value: w df/dp, over f
    # under the log
    # (with the derivative's own condition, and the value's too for the quotient)
    scale = value.real if plan is LOG else np.ones_like(value.real)
    gkappa = condition(cm, cols, params, gradient=True) + (kappa[:, None] if plan is LOG else 0.0)
    gbound = f32_bound(w[:, None] * jac.real / scale[:, None], gkappa, total=r64.gradient)
    assert np.all(np.abs(r32.gradient - r64.gradient) <= gbound), (r32.gradient - r64.gradient, gbound)


def test_precision_is_validated():
    with pytest.raises(ValueError, match="f16"):
        Execution(precision="f16")


# ---------------------------------------------------------------------------
# errors surfaced by reductions
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("policy", ["resident", "streaming"])
@pytest.mark.parametrize("plan", [LOG, POSITIVE])
def test_non_positive_value_names_the_global_event(policy, plan, kernel):
    x = np.linspace(1.0, 2.0, 100)
    x[73] = -0.5
    ds = Dataset.from_arrays(scalars={"x": x}, chunk_size=10, memory_policy=policy)
    ex = Execution(kernel=kernel)
    pm, pd = _prepare(ds, parameter("a", initial=1.0) * scalar("x"), ex)
    with pytest.raises(NonPositiveIntensityError, match=r"-0\.5 at event 73 \(arrays"):
        pm.reduce(ex, [1.0], pd, plan)
    with pytest.raises(NonPositiveIntensityError, match=r"at event 73 \(arrays"):
        pm.reduce_with_gradient(ex, [1.0], pd, plan)
    # the real plan accepts the same values
    assert pm.reduce(ex, [1.0], pd, REAL) == math.fsum(x)


def test_reduce_rejects_a_non_plan():
    ex = Execution()
    pm, pd = _prepare(Dataset.from_arrays(scalars={"x": np.ones(3)}), scalar("x"), ex)
    with pytest.raises(TypeError, match="plan must be a ReductionPlan"):
        pm.reduce(ex, [], pd, "real")


def test_execution_validates_its_arguments():
    with pytest.raises(ValueError, match="split_every must be an integer >= 2"):
        Execution(split_every=1)
    with pytest.raises(ValueError, match="device must be one of"):
        Execution(device="tpu")
    with pytest.raises(ParameterError, match="num_workers must be an integer >= 1, got 0"):
        Execution(num_workers=0)
    with pytest.raises(ParameterError, match="split_every must be an integer >= 2, got 2.0"):
        Execution(split_every=2.0)


def test_execution_takes_laddus_signature():
    """``closure.py``'s ``Execution(backend, precision=, autodiff=, threads=)`` runs unchanged, and each
    of laddu's backends maps to a laddu-dask device and kernel (issue 11: the first line to break)."""
    ex = Execution("jit", precision="auto", autodiff="forward", threads=2)
    assert (ex.backend, ex.device, ex.kernel, ex.precision, ex.num_workers, ex.autodiff) == (
        "jit", "cpu", "fused", "f64", 2, "forward")
    assert (Execution("cpu").device, Execution("cpu").kernel, Execution().backend) == ("cpu", "auto", "auto")
    by_keyword = Execution(backend="jit")  # laddu names it too
    assert (by_keyword.backend, by_keyword.kernel) == ("jit", "fused")
    # laddu's defaults backend="auto", precision="auto": the CPU (never a GPU unasked), in f64
    assert (Execution().device, Execution().precision, Execution("auto").device) == ("cpu", "f64", "cpu")
    assert Execution("auto", device="cpu", kernel="numpy").kernel == "numpy"  # device= (ours) still decides
    assert Execution("cpu", mpi=False, partitioning="rows").partitioning == "rows"
    assert not Execution().is_distributed
    # laddu-dask's own spelling is unchanged: device= by name; an int device is laddu's GPU index
    assert Execution(device="cpu", num_workers=3).num_workers == 3
    with pytest.raises(ValueError, match="backend must be one of 'auto', 'cpu', 'jit', 'gpu', got 'cuda'"):
        Execution("cuda")
    with pytest.raises(ValueError, match="autodiff must be one of 'auto', 'forward', 'reverse', got 'sym'"):
        Execution(autodiff="sym")
    with pytest.raises(ValueError, match="laddu-dask distributes with Dask, not MPI: pass client="):
        Execution("cpu", mpi=True)
    with pytest.raises(ValueError, match="threads=2 and num_workers=3 disagree"):
        Execution(threads=2, num_workers=3)
    with pytest.raises(ValueError, match="backend 'jit' runs on 'cpu', but device='gpu' was given"):
        Execution("jit", device="gpu")
    with pytest.raises(ValueError, match="'jit' means the fused compiled kernels, but kernel='numpy'"):
        Execution("jit", kernel="numpy")
    with pytest.raises(ValueError, match="GPUs by index, not by name or PCI bus ID"):
        Execution(device="0000:01:00.0")
    with pytest.raises(TypeError, match="takes from 1 to 2 positional arguments but 3 were given"):
        Execution("cpu", "f64")  # precision and the rest are keywords, as in laddu  # type: ignore[misc]
    if not Execution(device="auto").device == "gpu":  # no GPU here: an explicit GPU index is a clear error
        with pytest.raises(ValueError, match="device='gpu'"):
            Execution(device=0)


# ---------------------------------------------------------------------------
# layout: no import circle, no import from a layer above
# ---------------------------------------------------------------------------
RUNTIME = Path(__file__).resolve().parents[2] / "laddu_dask" / "runtime"

#: The runtime's modules, lowest first: each may import only those before it.
LAYERS = ("compilations", "point_programs", "heap", "accumulate", "finite", "memory", "partition",
          "reduction",
          "direct_calls", "cuda_backend", "reducer", "disk_tier", "preparation", "jobs", "wire", "protocol",
          "tree", "shares", "payloads", "worker_calls", "placement", "fit_board", "dashboard_page",
          "dashboard",
          "worker", "threaded", "local", "cluster", "execution", "capabilities",
          "normalization", "prepared", "__init__")

#: Packages above the runtime, which it never imports (DESIGN.md: likelihood sits above it).
ABOVE = ("laddu_dask.likelihood", "laddu_dask.analysis", "laddu_dask.results", "laddu_dask.jobs",
         "laddu_dask.cli", "laddu_dask_bench")


def _imports(path: Path) -> set[str]:
    """Every ``laddu_dask`` module ``path`` imports, at the top or inside a function."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("laddu_dask")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith("laddu_dask"):
                out.add(node.module)
                out |= {f"{node.module}.{a.name}" for a in node.names}  # a submodule imported by name
    return out


def _runtime_graph() -> dict[str, set[str]]:
    graph = {}
    for path in sorted(RUNTIME.glob("*.py")):
        deps = set()
        for module in _imports(path):
            parts = module.split(".")
            if parts[:2] == ["laddu_dask", "runtime"] and len(parts) > 2:
                if (RUNTIME / f"{parts[2]}.py").exists():
                    deps.add(parts[2])
        graph[path.stem] = deps - {path.stem}
    return graph


def _upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((m, d) for m, deps in graph.items() for d in deps if LAYERS.index(d) >= LAYERS.index(m))


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """A chain of imports that comes back to where it started, or ``[]``."""
    done: set[str] = set()

    def visit(node: str, stack: list[str]) -> list[str]:
        if node in stack:
            return [*stack[stack.index(node):], node]
        if node in done:
            return []
        for dep in sorted(graph[node]):
            found = visit(dep, [*stack, node])
            if found:
                return found
        done.add(node)
        return []

    for module in sorted(graph):
        found = visit(module, [])
        if found:
            return found
    return []


def test_runtime_imports_go_down_only():
    graph = _runtime_graph()
    unlisted = sorted(set(graph) - set(LAYERS))
    assert not unlisted, f"runtime modules missing from LAYERS in tests/runtime/test_runtime.py: {unlisted}"
    assert not _cycle(graph), f"import circle in the runtime: {' -> '.join(_cycle(graph))}"
    assert not _upward(graph), f"runtime modules importing a module above them: {_upward(graph)}"
    above = [(path.stem, m) for path in RUNTIME.glob("*.py") for m in _imports(path)
             if m.startswith(ABOVE)]
    assert not above, f"runtime modules importing a package above the runtime: {above}"


def test_import_check_reports_a_circle():
    """The checks themselves, on the runtime as if accumulate imported the cluster module."""
    graph = _runtime_graph()
    graph["accumulate"] = graph["accumulate"] | {"cluster"}
    assert ("accumulate", "cluster") in _upward(graph)
    circle = _cycle(graph)
    assert circle[0] == circle[-1] and "accumulate" in circle and "cluster" in circle


@pytest.mark.parametrize(("n_events", "chunk", "submitted"), [
    (1_000, 1_000, 0),        # one partition: this thread reduces it
    (8_000, 1_000, 0),        # small (at most INLINE_EVENTS): all here, no hand-over
    (80_000, 40_000, 1),      # two groups on two threads: the first here, the other pooled
    (80_000, 10_000, 4),      # more groups than threads: all four pooled
])
def test_local_evaluation_hands_over_only_what_pays(n_events, chunk, submitted, monkeypatch):
    """Where a local evaluation's reductions run, and that the sum is the exact one wherever."""
    rng = np.random.default_rng(5)
    x = rng.uniform(0.5, 1.5, n_events)
    ex = Execution(num_workers=2)
    model = PreparedModel.prepare(CompiledModel.from_expr(parameter("a") * scalar("x")), ex)
    ds = model.prepare_dataset(ex, Dataset.from_arrays(scalars={"x": x}, chunk_size=chunk))
    plan = ReductionPlan.weighted_real()
    model.reduce(ex, [2.0], ds, plan)  # the pool exists and the kernel is compiled
    pool, calls = ex.runner.pool, []
    original = pool.submit
    monkeypatch.setattr(pool, "submit", lambda fn, *a: calls.append(fn) or original(fn, *a))
    assert model.reduce(ex, [2.0], ds, plan) == math.fsum((2.0 * x).tolist())
    assert len(calls) == submitted


def test_cluster_wire_carries_points_and_partial_sums_exactly():
    """What a cluster evaluation sends (points as bytes) and receives (partial sums as one
    buffer of doubles) comes back bit for bit, subnormals, signed zeros and all; rows merged
    from many partitions come back as short expansions of the same exact sums."""
    from fractions import Fraction

    from laddu_dask.runtime.accumulate import CertifiedPartials
    from laddu_dask.runtime.jobs import PointPartials
    from laddu_dask.runtime.partition import Params
    from laddu_dask.runtime.wire import decode_partials, decode_points, encode_partials, encode_points

    rng = np.random.default_rng(5)
    for dtype in (np.float64, np.float32):
        points = [Params(tuple(rng.normal(size=4).astype(dtype))) for _ in range(3)]
        back = decode_points(encode_points(points), 3, np.dtype(dtype).str)
        assert all(b.array.dtype == dtype and b.array.tobytes() == p.array.tobytes()
                   and b.values == p.values for b, p in zip(back, points))
    assert decode_points(b"", 0, "<f8") == ()
    special = np.array([[5e-324, -0.0, 1e308, -2.0**-1074]])
    sums = [PointPartials([CertifiedPartials(rng.normal(size=(3, 7)), rng.uniform(size=3)),
                           CertifiedPartials(special, np.array([0.0]))]),
            None,
            PointPartials([CertifiedPartials(rng.normal(size=(1, 1)), np.zeros(1))])]
    shapes, data = encode_partials(sums)
    back = decode_partials(shapes, data)
    assert back[1] is None and len(back) == 3
    for got, want in ((back[0], sums[0]), (back[2], sums[2])):
        for g, w in zip(got, want):
            assert g.bound.tobytes() == w.bound.tobytes()
            if w.terms.shape[1] <= CertifiedPartials.COMPACT_WIDTH:  # as they are
                assert g.terms.tobytes() == w.terms.tobytes() and g.terms.shape == w.terms.shape
            else:  # rows of many terms travel as their short expansions: the same exact sums
                assert g.terms.shape[0] == w.terms.shape[0] and g.terms.shape[1] < w.terms.shape[1]
                for a, b in zip(g.terms.tolist(), w.terms.tolist(), strict=True):
                    assert sum(map(Fraction, a)) == sum(map(Fraction, b))
    assert decode_partials(*encode_partials([None])) == [None]
