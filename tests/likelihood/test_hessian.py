"""The Hessian from exact gradients (``laddu_dask.likelihood.hessian``) and HESSE on it.

References: the closed-form second derivatives of an NLL whose intensity is linear in its
parameters (sums by ``math.fsum``), Minuit's own numerical HESSE at the same minimum, and
the same fit with ``hessian="minuit"`` (MIGRAD's path must not change).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.errors import NonFiniteError
from laddu_dask.likelihood.hessian import gradient_hessian


@pytest.fixture(scope="module")
def columns():
    rng = np.random.default_rng(11)
    mc = rng.uniform(0.0, 1.0, 20_000)
    # data from I = 1 + 0.8 x + 0.5 x^2 by accept-reject
    x = rng.uniform(0.0, 1.0, 12_000)
    keep = rng.uniform(0.0, 2.3, x.size) < 1.0 + 0.8 * x + 0.5 * x * x
    return x[keep][:4000], mc


def _likelihood(columns, bounds=(None, None)):
    data, mc = columns
    x = ld.scalar("x")
    a = ld.parameter("a", initial=0.9, bounds=bounds)
    b = ld.parameter("b", initial=0.3)
    model = ld.Model(1.0 + a * x + b * x * x)
    return ld.Likelihood([ld.NLL(model, data=ld.Dataset.from_arrays(scalars={"x": data}),
                                 accepted_mc=ld.Dataset.from_arrays(scalars={"x": mc}))])


def _closed_form(columns, p):
    """d2/dk dl of -2 (sum ln I - N ln sum_mc I) for I = 1 + a x + b x^2:
    2 (sum f_k f_l / I^2 - N S_k S_l / S^2), f = (x, x^2)."""
    data, mc = columns
    intensity = 1.0 + p[0] * data + p[1] * data**2
    f, fm = (data, data**2), (mc, mc**2)
    s = math.fsum(1.0 + p[0] * mc + p[1] * mc**2)
    n = len(data)
    return np.array([[2.0 * (math.fsum(f[k] * f[l] / intensity**2)
                             - n * math.fsum(fm[k]) * math.fsum(fm[l]) / s**2)
                      for l in range(2)] for k in range(2)])


def test_the_hessian_is_the_closed_form(columns):
    lik = _likelihood(columns)
    for p in ([0.8, 0.5], [1.5, -0.2]):
        np.testing.assert_allclose(lik.hessian(p), _closed_form(columns, p), rtol=1e-7)
    assert np.array_equal(lik.hessian([0.8, 0.5]), lik.hessian([0.8, 0.5]).T)


def test_next_to_a_bound_the_difference_is_one_sided_and_stays_inside(columns):
    lik = _likelihood(columns, bounds=(0.8, 2.0))
    seen = []

    def evaluate(points):
        seen.append(np.array(points))
        return lik.values_and_gradients(points)

    p = np.array([0.8 + 1e-6, 0.5])  # closer to the bound than the step
    h = gradient_hessian(evaluate, p, lik.bounds(), lik.parameter_names)
    points = np.concatenate(seen)
    assert (points[:, 0] >= 0.8).all() and any((row == p).all() for row in points)  # x itself
    np.testing.assert_allclose(h, _closed_form(columns, p), rtol=1e-6)


def test_steps_shrink_to_a_fraction_of_a_narrow_error():
    # -2 ln L = (x / 1e-6)^2: an error of sqrt(2) 1e-6, far below the first step of 1e-4;
    # a quartic term makes the first step's difference visibly wrong
    def evaluate(points):
        x = np.asarray(points)[:, 0]
        return x**2 / 1e-12 + x**4 / 1e-20, (2 * x / 1e-12 + 4 * x**3 / 1e-20)[:, None]

    rounds: list[int] = []
    h = gradient_hessian(evaluate, np.array([0.0]), [(None, None)], counted=rounds)
    assert rounds == [2, 2]  # a second round with smaller steps
    assert h[0, 0] == pytest.approx(2e12, rel=1e-3)


def test_a_non_finite_second_derivative_names_the_parameters():
    def evaluate(points):
        p = np.asarray(points)
        return np.zeros(len(p)), np.where(p > 1.0, np.inf, p)

    with pytest.raises(NonFiniteError, match="parameters 'a' and 'a'"):
        gradient_hessian(evaluate, np.array([1.0, 0.0]), [(None, None)] * 2, ["a", "b"])


def test_hesse_from_exact_gradients_keeps_migrads_path_and_minuits_errors(columns):
    lik = _likelihood(columns)
    numerical, exact = lik.fit(method="migrad", hessian="minuit"), lik.fit(method="migrad")
    assert numerical.valid and exact.valid
    # MIGRAD's path is Minuit's own either way: the same minimum, bit for bit
    assert exact.fval == numerical.fval and np.array_equal(exact.values, numerical.values)
    x = exact.values
    np.testing.assert_allclose(exact.covariance, 2.0 * np.linalg.inv(lik.hessian(x)), rtol=1e-9)
    # the errors are the closed form's; Minuit's from function values are within 1%
    closed = np.sqrt(np.diag(2.0 * np.linalg.inv(_closed_form(columns, x))))
    np.testing.assert_allclose(list(exact.errors.values()), closed, rtol=1e-6)
    np.testing.assert_allclose(list(numerical.errors.values()), closed, rtol=1e-2)
    # HESSE is one round of 2 n points instead of Minuit's one-by-one evaluations
    assert exact.n_calls < numerical.n_calls
    exact.minuit.minos()  # the returned Minuit carries on from the minimum
    assert exact.minuit.merrors["a"].is_valid


def test_a_likelihood_without_points_evaluation_gets_minuits_hesse(columns):
    lik = _likelihood(columns)

    class Plain:  # a likelihood-like object with only single-point evaluations
        parameter_names = lik.parameter_names
        resolve, bounds = lik.resolve, lik.bounds
        value, value_and_gradient = lik.value, lik.value_and_gradient

    numerical, plain = lik.fit(method="migrad", hessian="minuit"), ld.fit(Plain(), method="migrad")
    assert plain.errors == numerical.errors and plain.fval == numerical.fval
    # laddu's default takes its Hessian's gradients one point at a time: the same numbers
    assert ld.fit(Plain()).errors == lik.fit().errors
    with pytest.raises(ValueError, match="hessian"):
        lik.fit(method="migrad", hessian="exact")
