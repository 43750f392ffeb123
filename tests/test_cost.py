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
    # "a" ends at its limit, where lik.fit's HESSE is Minuit's own as well (tests/test_hessian.py)
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
