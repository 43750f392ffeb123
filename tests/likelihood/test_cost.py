"""iminuit's cost protocol: terms and likelihoods go straight into ``iminuit.Minuit``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from iminuit import Minuit
from iminuit.util import describe

import laddu_dask as ld
from laddu_dask.errors import ParameterError


@pytest.fixture(scope="module")
def samples():
    rng = np.random.default_rng(7)
    x = ld.scalar("x")
    a = ld.parameter("a", initial=1.0, bounds=(0.0, 10.0))
    b = ld.parameter("b", initial=0.5)
    c = ld.parameter("c", initial=2.0, bounds=(0.1, None))
    data = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 800) ** 0.5})
    mc = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 8000)})
    first = ld.NLL(ld.Model(a * x * x + b * b + 0.5), data=data, accepted_mc=mc, name="first")
    second = ld.ExtendedNLL(ld.Model(c * x + a), data=data, accepted_mc=mc, name="second")
    return first, second


def test_a_term_tells_minuit_its_names_limits_and_errordef(samples):
    first, _ = samples
    assert describe(first) == ["a", "b"]
    assert describe(first, annotations=True) == {"a": (0.0, 10.0), "b": None}
    m = Minuit(first, a=1.0, b=0.5)
    assert m.errordef == 1.0
    assert m.limits["a"] == (0.0, 10.0) and m.limits["b"] == (-math.inf, math.inf)
    assert first.npar == 2 and first.ndata == math.inf


def test_every_call_form_gives_the_likelihoods_value_and_gradient(samples):
    first, _ = samples
    lik = ld.Likelihood([first])
    value, grad = lik.value_and_gradient([2.0, 0.3])
    assert first(2.0, 0.3) == value
    assert first([2.0, 0.3]) == value
    assert first(np.array([2.0, 0.3])) == value
    assert first({"a": 2.0, "b": 0.3}) == value
    assert np.array_equal(first.grad(2.0, 0.3), grad)
    assert np.array_equal(first.grad([2.0, 0.3]), grad)


def test_bad_arguments_name_the_parameters(samples):
    first, _ = samples
    with pytest.raises(ParameterError, match="a, b"):
        first(1.0, 2.0, 3.0)
    with pytest.raises(ParameterError, match="'d'"):
        first({"d": 1.0})
    with pytest.raises(ParameterError, match="'b'.*nan|nan.*'b'"):
        first(1.0, math.nan)


def test_the_value_at_the_last_gradients_point_costs_no_evaluation(samples):
    first, _ = samples
    lik = ld.Likelihood([first])
    grad = lik.grad(1.5, 0.2)
    n = lik.n_evaluations
    assert lik(1.5, 0.2) == lik.value([1.5, 0.2])  # the second call is a real evaluation
    assert lik.n_evaluations == n + 1
    assert np.array_equal(lik.grad(1.5, 0.2), grad)
    assert lik.n_evaluations == n + 1
    lik(1.5, 0.25)
    assert lik.n_evaluations == n + 2
    # a caller changing the returned gradient does not change the next answer
    g = lik.grad(1.5, 0.2)
    g[:] = 0.0
    assert np.array_equal(lik.grad(1.5, 0.2), grad)


def test_minuit_on_the_likelihood_reaches_the_fit_of_lik_fit(samples):
    first, second = samples
    lik = ld.Likelihood([first, second])
    m = Minuit(lik, **{n: s.initial for n, s in lik.parameters.items()})
    m.migrad()
    m.hesse()
    assert m.fmin.nhessian == 0  # a plain Minuit computes its own second derivatives
    # "a" ends at its limit, where lik.fit's HESSE is Minuit's own as well (tests/likelihood/test_hessian.py)
    assert m.fmin.has_parameters_at_limit
    for result in (lik.fit(method="migrad", hessian="minuit"), lik.fit(method="migrad")):
        assert m.valid and result.valid
        assert m.fval == result.fval
        assert list(m.values) == result.values.tolist()
        assert list(m.errors) == [result.errors[n] for n in lik.parameter_names]
    assert math.isnan(m.fmin.reduced_chi2)


def test_terms_add_up_to_a_likelihood_sharing_parameters(samples):
    first, second = samples
    total = first + second
    assert isinstance(total, ld.Likelihood)
    assert total.parameter_names == ["a", "b", "c"]
    p = {"a": 2.0, "b": 0.3, "c": 1.5}
    expected = ld.Likelihood([first, second]).value(p)
    assert total(p) == expected
    assert total(p) == first({"a": 2.0, "b": 0.3}) + second({"a": 2.0, "c": 1.5})
    assert sum([first, second]).value(p) == expected
    g = total.grad(p)
    ga = dict(zip(first.parameter_names, first.grad({"a": 2.0, "b": 0.3})))
    gb = dict(zip(second.parameter_names, second.grad({"a": 2.0, "c": 1.5})))
    assert g[1] == ga["b"] and g[2] == gb["c"]
    assert g[0] == pytest.approx(ga["a"] + gb["a"], rel=1e-15)


def test_a_sum_keeps_the_execution_it_was_given_and_refuses_two(samples):
    first, second = samples
    execution = ld.Execution(kernel="numpy")
    lik = ld.Likelihood([first], execution=execution)
    assert (lik + second).execution is execution
    assert (second + lik).execution is execution
    with pytest.raises(ValueError, match="two different executions"):
        lik + ld.Likelihood([second], execution=ld.Execution(kernel="numpy"))
    with pytest.raises(ValueError, match="two likelihood terms are named 'first'"):
        first + first
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'NLL' and 'float'"):
        first + 1.0
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'float' and 'NLL'"):
        1.0 + first


@pytest.fixture(scope="module")
def quadratic():
    """A likelihood exactly quadratic in ``mu``: data events carry ``s = 1`` and the
    accepted MC ``s = 0``, so the MC sum is a constant and ``-2 ln L = sum (x - mu)^2 + c``."""
    x, s = ld.scalar("x"), ld.scalar("s")
    mu = ld.parameter("mu", initial=0.0)
    model = ld.Model((s * (-(x - mu) * (x - mu) * 0.5)).exp())
    xd = np.random.default_rng(3).normal(1.0, 1.0, 50)
    data = ld.Dataset.from_arrays(scalars={"x": xd, "s": np.ones(xd.size)})
    mc = ld.Dataset.from_arrays(scalars={"x": np.zeros(3), "s": np.zeros(3)})
    return ld.NLL(model, data=data, accepted_mc=mc, name="gauss"), xd


def test_a_normal_constraint_on_a_likelihood_gives_the_closed_form_combined_fit(quadratic):
    from iminuit.cost import CostSum, NormalConstraint

    term, xd = quadratic
    lik = ld.Likelihood([term])
    mu0, sigma0 = 0.5, 0.2
    constraint = NormalConstraint("mu", mu0, sigma0)
    for total in (lik + constraint, constraint + lik, sum([lik, constraint]), term + constraint):
        assert isinstance(total, CostSum) and describe(total) == ["mu"]
        assert total.errordef == 1.0 and total.has_grad and total.ndata == math.inf
        assert any(part is lik or part is term for part in total)
        for m in (0.3, 1.7):
            # -2 ln L of the Gaussian means plus the constraint's chi2, and their derivative
            expected = math.fsum((xd - m) ** 2) + 2 * xd.size * math.log(3) + ((m - mu0) / sigma0) ** 2
            assert total(m) == pytest.approx(expected, rel=1e-13)
            slope = -2 * math.fsum(xd - m) + 2 * (m - mu0) / sigma0**2
            assert total.grad(m) == pytest.approx([slope], rel=1e-12)
    weight, n = 1 / sigma0**2, xd.size  # the two Gaussians' precisions
    m = Minuit(lik + NormalConstraint("mu", mu0, sigma0), mu=0.0)
    m.migrad()
    m.hesse()
    assert m.valid and m.ngrad > 0
    assert m.values["mu"] == pytest.approx((math.fsum(xd) + weight * mu0) / (n + weight), rel=1e-8)
    assert m.errors["mu"] == pytest.approx(1 / math.sqrt(n + weight), rel=1e-6)


def test_other_iminuit_costs_add_in_their_own_units(quadratic):
    from iminuit.cost import Constant, CostSum, LeastSquares, UnbinnedNLL

    term, xd = quadratic
    lik = ld.Likelihood([term])
    y = np.array([0.9, 1.2, 1.05])
    lsq = LeastSquares(np.arange(3.0), y, 0.1, lambda t, mu: mu + 0 * t)  # chi2, errordef 1
    events = np.array([0.2, 0.4, 1.1])
    unbinned = UnbinnedNLL(events, lambda t, mu: np.exp(-0.5 * (t - mu) ** 2) / math.sqrt(2 * math.pi))
    total = lik + lsq + unbinned + Constant(4.0)
    assert isinstance(total, CostSum) and len(total) == 4 and total.ndata == math.inf
    assert total[0] is lik and total[3].value == 4.0
    m = 0.8
    by_hand = (math.fsum((xd - m) ** 2) + 2 * xd.size * math.log(3) + math.fsum(((y - m) / 0.1) ** 2)
               + 2 * math.fsum(0.5 * (events - m) ** 2 + 0.5 * math.log(2 * math.pi)) + 4.0)
    assert total(m) == pytest.approx(by_hand, rel=1e-13)
    assert not total.has_grad  # LeastSquares without a model gradient has none
    assert (lik + Constant(4.0)).grad(m) == pytest.approx([-2 * math.fsum(xd - m)], rel=1e-12)


def test_verbose_prints_each_call_as_iminuits_costs_do(quadratic, capsys):
    from iminuit.cost import NormalConstraint

    term, _ = quadratic
    lik = ld.Likelihood([term])
    assert lik.verbose == 0
    lik(0.3)
    assert capsys.readouterr().out == ""
    lik.verbose = 1
    value = lik(0.3)
    assert capsys.readouterr().out == f"Likelihood(0.3,) = {value!r}\n"
    assert (lik + NormalConstraint("mu", 0.5, 0.2)).verbose == 1
