"""Fit fractions from one pass over the Monte Carlo (laddu_dask.results.fitted_integrals): a
4-wave model's 11 integrals hold no prepared copy of the sample (one streaming memory
decision, a tracemalloc peak below what resident copies would need) and are the exact sums
``math.fsum(w I)`` of each wave subset on the same events, at the fitted point and at every
draw, with the covariance error of the closed-form gradients.  The model and events are
dyadic, so that every per-event intensity and derivative is exact in float64 and
``math.fsum`` is an independent reference to the last bit."""

from __future__ import annotations

import itertools
import math
import tracemalloc
from fractions import Fraction

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.sums import GroupedPartials

WAVES = ("S", "P", "D", "F")  # the amplitudes c_k x^k, k = 0..3
POINT = {"s": 0.75, "p": -0.5, "d": 1.25, "f": 0.375}
N = 120_000
RNG = np.random.default_rng(4)
X = RNG.integers(-64, 65, N) / 64.0
W = RNG.integers(1, 33, N) / 16.0


def likelihood(execution=None):
    x = ld.scalar("x")
    amps = [(ld.parameter(name, initial=POINT[name]) * x ** k).tagged(wave)
            for k, (name, wave) in enumerate(zip(POINT, WAVES, strict=True))]
    total = amps[0] + amps[1] + amps[2] + amps[3]
    events = ld.Dataset.from_arrays(scalars={"x": X[:500]}, weights=W[:500])
    return ld.Likelihood([ld.ExtendedNLL(ld.Model(total * total), data=events, accepted_mc=events, name="t")],
                         execution=execution)


def subsets():
    return [()] + [(w,) for w in WAVES] + list(itertools.combinations(WAVES, 2))


def reference(point, waves):
    """``sum w I`` of the waves' coherent part and its gradient, from the closed form."""
    coeffs = list(point.values())
    keep = [k for k, w in enumerate(WAVES) if not waves or w in waves]
    amp = sum(coeffs[k] * X**k for k in keep)
    grad = [math.fsum(W * 2.0 * amp * X**k) if k in keep else 0.0 for k in range(4)]
    return math.fsum(W * amp * amp), np.array(grad)


@pytest.fixture(scope="module")
def lik():
    return likelihood()


def test_four_waves_hold_no_prepared_copy_and_are_exact_sums(lik):
    names = lik.parameter_names
    assert names == list(POINT)
    mc = ld.Dataset.from_arrays(scalars={"x": X}, weights=W, chunk_size=8192)
    draws = np.array([[POINT[n] * (1 + k / 8) for n in names] for k in (-1, 1, 2)])
    cov = np.diag([0.01, 0.02, 0.03, 0.04])
    warm = ld.Dataset.from_arrays(scalars={"x": X[:2000]}, weights=W[:2000])
    lik.fit_fractions("t", POINT, generated_mc=warm, covariance=cov, ensemble=draws)  # the kernels
    ex = lik.execution
    before = len(ex.memory_decisions())
    tracemalloc.start()
    try:
        ff = lik.fit_fractions("t", POINT, generated_mc=mc, covariance=cov, ensemble=draws)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    (decision,) = ex.memory_decisions()[before:]
    assert decision.strategy == "streaming"
    assert decision.dataset == "t/generated_mc/integrals of 11 selections"
    assert decision.partitions == 15 and decision.chunk_size == 8192
    # the pass holds about two partitions' work, far less than 11 resident copies would
    assert peak <= decision.peak_bytes + 4 * 2**20, (peak, decision.peak_bytes)
    assert decision.estimated_bytes >= 11 * 16 * N and peak < decision.estimated_bytes / 2
    total, total_grad = reference(POINT, ())
    for waves in subsets():
        value, _ = reference(POINT, waves)
        assert ff.integral(*waves) == value, waves
    for w in WAVES:
        num, num_grad = reference(POINT, (w,))
        assert ff[w].central == num / total
        g = num_grad / total - num * total_grad / total**2
        assert ff[w].standard_error == pytest.approx(math.sqrt(g @ cov @ g), rel=1e-12)
        at_draws = [reference(dict(zip(names, d, strict=True)), (w,))[0]
                    / reference(dict(zip(names, d, strict=True)), ())[0] for d in draws]
        assert ff[w].draws.tolist() == at_draws
    for a, b in itertools.combinations(WAVES, 2):
        want = (reference(POINT, (a, b))[0] - reference(POINT, (a,))[0] - reference(POINT, (b,))[0]) / total
        assert ff[b, a].central == pytest.approx(want, rel=1e-13)
    assert ff.sum() == pytest.approx(1.0, rel=1e-14)
    with pytest.raises(KeyError, match="no integral of 'S', 'P', 'D'"):
        ff.integral("S", "P", "D")


def test_the_pass_fits_a_host_budget():
    """Without a chunk size of the user's, the pass's partitions are cut to the host budget,
    and what it holds stays within it."""
    mc = ld.Dataset.from_arrays(scalars={"x": X}, weights=W)
    cov = np.diag([0.01, 0.02, 0.03, 0.04])
    budget = 12 * 2**20
    lik = likelihood(ld.Execution(memory=ld.MemoryPlan(host=budget)))
    lik.fit_fractions("t", POINT, generated_mc=mc, covariance=cov)  # the kernels
    tracemalloc.start()
    try:
        ff = lik.fit_fractions("t", POINT, generated_mc=mc, covariance=cov)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    decision = lik.execution.memory_decisions()[-1]
    assert decision.strategy == "streaming" and decision.partitions >= 4
    assert peak <= decision.peak_bytes <= budget, (peak, decision.peak_bytes)
    assert "one pass, each partition prepared in its task for the 11 selection(s)" in decision.reason
    assert ff.integral("D") == reference(POINT, ("D",))[0]
    with pytest.raises(ld.BudgetError, match="budget too small for one chunk"):
        tiny = likelihood(ld.Execution(memory=ld.MemoryPlan(host="1 MiB")))
        tiny.fit_fractions("t", POINT, generated_mc=mc)


def test_dense_grouped_sums_are_exact(monkeypatch):
    """The dense path of GroupedPartials (few keys: a one-bin fill) against exact rational
    sums, with cancelling, tiny, non-finite and overflowing terms, split and merged."""
    rng = np.random.default_rng(8)
    rows, n = 5, 70_000  # more than one slice of columns
    terms = rng.standard_normal((rows, n)) * np.exp(rng.uniform(-30, 30, (rows, n)))
    terms[0, :4] = [1e16, 1.0, -1e16, 1e-300]
    groups = rng.integers(-1, 2, n)
    want = np.array([[float(sum(map(Fraction, terms[r][groups == g].tolist()), Fraction(0)))
                      for r in range(rows)] for g in range(2)])
    assert np.array_equal(GroupedPartials.from_terms(groups, terms, (2, rows)).to_floats(), want)
    with monkeypatch.context() as m:  # bins emptied every few slices (as every 2**20 columns)
        m.setattr("laddu_dask.sums.grouped._BLOCK", 20_000)
        assert np.array_equal(GroupedPartials.from_terms(groups, terms, (2, rows)).to_floats(), want)
    parts = [GroupedPartials.from_terms(groups[i:j], terms[:, i:j], (2, rows)) for i, j in ((0, 5), (5, n))]
    assert np.array_equal(GroupedPartials.merge(parts).to_floats(), want)
    special = terms[:2, :10].copy()
    special[1, 3] = math.nan
    special[0, 4:6] = [1.7e308, 1.7e308]  # a bin sum overflows: the exact slow path
    got = GroupedPartials.from_terms(np.zeros(10, dtype=np.int64), special, (1, 2)).to_floats()
    assert got[0, 0] == math.inf and math.isnan(got[0, 1])


@pytest.mark.slow
def test_the_pass_on_a_cluster_equals_the_local_one():
    pytest.importorskip("distributed")
    from cluster_helpers import local_cluster

    mc = ld.Dataset.from_arrays(scalars={"x": X[:20000]}, weights=W[:20000], chunk_size=4096)
    cov = np.diag([0.01, 0.02, 0.03, 0.04])
    draws = np.array([[POINT[n] * (1 + k / 8) for n in POINT] for k in (-1, 1)])
    local = likelihood().fit_fractions("t", POINT, generated_mc=mc, covariance=cov, ensemble=draws)
    for client in local_cluster():
        remote = likelihood(ld.Execution(client=client)).fit_fractions("t", POINT, generated_mc=mc,
                                                                       covariance=cov, ensemble=draws)
        for w in WAVES:
            assert remote[w].central == local[w].central
            assert remote[w].standard_error == local[w].standard_error
            assert remote[w].draws.tolist() == local[w].draws.tolist()
