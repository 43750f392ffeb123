"""K parameter points in one evaluation round (``Likelihood.values``), and MCMC on it.

Each of the K values is bitwise the value at that point alone (the same exact partial
sums, the same merges), locally, on Dask's threaded scheduler, streamed and on a
2-process LocalCluster; K points cost one round of the runtime (one pass of the pool's
tasks, one read of every streamed partition, one call per worker).  emcee's sampler on
an exactly Gaussian likelihood reproduces MIGRAD's minimum and HESSE's covariance within
their Monte Carlo errors.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from cluster_helpers import local_cluster

import laddu_dask as ld
import laddu_dask.runtime.jobs as jobs
from laddu_dask import ksks
from laddu_dask.analysis import MCMCSummary, sample, walker_positions
from laddu_dask.analysis.mcmc import log_probability
from laddu_dask.errors import ParameterError


def max_steps(n: int):
    """``ld.ganesh.MaxSteps(n)`` (a stand-in with its ``steps`` until the namespace has it)."""
    cls = getattr(ld.ganesh, "MaxSteps", None)
    return cls(n) if cls is not None else SimpleNamespace(steps=n)


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    return ksks.write_sample(tmp_path_factory.mktemp("mcmc"), n_data=3000, n_mc=12000, seed=21)


def _ksks(paths, execution, policy="resident", normalization_term=ld.NLL):
    data = ld.read_parquet(paths["data"], chunk_size=700, memory_policy=policy)
    mc = ld.read_parquet(paths["accmc"], chunk_size=2500, memory_policy=policy)
    return ld.Likelihood([normalization_term(ksks.model(), data=data, accepted_mc=mc, name="ksks")],
                         execution=execution)


def _points(k: int, seed: int = 4) -> np.ndarray:
    truth = np.array(list(ksks.TRUTH.values()))
    return truth * np.random.default_rng(seed).uniform(0.9, 1.1, size=(k, len(truth)))


def _assert_bitwise(lik, points):
    values = lik.values(points)
    assert values.shape == (len(points),)
    assert [float(v) for v in values] == [lik.value(p) for p in points]
    values, grads = lik.values_and_gradients(points)
    for p, v, g in zip(points, values, grads):
        v1, g1 = lik.value_and_gradient(p)
        assert float(v) == v1
        assert np.array_equal(g, g1)


@pytest.mark.parametrize("precision", ["f64", "f32"])
@pytest.mark.parametrize("scheduler", ["pool", "dask"])
def test_values_equal_value_at_each_point_bit_for_bit(paths, precision, scheduler):
    kwargs = {"scheduler": "dask"} if scheduler == "dask" else {}
    ex = ld.Execution(precision=precision, normalization="general", num_workers=2, **kwargs)
    lik = _ksks(paths, ex, normalization_term=ld.ExtendedNLL)
    _assert_bitwise(lik, _points(6))


def test_values_with_sufficient_statistics_and_a_mapping(paths):
    """``normalization="auto"`` (the accepted-MC sum from statistics, per point), and points
    given as mappings (missing names take their initial values)."""
    lik = _ksks(paths, ld.Execution(num_workers=2))
    _assert_bitwise(lik, _points(5, seed=9))
    point = dict(zip(lik.parameter_names, _points(1, seed=2)[0][:3]))
    assert lik.values([point, point]).tolist() == [lik.value(point)] * 2
    assert lik.values(np.zeros((0, len(lik.parameter_names)))).shape == (0,)
    with pytest.raises(ValueError, match=r"points must be a \(K, 10\) array.*shape \(10,\)"):
        lik.values(np.ones(10))


def test_streamed_values_read_every_partition_once_for_all_points(paths, monkeypatch):
    plan = ld.MemoryPlan(host="64 MiB")
    lik = _ksks(paths, ld.Execution(num_workers=2, memory=plan, normalization="general"),
                policy="streaming")
    points = _points(8)
    _assert_bitwise(lik, points)
    assert {d.strategy for d in lik.execution.memory_decisions()} == {"streaming"}
    reads = []
    original = jobs.prepare_partition

    def counted(compiled, dataset, index, *args):
        reads.append((dataset.sources[0], index))
        return original(compiled, dataset, index, *args)

    monkeypatch.setattr(jobs, "prepare_partition", counted)
    lik.values(points)
    n_parts = sum(t.data.with_chunk_size(700).n_partitions for t in lik.terms)
    n_parts += sum(t.accepted_mc.with_chunk_size(2500).n_partitions for t in lik.terms)
    assert len(reads) == len(set(reads)) == n_parts == 5 + 5  # each read once, not 8 times


def test_k_points_cost_one_round_of_pool_tasks(paths, monkeypatch):
    import laddu_dask.runtime.local as local

    lik = _ksks(paths, ld.Execution(num_workers=2, normalization="general"))
    lik.value(_points(1)[0])
    tasks = []  # (the points each task reduced at), wherever it ran: pool or calling thread
    original = local.reduce_partitions
    monkeypatch.setattr(local, "reduce_partitions",
                        lambda reducer, parts, points, *a: tasks.append(len(points))
                        or original(reducer, parts, points, *a))
    lik.value(_points(1)[0])
    one = len(tasks)
    tasks.clear()
    lik.values(_points(32))
    assert len(tasks) == one > 0  # the same tasks for 32 points as for one
    assert tasks == [32] * one  # each reduced its partitions at all 32 points


@pytest.mark.slow
def test_values_on_a_cluster_one_call_per_worker(paths):
    for client in local_cluster():
        lik = _ksks(paths, ld.Execution(client=client, normalization="general"),
                    normalization_term=ld.ExtendedNLL)
        points = _points(4)
        local = _ksks(paths, ld.Execution(num_workers=2, normalization="general"),
                      normalization_term=ld.ExtendedNLL)
        assert lik.values(points).tolist() == local.values(points).tolist()
        _assert_bitwise(lik, points)

        def calls(dask_worker):
            return dask_worker.plugins["laddu-dask"].calls

        before = client.run(calls)
        lik.values(_points(32))
        after = client.run(calls)
        assert {a: after[a] - before[a] for a in after} == {a: 1 for a in after}
        assert len(after) == 2


# -- MCMC ------------------------------------------------------------------------------------

#: The precision matrix of the toy's exactly quadratic -ln L per event (well conditioned).
A = np.array([[2.0, 0.6, 0.2], [0.6, 1.0, -0.3], [0.2, -0.3, 0.5]])


def _gaussian(n: int = 20, seed: int = 3):
    """A likelihood whose NLL is exactly ``sum_i d_i^T A d_i`` (``d_i = x_i - p``): the data
    intensity is ``exp(-d^T A d / 2)``, and the one accepted-MC event has ``s = 0``, so its
    intensity is 1 whatever the parameters.  Minimum: the mean event; covariance ``A^-1 / n``."""
    events = np.random.default_rng(seed).normal([1.0, -0.5, 2.0], 1.0, size=(n, 3))
    params = [ld.parameter(name, initial=0.0, bounds=(-10.0, 10.0)) for name in ("a", "b", "c")]
    d = [ld.scalar(col) - p for col, p in zip("xyz", params)]
    q = sum(0.5 * A[i, j] * d[i] * d[j] for i in range(3) for j in range(3))
    model = ld.Model((-1.0 * ld.scalar("s") * q).exp())
    data = ld.Dataset.from_arrays(scalars={"x": events[:, 0], "y": events[:, 1], "z": events[:, 2],
                                           "s": np.ones(n)})
    mc = ld.Dataset.from_arrays(scalars={c: np.zeros(1) for c in "xyzs"})
    return ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)]), events


@pytest.fixture(scope="module")
def gaussian_fit():
    lik, events = _gaussian()
    fit = lik.fit()
    return lik, events, fit


def test_the_gaussian_toy_is_gaussian(gaussian_fit):
    """The reference of the MCMC test: MIGRAD and HESSE find the analytic mean and covariance."""
    lik, events, fit = gaussian_fit
    assert fit.valid
    x = fit.values
    np.testing.assert_allclose(x, events.mean(axis=0), rtol=0, atol=1e-4)
    np.testing.assert_allclose(fit.covariance, np.linalg.inv(A) / len(events), rtol=1e-4)


def test_chain_matches_migrad_minimum_and_hesse_covariance(gaussian_fit):
    lik, _, fit = gaussian_fit
    n_walkers, n_steps, discard = 16, 1500, 301  # discard counts the starting entry
    init = ld.ganesh.AIESInit(walker_positions(lik, fit, n_walkers, seed=5))
    summary = sample(lik, init, seed=5, terminators=[max_steps(n_steps)])
    assert isinstance(summary, MCMCSummary)
    assert summary.dimension == (n_walkers, n_steps + 1, 3)
    assert summary.parameter_names == ["a", "b", "c"]
    # every step: one evaluation round per half ensemble (the stretch move), all its walkers at once
    assert summary.rounds == 2 * n_steps + 1
    assert summary.evals.f == n_walkers * (n_steps + 1)  # laddu's count: every walker, every step
    assert 0.3 < summary.acceptance_fraction.mean() < 0.8
    tau = summary.autocorrelation(discard)
    assert np.all((tau > 5) & (tau < 80)), tau
    x = fit.values
    pulls = (summary.mean(discard) - x) / summary.mean_error(discard)
    assert np.all(np.abs(pulls) < 4), pulls
    # each covariance element within 5 of its Monte Carlo standard errors (Wishart:
    # var(C_ij) = (C_ii C_jj + C_ij^2) / N_eff, N_eff = samples / tau)
    hesse = fit.covariance
    n_eff = len(summary.flat(discard)) / tau.max()
    se = np.sqrt((np.outer(np.diag(hesse), np.diag(hesse)) + hesse**2) / n_eff)
    cov_pulls = (summary.covariance(discard) - hesse) / se
    assert np.all(np.abs(cov_pulls) < 5), cov_pulls
    # with about 700 effective samples the variances agree to about 20 percent
    np.testing.assert_allclose(np.diag(summary.covariance(discard)), np.diag(hesse), rtol=0.2)


def test_sampling_is_reproducible_by_seed(gaussian_fit):
    lik = gaussian_fit[0]
    start = walker_positions(lik, None, 8, seed=3)
    for init in (ld.ganesh.AIESInit(start), ld.ganesh.ESSInit(start)):
        one, two = (sample(lik, init, seed=3, terminators=[max_steps(20)]) for _ in range(2))
        assert np.array_equal(one.chain, two.chain) and np.array_equal(one.log_density, two.log_density)
        other = sample(lik, init, seed=4, terminators=[max_steps(20)])
        assert not np.array_equal(one.chain, other.chain)
        # entry 0 is the starting cloud, around the initial values (0, 0, 0) by default
        assert np.array_equal(one.chain[:, 0], start) and np.all(np.abs(start) <= 1e-3)
        # the log-density is -NLL / 2 at every retained position
        assert one.log_density[2, 7] == -0.5 * lik.value(one.chain[2, 7])


def test_outside_the_bounds_the_density_is_zero_and_not_evaluated(gaussian_fit):
    lik = gaussian_fit[0]
    counter = [0, 0]
    log_prob = log_probability(lik, counter)
    out = log_prob(np.array([[0.0, 0.0, 0.0], [11.0, 0.0, 0.0], [0.0, -10.5, 0.0]]))
    assert out[0] == -0.5 * lik.value([0.0, 0.0, 0.0])
    assert out[1] == out[2] == -np.inf
    assert counter == [3, 1]  # three points asked about (laddu's evaluations), one round
    assert log_prob(np.array([[20.0, 0.0, 0.0], [0.0, 0.0, -30.0]])).tolist() == [-np.inf] * 2
    assert counter == [5, 1]  # nothing inside: no evaluation round


def test_walker_positions_follow_laddus_rules():
    phase = ld.parameter("phase", initial=3.14, bounds=(-np.pi, np.pi), periodic=True)
    width = ld.parameter("width", initial=0.0, bounds=(0.0, 1.0), scale=0.5)
    big = ld.parameter("big", initial=200.0)
    x = ld.scalar("x")
    model = ld.Model(width * width + big * big * x * x + phase * phase + 1.0)
    data = ld.Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0])})
    lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=data)])
    w = walker_positions(lik, {"phase": 3.14, "width": 0.0, "big": 200.0}, 400, scale=0.01, seed=2)
    assert w.shape == (400, 3)
    j = lik.parameter_names.index
    # periodic: wrapped into its bounds (some walkers crossed pi and came back near -pi)
    assert np.all(np.abs(w[:, j("phase")]) <= np.pi) and np.any(w[:, j("phase")] < 0)
    # bounded: redrawn inside, within scale * declared scale (0.005) of the centre
    assert np.all((w[:, j("width")] >= 0) & (w[:, j("width")] <= 0.005))
    # unbounded without a declared scale: max(|centre|, 1) = 200, so within 2 of 200
    assert np.all(np.abs(w[:, j("big")] - 200.0) <= 2.0) and np.ptp(w[:, j("big")]) > 3.0
    with pytest.raises(ValueError, match="at least two walkers, got 1"):
        walker_positions(lik, None, 1)
    with pytest.raises(ValueError, match=r"parameter 'width'.*keeps leaving its bounds"):
        walker_positions(lik, {"width": 5.0}, 4)


def test_sample_refuses_too_few_walkers_and_a_start_outside_the_bounds(gaussian_fit):
    lik = gaussian_fit[0]
    five = [max_steps(5)]
    with pytest.raises(ParameterError, match=r"^init: 4 walkers for 3 parameters; an ensemble sampler "
                                             r"needs at least twice as many walkers as parameters \(6\)"):
        sample(lik, ld.ganesh.AIESInit(walker_positions(lik, None, 4)), terminators=five)
    start = np.zeros((6, 3)) + np.arange(6)[:, None] * 0.01
    start[2, 1] = 12.0
    with pytest.raises(ParameterError, match=r"starting walker 2 .*'b': 12.0.* outside the parameter bounds"):
        sample(lik, ld.ganesh.AIESInit(start), terminators=five)

