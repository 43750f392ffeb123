"""Core numbers pinned by independent references (issue 30, point 1).

Each test here was written against a deliberate regression in the core: put back, the
test fails; the reference is independent of the code under test (``math.fsum`` over
NumPy per-event terms, a closed form, a hand-computed case), never the function itself.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from laddu_dask.data.dataset import Dataset
from laddu_dask.expr import Model, parameter, scalar
from laddu_dask.likelihood import NLL, Likelihood
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.jobs import INLINE_EVENTS

A = parameter("a", initial=1.0, bounds=(0.0, 10.0))
B = parameter("b", initial=0.5, bounds=(0.01, 5.0))
X = scalar("x")
#: I(x) = a x^2 + b: per-event terms and their derivatives are one NumPy line each.
TOY = Model(A * X * X + B)


def _toy_nll_reference(a: float, b: float, xd, wd, xm, wm) -> tuple[float, np.ndarray]:
    """-2 ln L of the toy and its gradient from NumPy per-event terms and ``math.fsum``."""
    i_d, i_m = a * xd**2 + b, a * xm**2 + b
    s_data = math.fsum(wd * np.log(i_d))
    g_data = np.array([math.fsum(wd * xd**2 / i_d), math.fsum(wd / i_d)])
    s_mc = math.fsum(wm * i_m)
    g_mc = np.array([math.fsum(wm * xm**2), math.fsum(wm)])
    n_w = math.fsum(wd)
    return -2.0 * (s_data - n_w * math.log(s_mc)), -2.0 * (g_data - n_w * g_mc / s_mc)


# ---------------------------------------------------------------------------
# runtime/worker.py: every thread's share of a partition above the inline threshold
# ---------------------------------------------------------------------------
def test_worker_with_two_threads_sums_every_threads_share_of_a_large_partition():
    """One partition of data and one of MC, each above the worker's inline threshold, on one
    worker of two threads: the worker cuts each into one share per thread; the NLL and its
    gradient must hold every event (``math.fsum`` over the per-event terms)."""
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(30)
    n_data, n_mc = INLINE_EVENTS + 4_321, 2 * INLINE_EVENTS + 777
    xd = rng.uniform(0.0, 1.0, n_data) ** 0.4
    xm = rng.uniform(0.0, 1.0, n_mc)
    wd = rng.uniform(0.1, 3.0, n_data)
    wm = rng.normal(1.0, 1.0, n_mc)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        data = Dataset.from_arrays(scalars={"x": xd}, weights=wd, chunk_size=n_data)
        mc = Dataset.from_arrays(scalars={"x": xm}, weights=wm, chunk_size=n_mc)
        lik = Likelihood([NLL(TOY, data=data, accepted_mc=mc, name="threads")],
                         execution=Execution(client=client))
        for a, b in ((1.0, 0.5), (3.7, 0.02)):
            ref_value, ref_grad = _toy_nll_reference(a, b, xd, wd, xm, wm)
            value, grad = lik.value_and_gradient([a, b])
            assert value == pytest.approx(ref_value, rel=1e-12)
            np.testing.assert_allclose(grad, ref_grad, rtol=1e-11)
            assert lik.value([a, b]) == value


# ---------------------------------------------------------------------------
# analysis/binned.py: fit_bins(extended=True) fits each bin with the extended likelihood
# ---------------------------------------------------------------------------
def test_fit_bins_extended_gives_each_bins_closed_form_yield():
    """I = s x: the extended likelihood 2 (s sum_mc w x - sum_data w ln(s x)) has its minimum
    at s = sum_data w / sum_mc w x, with the value 2 (W - W ln s - sum_data w ln x); a plain
    NLL does not depend on s at all (the scale cancels).  Each bin, by hand from its events."""
    from laddu_dask.analysis.binned import fit_bins
    from laddu_dask.data.operations import Bin

    rng = np.random.default_rng(31)
    xd, md, wd = rng.uniform(0.2, 1.0, 600), rng.uniform(0.0, 1.0, 600), rng.uniform(0.5, 1.5, 600)
    xm, mm = rng.uniform(0.2, 1.0, 3000), rng.uniform(0.0, 1.0, 3000)
    s = parameter("s", initial=20.0, bounds=(1e-3, 1e3))
    data = Dataset.from_arrays(scalars={"x": xd, "m": md}, weights=wd, chunk_size=256)
    mc = Dataset.from_arrays(scalars={"x": xm, "m": mm}, chunk_size=1024)
    fits = fit_bins(Model(s * X), data=data, accepted_mc=mc, by=scalar("m"),
                    bins=Bin.uniform(2, low=0, high=1), extended=True)
    assert [(f.low, f.high) for f in fits] == [(0.0, 0.5), (0.5, 1.0)]
    for fit in fits:
        d, m = (fit.low <= md) & (md < fit.high), (fit.low <= mm) & (mm < fit.high)
        w = math.fsum(wd[d])
        s_hat = w / math.fsum(xm[m])
        fval = 2.0 * (w - w * math.log(s_hat) - math.fsum(wd[d] * np.log(xd[d])))
        best = fit.best
        assert best is not None
        assert best.named_parameters["s"] == pytest.approx(s_hat, rel=1e-4)
        assert best.fval == pytest.approx(fval, rel=1e-9, abs=1e-7)


# ---------------------------------------------------------------------------
# likelihood/hessian.py: a narrow parameter's step shrinks even when the others are wide
# ---------------------------------------------------------------------------
def test_hessian_of_a_narrow_parameter_among_wide_ones_matches_its_closed_form():
    """-2 ln L = x^2 / 1e4 + 2 cosh(y / sigma), sigma = 5e-5: x is wide (its first step is far
    below its error), y narrow (the first step, 1e-4, is two sigma).  The Hessian is
    diag(2e-4, 2 cosh(y / sigma) / sigma^2); a step left at 1e-4 in y overestimates it by
    sinh(2) / 2 = 1.81 (the difference quotient of sinh over two widths)."""
    from laddu_dask.likelihood.hessian import gradient_hessian

    sigma = 5e-5

    def values_and_gradients(points):
        p = np.asarray(points)
        u = p[:, 1] / sigma
        return (p[:, 0] ** 2 / 1e4 + 2.0 * np.cosh(u),
                np.stack([2.0 * p[:, 0] / 1e4, 2.0 * np.sinh(u) / sigma], axis=1))

    y = 0.5 * sigma
    hessian = gradient_hessian(values_and_gradients, np.array([30.0, y]), [(None, None)] * 2, ["x", "y"])
    assert hessian[0, 0] == pytest.approx(2e-4, rel=1e-9)
    assert hessian[1, 1] == pytest.approx(2.0 * math.cosh(0.5) / sigma**2, rel=1e-4)
    assert abs(hessian[0, 1]) <= 1e-6 * math.sqrt(hessian[0, 0] * hessian[1, 1])
    assert hessian[0, 1] == hessian[1, 0]


# ---------------------------------------------------------------------------
# results/yields.py: the corrected yield's data error is divided by the acceptance
# ---------------------------------------------------------------------------
def test_corrected_yield_and_observed_cross_section_errors_by_hand():
    """I = a (x^2 + 1) at a = 2; data x = (0.5, 1) with weights (3, 4); accepted MC x = (0, 1);
    generated MC x = (0, 0.5, 1, 2).  By hand: N = 7, its error sqrt(9 + 16) = 5, accepted
    yield 2 + 4 = 6, generated 2 + 2.5 + 4 + 10 = 18.5, acceptance 6 / 18.5; the corrected
    yield N / acceptance = 7 * 18.5 / 6 with the data error 5 * 18.5 / 6; over L = 2 pb the
    observed cross section is half of each.  (laddu 0.28.1 has no corrected yield.)"""
    import laddu_dask as ld

    model = Model(parameter("a", initial=1.0) * (X * X + 1.0))
    data = Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0])}, weights=np.array([3.0, 4.0]))
    mc = Dataset.from_arrays(scalars={"x": np.array([0.0, 1.0])})
    gen = Dataset.from_arrays(scalars={"x": np.array([0.0, 0.5, 1.0, 2.0])})
    lik = ld.Likelihood([ld.ExtendedNLL(model, data=data, accepted_mc=mc, name="t")])
    y = lik.yield_context("t", generated_mc=gen, parameters=[2.0])
    assert y.selected_yield().central == 7.0
    assert y.selected_yield().components["data_fill"] == 5.0
    assert y.acceptance().central == pytest.approx(6.0 / 18.5, rel=1e-15)
    corrected = y.corrected_yield()
    assert corrected.central == pytest.approx(7.0 * 18.5 / 6.0, rel=1e-15)
    assert corrected.components["data_fill"] == pytest.approx(5.0 * 18.5 / 6.0, rel=1e-15)
    assert corrected.error().error == pytest.approx(5.0 * 18.5 / 6.0, rel=1e-15)
    observed = lik.cross_section("t", gen, ld.Luminosity(2.0, ld.AreaUnit.PICOBARN), [2.0]).observed
    assert observed.central == pytest.approx(7.0 * 18.5 / 6.0 / 2.0, rel=1e-15)
    assert observed.components["data_fill"] == pytest.approx(5.0 * 18.5 / 6.0 / 2.0, rel=1e-15)


# ---------------------------------------------------------------------------
# likelihood/terms.py: a non-finite gradient is an error naming its parameter
# ---------------------------------------------------------------------------
def test_gradient_beyond_the_float_range_in_a_term_is_an_error_naming_the_parameter():
    """I = q y + p x; ExtendedNLL, 2 (sum_mc I - sum_data ln I).  Accepted MC: ten events at
    x = 1e307; data: three at x = 1.  At (q, p) = (1, 1e-300) every per-dataset sum is finite
    (sum_mc x = 1e308), and so is the value, but the exact gradient in p,
    2 (sum_mc x - sum_data x / I), is 2e308 - 6: beyond the float range (exact rational
    arithmetic below), whatever order or scaling computes it.  The term must say so."""
    from fractions import Fraction

    from laddu_dask.errors import NonFiniteError
    from laddu_dask.likelihood import ExtendedNLL

    q, p = parameter("q", initial=1.0), parameter("p", initial=1.0)
    y = scalar("y")
    xm, xd = np.full(10, 1e307), np.ones(3)
    mc = Dataset.from_arrays(scalars={"x": xm, "y": np.ones(10)})
    data = Dataset.from_arrays(scalars={"x": xd, "y": np.ones(3)})
    lik = Likelihood([ExtendedNLL(Model(q * y + p * X), data=data, accepted_mc=mc, name="t")])
    assert lik.parameter_names == ["q", "p"]
    point = [1.0, 1e-300]
    i_m, i_d = 1.0 + 1e-300 * xm, 1.0 + 1e-300 * xd
    # i_d = 1 exactly (log 0), i_m = 1 + 1e7 exactly: exact sums of exact terms, bitwise
    assert lik.value(point) == 2.0 * (math.fsum(i_m) - math.fsum(np.log(i_d)))
    exact = 2 * (sum(Fraction(v) for v in xm) - sum(Fraction(v) / (1 + Fraction(1e-300) * Fraction(v))
                                                    for v in xd))
    assert exact > Fraction(np.finfo(np.float64).max)
    with pytest.raises(NonFiniteError, match=r"gradient .*in parameter 'p'"):
        lik.value_and_gradient(point)
    with pytest.raises(NonFiniteError, match=r"gradient .*in parameter 'p'"):
        lik.gradient(point)


def test_infinite_derivative_at_a_finite_value_is_an_error_naming_the_parameter():
    """I = sqrt(p) x + q at p = 0: the intensity and the likelihood are finite, but
    dI/dp = x / (2 sqrt(p)) is infinite at every event with x != 0."""
    from laddu_dask.errors import NonFiniteError
    from laddu_dask.likelihood import ExtendedNLL

    p, q = parameter("p", initial=1.0, bounds=(0.0, 10.0)), parameter("q", initial=1.0)
    data = Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0])})
    mc = Dataset.from_arrays(scalars={"x": np.array([0.0, 0.5, 1.0])})
    for term in (NLL, ExtendedNLL):
        lik = Likelihood([term(Model(p.sqrt() * X + q), data=data, accepted_mc=mc, name="t")])
        assert lik.parameter_names == ["p", "q"]
        want = 6.0 if term is ExtendedNLL else 4.0 * math.log(3.0)  # I = 1 everywhere
        assert lik.value([0.0, 1.0]) == pytest.approx(want, rel=1e-15)
        with pytest.raises(NonFiniteError, match=r"gradient .*in parameter 'p'"):
            lik.value_and_gradient([0.0, 1.0])
