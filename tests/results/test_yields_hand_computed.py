"""Yields and cross sections (``laddu_dask/results/yields.py``) pinned by a hand-computed
case: tests written for the mutants mutmut found surviving (issue 30, point 3;
``docs/mutation.md``).

``I = a x^2 + b`` at ``(a, b) = (2, 1)`` on a few weighted events: every reference is
``math.fsum`` over the events of that closed form, and every covariance error is
``sqrt(g C g)`` with ``g`` a central finite difference of the closed-form quantity (never
the module's own derivative).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.errors import ModelError, NonFiniteError, ParameterError

POINT = np.array([2.0, 1.0])
DATA_X, DATA_W = np.array([0.5, 1.0, 1.5]), np.array([3.0, 4.0, 0.5])
ACC_X, ACC_W = np.array([0.0, 1.0, 0.5]), np.array([1.0, 2.0, 0.25])
GEN_X, GEN_W = np.array([0.0, 0.5, 1.0, 2.0, 1.5]), np.array([1.0, 1.0, 2.0, 0.5, 0.75])
COVARIANCE = np.array([[0.04, -0.01], [-0.01, 0.09]])
DRAWS = np.array([[1.0, 1.0], [3.0, 0.5]])
ENSEMBLE = SimpleNamespace(draws=DRAWS, parameter_names=["a", "b"], source_id=77)
LUMINOSITY = ld.Luminosity(2.0, ld.AreaUnit.PICOBARN).with_relative_uncertainty(0.1, 5)


def _closed(point, xs, ws):
    a, b = point
    return math.fsum(ws * (a * xs**2 + b))


N = math.fsum(DATA_W)


def accepted(p):
    return _closed(p, ACC_X, ACC_W)


def generated(p):
    return _closed(p, GEN_X, GEN_W)


def acceptance(p):
    return accepted(p) / generated(p)


def corrected(p):
    return N * generated(p) / accepted(p)


def covariance_error(f):
    h = 1e-6
    grad = np.array([(f(POINT + h * e) - f(POINT - h * e)) / (2 * h) for e in np.eye(2)])
    return math.sqrt(grad @ COVARIANCE @ grad)


def fill(xs, ws):
    """``sqrt(sum (w I)^2)`` at the point."""
    return math.sqrt(math.fsum((ws * (POINT[0] * xs**2 + POINT[1])) ** 2))


def _likelihood(term=ld.ExtendedNLL):
    model = ld.Model(ld.parameter("a", initial=1.0) * ld.scalar("x") * ld.scalar("x")
                     + ld.parameter("b", initial=1.0))
    data = ld.Dataset.from_arrays(scalars={"x": DATA_X}, weights=DATA_W)
    mc = ld.Dataset.from_arrays(scalars={"x": ACC_X}, weights=ACC_W)
    return ld.Likelihood([term(model, data=data, accepted_mc=mc, name="t")])


GEN = ld.Dataset.from_arrays(scalars={"x": GEN_X}, weights=GEN_W)


@pytest.fixture(scope="module")
def lik():
    return _likelihood()


@pytest.fixture(scope="module")
def y(lik):
    return ld.results.yields.yield_context(lik, "t", generated_mc=GEN, parameters=POINT.tolist(),
                                           covariance=COVARIANCE, ensemble=ENSEMBLE)


def test_yields_their_sources_and_draws(y):
    sel = y.selected_yield()
    assert sel.central == N and sel.components == {"data_fill": math.sqrt(math.fsum(DATA_W**2))}
    assert sel.draws.tolist() == [N, N] and sel.source_id == 77
    cases = [(y.accepted_fitted_yield(), accepted, "accepted_mc_fill", ACC_X, ACC_W),
             (y.generated_fitted_yield(), generated, "generated_mc_fill", GEN_X, GEN_W)]
    for est, f, source, xs, ws in cases:
        assert est.central == pytest.approx(f(POINT), rel=1e-15)
        assert set(est.components) == {source, "covariance"}
        assert est.components[source] == pytest.approx(fill(xs, ws), rel=1e-14)
        assert est.components["covariance"] == pytest.approx(covariance_error(f), rel=1e-6)
        assert est.draws.tolist() == pytest.approx([f(d) for d in DRAWS], rel=1e-15)
        assert est.source_id == 77


def test_acceptance_and_corrected_yield(y):
    acc = y.acceptance()
    assert acc.central == pytest.approx(acceptance(POINT), rel=1e-15)
    assert set(acc.components) == {"covariance"}
    assert acc.components["covariance"] == pytest.approx(covariance_error(acceptance), rel=1e-6)
    assert acc.draws.tolist() == pytest.approx([acceptance(d) for d in DRAWS], rel=1e-15)
    cor = y.corrected_yield()
    assert cor.central == pytest.approx(corrected(POINT), rel=1e-15)
    assert cor.components["covariance"] == pytest.approx(covariance_error(corrected), rel=1e-6)
    data_error = math.sqrt(math.fsum(DATA_W**2))
    assert cor.components["data_fill"] == pytest.approx(data_error / acceptance(POINT), rel=1e-14)
    assert cor.draws.tolist() == pytest.approx([corrected(d) for d in DRAWS], rel=1e-15)
    assert y.parameters == POINT.tolist() and y.term_name == "t" and y.has_absolute_rate


def test_cross_section_per_luminosity_with_its_uncertainty(lik):
    xs = ld.results.yields.cross_section(lik, "t", GEN, LUMINOSITY, POINT.tolist(), covariance=COVARIANCE,
                                         ensemble=ENSEMBLE)
    total = xs.total
    assert total.central == pytest.approx(generated(POINT) / 2.0, rel=1e-15)
    assert total.components["generated_mc_fill"] == pytest.approx(fill(GEN_X, GEN_W) / 2.0, rel=1e-14)
    assert total.components["covariance"] == pytest.approx(covariance_error(generated) / 2.0, rel=1e-6)
    assert total.components["luminosity"] == pytest.approx(0.1 * generated(POINT) / 2.0, rel=1e-15)
    assert total.draws.tolist() == pytest.approx([generated(d) / 2.0 for d in DRAWS], rel=1e-15)
    assert total.source_id == 77
    observed = xs.observed
    assert observed.central == pytest.approx(corrected(POINT) / 2.0, rel=1e-15)
    assert observed.components["luminosity"] == pytest.approx(0.1 * corrected(POINT) / 2.0, rel=1e-15)
    assert xs.accepted_integral.central == pytest.approx(accepted(POINT), rel=1e-15)
    assert xs.data_yield.central == N
    assert xs.rate_closure.accepted_fitted_yield.central == pytest.approx(accepted(POINT), rel=1e-15)
    assert xs.rate_closure.generated_fitted_yield.central == pytest.approx(generated(POINT), rel=1e-15)
    assert xs.rate_closure.selected_yield.central == N
    plain = ld.results.yields.cross_section(lik, "t", GEN, ld.Luminosity(4.0, ld.AreaUnit.PICOBARN),
                                            POINT.tolist())
    assert set(plain.total.components) == {"generated_mc_fill"}  # no luminosity error given, no fit one
    assert plain.total.central == pytest.approx(generated(POINT) / 4.0, rel=1e-15)
    assert plain.total.draws is None


def test_tags_select_the_waves_of_the_yield():
    x = ld.scalar("x")
    model = ld.Model((ld.parameter("a", initial=1.0) * x * x).tagged("A")
                     + ld.parameter("b", initial=1.0).tagged("B"))
    data = ld.Dataset.from_arrays(scalars={"x": DATA_X}, weights=DATA_W)
    mc = ld.Dataset.from_arrays(scalars={"x": ACC_X}, weights=ACC_W)
    lik = ld.Likelihood([ld.ExtendedNLL(model, data=data, accepted_mc=mc, name="t")])
    only_a = ld.results.yields.yield_context(lik, "t", generated_mc=GEN, parameters=POINT.tolist(),
                                             tags=["A"])
    assert only_a.generated_fitted_yield().central == pytest.approx(_closed([2.0, 0.0], GEN_X, GEN_W),
                                                                    rel=1e-15)
    xs = ld.results.yields.cross_section(lik, "t", GEN, ld.Luminosity(2.0, ld.AreaUnit.PICOBARN),
                                         POINT.tolist(), tags=["A"])
    assert xs.total.central == pytest.approx(_closed([2.0, 0.0], GEN_X, GEN_W) / 2.0, rel=1e-15)


def test_a_shape_only_term_has_a_selected_yield_and_no_fitted_one():
    lik = _likelihood(ld.NLL)
    y = lik.yield_context("t", generated_mc=GEN, parameters=POINT.tolist())
    assert not y.has_absolute_rate
    closure = y.rate_closure()
    assert closure.status == "not_applicable" and closure.accepted_fitted_yield is None
    assert closure.selected_yield.central == N
    with pytest.raises(ModelError, match=r"likelihood term does not determine an absolute rate: 't' is an "
                                         r"NLL; yields and cross sections need an ExtendedNLL"):
        y.accepted_fitted_yield()
    with pytest.raises(ModelError, match=r"'t' is an NLL; yields and cross sections need an ExtendedNLL"):
        y.generated_fitted_yield()
    with pytest.raises(ModelError, match=r"'t' is an NLL; yields and cross sections need an ExtendedNLL"):
        lik.cross_section("t", GEN, LUMINOSITY, POINT.tolist())


def test_bad_arguments_are_errors_by_type_and_message(lik):
    with pytest.raises(ModelError,
                       match=r"^yield_context needs generated_mc= \(the generated Monte Carlo\)$"):
        ld.results.yields.yield_context(lik, "t", generated_mc=None, parameters=POINT.tolist())
    with pytest.raises(ParameterError, match=r"^luminosity must be a Luminosity, got float$"):
        ld.results.yields.cross_section(lik, "t", GEN, 2.0, POINT.tolist())
    with pytest.raises(ModelError, match=r"^projections= maps names to an Axis or a list of Axis objects$"):
        ld.results.yields.cross_section(lik, "t", GEN, LUMINOSITY, POINT.tolist(),
                                        projections=[ld.Axis(ld.scalar("x"), edges=[0.0, 1.0, 2.0])])


def test_a_zero_integral_is_an_error_naming_the_quantity(lik):
    """``I = a x^2 + b`` at ``(2, 0)`` vanishes at ``x = 0``: generated MC only there gives a
    zero generated integral (the acceptance divides by it), accepted MC only there a zero
    accepted one (the corrected yield divides by it)."""
    at_zero = ld.Dataset.from_arrays(scalars={"x": np.array([0.0, 0.0])})
    y = lik.yield_context("t", generated_mc=at_zero, parameters=[2.0, 0.0])
    with np.errstate(divide="ignore", invalid="ignore"), \
            pytest.raises(ModelError, match=r"^the acceptance is inf \(an integral is zero\)$"):
        y.acceptance()
    model = lik.terms[0].model
    data = ld.Dataset.from_arrays(scalars={"x": DATA_X}, weights=DATA_W)
    zero_acc = ld.Likelihood([ld.ExtendedNLL(model, data=data, accepted_mc=at_zero, name="t")])
    y0 = zero_acc.yield_context("t", generated_mc=GEN, parameters=[2.0, 0.0])
    with np.errstate(divide="ignore", invalid="ignore"), \
            pytest.raises(ModelError, match=r"^the corrected yield is inf \(an integral is zero\)$"):
        y0.corrected_yield()


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # numpy's, in the fill's threads
def test_an_overflowing_quotient_is_an_error_that_says_so_not_that_an_integral_is_zero(lik):
    """Accepted integral ``2e200`` over generated ``2e-200`` is ``1e400``: both integrals are
    finite and non-zero, the acceptance overflows float64."""
    tiny = ld.Dataset.from_arrays(scalars={"x": np.array([1.0])}, weights=np.array([1e-200]))
    model = lik.terms[0].model
    data = ld.Dataset.from_arrays(scalars={"x": DATA_X}, weights=DATA_W)
    huge = ld.Dataset.from_arrays(scalars={"x": np.array([1.0])}, weights=np.array([1e200]))
    big = ld.Likelihood([ld.ExtendedNLL(model, data=data, accepted_mc=huge, name="t")])
    y = big.yield_context("t", generated_mc=tiny, parameters=[2.0, 0.0])
    with np.errstate(over="ignore"), \
            pytest.raises(ModelError, match=r"^the acceptance is inf \(it overflows float64\)$"):
        y.acceptance()


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_an_overflowing_sum_of_squares_is_an_error_not_an_infinite_error_bar(lik):
    """Accepted MC weights of ``1e160``: the integral (``~1e160``) is finite, ``sum (w I)^2``
    (``~1e320``) is not, so the accepted yield's statistical error would be ``inf``."""
    model = lik.terms[0].model
    data = ld.Dataset.from_arrays(scalars={"x": DATA_X}, weights=DATA_W)
    heavy = ld.Dataset.from_arrays(scalars={"x": np.array([1.0, 2.0])}, weights=np.array([1e160, 1e160]))
    big = ld.Likelihood([ld.ExtendedNLL(model, data=data, accepted_mc=heavy, name="t")])
    y = big.yield_context("t", generated_mc=GEN, parameters=[2.0, 0.0])
    with pytest.raises(NonFiniteError, match=r"^the sum of \(w I\)\^2 over the accepted sample of term 't' "
                                             r"is inf \(it overflows float64\), so its statistical error "
                                             r"is not finite$"):
        y.accepted_fitted_yield()
    assert y.generated_fitted_yield().central == pytest.approx(generated([2.0, 0.0]), rel=1e-15)


def test_repr_names_the_unit_in_lower_case(lik):
    xs = lik.cross_section("t", GEN, ld.Luminosity(2.0, ld.AreaUnit.PICOBARN), POINT.tolist())
    assert repr(xs) == f"CrossSection({xs.total!r} picobarn)"
    y = lik.yield_context("t", generated_mc=GEN, parameters=POINT.tolist())
    assert repr(y) == "Yield('t', observed 7.5)"


def test_prepared_projections_are_returned_only_for_the_same_request():
    x, z = ld.scalar("x"), ld.scalar("z")
    model = ld.Model((ld.parameter("a", initial=1.0) * x * x).tagged("A")
                     + ld.parameter("b", initial=1.0).tagged("B"))
    data = ld.Dataset.from_arrays(scalars={"x": DATA_X, "z": 2.0 - DATA_X}, weights=DATA_W)
    mc = ld.Dataset.from_arrays(scalars={"x": ACC_X, "z": 2.0 - ACC_X}, weights=ACC_W)
    gen = ld.Dataset.from_arrays(scalars={"x": GEN_X, "z": 2.0 - GEN_X}, weights=GEN_W)
    lik = ld.Likelihood([ld.ExtendedNLL(model, data=data, accepted_mc=mc, name="t")])
    edges = [0.0, 1.0, 2.5]
    lum = ld.Luminosity(2.0, ld.AreaUnit.PICOBARN)
    xs = lik.cross_section("t", gen, lum, POINT.tolist(), projections={"p": ld.Axis(x, edges=edges)},
                           components={"A": ["A"]})
    fresh = lik.cross_section("t", gen, lum, POINT.tolist())
    for request, components in [({"p": ld.Axis(z, edges=edges)}, {"A": ["A"]}),
                                ({"p": ld.Axis(x, edges=edges)}, {"A": ["B"]}),
                                ({"p": ld.Axis(x, edges=edges)}, None)]:
        got, want = xs.project(request, components=components)["p"], \
            fresh.project(request, components=components)["p"]
        assert got.total.central == want.total.central, (request, components)
        assert {k: v.central for k, v in got.components.items()} == \
            {k: v.central for k, v in want.components.items()}, (request, components)
    assert fresh.project(ld.Axis(z, edges=edges)).total.central != \
        fresh.project(ld.Axis(x, edges=edges)).total.central  # the requests differ in value
    same = ({"p": ld.Axis(x, edges=edges)}, {"A": ["A"]})
    got, want = xs.project(same[0], components=same[1])["p"], fresh.project(same[0], components=same[1])["p"]
    assert got is xs.project(same[0], components=same[1])["p"]  # the prepared one: no second pass
    assert got.total.central == want.total.central
    assert {k: v.central for k, v in got.components.items()} == {"A": want.components["A"].central}


def test_combine_of_one_period_is_that_period(lik):
    """One member alone: the pooled ``sum G_i / sum L_i B_i`` is ``G / (L B)``, in the member's
    unit (the unit check and the combination's luminosity read the first member)."""
    xs = lik.cross_section("t", GEN, LUMINOSITY, POINT.tolist())
    one = ld.CrossSection.combine([xs])
    assert one.total.central == pytest.approx(generated(POINT) / 2.0, rel=1e-15)
    assert one.unit is ld.AreaUnit.PICOBARN
    halved = ld.CrossSection.combine([(xs, 0.5)])
    assert halved.total.central == pytest.approx(generated(POINT) / (2.0 * 0.5), rel=1e-15)
    assert repr(halved) == f"CrossSection({halved.total!r} picobarn)"


def test_combine_rejects_bad_members_by_type_and_message(lik):
    xs = lik.cross_section("t", GEN, LUMINOSITY, POINT.tolist())
    nb = lik.cross_section("t", GEN, ld.Luminosity(2.0, ld.AreaUnit.NANOBARN), POINT.tolist())
    takes = r"^CrossSection\.combine takes cross sections or \(cross section, factor\) pairs, got "
    for member, name in [(2.0, "float"), ((xs, 1.0, 2.0), "tuple"), ([xs], "list"), ("ab", "str"),
                         ((1.0, xs), "float")]:
        with pytest.raises(ParameterError, match=takes + name + "$"):
            ld.CrossSection.combine([member])
    with pytest.raises(ParameterError, match=r"^CrossSection\.combine needs at least one period$"):
        ld.CrossSection.combine([])
    with pytest.raises(ParameterError, match=r"^nested period combinations are not supported: "
                                             r"combine single periods$"):
        ld.CrossSection.combine([ld.CrossSection.combine([xs])])
    for members in ([xs, nb], [nb, xs], [xs, xs, nb]):
        with pytest.raises(ParameterError, match=r"^combined periods must share one area unit "
                                                 r"\(convert the luminosities\)$"):
            ld.CrossSection.combine(members)


def test_combine_pools_fit_covariances_only_over_the_same_parameters(lik):
    """Two periods fitted with the same covariance matrix but over differently named
    parameters do not share a fit covariance: their "covariance" errors cannot be pooled."""
    model = ld.Model(ld.parameter("c", initial=1.0) * ld.scalar("x") * ld.scalar("x")
                     + ld.parameter("d", initial=1.0))
    data = ld.Dataset.from_arrays(scalars={"x": DATA_X}, weights=DATA_W)
    mc = ld.Dataset.from_arrays(scalars={"x": ACC_X}, weights=ACC_W)
    other = ld.Likelihood([ld.ExtendedNLL(model, data=data, accepted_mc=mc, name="t")])
    a = lik.cross_section("t", GEN, LUMINOSITY, POINT.tolist(), covariance=COVARIANCE)
    b = other.cross_section("t", GEN, LUMINOSITY, POINT.tolist(), covariance=COVARIANCE)
    same = ld.CrossSection.combine([a, a])
    assert same.total.components["covariance"] == pytest.approx(covariance_error(generated) / 2.0, rel=1e-6)
    message = (r"^members combine their fit-covariance errors only when all were evaluated with the same "
               r"covariance= over the same parameters; pass it to every member or none$")
    with pytest.raises(ParameterError, match=message):
        ld.CrossSection.combine([a, b])


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_an_overflowing_integral_is_an_error_naming_the_yield():
    """Every event's ``I = a x^2`` is finite at ``a = 1e308, x = 1``, but two of them sum past
    the largest float: the yield of that sample is ``inf``, at the fitted point or at a draw."""
    model = ld.Model(ld.parameter("a", initial=1.0) * ld.scalar("x") * ld.scalar("x")
                     + ld.parameter("b", initial=1.0))
    data = ld.Dataset.from_arrays(scalars={"x": DATA_X}, weights=DATA_W)
    big = ld.Dataset.from_arrays(scalars={"x": np.array([1.0, 1.0])})
    small = ld.Dataset.from_arrays(scalars={"x": np.array([0.0, 0.0])})
    ensemble = SimpleNamespace(draws=np.array([[1.0, 1.0], [1e308, 0.0]]), parameter_names=["a", "b"],
                               source_id=3)
    cases = [("accepted_fitted_yield", "accepted yield", big, small),
             ("generated_fitted_yield", "generated yield", small, big)]
    for method, what, accepted_mc, generated_mc in cases:
        lik = ld.Likelihood([ld.ExtendedNLL(model, data=data, accepted_mc=accepted_mc, name="t")])
        at_max = lik.yield_context("t", generated_mc=generated_mc, parameters=[1e308, 0.0])
        with np.errstate(over="ignore"), pytest.raises(ModelError, match=rf"^the {what} is inf \("):
            getattr(at_max, method)()
        drawn = lik.yield_context("t", generated_mc=generated_mc, parameters=[1.0, 1.0], ensemble=ensemble)
        with np.errstate(over="ignore"), pytest.raises(
                ModelError, match=rf"^the {what} is not finite at a draw of the ensemble \("):
            getattr(drawn, method)()


def test_the_data_error_is_one_pass_over_the_data_per_yield(lik, monkeypatch):
    """The selected and the corrected yield share one ``sqrt(sum w^2)`` pass over the data
    (on a cluster each pass reads every partition)."""
    passes = []
    real = ld.results.yields.weight_square_sum

    def counted(execution, data):
        passes.append(data)
        return real(execution, data)

    monkeypatch.setattr(ld.results.yields, "weight_square_sum", counted)
    y = lik.yield_context("t", generated_mc=GEN, parameters=POINT.tolist())
    data_error = math.sqrt(math.fsum(DATA_W**2))
    for _ in range(2):
        assert y.selected_yield().components["data_fill"] == pytest.approx(data_error, rel=1e-15)
        assert y.corrected_yield().components["data_fill"] == pytest.approx(data_error / acceptance(POINT),
                                                                           rel=1e-14)
    assert len(passes) == 1


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_an_infinite_intensity_is_an_error_naming_the_event_and_its_value():
    """``I = a x^2`` at ``a = 1e308, x = 2`` overflows for that event alone, when the yield's
    integrals are filled (the value reads ``inf``, not NumPy's ``np.float64(inf)``)."""
    model = ld.Model(ld.parameter("a", initial=1.0) * ld.scalar("x") * ld.scalar("x")
                     + ld.parameter("b", initial=1.0))
    data = ld.Dataset.from_arrays(scalars={"x": DATA_X}, weights=DATA_W)
    mc = ld.Dataset.from_arrays(scalars={"x": np.array([0.0, 2.0])})
    lik = ld.Likelihood([ld.ExtendedNLL(model, data=data, accepted_mc=mc, name="t")])
    at_zero = ld.Dataset.from_arrays(scalars={"x": np.array([0.0, 0.0])})
    message = r"^the intensity of event 1 of arrays \[rows 0:2\] is inf$"
    with np.errstate(over="ignore"), pytest.raises(NonFiniteError, match=message):
        lik.yield_context("t", generated_mc=at_zero, parameters=[1e308, 0.0]).accepted_fitted_yield()
