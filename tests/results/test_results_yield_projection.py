"""Binned yields, rate closure, differential and combined cross sections and the
branching-exposure error source (laddu's ``Yield.projection``, ``projection_set``,
``rate_closure``, ``CrossSection.project``, ``CrossSection.combine``), against laddu 0.28.1
on the events, model and parameters of ``tests/results/test_results_projection.py``, and against
closed forms (exact sums of the per-event weights, finite differences of the bins)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from laddu_reference import laddu, needs_laddu
from test_results_projection import ACC, DATA, GEN, POINT, likelihoods, ours_ds, theirs_ds

import laddu_dask as ld
from laddu_dask.errors import ModelError, ParameterError, SchemaError
from laddu_dask.sums import GroupedPartials

REL = 1e-10
COMPONENTS = {"S": ["S"], "P+D": ["D", "P"]}
#: Edges with an empty first bin (no generated support) and events outside both ends.
X_EDGES = [-5.0, -4.0, 0.7, 0.95, 1.2, 1.5]
C_EDGES = [-1.0, -0.2, 0.5, 1.0]


def close(got, want, rel=REL, floor=1e-9):
    """Elementwise agreement to ``rel`` (absolute ``floor`` for values near zero)."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape
    assert np.all(np.abs(got - want) <= rel * np.abs(want) + floor), np.max(np.abs(got - want))


def axes(lib, two=False):
    x = lib.Axis(lib.scalar("x"), edges=X_EDGES)
    return [x, lib.Axis(lib.scalar("c"), edges=C_EDGES)] if two else [x]


def draws_of(names):
    return np.array([[POINT[n] * (1 + 0.01 * k) for n in names] for k in range(-2, 3)])


@pytest.fixture(scope="module")
def pair():
    return likelihoods()


@pytest.fixture(scope="module")
def gens():
    return ours_ds(GEN), (theirs_ds(GEN) if laddu is not None else None)


@pytest.fixture(scope="module")
def yields(pair, gens):
    """Both libraries' yield contexts at POINT with the same five-draw ensemble."""
    ours, theirs = pair
    draws = draws_of(ours.parameter_names)
    y = ours.yield_context("t", generated_mc=gens[0], parameters=POINT, ensemble=draws)
    if laddu is None:
        return y, None
    order = [ours.parameter_names.index(n) for n in theirs.parameter_names]
    ens = laddu.Ensemble.from_arrays(draws[:, order], parameter_names=theirs.parameter_names)
    point = [POINT[n] for n in theirs.parameter_names]
    return y, theirs.yield_context("t", generated_mc=gens[1], parameters=point, ensemble=ens)


def same_estimate(mine, want):
    """Values, draws, covariance, intervals and the marginal errors of several budgets."""
    assert mine.axes == want.axes and mine.unit == want.unit
    close(mine.central, want.central)
    close(mine.draws, want.draws)
    close(mine.covariance(), want.covariance(), floor=1e-8)
    close(mine.interval(0.68), want.interval(0.68))
    no_fill = {"data_fill": False, "accepted_mc_fill": False, "generated_mc_fill": False}
    for flags in ({}, {"ensemble": True}, {"luminosity": True, "branching_exposure": True},
                  {**no_fill, "ensemble": True}):
        h, hl = mine.histogram(**flags), want.histogram(**flags)
        assert (h.axes, h.shape) == (hl.axes, hl.shape)
        assert h.included_error_components == hl.included_error_components
        # laddu-dask adds its own "covariance" source (not given here, so omitted)
        assert [o for o in h.omitted_error_components if o[0] != "covariance"] == hl.omitted_error_components
        close(h.values, hl.values)
        close(h.errors, hl.errors, floor=1e-6)


def same_projection(p, pl):
    assert (p.axes, p.shape, p.validity, p.diagnostics) == (pl.axes, pl.shape, pl.validity, pl.diagnostics)
    assert p.has_absolute_rate and not p.has_replica_datasets and not pl.has_replica_datasets
    for what in ("selected", "accepted", "generated"):
        close(getattr(p, what), getattr(pl, what))
        close(getattr(p, f"{what}_draws"), getattr(pl, f"{what}_draws"))
        same_estimate(getattr(p, f"{what}_estimate"), getattr(pl, f"{what}_estimate"))
        close(getattr(p, f"{what}_histogram")().errors, getattr(pl, f"{what}_histogram")().errors)
    assert set(p.components) == set(pl.components)
    for name, c in p.components.items():
        cl = pl.components[name]
        assert (c.tags, c.axes, c.shape, c.validity) == (cl.tags, cl.axes, cl.shape, cl.validity)
        for what in ("accepted", "generated"):
            close(getattr(c, what), getattr(cl, what))
            close(getattr(c, f"{what}_draws"), getattr(cl, f"{what}_draws"))
            same_estimate(getattr(c, f"{what}_estimate"), getattr(cl, f"{what}_estimate"))


@needs_laddu
def test_yield_projection_in_one_axis_matches_laddu(yields):
    y, yl = yields
    p = y.projection(axes(ld)[0], components=COMPONENTS)
    pl = yl.projection(axes(laddu)[0], components=COMPONENTS)
    same_projection(p, pl)
    assert p.validity[0] == "missing_generated_support" and p.diagnostics["generated_out_of_range"] > 0
    assert p.components["P+D"].tags == ["D", "P"]


@needs_laddu
def test_yield_projection_in_two_axes_matches_laddu(yields):
    y, yl = yields
    p = y.projection(axes(ld, two=True), components=COMPONENTS)
    same_projection(p, yl.projection(axes(laddu, two=True), components=COMPONENTS))
    assert p.shape == [5, 3] and len(p.selected) == 15


@needs_laddu
def test_projection_set_matches_laddu_and_single_projections(yields):
    y, yl = yields
    mine = y.projection_set({"x": axes(ld), "xc": axes(ld, two=True), "again": axes(ld)[0]},
                            components={"S": ["S"]})
    want = yl.projection_set({"x": axes(laddu), "xc": axes(laddu, two=True), "again": axes(laddu)[0]},
                             components={"S": ["S"]})
    assert list(mine) == list(want) == ["x", "xc", "again"]
    for name in mine:
        same_projection(mine[name], want[name])
    alone = y.projection(axes(ld, two=True), components={"S": ["S"]})
    assert mine["xc"].generated == alone.generated and mine["x"].generated == mine["again"].generated


def test_bins_are_exact_sums_of_the_event_weights(pair, gens):
    """Each bin is math.fsum of the per-event weights w I in it, whatever the partitioning."""
    ours, _ = pair
    y = ours.yield_context("t", generated_mc=gens[0], parameters=POINT)
    p = y.projection(axes(ld, two=True), components={"D": ["D"]})
    x, c = GEN[0]["x"], GEN[0]["c"]
    w = ours.projection("t", generated_mc=gens[0], tags=["S", "P", "D"]).weights(POINT)
    wd = ours.projection("t", generated_mc=gens[0], tags=["D"]).weights(POINT)
    xb = np.searchsorted(X_EDGES, x, side="right") - 1
    cb = np.searchsorted(C_EDGES, c, side="right") - 1
    flat = np.where((xb >= 0) & (xb < 5) & (cb >= 0) & (cb < 3), xb * 3 + cb, -1)
    assert p.generated == [math.fsum(w[flat == b]) for b in range(15)]
    assert p.components["D"].generated == [math.fsum(wd[flat == b]) for b in range(15)]
    errors = p.generated_histogram().errors
    assert errors == [math.sqrt(math.fsum(w[flat == b] ** 2)) for b in range(15)]
    xd = np.searchsorted(X_EDGES, DATA[0]["x"], side="right") - 1
    assert p.diagnostics["selected_out_of_range"] == int(((xd < 0) | (xd >= 5)).sum())
    data = ld.Dataset.from_arrays(scalars=DATA[0], weights=DATA[1], chunk_size=41)
    acc = ld.Dataset.from_arrays(scalars=ACC[0], weights=ACC[1], chunk_size=77)
    lik = ld.Likelihood([ld.ExtendedNLL(ours.terms[0].model, name="t", data=data, accepted_mc=acc)])
    other = ld.Dataset.from_arrays(scalars=GEN[0], weights=GEN[1], chunk_size=97)
    q = lik.yield_context("t", generated_mc=other, parameters=POINT).projection(axes(ld, two=True),
                                                                              components={"D": ["D"]})
    for what in ("selected", "accepted", "generated"):
        assert getattr(q, what) == getattr(p, what), what
    assert q.components["D"].accepted == p.components["D"].accepted


def test_grouped_sums_are_exact_in_any_grouping():
    """GroupedPartials (the bins' exact sums) against exact rational sums, with cancelling,
    tiny, huge (above 2**1003) and non-finite terms, however the terms are split and merged."""
    rng = np.random.default_rng(3)
    n, groups, rows = 3000, 7, 3
    terms = rng.standard_normal((rows, n)) * np.exp(rng.uniform(-700, 700, (rows, n)))
    terms[0, :4] = [1e16, 1.0, -1e16, 1e-300]
    terms[1, :3] = [1.7e308, 1.7e308, -1.7e308]  # bin sums overflow: the exact slow path
    g = rng.integers(-1, groups, n)
    g[:4] = 0
    want = np.array([[float(sum(map(Fraction, terms[r][g == b].tolist()), Fraction(0))) for r in range(rows)]
                     for b in range(groups)])  # exact rational sums, correctly rounded
    whole = GroupedPartials.from_terms(g, terms, (groups, rows)).to_floats()
    parts = [GroupedPartials.from_terms(g[i:j], terms[r:r + 1, i:j], (groups, rows), first_row=r)
             for r in range(rows) for i, j in ((0, 1000), (1000, 1001), (1001, n))]
    merged = GroupedPartials.merge(parts[::-1]).to_floats()
    assert np.array_equal(whole, want) and np.array_equal(merged, want)
    special = GroupedPartials.from_terms(np.array([0, 0, 1]), np.array([[math.inf, 1.0, 2.0]]), (2, 1))
    assert special.to_floats().tolist() == [[math.inf], [2.0]]


@needs_laddu
def test_events_on_edges_and_non_finite_coordinates_match_laddu():
    """A bin is [low, high): an event on an inner edge is in the upper bin, one on the last
    edge is outside; a non-finite coordinate (here log 0) is counted, not binned."""
    x = {"x": np.array([0.0, 0.5, 0.5, 1.0, 0.25, -0.5])}
    w = np.array([1.0, 2.0, 0.5, 4.0, 1.5, 3.0])
    out = {}
    for lib in (ld, laddu):
        def events(lib=lib):
            if lib is ld:
                return ld.Dataset.from_arrays(scalars=x, weights=w, chunk_size=4)
            return laddu.Dataset.from_arrays(p4s={}, scalars=x, weights=w)
        model = lib.Model(lib.parameter("a", initial=1.0) * (lib.scalar("x") + 1.0))
        lik = lib.Likelihood([lib.ExtendedNLL(model, data=events(), accepted_mc=events(), name="t")])
        y = lik.yield_context("t", generated_mc=events(), parameters=[2.0])
        axis = lib.Axis(lib.scalar("x").log(), edges=[-2.0, -0.5, 0.5])  # Re log: -inf at x = 0
        out[lib] = y.projection([lib.Axis(lib.scalar("x"), edges=[0.0, 0.5, 1.0])]), y.projection(axis)
    for p, pl in zip(out[ld], out[laddu], strict=True):
        assert (p.validity, p.diagnostics) == (pl.validity, pl.diagnostics)
        for what in ("selected", "accepted", "generated"):
            close(getattr(p, what), getattr(pl, what))
    first, logs = out[ld]
    assert first.selected == [2.5, 2.5] and first.diagnostics["selected_out_of_range"] == 2
    assert logs.diagnostics["selected_nonfinite"] == 1 and logs.selected == [7.0, 4.0]


@needs_laddu
def test_rate_closure_matches_laddu(pair, gens, yields):
    y, yl = yields
    rc, rcl = y.rate_closure(), yl.rate_closure()
    assert (rc.status, rc.reason, rc.is_closed()) == (rcl.status, rcl.reason, rcl.is_closed()) == (
        "failed", "closure residual exceeds the configured tolerance", False)
    for what in ("accepted_residual", "accepted_absolute_residual", "accepted_relative_residual"):
        assert getattr(rc, what) == pytest.approx(getattr(rcl, what), rel=REL), what
    close(rc.accepted_residual_draws, rcl.accepted_residual_draws)
    assert (rc.absolute_tolerance, rc.relative_tolerance) == (rcl.absolute_tolerance, rcl.relative_tolerance)
    assert rc.generated_fitted_yield.central == pytest.approx(rcl.generated_fitted_yield.central, rel=REL)
    # scaling every coupling by sqrt(D / A) makes the accepted yield the observed one: closed
    scale = math.sqrt(rc.selected_yield.central / rc.accepted_fitted_yield.central)
    point = {n: v * scale if n[1:] in ("_re", "_im") else v for n, v in POINT.items()}
    ours, theirs = pair
    closed = ours.yield_context("t", generated_mc=gens[0], parameters=point).rate_closure()
    closed_l = theirs.yield_context("t", generated_mc=gens[1],
                                    parameters=[point[n] for n in theirs.parameter_names]).rate_closure()
    assert (closed.status, closed.reason) == (closed_l.status, closed_l.reason) == ("closed", None)
    nll, nll_l = likelihoods(ld.NLL)
    shape = nll.yield_context("t", generated_mc=gens[0], parameters=POINT).rate_closure()
    shape_l = nll_l.yield_context("t", generated_mc=gens[1],
                                  parameters=[POINT[n] for n in nll_l.parameter_names]).rate_closure()
    assert (shape.status, shape.reason, shape.accepted_residual, shape.accepted_fitted_yield) == (
        shape_l.status, shape_l.reason, None, None)
    assert shape.selected_yield.central == pytest.approx(shape_l.selected_yield.central, rel=1e-14)


def _sections(pair, gens, lib, value, unit="NANOBARN", rel=None):
    ours, theirs = pair
    lum = lib.Luminosity(value, getattr(lib.AreaUnit, unit))
    if rel is not None:
        lum = lum.with_relative_uncertainty(rel, 7)
    if lib is ld:
        return ours.cross_section("t", gens[0], lum, POINT)
    return theirs.cross_section("t", gens[1], lum, [POINT[n] for n in theirs.parameter_names])


@needs_laddu
def test_cross_section_projection_matches_laddu(pair, gens):
    xs, xl = _sections(pair, gens, ld, 2.5, rel=0.04), _sections(pair, gens, laddu, 2.5, rel=0.04)
    p, pl = xs.project(axes(ld, two=True), components=COMPONENTS), xl.project(axes(laddu, two=True),
                                                                               components=COMPONENTS)
    assert (p.axes, p.shape, p.member_validity) == (pl.axes, pl.shape, pl.member_validity)
    assert set(p.components) == set(pl.components)
    for mine, want in [(p.total, pl.total), *((p.components[k], pl.components[k]) for k in COMPONENTS)]:
        assert mine.unit == want.unit == "cross_section"
        close(mine.central, want.central)
        for flags in ({}, {"luminosity": True}):
            h, hl = mine.histogram(**flags), want.histogram(**flags)
            close(h.errors, hl.errors)
            assert h.included_error_components == hl.included_error_components
    many = xs.project({"x": axes(ld), "xc": axes(ld, two=True)})
    many_l = xl.project({"x": axes(laddu), "xc": axes(laddu, two=True)})
    assert list(many) == ["x", "xc"] and many["xc"].shape == many_l["xc"].shape
    close(many["x"].total.central, many_l["x"].total.central)
    rc, rcl = xs.rate_closure, xl.rate_closure
    assert rc.status == rcl.status and rc.accepted_residual == pytest.approx(rcl.accepted_residual, rel=REL)
    # projections= evaluates them with the cross section; a matching project() returns those
    ours, theirs = pair
    lum, lum_l = ld.Luminosity(2.5, ld.AreaUnit.NANOBARN), laddu.Luminosity(2.5, laddu.AreaUnit.NANOBARN)
    point_l = [POINT[n] for n in theirs.parameter_names]
    early = ours.cross_section("t", gens[0], lum, POINT, projections={"xc": axes(ld, two=True)},
                               components={"S": ["S"]})
    early_l = theirs.cross_section("t", gens[1], lum_l, point_l, projections={"xc": axes(laddu, two=True)},
                                   components={"S": ["S"]})
    again = early.project({"xc": axes(ld, two=True)}, components={"S": ["S"]})["xc"]
    assert again is early.project({"xc": axes(ld, two=True)}, components={"S": ["S"]})["xc"]
    want = early_l.project({"xc": axes(laddu, two=True)}, components={"S": ["S"]})["xc"]
    close(again.total.central, want.total.central)
    close(again.components["S"].histogram().errors, want.components["S"].histogram().errors)
    assert early.total.central == pytest.approx(early_l.total.central, rel=REL)


def _same_total(mine, want):
    close(mine.total.central, want.total.central)
    assert mine.total_effective_exposure == pytest.approx(want.total_effective_exposure, rel=1e-15)
    assert int(mine.unit) == int(want.unit)
    assert (mine.accepted_integral, mine.generated_integral, mine.data_yield, mine.rate_closure) == (
        None, None, None, None) == (want.accepted_integral, want.generated_integral, want.data_yield,
                                    want.rate_closure)
    for flags in ({}, {"luminosity": True}, {"branching_exposure": True},
                  {"branching_exposure": True, "luminosity": True},
                  {"data_fill": False, "accepted_mc_fill": False, "generated_mc_fill": False,
                   "branching_exposure": True}):
        e, el = mine.total.error(**flags), want.total.error(**flags)
        assert e.error == pytest.approx(el.error, rel=REL), flags
        assert e.included_error_components == el.included_error_components, flags


@needs_laddu
@pytest.mark.parametrize("how", ["plain", "factors", "factor_covariance"])
def test_combine_matches_laddu(pair, gens, how):
    members = {}
    for lib in (ld, laddu):
        a, b = _sections(pair, gens, lib, 2.5, rel=0.04), _sections(pair, gens, lib, 1.5)
        if how == "plain":
            members[lib] = ([a, b], None)
        elif how == "factors":
            members[lib] = ([(a, 0.6), (b, lib.Estimate(0.3, standard_error=0.01))], None)
        else:
            members[lib] = ([(a, 0.6), (b, 0.3)], [[0.0004, -0.0001], [-0.0001, 0.0001]])
    mine = ld.CrossSection.combine(members[ld][0], factor_covariance=members[ld][1])
    want = laddu.CrossSection.combine(members[laddu][0], factor_covariance=members[laddu][1])
    _same_total(mine, want)
    p = mine.project(axes(ld), components={"S": ["S"]})
    pl = want.project(axes(laddu), components={"S": ["S"]})
    assert p.member_validity == pl.member_validity and len(p.member_validity) == 2
    for e, el in ((p.total, pl.total), (p.components["S"], pl.components["S"])):
        close(e.central, el.central)
        for flags in ({}, {"luminosity": True, "branching_exposure": True}):
            h, hl = e.histogram(**flags), el.histogram(**flags)
            close(h.errors, hl.errors)
            assert h.included_error_components == hl.included_error_components


@needs_laddu
def test_branching_exposure_source_matches_laddu(pair, gens):
    e, el = ld.Estimate(0.6, standard_error=0.02), laddu.Estimate(0.6, standard_error=0.02)
    for flags in ({}, {"branching_exposure": True}, {"branching_exposure": True, "ensemble": True}):
        v, vl = e.error(**flags), el.error(**flags)
        assert v.error == pytest.approx(vl.error, rel=1e-15)
        assert v.included_error_components == vl.included_error_components
        assert [o for o in v.omitted_error_components if o[0] != "covariance"] == vl.omitted_error_components
    ratio = e / ld.Estimate(0.3, standard_error=0.01)
    ratio_l = el / laddu.Estimate(0.3, standard_error=0.01)
    assert ratio.error(branching_exposure=True).error == pytest.approx(
        ratio_l.error(branching_exposure=True).error, rel=1e-14)
    # the combination's branching error alone: the closed form sqrt(d^T C d), d_i = -N L_i / E^2
    cov = np.array([[0.0004, -0.0001], [-0.0001, 0.0001]])
    a, b = _sections(pair, gens, ld, 2.5), _sections(pair, gens, ld, 1.5)
    combined = ld.CrossSection.combine([(a, 0.6), (b, 0.3)], factor_covariance=cov)
    n = a.generated_integral.central + b.generated_integral.central
    lums = np.array([2.5, 1.5])
    exposure = float(lums @ [0.6, 0.3])
    d = -n * lums / exposure**2
    only = combined.total.error(data_fill=False, accepted_mc_fill=False, generated_mc_fill=False,
                                branching_exposure=True)
    assert only.error == pytest.approx(math.sqrt(d @ cov @ d), rel=1e-13)
    assert only.included_error_components == ["branching_exposure"] and only.omitted_error_components == [
        ("covariance", "unavailable")]
    assert combined.total.central == pytest.approx(n / exposure, rel=1e-15)


def test_covariance_errors_of_bins_are_their_exact_gradients(pair, gens):
    """The "covariance" source of a bin is sqrt(g^T C g), g its exact gradient: the bins'
    gradients add up to the scalar yield's, match central differences, and pool linearly in
    a combination of periods evaluated at one fit."""
    ours, _ = pair
    names = ours.parameter_names
    cov = np.diag([(0.01 * max(1.0, abs(POINT[n]))) ** 2 for n in names])
    cov[0, 1] = cov[1, 0] = 0.3 * math.sqrt(cov[0, 0] * cov[1, 1])
    wide = [ld.Axis(ld.scalar("x"), edges=[0.0, 0.9, 1.2, 2.0])]  # holds every event
    y = ours.yield_context("t", generated_mc=gens[0], parameters=POINT, covariance=cov)
    p = y.projection(wide, components={"D": ["D"]})
    total = y.generated_fitted_yield()
    grads = p.generated_estimate._linear.gradients
    np.testing.assert_allclose(grads.sum(axis=0), y._ints.gradients[1], rtol=1e-12, atol=1e-12)
    view = p.generated_estimate.histogram(data_fill=False, accepted_mc_fill=False, generated_mc_fill=False)
    assert view.included_error_components == ["covariance"]
    np.testing.assert_allclose(view.errors, [math.sqrt(g @ cov @ g) for g in grads], rtol=1e-12)
    assert math.fsum(p.generated) == pytest.approx(total.central, rel=1e-14)
    comp = p.components["D"].accepted_estimate._linear.gradients
    for j, n in enumerate(names):
        h = 1e-6 * max(1.0, abs(POINT[n]))
        bins = []
        for sign in (1, -1):
            at = dict(POINT, **{n: POINT[n] + sign * h})
            bins.append(np.array(ours.yield_context("t", generated_mc=gens[0], parameters=at).projection(
                wide, components={"D": ["D"]}).components["D"].accepted))
        np.testing.assert_allclose((bins[0] - bins[1]) / (2 * h), comp[:, j], rtol=1e-6, atol=1e-6)
    a = ours.cross_section("t", gens[0], ld.Luminosity(2.0, ld.AreaUnit.NANOBARN), POINT, covariance=cov)
    b = ours.cross_section("t", gens[0], ld.Luminosity(3.0, ld.AreaUnit.NANOBARN), POINT, covariance=cov)
    both = ld.CrossSection.combine([a, b])
    g = y._ints.gradients[1]
    assert both.total.components["covariance"] == pytest.approx(2 * math.sqrt(g @ cov @ g) / 5.0, rel=1e-12)
    pooled = both.project(wide).total.histogram(data_fill=False, accepted_mc_fill=False,
                                                generated_mc_fill=False)
    widths = np.diff([0.0, 0.9, 1.2, 2.0])
    np.testing.assert_allclose(pooled.errors, [2 * math.sqrt(g @ cov @ g) / 5.0 / w
                                               for g, w in zip(grads, widths, strict=True)], rtol=1e-12)


def test_typed_errors(pair, gens):
    ours, _ = pair
    y = ours.yield_context("t", generated_mc=gens[0], parameters=POINT)
    x = ld.scalar("x")
    with pytest.raises(ModelError, match="at least two edges"):
        ld.Axis(x, edges=[1.0])
    with pytest.raises(ModelError, match="finite and strictly increasing"):
        ld.Axis(x, edges=[0.0, 1.0, 0.5])
    with pytest.raises(ModelError, match="an Axis needs an expression to bin, got float"):
        ld.Axis(1.0, edges=[0.0, 1.0])
    with pytest.raises(ModelError, match="must be an Axis or a non-empty sequence of Axis objects"):
        y.projection([])
    with pytest.raises(ModelError, match="must be an Axis or a non-empty sequence"):
        y.projection("x")
    with pytest.raises(ModelError, match="component 'F' has unknown model tag 'F'; its tags: 'D', 'P', 'S'"):
        y.projection(axes(ld), components={"F": ["S", "F"]})
    with pytest.raises(ModelError, match="invalid component 'E': its tags must be a non-empty list"):
        y.projection(axes(ld), components={"E": []})
    with pytest.raises(ModelError, match="at least one projection is required"):
        y.projection_set({})
    with pytest.raises(SchemaError, match="nope"):
        y.projection(ld.Axis(ld.scalar("nope"), edges=[0.0, 1.0]))
    nll, _ = likelihoods(ld.NLL)
    shape = nll.yield_context("t", generated_mc=gens[0], parameters=POINT).projection(axes(ld),
                                                                                     components={"S": ["S"]})
    assert not shape.has_absolute_rate and len(shape.selected) == 5
    with pytest.raises(ModelError, match="does not determine an absolute rate: 't' is not an ExtendedNLL"):
        shape.generated  # noqa: B018
    with pytest.raises(ModelError, match="no accepted yields"):
        shape.components["S"].accepted_histogram()
    xs = ours.cross_section("t", gens[0], ld.Luminosity(2.0, ld.AreaUnit.NANOBARN), POINT)
    with pytest.raises(ParameterError, match="needs at least one period"):
        ld.CrossSection.combine([])
    with pytest.raises(ParameterError, match="exposure factors must be positive"):
        ld.CrossSection.combine([(xs, -1.0)])
    with pytest.raises(ParameterError, match="nested period combinations"):
        ld.CrossSection.combine([ld.CrossSection.combine([xs, xs])])
    with pytest.raises(ParameterError, match="share one area unit"):
        pb = ours.cross_section("t", gens[0], ld.Luminosity(2.0, ld.AreaUnit.PICOBARN), POINT)
        ld.CrossSection.combine([xs, pb])
    with pytest.raises(ParameterError, match="cannot accompany factors with their own errors"):
        ld.CrossSection.combine([(xs, 0.5), (xs, ld.Estimate(0.3, standard_error=0.01))],
                                factor_covariance=np.eye(2))
    with pytest.raises(ParameterError, match="positive semi-definite"):
        ld.CrossSection.combine([(xs, 0.5), (xs, 0.2)], factor_covariance=[[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ParameterError, match=r"one row and column per member \(2\)"):
        ld.CrossSection.combine([(xs, 0.5), (xs, 0.2)], factor_covariance=[[1.0, 0.0]])
    with pytest.raises(ParameterError, match="same covariance="):
        with_cov = ours.cross_section("t", gens[0], ld.Luminosity(1.0, ld.AreaUnit.NANOBARN), POINT,
                                      covariance=np.eye(8) * 1e-4)
        ld.CrossSection.combine([xs, with_cov])
    with pytest.raises(ParameterError, match="at least two draws"):
        ld.BinnedEstimate([1.0, 2.0]).covariance()
    with pytest.raises(ModelError, match="no axes"):
        ld.BinnedEstimate([1.0]).histogram()
    with pytest.raises(ParameterError, match="finite bin values"):
        ld.BinnedEstimate([math.nan])


@needs_laddu
def test_new_names_are_laddus():
    for name in ("Axis", "BinnedEstimate", "ComponentYieldProjection", "CrossSectionProjection",
                 "RateClosure", "YieldHistogramView", "YieldProjection"):
        assert hasattr(laddu, name) and name in ld.__all__ and hasattr(ld, name), name
    for cls, names in ((ld.Yield, ("projection", "projection_set", "rate_closure")),
                       (ld.CrossSection, ("project", "rate_closure", "combine"))):
        for n in names:
            assert hasattr(getattr(laddu, cls.__name__), n) and hasattr(cls, n), (cls.__name__, n)


def test_a_cross_sections_projections_are_not_handed_to_another_expression(pair, gens, monkeypatch):
    """``projections=`` keeps the projections for a matching ``project()``.  The match was by
    ``id`` of each axis expression, which a new expression gets once the old one is
    collected (interned expressions are held weakly): ``project()`` on another coordinate
    then returned the old one's bins.  ``id`` answers alike for every object here, as for a
    recycled address."""
    import laddu_dask.results.yields as yields_module

    monkeypatch.setattr(yields_module, "id", lambda obj: 0, raising=False)
    ours, _ = pair
    lum = ld.Luminosity(2.5, ld.AreaUnit.NANOBARN)
    on_x, on_c = [ld.Axis(ld.scalar("x"), edges=X_EDGES)], [ld.Axis(ld.scalar("c"), edges=X_EDGES)]
    early = ours.cross_section("t", gens[0], lum, POINT, projections={"p": on_x})
    fresh = ours.cross_section("t", gens[0], lum, POINT).project({"p": on_c})["p"]
    assert np.array_equal(early.project({"p": on_c})["p"].total.central, fresh.total.central)
    # the two coordinates' bins differ: a projection handed over would be seen
    assert not np.array_equal(early.project({"p": on_x})["p"].total.central, fresh.total.central)
