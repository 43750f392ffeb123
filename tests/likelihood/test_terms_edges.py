"""Tests that kill the surviving mutants of ``laddu_dask/likelihood/terms.py`` (docs/mutation.md).

References are the likelihoods written out with ``math.fsum`` over the events (intensity
``a x^2 + 1``: ``I``, ``dI/da = x^2`` by hand), exact power-of-two cases and hand-written
messages.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.data.dataset import Dataset
from laddu_dask.errors import DataError, NonFiniteError, NormalizationError, SchemaError
from laddu_dask.likelihood import NLL, ExtendedNLL, Likelihood
from laddu_dask.likelihood.terms import _nll_gradient
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.normalization import NormalizationStatistics

A = ld.parameter("a", initial=1.0)
X = ld.scalar("x")
MODEL = ld.Model(A * X * X + 1.0)  # I = a x^2 + 1, dI/da = x^2

XD = [0.5, 1.0, 1.5]
XD2 = [0.25, 2.0]
XM = [0.0, 0.5, 1.0, 2.0]


def _ds(x, weights=None) -> Dataset:
    return Dataset.from_arrays(scalars={"x": np.array(x, dtype=float)},
                               weights=None if weights is None else np.array(weights, dtype=float))


def _nll_reference(a: float, xd, xm) -> tuple[float, float]:
    """The NLL and its derivative in ``a`` (unit weights), with math.fsum over the events."""
    s_data = math.fsum(math.log(a * x * x + 1.0) for x in xd)
    g_data = math.fsum(x * x / (a * x * x + 1.0) for x in xd)
    s_mc = math.fsum(a * x * x + 1.0 for x in xm)
    g_mc = math.fsum(x * x for x in xm)
    n_w = len(xd)
    return -2.0 * (s_data - n_w * math.log(s_mc)), -2.0 * (g_data - n_w * g_mc / s_mc)


def _extended_reference(a: float, xd, xm) -> float:
    """The extended NLL (unit weights), with math.fsum over the events."""
    return 2.0 * (math.fsum(a * x * x + 1.0 for x in xm) - math.fsum(math.log(a * x * x + 1.0) for x in xd))


# -- construction -----------------------------------------------------------------------
@pytest.mark.parametrize("name", [5, None, ""])
def test_a_term_name_must_be_a_non_empty_string(name):
    with pytest.raises(ValueError, match=rf"^a term name must be a non-empty string, got {name!r}$"):
        NLL(MODEL, data=_ds(XD), accepted_mc=_ds(XM), name=name)


@pytest.mark.parametrize("kind", [NLL, ExtendedNLL])
def test_an_empty_dataset_is_named_by_its_role(kind):
    empty = _ds([])
    with pytest.raises(DataError, match=r"^term 'sig': its data has no events \(arrays\); a likelihood "
                                        r"needs at least one event in its data and its accepted Monte "
                                        r"Carlo$"):
        kind(MODEL, data=empty, accepted_mc=_ds(XM), name="sig")
    with pytest.raises(DataError, match=r"^term 'sig': its accepted Monte Carlo \(accepted_mc\) has no "
                                        r"events \(arrays\); a likelihood needs"):
        kind(MODEL, data=_ds(XD), accepted_mc=empty, name="sig")


def test_one_event_is_enough():
    value, grad = Likelihood([NLL(MODEL, data=_ds([1.0]), accepted_mc=_ds([2.0]))]).value_and_gradient([1.0])
    ref_value, ref_grad = _nll_reference(1.0, [1.0], [2.0])
    assert value == pytest.approx(ref_value, rel=1e-14)
    assert grad[0] == pytest.approx(ref_grad, rel=1e-14)


def test_repr_counts_events_and_parameters():
    term = ExtendedNLL(MODEL, data=_ds(XD), accepted_mc=_ds(XM), name="sig")
    assert repr(term) == "ExtendedNLL('sig': 3 data events, 4 accepted-MC events, 1 free parameters)"


# -- with_data --------------------------------------------------------------------------
def test_with_data_evaluates_the_new_data_and_shares_the_accepted_mc():
    term = NLL(MODEL, data=_ds(XD), accepted_mc=_ds(XM), name="sig")
    ex = Execution()
    lik = Likelihood([term], execution=ex)
    lik.value([1.0])  # the original is prepared first
    twin = term.with_data(_ds(XD2))
    value, grad = Likelihood([twin], execution=ex).value_and_gradient([1.5])
    ref_value, ref_grad = _nll_reference(1.5, XD2, XM)
    assert value == pytest.approx(ref_value, rel=1e-14)
    assert grad[0] == pytest.approx(ref_grad, rel=1e-14)
    # the twin's accepted MC is the original's preparation, not a second one
    assert twin.prepare(ex).mc is term.prepare(ex).mc
    assert twin.prepare(ex).data is not term.prepare(ex).data
    # a twin of the twin still takes the original's
    twin2 = twin.with_data(_ds(XD))
    assert twin2._mc_from is term
    assert twin2.prepare(ex).mc is term.prepare(ex).mc
    assert Likelihood([twin2], execution=ex).value([1.5]) == lik.value([1.5])


def test_with_data_before_the_original_is_prepared():
    term = ExtendedNLL(MODEL, data=_ds(XD), accepted_mc=_ds(XM), name="sig")
    twin = term.with_data(_ds(XD2))
    a = 0.75
    expected = _extended_reference(a, XD2, XM)
    assert twin([a]) == pytest.approx(expected, rel=1e-14)  # as an iminuit cost: its own likelihood
    assert term([a]) != twin([a])  # the original keeps its data, and its cost its likelihood


def test_with_data_refuses_empty_data_and_a_missing_column():
    term = NLL(MODEL, data=_ds(XD), accepted_mc=_ds(XM), name="sig")
    with pytest.raises(DataError, match=r"^term 'sig': its data has no events \(arrays\)$"):
        term.with_data(_ds([]))
    with pytest.raises(SchemaError, match="'x'"):
        term.with_data(Dataset.from_arrays(scalars={"y": np.ones(3)}))
    with pytest.raises(TypeError, match=r"term 'sig': data must be a laddu_dask Dataset"):
        term.with_data(np.ones(3))


# -- a term as an iminuit cost, added to a likelihood -----------------------------------
def test_a_term_added_to_a_likelihood_runs_on_that_likelihoods_execution():
    first = NLL(MODEL, data=_ds(XD), accepted_mc=_ds(XM), name="first")
    second = ExtendedNLL(MODEL, data=_ds(XD2), accepted_mc=_ds(XM), name="second")
    ex = Execution()
    total = first + Likelihood([second], execution=ex)
    assert total.execution is ex
    a = 1.25
    expected = _nll_reference(a, XD, XM)[0] + _extended_reference(a, XD2, XM)
    assert total.value([a]) == pytest.approx(expected, rel=1e-14)


# -- the normalisation must be positive and finite --------------------------------------
def test_an_accepted_mc_sum_of_exactly_zero_is_refused():
    # I = a x: the accepted-MC sum 1 - 1 is zero with a nonzero total weight
    model = ld.Model(A * X)
    term = NLL(model, data=_ds(XD), accepted_mc=_ds([1.0, -1.0]), name="zero")
    with pytest.raises(NormalizationError, match=r"^term 'zero': the accepted-MC normalisation "
                                                 r"sum_accmc w I is 0\.0; it must be positive and finite$"):
        Likelihood([term]).value([1.0])


def test_an_accepted_mc_sum_below_one_is_accepted():
    xm = [0.0, 0.0]
    weights = [0.25, 0.25]  # sum_accmc w I = 0.5 at any a
    term = NLL(MODEL, data=_ds(XD), accepted_mc=_ds(xm, weights), name="small")
    a = 2.0
    expected = -2.0 * (math.fsum(math.log(a * x * x + 1.0) for x in XD) - 3 * math.log(0.5))
    assert Likelihood([term]).value([a]) == pytest.approx(expected, rel=1e-14)


# -- non-finite results name the parameter ----------------------------------------------
def test_a_non_finite_gradient_component_names_its_parameter():
    b = ld.parameter("b", initial=1.0)
    term = NLL(ld.Model(A * X * X + b), data=_ds(XD), accepted_mc=_ds(XM), name="two")
    assert term.parameter_names == ["a", "b"]
    with pytest.raises(NonFiniteError, match=r"^term 'two': the gradient of the nll is inf in parameter "
                                             r"'b', beyond the float range$"):
        term._finite(1.0, np.array([2.0, np.inf]))
    with pytest.raises(NonFiniteError, match=r"gradient of the nll is nan in parameter 'a'"):
        term._finite(1.0, np.array([np.nan, np.inf]))
    with pytest.raises(NonFiniteError, match=r"^term 'two': the nll is -inf, beyond the float range$"):
        term._finite(-np.inf, None)
    assert term._finite(3.0, None) == (3.0, None)


# -- _nll_gradient: the scaled form where N_w g_mc overflows ----------------------------
def test_the_nll_gradient_where_n_w_times_g_mc_overflows_is_exact():
    # every operation exact: -2 (2^1000 - 3 2^1000 2^40 / 2^39) = 10 2^1000, while 3 2^1000 2^40 overflows;
    # -2 (0 - 3 2^1000 / 2^39) = 6 2^961
    g_data = np.array([2.0**1000, 0.0])
    g_mc = np.array([2.0**40, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the overflow of the first try is not the user's concern
        grad = _nll_gradient(g_data, 3.0 * 2.0**1000, g_mc, 2.0**39)
    assert grad.tolist() == [10.0 * 2.0**1000, 6.0 * 2.0**961]


def test_the_nll_gradient_of_non_finite_sums_stays_non_finite():
    # inf - (an overflowing N_w g_mc / s_mc) is NaN: returned as such, for the caller's NonFiniteError
    grad = _nll_gradient(np.array([np.inf, 0.0]), 3.0 * 2.0**1000, np.array([2.0**40, 1.0]), 2.0**39)
    assert np.isnan(grad[0])
    assert grad[1] == 6.0 * 2.0**961


# -- normalization="verify" compares the gradient relative to its own size ---------------
def test_verify_catches_a_skewed_gradient_much_smaller_than_one(monkeypatch):
    """Accepted-MC weights of 1e-6: the gradient is ~1e-6; skewed by 1e-5 relative it is off by
    ~1e-11, far beyond the check's 1e-8 relative, but below 1e-8 absolute."""
    original = NormalizationStatistics.values_and_gradients

    def skewed(self, points, with_gradient):
        values, grads = original(self, points, with_gradient)
        return values, (None if grads is None else grads * (1.0 + 1e-5))

    monkeypatch.setattr(NormalizationStatistics, "values_and_gradients", skewed)
    c = ld.parameter("c", initial=1.0)
    model = ld.Model((c * X).norm_sqr())  # a sum of squares: "verify" has statistics to check
    mc = _ds([0.5, 1.0, 2.0], weights=[1e-6, 1e-6, 1e-6])
    lik = Likelihood([NLL(model, data=_ds(XD), accepted_mc=mc, name="tiny")],
                     execution=Execution(normalization="verify"))
    lik.value([1.0])  # the values agree
    with pytest.raises(NormalizationError, match=r"^term 'tiny': the accepted-MC normalisation from "
                                                 r"sufficient statistics"):
        lik.value_and_gradient([1.0])


def _skew_statistics(monkeypatch, value_by=1.0, gradient_shift=None):
    """Make the sufficient statistics' value ``value_by`` times too large, and add
    ``gradient_shift(grad)`` to their gradient."""
    original = NormalizationStatistics.values_and_gradients

    def skewed(self, points, with_gradient):
        values, grads = original(self, points, with_gradient)
        if grads is not None and gradient_shift is not None:
            grads = np.array([g + gradient_shift(g) for g in grads])
        return values * value_by, grads

    monkeypatch.setattr(NormalizationStatistics, "values_and_gradients", skewed)


def test_verify_catches_a_skewed_value_much_smaller_than_one(monkeypatch):
    """An accepted-MC sum of ~5e-6 off by 1e-6 relative: beyond the check's 1e-10 relative."""
    _skew_statistics(monkeypatch, value_by=1.0 + 1e-6)
    c = ld.parameter("c", initial=1.0)
    mc = _ds([0.5, 1.0, 2.0], weights=[1e-6, 1e-6, 1e-6])
    lik = Likelihood([NLL(ld.Model((c * X).norm_sqr()), data=_ds(XD), accepted_mc=mc, name="tiny")],
                     execution=Execution(normalization="verify"))
    with pytest.raises(NormalizationError, match=r"^term 'tiny': the accepted-MC normalisation from "
                                                 r"sufficient statistics"):
        lik.value([1.0])


def test_verify_accepts_a_gradient_off_by_exactly_its_tolerance(monkeypatch):
    """The event loop's gradient is exactly (10, 0) at c = 1, d = 1 (x = 1, 2 and y = 0 on the
    accepted MC); statistics off by exactly 1e-8 of its largest component still agree."""
    _skew_statistics(monkeypatch, gradient_shift=lambda g: np.array([0.0, 1e-8 * 10.0]))
    c, d = ld.parameter("c", initial=1.0), ld.parameter("d", initial=1.0)
    y = ld.scalar("y")
    model = ld.Model((c * X).norm_sqr() + (d * y).norm_sqr())
    mc = Dataset.from_arrays(scalars={"x": np.array([1.0, 2.0]), "y": np.zeros(2)})
    data = Dataset.from_arrays(scalars={"x": np.array([1.0]), "y": np.array([1.0])})
    lik = Likelihood([NLL(model, data=data, accepted_mc=mc, name="edge")],
                     execution=Execution(normalization="verify"))
    value, grad = lik.value_and_gradient([1.0, 1.0])
    # I = c^2 x^2 + d^2 y^2; data: I = 2, dI/dc = 2, dI/dd = 2; accepted MC: sum I = 5, sum dI/dc = 10
    assert value == pytest.approx(-2.0 * (math.log(2.0) - math.log(5.0)), rel=1e-15)
    # the statistics are what "verify" then uses: sum dI/dd = 0 + 1e-7
    assert grad.tolist() == pytest.approx([-2.0 * (1.0 - 10.0 / 5.0), -2.0 * (1.0 - 1e-7 / 5.0)], rel=1e-15)


def test_verify_of_an_accepted_mc_sum_of_exactly_zero_reports_the_zero_sum():
    """Weights 4 and -1 at x = 1, 2: sum w |c x|^2 = 0 exactly, in the statistics and the event
    loop alike; they agree, and the zero normalisation is the error."""
    c = ld.parameter("c", initial=1.0)
    mc = _ds([1.0, 2.0], weights=[4.0, -1.0])
    lik = Likelihood([NLL(ld.Model((c * X).norm_sqr()), data=_ds(XD), accepted_mc=mc, name="zero")],
                     execution=Execution(normalization="verify"))
    for call in (lik.value, lik.value_and_gradient):
        with pytest.raises(NormalizationError, match=r"^term 'zero': the accepted-MC normalisation sum_accmc "
                                                     r"w I is 0\.0; it must be positive and finite$"):
            call([1.0])


def test_an_extended_gradient_overflowing_is_a_non_finite_error_not_a_warning():
    """I = a x; accepted MC x = 1e308: dI/da sums to 1e308; data weight -1e308 at x = 1: w dI/da / I
    sums to -1e308; their difference overflows in the gradient (and the value 2 (1e308 - 0) too)."""
    term = ExtendedNLL(ld.Model(A * X), data=_ds([1.0], weights=[-1e308]), accepted_mc=_ds([1e308]),
                       name="big")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(NonFiniteError, match=r"^term 'big': the extended_nll is inf, beyond the float "
                                                 r"range$"):
            Likelihood([term]).value_and_gradient([1.0])


def _files(tmp_path, n_events: int, column: str) -> Dataset:
    paths = []
    for i in (1, 2):
        paths.append(str(tmp_path / f"f{i}.parquet"))
        Dataset.from_arrays(scalars={column: np.ones(n_events)}).write_parquet(paths[-1])
    return ld.read_parquet(paths)


def test_with_data_from_two_files_names_both(tmp_path):
    term = NLL(MODEL, data=_ds(XD), accepted_mc=_ds(XM), name="sig")
    lacking = _files(tmp_path, 2, "y")
    f1, f2 = lacking.sources
    with pytest.raises(SchemaError, match=rf"^model needs column 'x' which {f1}, {f2} lacks"):
        term.with_data(lacking)
    empty = _files(tmp_path, 0, "x")
    with pytest.raises(DataError, match=rf"^term 'sig': its data has no events \({f1}, {f2}\)$"):
        term.with_data(empty)


@pytest.mark.parametrize("kind", [NLL, ExtendedNLL])
def test_a_term_evaluates_itself_on_an_execution(kind):
    term = kind(MODEL, data=_ds(XD), accepted_mc=_ds(XM), name="sig")
    a = 1.5
    value, grad = term.evaluate(Execution(), [a], True)
    if kind is NLL:
        ref_value, ref_grad = _nll_reference(a, XD, XM)
        assert grad[0] == pytest.approx(ref_grad, rel=1e-14)
    else:
        ref_value = _extended_reference(a, XD, XM)
        ref_grad = 2.0 * (math.fsum(x * x for x in XM) - math.fsum(x * x / (a * x * x + 1.0) for x in XD))
        assert grad[0] == pytest.approx(ref_grad, rel=1e-14)
    assert value == pytest.approx(ref_value, rel=1e-14)
    alone, no_grad = term.evaluate(Execution(), [a], False)
    assert no_grad is None and alone == pytest.approx(ref_value, rel=1e-14)


@pytest.mark.parametrize("kind", [NLL, ExtendedNLL])
def test_a_term_evaluates_a_decomposable_model_at_the_given_point(kind):
    """``I = c^2 x^2 + d^2 y^2`` has sufficient statistics, so the accepted-MC sum is taken from
    them at ``params`` (not from an event loop); the references are written out by hand."""
    c, d = ld.parameter("c", initial=1.0), ld.parameter("d", initial=1.0)
    y = ld.scalar("y")
    model = ld.Model((c * X).norm_sqr() + (d * y).norm_sqr())
    xd, yd = [0.5, 1.0, 1.5], [1.0, 0.25, 2.0]
    xm, ym = [0.0, 0.5, 1.0, 2.0], [1.0, 1.0, 0.5, 0.0]
    data = Dataset.from_arrays(scalars={"x": np.array(xd), "y": np.array(yd)})
    mc = Dataset.from_arrays(scalars={"x": np.array(xm), "y": np.array(ym)})
    term = kind(model, data=data, accepted_mc=mc, name="sig")
    cv, dv = 1.5, 0.75
    intens = [cv * cv * u * u + dv * dv * v * v for u, v in zip(xd, yd)]
    s_data = math.fsum(math.log(i) for i in intens)
    g_data = [math.fsum(2 * cv * u * u / i for u, i in zip(xd, intens)),
              math.fsum(2 * dv * v * v / i for v, i in zip(yd, intens))]
    s_mc = math.fsum(cv * cv * u * u + dv * dv * v * v for u, v in zip(xm, ym))
    g_mc = [math.fsum(2 * cv * u * u for u in xm), math.fsum(2 * dv * v * v for v in ym)]
    if kind is NLL:
        ref_value = -2.0 * (s_data - 3 * math.log(s_mc))
        ref_grad = [-2.0 * (gd - 3 * gm / s_mc) for gd, gm in zip(g_data, g_mc)]
    else:
        ref_value = 2.0 * (s_mc - s_data)
        ref_grad = [2.0 * (gm - gd) for gd, gm in zip(g_data, g_mc)]
    execution = Execution()
    assert term.prepare(execution).stats is not None  # the path through the statistics
    value, grad = term.evaluate(execution, [cv, dv], True)
    assert value == pytest.approx(ref_value, rel=1e-13)
    assert grad.tolist() == pytest.approx(ref_grad, rel=1e-13)
    alone, no_grad = term.evaluate(execution, [cv, dv], False)
    assert no_grad is None and alone == pytest.approx(ref_value, rel=1e-13)


@pytest.mark.parametrize("normalization", ["general", "auto", "verify"])
def test_an_accepted_mc_of_zero_total_weight_is_named_by_both_files(tmp_path, normalization):
    paths = []
    for i in (1, 2):
        paths.append(str(tmp_path / f"mc{i}.parquet"))
        Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0])}, weights=np.zeros(2)).write_parquet(paths[-1])
    mc = ld.read_parquet(paths)
    want = (f"term 'zero': the accepted Monte Carlo ({', '.join(mc.sources)}) has zero total weight, "
            "so the intensity cannot be normalised")
    c = ld.parameter("c", initial=1.0)
    for model in (MODEL, ld.Model((c * X).norm_sqr())):  # the event loop's weight, the statistics'
        term = NLL(model, data=_ds(XD), accepted_mc=mc, name="zero")
        with pytest.raises(NormalizationError, match=f"^{re.escape(want)}$"):
            term.prepare(Execution(normalization=normalization))


def test_a_term_is_prepared_once_per_execution_and_a_twin_shares_the_accepted_mc():
    term = NLL(MODEL, data=_ds(XD), accepted_mc=_ds(XM), name="sig")
    execution, other = Execution(), Execution()
    first = term.prepare(execution)
    assert term.prepare(execution) is first  # "done once per execution"
    assert term.prepare(other) is not first
    twin = term.with_data(_ds(XD2))
    mine = twin.prepare(other)
    assert twin.prepare(other) is mine
    assert mine.mc is term.prepare(other).mc and mine.model is term.prepare(other).model
    assert mine.data is not term.prepare(other).data


def test_the_memory_decisions_name_the_term_and_the_role_of_each_dataset():
    c = ld.parameter("c", initial=1.0)
    execution = Execution(normalization="verify")  # the statistics and the event loop both read the MC
    term = NLL(ld.Model((c * X).norm_sqr()), data=_ds(XD), accepted_mc=_ds(XM), name="sig")
    term.prepare(execution)
    term.with_data(_ds(XD2)).prepare(execution)  # a twin prepares its data only
    assert [d.dataset for d in execution.memory_decisions()] == \
        ["sig/data", "sig/accepted_mc", "sig/accepted_mc", "sig/data"]


def test_a_term_takes_an_expression_as_its_model():
    """laddu's terms take an ``Expr`` too: it is wrapped in a ``Model`` (same NLL, same names)."""
    lik = Likelihood([NLL(A * X * X + 1.0, data=_ds(XD), accepted_mc=_ds(XM), name="e")])
    value, grad = lik.value_and_gradient([0.7])
    want, dwant = _nll_reference(0.7, XD, XM)
    assert lik.parameter_names == ["a"]
    assert value == pytest.approx(want, rel=1e-14) and grad[0] == pytest.approx(dwant, rel=1e-13)
    with pytest.raises(TypeError, match=r"^a likelihood term needs a Model or an expression, got str$"):
        NLL("a * x", data=_ds(XD), accepted_mc=_ds(XM))


@pytest.mark.parametrize("role", ["data", "accepted_mc"])
def test_a_sample_that_is_not_a_dataset_is_a_type_error_naming_the_term_and_its_role(role):
    samples = {"data": _ds(XD), "accepted_mc": _ds(XM), role: np.array(XD)}
    with pytest.raises(TypeError, match=rf"^term 'pwa': {role} must be a laddu_dask Dataset "
                                        r"\(ld\.read_parquet or ld\.Dataset\.from_arrays\), got ndarray$"):
        NLL(MODEL, name="pwa", **samples)
