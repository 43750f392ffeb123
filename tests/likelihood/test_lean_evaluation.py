"""The likelihood's lean evaluation path (issue 25, point 1): a point is checked once at the
public boundary and reaches the kernels unchecked; terms that take a subset of the
likelihood's parameters get their own slice, and every path gives the same numbers."""

import math

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.arrays import all_finite

XD = np.array([0.5, 1.0, 0.9, 0.25, 0.7])
XM = np.linspace(0.0, 1.0, 41)


def _two_terms() -> ld.Likelihood:
    """An NLL in ``a`` and an extended NLL in ``b``: each term takes one of the likelihood's
    two parameters (neither in the likelihood's own order)."""
    x = ld.scalar("x")
    a, b = ld.parameter("a", initial=1.0), ld.parameter("b", initial=1.0)
    data = ld.Dataset.from_arrays(scalars={"x": XD})
    mc = ld.Dataset.from_arrays(scalars={"x": XM})
    return ld.Likelihood([ld.NLL(ld.Model(a * x * x + 1.0), data=data, accepted_mc=mc, name="n"),
                          ld.ExtendedNLL(ld.Model(b * x + 2.0), data=data, accepted_mc=mc, name="e")],
                         execution=ld.Execution(normalization="general"))


def _reference(a: float, b: float) -> tuple[float, list[float]]:
    """The two terms' sum and gradient by hand, every sum over events with math.fsum."""
    n_w = float(len(XD))
    i1d, i1m = a * XD**2 + 1.0, a * XM**2 + 1.0
    nll = -2.0 * (math.fsum(np.log(i1d)) - n_w * math.log(math.fsum(i1m)))
    d_a = -2.0 * (math.fsum(XD**2 / i1d) - n_w * math.fsum(XM**2) / math.fsum(i1m))
    i2d, i2m = b * XD + 2.0, b * XM + 2.0
    ext = 2.0 * (math.fsum(i2m) - math.fsum(np.log(i2d)))
    d_b = 2.0 * (math.fsum(XM) - math.fsum(XD / i2d))
    return nll + ext, [d_a, d_b]


@pytest.mark.parametrize("point", [(1.5, 0.5), (0.2, 3.0)])
def test_terms_on_a_subset_of_the_parameters_match_the_hand_computed_likelihood(point):
    lik = _two_terms()
    assert lik.parameter_names == ["a", "b"]
    value, grad = lik.value_and_gradient(np.array(point))
    want, want_grad = _reference(*point)
    assert value == pytest.approx(want, rel=1e-13)
    assert grad.tolist() == pytest.approx(want_grad, rel=1e-12)
    assert lik.value(list(point)) == value


def test_one_point_and_a_round_of_points_give_the_same_bits():
    lik = _two_terms()
    points = np.array([[1.5, 0.5], [0.2, 3.0], [4.0, 0.1]])
    values, grads = lik.values_and_gradients(points)
    for k, p in enumerate(points):
        value, grad = lik.value_and_gradient(p)
        assert values[k] == value and grads[k].tobytes() == grad.tobytes()
        assert lik.values(points)[k] == lik.value({"a": p[0], "b": p[1]}) == value


@pytest.mark.parametrize("bad, message", [
    (np.array([np.nan, 1.0]), "parameter 'a': value nan is not finite"),
    (np.array([1.0, np.inf]), "parameter 'b': value inf is not finite"),
    (np.array([1.0, 2.0, 3.0]), r"expected 2 parameter values \(a, b\), got 3"),
])
def test_a_bad_point_is_a_parameter_error_at_the_public_boundary(bad, message):
    lik = _two_terms()
    for call in (lik.value, lik.value_and_gradient, lik.gradient):
        with pytest.raises(ld.ParameterError, match=message):
            call(bad)


@pytest.mark.parametrize("values", [
    [], [1.0, -2.0], [1e308, 1e308], [-1e308, -1e308, 1e308], [np.inf], [-np.inf, 1.0],
    [np.inf, -np.inf], [np.nan], [0.0, np.nan, 1e308, 1e308], [5e-324, -0.0],
])
def test_all_finite_is_numpy_s_elementwise_check(values):
    a = np.array(values, dtype=np.float64)
    assert all_finite(a) is bool(np.isfinite(a).all())
