"""``BinnedEstimate`` ``+ - * /`` and ``error_component_sources`` (of ``YieldHistogramView``
and ``ScalarErrorView``) against laddu 0.28.1, on the yield projections of
``tests/results/test_results_yield_projection.py`` (the same events, model, point and ensemble)."""

from __future__ import annotations

import numpy as np
import pytest
from laddu_reference import laddu, needs_laddu
from test_results_projection import POINT
from test_results_yield_projection import COMPONENTS, axes, draws_of, gens, pair  # noqa: F401 (fixtures)

import laddu_dask as ld
from laddu_dask.errors import ModelError

BUDGETS = (
    {},
    {"ensemble": True},
    {"data_fill": False, "ensemble": True},
    {"ensemble": True, "luminosity": True, "branching_exposure": True},
)


@pytest.fixture(scope="module")
def contexts(pair, gens):  # noqa: F811 (the fixtures imported above)
    """Both libraries' yield contexts at POINT with the same five-draw ensemble (an Ensemble
    in both, so each has its source id)."""
    ours, theirs = pair
    draws = draws_of(ours.parameter_names)
    ens = ld.Ensemble.from_arrays(draws, parameter_names=ours.parameter_names)
    y = ours.yield_context("t", generated_mc=gens[0], parameters=POINT, ensemble=ens)
    order = [ours.parameter_names.index(n) for n in theirs.parameter_names]
    ens_l = laddu.Ensemble.from_arrays(draws[:, order], parameter_names=theirs.parameter_names)
    point = [POINT[n] for n in theirs.parameter_names]
    return y, theirs.yield_context("t", generated_mc=gens[1], parameters=point, ensemble=ens_l)


@pytest.fixture(scope="module")
def estimates(contexts):
    """Selected, accepted and generated estimates (and the accepted one of a component) of
    both libraries, keyed ``s``, ``a``, ``g``, ``c``."""
    y, yl = contexts
    p, pl = (
        y.projection(axes(ld)[0], components=COMPONENTS),
        yl.projection(axes(laddu)[0], components=COMPONENTS),
    )

    def pick(q):
        return {
            "s": q.selected_estimate,
            "a": q.accepted_estimate,
            "g": q.generated_estimate,
            "c": q.components["S"].accepted_estimate,
        }

    return pick(p), pick(pl)


def _close(got, want, rel=1e-10):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=rel, atol=1e-9)


def _same(mine, want, ids):
    """Values, draws (as a set of rows), units and every budget's errors and sources; ``ids``
    collects the pairing of our sample ids with laddu's, which must be one-to-one."""
    assert mine.unit == want.unit and mine.axes == want.axes
    _close(mine.central, want.central)
    _close(sorted(map(tuple, mine.draws)), sorted(map(tuple, want.draws)))
    for flags in BUDGETS:
        h, hl = mine.histogram(**flags), want.histogram(**flags)
        _close(h.errors, hl.errors)
        assert h.included_error_components == hl.included_error_components
        assert [o for o in h.omitted_error_components if o[0] != "covariance"] == hl.omitted_error_components
        assert [n for n, _ in h.error_component_sources] == [n for n, _ in hl.error_component_sources]
        for (n, i), (_, j) in zip(h.error_component_sources, hl.error_component_sources, strict=True):
            assert ids.setdefault((n == "ensemble", i), j) == j
    assert len(set(ids.values())) == len(ids)


OPS = ["a + g", "a - g", "a / g", "g / a", "(a / g) * g", "g * (a / g)", "(a / g) * (a / g)", "a + s",
       "a - c", "s / (a / g)"]


@needs_laddu
@pytest.mark.parametrize("op", OPS)
def test_arithmetic_is_laddus(estimates, op):
    """First-order propagation of sources in one operand, ``covariance_unavailable`` (NaN
    errors) for a sample in both, units, NaN for 0/0 and paired draws, as laddu's."""
    mine, want = estimates
    ids: dict[tuple[bool, int], int] = {}
    for name in "sagc":
        _same(mine[name], want[name], ids)
    _same(eval(op, {}, dict(mine)), eval(op, {}, dict(want)), ids)


@needs_laddu
def test_a_quotient_has_laddus_first_order_errors(estimates):
    mine, _ = estimates
    a, g = mine["a"], mine["g"]
    va, vg = a.variances()["accepted_mc_fill"], g.variances()["generated_mc_fill"]
    x, y = np.array(a.central), np.array(g.central)
    with np.errstate(all="ignore"):
        want = np.sqrt(va / y**2 + x**2 * vg / y**4)  # d(x/y) = dx / y - x dy / y^2
    _close((a / g).histogram(covariance=False).errors[1:], want[1:])


@needs_laddu
@pytest.mark.parametrize(
    "op, message",
    [
        ("a*g", "multiplication requires a dimensionless operand"),
        ("a+(a/g)", "binned estimate units do not match"),
        ("(a/g)/a", "binned estimate division has incompatible units"),
    ],
)
def test_units_that_do_not_combine_are_refused_as_by_laddu(estimates, op, message):
    for lib_estimates, error in zip(estimates, (ModelError, Exception), strict=True):
        with pytest.raises(error, match=message):
            eval(op, {}, lib_estimates)


@needs_laddu
def test_other_grids_and_numbers_are_refused_as_by_laddu(contexts, estimates):
    y, yl = contexts
    for est, proj, lib, error in ((estimates[0], y, ld, ModelError), (estimates[1], yl, laddu, Exception)):
        other = proj.projection(axes(lib, two=True), components=COMPONENTS).accepted_estimate
        with pytest.raises(error, match="binned estimate geometry does not match"):
            est["a"] + other
        a = est["a"]
        for bad in ("a + 1.0", "2.0 * a", "a / 2"):
            with pytest.raises(TypeError, match="unsupported operand"):
                eval(bad, {}, {"a": a})


@needs_laddu
def test_scalar_error_sources_are_laddus():
    for lib in (ld, laddu):
        e = lib.Estimate(2.0, draws=[1.0, 2.0, 4.0], source_id=7)
        assert e.error(ensemble=True).error_component_sources == [("ensemble", 7)]
        assert e.error().error_component_sources == []
    own = [
        lib.Estimate(3.0, standard_error=0.2).error(branching_exposure=True).error_component_sources
        for lib in (ld, laddu)
    ]
    assert [n for n, _ in own[0]] == [n for n, _ in own[1]] == ["branching_exposure"]
    one = ld.Estimate(3.0, standard_error=0.2)
    two = ld.Estimate(3.0, standard_error=0.2)
    assert (
        one.error(branching_exposure=True).error_component_sources
        != two.error(branching_exposure=True).error_component_sources
    )  # each its own source


@needs_laddu
def test_yields_name_their_samples_as_laddus(contexts, estimates):
    """The scalar yields and the binned ones of one context name the same samples: one id per
    sample across both, paired one to one with laddu's."""
    (y, yl), ids = contexts, {}
    for name in "sag":
        _same(estimates[0][name], estimates[1][name], ids)
    for what in ("selected_yield", "accepted_fitted_yield", "generated_fitted_yield"):
        mine, want = getattr(y, what)(), getattr(yl, what)()
        for flags in ({}, {"ensemble": True}):
            got, exp = mine.error(**flags), want.error(**flags)
            assert got.included_error_components == exp.included_error_components
            assert [n for n, _ in got.error_component_sources] == [n for n, _ in exp.error_component_sources]
            for (n, i), (_, j) in zip(got.error_component_sources, exp.error_component_sources, strict=True):
                assert ids.setdefault((n == "ensemble", i), j) == j
    assert len(set(ids.values())) == len(ids)
