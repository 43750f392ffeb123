"""Tests that kill the surviving mutants of ``laddu_dask/likelihood/hessian.py`` (docs/mutation.md).

The reference is the documented step rule, computed by hand: steps ``1e-4 * max(|x_i|, 1)``,
shrunk to ``0.01`` of the error ``sqrt(2 / H_ii)`` when longer than ``0.05`` of it; next to a
bound two steps to the side with more room (``x`` itself evaluated too), the step at most half
that room. Each test records the points evaluated and compares them with those hand-computed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from laddu_dask.errors import NonFiniteError
from laddu_dask.likelihood.hessian import gradient_hessian


class Quadratic:
    """``-2 ln L = sum_i c_i x_i^2 / 2``: Hessian ``diag(c)``; records every round's points."""

    def __init__(self, curvature):
        self.c = np.asarray(curvature, dtype=np.float64)
        self.rounds: list[np.ndarray] = []

    def __call__(self, points):
        p = np.asarray(points, dtype=np.float64)
        self.rounds.append(p.copy())
        return 0.5 * (self.c * p * p).sum(axis=1), self.c * p


def _displaced(x, steps):
    """The hand-computed points: for parameter i, x + k * h_i e_i for each k in steps[i]."""
    x = np.asarray(x, dtype=np.float64)
    rows = []
    for i, (h, ks) in enumerate(steps):
        for k in ks:
            p = x.copy()
            p[i] += k * h
            rows.append(p)
    return np.array(rows)


def test_free_parameters_take_central_steps_relative_to_their_size():
    f = Quadratic([1.0, 3.0])
    counted: list[int] = []
    hessian = gradient_hessian(f, np.array([2.0, -0.5]), [(None, None)] * 2, counted=counted)
    assert counted == [4] and len(f.rounds) == 1
    np.testing.assert_array_equal(f.rounds[0], _displaced([2.0, -0.5], [(2e-4, [1, -1]), (1e-4, [1, -1])]))
    np.testing.assert_allclose(hessian, np.diag([1.0, 3.0]), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(("bound", "side"), [((None, 1e-4 / 3), -1), ((-1e-4 / 3, None), 1)])
def test_next_to_one_bound_two_steps_go_the_other_way(bound, side):
    f = Quadratic([1.0, 2.0])
    x = np.array([0.0, 0.0])
    counted: list[int] = []
    hessian = gradient_hessian(f, x, [(None, None), bound], counted=counted)
    assert counted == [5]
    expected = _displaced(x, [(1e-4, [1, -1]), (1e-4, [side, 2 * side])])
    np.testing.assert_array_equal(f.rounds[0], np.vstack([expected, x]))
    np.testing.assert_allclose(hessian, np.diag([1.0, 2.0]), rtol=1e-9, atol=1e-9)


def test_a_step_exactly_as_long_as_the_room_stays_central():
    f = Quadratic([1.0, 1.0])
    x = np.array([0.0, 0.0])
    gradient_hessian(f, x, [(None, 1e-4), (-1e-4, None)])
    np.testing.assert_array_equal(f.rounds[0], _displaced(x, [(1e-4, [1, -1]), (1e-4, [1, -1])]))


@pytest.mark.parametrize(("bound", "h", "side"), [((-3e-5, 8e-5), 4e-5, 1), ((-8e-5, 3e-5), 4e-5, -1),
                                                  ((-5e-5, 5e-5), 2.5e-5, 1)])
def test_between_two_close_bounds_the_step_is_half_the_larger_room(bound, h, side):
    f = Quadratic([2.0])
    x = np.array([0.0])
    hessian = gradient_hessian(f, x, [bound])
    expected = np.vstack([_displaced(x, [(h, [side, 2 * side])]), x])
    np.testing.assert_allclose(f.rounds[0], expected, rtol=1e-12, atol=0)
    assert bound[0] <= f.rounds[0].min() and f.rounds[0].max() <= bound[1]
    np.testing.assert_allclose(hessian, [[2.0]], rtol=1e-6)


@pytest.mark.parametrize(("curvature", "x", "second_step"),
                         [(2.0, 600.0, 0.01),        # error 1: 0.06 > 0.05, shrunk to 0.01
                          (0.5, 1e4, 0.02),          # error 2: 1 > 0.1, shrunk to 0.02
                          (2.0, 400.0, None)])       # error 1: 0.04 is short enough
def test_steps_longer_than_a_twentieth_of_the_error_are_shrunk_in_a_second_round(curvature, x, second_step):
    f = Quadratic([curvature])
    counted: list[int] = []
    gradient_hessian(f, np.array([x]), [(None, None)], counted=counted)
    np.testing.assert_allclose(f.rounds[0], _displaced([x], [(1e-4 * x, [1, -1])]), rtol=1e-15)
    if second_step is None:
        assert counted == [2]
    else:
        assert counted == [2, 2]
        np.testing.assert_allclose(f.rounds[1], _displaced([x], [(second_step, [1, -1])]), rtol=1e-15)


@pytest.mark.parametrize("curvature", [0.0, -2.0])
def test_a_flat_or_concave_direction_has_no_error_to_shrink_to(curvature):
    f = Quadratic([curvature])
    counted: list[int] = []
    hessian = gradient_hessian(f, np.array([1e4]), [(None, None)], counted=counted)
    assert counted == [2]
    np.testing.assert_allclose(hessian, [[curvature]], atol=1e-9)


def test_an_infinite_gradient_is_a_non_finite_error_not_a_floating_point_warning():
    def evaluate(points):
        p = np.asarray(points, dtype=np.float64)
        return p.sum(axis=1), np.where(p > 0, np.inf, p)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(NonFiniteError, match=r"parameters 'a' and 'a' at \[0.0\] is .*nan"):
            gradient_hessian(evaluate, np.array([0]), [(None, None)], names=["a"])


def test_the_room_to_an_upper_bound_is_measured_from_the_point():
    f = Quadratic([1.0])
    x = np.array([0.5])
    gradient_hessian(f, x, [(None, 0.5 + 3e-5)])
    np.testing.assert_array_equal(f.rounds[0], np.vstack([_displaced(x, [(1e-4, [-1, -2])]), x]))


def test_without_names_the_error_names_the_parameters_by_index():
    def evaluate(points):
        p = np.asarray(points, dtype=np.float64)
        return p.sum(axis=1), np.where(p > 0, np.inf, p)

    with pytest.raises(NonFiniteError, match=r"in parameters 0 and 0 at \[0.0\]"):
        gradient_hessian(evaluate, np.array([0.0]), [(None, None)])

