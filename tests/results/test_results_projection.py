"""Projections, intensity integrals, yields, cross sections and fit fractions
(laddu_dask.results, issue 13 items 1-2) against laddu 0.28.1 on the same events and
parameters, and the fit-covariance error of a fit fraction against a bootstrap."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from laddu_reference import agreement, laddu, needs_laddu

import laddu_dask as ld
from laddu_dask.errors import ModelError, ParameterError

RNG = np.random.default_rng(2024)
TAGS = ("S", "P", "D")
POINT = {"m": 1.05, "g": 0.25, "s_re": 1.1, "s_im": 0.0, "p_re": 0.4, "p_im": -0.3, "d_re": 0.7, "d_im": 0.5}


def build(lib):
    """|S + P + D|^2 of three tagged waves, one with a Breit-Wigner, on scalar columns."""
    x, c, phi = lib.scalar("x"), lib.scalar("c"), lib.scalar("phi")

    def par(name):
        return lib.parameter(name, initial=POINT[name])

    def amp(l, m):  # noqa: E741
        return lib.spherical_harmonic(l, m, costheta=c, phi=phi)

    bw = lib.breit_wigner(x, mass=par("m"), width=par("g"))
    s = (lib.complex(par("s_re"), par("s_im")) * amp(0, 0)).tagged("S")
    p = (lib.complex(par("p_re"), par("p_im")) * amp(1, 1)).tagged("P")
    d = (bw * lib.complex(par("d_re"), par("d_im")) * amp(2, 1)).tagged("D")
    return lib.Model((s + p + d).norm_sqr())


def sample(n, weighted):
    cols = {"x": RNG.uniform(0.6, 1.6, n), "c": RNG.uniform(-1, 1, n),
            "phi": RNG.uniform(-math.pi, math.pi, n)}
    return cols, (RNG.uniform(0.2, 1.8, n) if weighted else None)


DATA, ACC, GEN = sample(300, True), sample(700, True), sample(1100, True)


def ours_ds(s):
    return ld.Dataset.from_arrays(scalars=s[0], weights=s[1], chunk_size=256)


def theirs_ds(s):
    return laddu.Dataset.from_arrays(p4s={}, scalars=s[0], weights=s[1])


def likelihoods(term=ld.ExtendedNLL, their_term=None):
    ours = ld.Likelihood([term(build(ld), data=ours_ds(DATA), accepted_mc=ours_ds(ACC), name="t")])
    theirs = None
    if laddu is not None:
        their_term = getattr(laddu, term.__name__)
        theirs = laddu.Likelihood([their_term(build(laddu), data=theirs_ds(DATA), accepted_mc=theirs_ds(ACC),
                                              name="t")])
    return ours, theirs


@pytest.fixture(scope="module")
def pair():
    return likelihoods()


@pytest.fixture(scope="module")
def gens():
    return ours_ds(GEN), (theirs_ds(GEN) if laddu is not None else None)


SUBSETS = [list(c) for k in (1, 2, 3) for c in itertools.combinations(TAGS, k)]


@needs_laddu
@pytest.mark.parametrize("tags", SUBSETS, ids=lambda t: "+".join(t))
def test_projection_matches_laddu(pair, gens, tags):
    ours, theirs = pair
    ours_proj = ours.projection("t", generated_mc=gens[0], tags=tags)
    their_proj = theirs.projection("t", generated_mc=gens[1], tags=tags)
    assert agreement(ours_proj.weights(POINT), np.asarray(their_proj.weights(POINT))) < 1e-10
    assert agreement(ours_proj.intensities(POINT), np.asarray(their_proj.intensities(POINT))) < 1e-10
    for what in ("accepted_integral", "generated_integral"):
        got, want = getattr(ours_proj, what)(POINT), getattr(their_proj, what)(POINT)
        assert got == pytest.approx(want, rel=1e-10), what


@needs_laddu
@pytest.mark.parametrize("tags", [None, ["S"], ["P", "D"]], ids=str)
@pytest.mark.parametrize("term", [ld.NLL, ld.ExtendedNLL], ids=lambda t: t.__name__)
def test_intensity_integrals_match_laddu(gens, tags, term):
    ours, theirs = likelihoods(term)
    mine = ours.intensity_integrals("t", generated_mc=gens[0], tags=tags)
    want = theirs.intensity_integrals("t", generated_mc=gens[1], tags=tags)
    assert mine.accepted_integral(POINT) == pytest.approx(want.accepted_integral(POINT), rel=1e-10)
    assert mine.generated_integral(POINT) == pytest.approx(want.generated_integral(POINT), rel=1e-10)
    # the project's sums are exact: the data weights' correctly rounded sum, bitwise
    assert mine.data_weight_sum == math.fsum(DATA[1].tolist())
    assert mine.data_weight_sum == pytest.approx(want.data_weight_sum, rel=1e-15)
    assert mine.name == "t"


def test_integrals_are_exact_sums_and_partition_independent(pair, gens):
    ours, _ = pair
    proj = ours.projection("t", generated_mc=gens[0], tags=["S", "D"])
    w = proj.weights(POINT)
    assert proj.generated_integral(POINT) == math.fsum(w)
    assert ours.intensity_integrals("t", generated_mc=gens[0]).data_weight_sum == math.fsum(DATA[1].tolist())
    other = ld.Dataset.from_arrays(scalars=GEN[0], weights=GEN[1], chunk_size=97)
    again = ours.projection("t", generated_mc=other, tags=["S", "D"])
    assert again.generated_integral(POINT) == proj.generated_integral(POINT)
    assert np.array_equal(again.weights(POINT), w)


def test_dask_arrays_are_the_numpy_ones(pair, gens):
    ours, _ = pair
    proj = ours.projection("t", generated_mc=gens[0], tags=["P"])
    lazy = proj.weights(POINT, dask=True)
    assert lazy.chunks == ((256, 256, 256, 256, 76),)
    assert np.array_equal(lazy.compute(), proj.weights(POINT))
    assert np.array_equal(proj.intensities(POINT, dask=True).compute(), proj.intensities(POINT))


def test_exact_gradient_of_integrals(pair, gens):
    """The integrals' gradients (used to propagate errors) against central differences."""
    ours, _ = pair
    ints = ours.intensity_integrals("t", generated_mc=gens[0], tags=["D"])
    got = ints.integrals_and_gradients(POINT)
    names = ours.parameter_names
    for role, f in (("accepted", ints.accepted_integral), ("generated", ints.generated_integral)):
        value, grad = got[role]
        assert value == f(POINT)
        for j, n in enumerate(names):
            h = 1e-6 * max(1.0, abs(POINT[n]))
            up, down = dict(POINT), dict(POINT)
            up[n] += h
            down[n] -= h
            fd = (f(up) - f(down)) / (2 * h)
            assert grad[j] == pytest.approx(fd, rel=1e-6, abs=1e-8 * abs(value)), (role, n)


@needs_laddu
def test_yields_and_cross_sections_match_laddu(pair, gens):
    ours, theirs = pair
    draws = np.array([[POINT[n] * (1 + 0.01 * k) for n in ours.parameter_names] for k in range(-2, 3)])
    order = [ours.parameter_names.index(n) for n in theirs.parameter_names]
    ens = laddu.Ensemble.from_arrays(draws[:, order], parameter_names=theirs.parameter_names)
    theirs_point = [POINT[n] for n in theirs.parameter_names]
    y = ours.yield_context("t", generated_mc=gens[0], parameters=POINT, ensemble=draws)
    yl = theirs.yield_context("t", generated_mc=gens[1], parameters=theirs_point, ensemble=ens)
    assert y.has_absolute_rate and yl.has_absolute_rate
    for what in ("selected_yield", "accepted_fitted_yield", "generated_fitted_yield"):
        mine, want = getattr(y, what)(), getattr(yl, what)()
        assert mine.central == pytest.approx(want.central, rel=1e-10), what
        assert mine.error().error == pytest.approx(want.error().error, rel=1e-10), what
    mine, want = y.generated_fitted_yield(), yl.generated_fitted_yield()
    assert agreement(mine.draws, np.asarray(want.draws)) < 1e-10
    assert mine.error(ensemble=True).error == pytest.approx(want.error(ensemble=True).error, rel=1e-10)
    lum = ld.Luminosity(2.5, ld.AreaUnit.NANOBARN).with_relative_uncertainty(0.04, 3)
    lum_l = laddu.Luminosity(2.5, laddu.AreaUnit.NANOBARN).with_relative_uncertainty(0.04, 3)
    xs = ours.cross_section("t", gens[0], lum, POINT, ensemble=draws)
    xl = theirs.cross_section("t", gens[1], lum_l, theirs_point, ensemble=ens)
    assert xs.total.central == pytest.approx(xl.total.central, rel=1e-10)
    assert agreement(xs.total.draws, np.asarray(xl.total.draws)) < 1e-10
    for flags in ({}, {"ensemble": True}, {"ensemble": True, "luminosity": True}):
        assert xs.total.error(**flags).error == pytest.approx(xl.total.error(**flags).error, rel=1e-10), flags
    assert xs.generated_integral.central == pytest.approx(xl.generated_integral.central, rel=1e-10)
    assert xs.data_yield.central == pytest.approx(xl.data_yield.central, rel=1e-12)
    assert xs.total_effective_exposure == xl.total_effective_exposure
    assert int(xs.unit) == int(xl.unit)


def test_observed_cross_section_and_acceptance(pair, gens):
    ours, _ = pair
    y = ours.yield_context("t", generated_mc=gens[0], parameters=POINT)
    acc, gen = y.accepted_fitted_yield().central, y.generated_fitted_yield().central
    n = ours_ds(DATA).sum_weights()
    assert y.acceptance().central == acc / gen
    assert y.corrected_yield().central == pytest.approx(n * gen / acc, rel=1e-15)
    assert y.selected_yield().components["data_fill"] == math.sqrt(math.fsum(DATA[1] ** 2))
    xs = ours.cross_section("t", gens[0], ld.Luminosity(4.0, ld.AreaUnit.PICOBARN), POINT)
    assert xs.observed.central == pytest.approx(n * gen / acc / 4.0, rel=1e-15)


@needs_laddu
def test_fit_fractions_are_ratios_of_laddus_integrals(pair, gens):
    ours, theirs = pair
    ff = ours.fit_fractions("t", POINT, generated_mc=gens[0])

    def integral(tags):
        return theirs.intensity_integrals("t", generated_mc=gens[1], tags=tags).generated_integral(POINT)

    total = integral(None)
    for w in TAGS:
        assert ff[w].central == pytest.approx(integral([w]) / total, rel=1e-10)
    for a, b in itertools.combinations(TAGS, 2):
        want = (integral([a, b]) - integral([a]) - integral([b])) / total
        assert ff[b, a].central == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert ff.sum() == pytest.approx(1.0, rel=1e-12)
    accepted = ours.fit_fractions("t", POINT, waves=["S"])
    assert accepted.sample == "accepted" and list(accepted.fractions) == ["S"]


def test_fraction_error_is_the_linear_propagation(pair, gens):
    """sqrt(g^T C g) with g from the exact integral gradients (checked by the closed form of
    the ratio's derivative)."""
    ours, _ = pair
    names = ours.parameter_names
    cov = np.diag([(0.01 * max(1.0, abs(POINT[n]))) ** 2 for n in names])
    ff = ours.fit_fractions("t", POINT, waves=["D"], generated_mc=gens[0], covariance=cov)
    d = ours.intensity_integrals("t", generated_mc=gens[0], tags=["D"]).integrals_and_gradients(POINT)
    t = ours.intensity_integrals("t", generated_mc=gens[0]).integrals_and_gradients(POINT)
    d, t = d["generated"], t["generated"]
    g = d[1] / t[0] - d[0] * t[1] / t[0] ** 2
    assert ff["D"].standard_error == pytest.approx(math.sqrt(g @ cov @ g), rel=1e-12)


def _toy(n_data, seed):
    """A real S + P + D toy in cos(theta) with a detector acceptance; ExtendedNLL."""
    rng = np.random.default_rng(seed)
    c = ld.scalar("c")
    s = ld.parameter("s", initial=1.0, bounds=(0.01, None)).tagged("S")
    p = (ld.parameter("p", initial=0.5) * c).tagged("P")
    d = (ld.parameter("d", initial=0.4) * (1.5 * c * c - 0.5)).tagged("D")
    model = ld.Model((s + p + d) * (s + p + d))
    truth = {"s": 1.0, "p": 0.5, "d": 0.4}

    def intensity(x):
        return (truth["s"] + truth["p"] * x + truth["d"] * (1.5 * x * x - 0.5)) ** 2

    gen = rng.uniform(-1, 1, 20000)
    keep = rng.uniform(0, 1, gen.size) < 0.5 + 0.4 * gen  # acceptance 0.5 + 0.4 c
    mc = gen[keep]
    scale = n_data / (intensity(mc).sum())  # expected yield n_data with MC weight `scale`
    proposals = rng.uniform(-1, 1, 8 * n_data)
    env = intensity(np.array([1.0])).item()
    accepted = proposals[(rng.uniform(0, 1, proposals.size) * env < intensity(proposals))
                         & (rng.uniform(0, 1, proposals.size) < 0.5 + 0.4 * proposals)]
    data = accepted[: rng.poisson(n_data)]
    w_mc = np.full(mc.size, scale)
    lik = ld.Likelihood([ld.ExtendedNLL(model, data=ld.Dataset.from_arrays(scalars={"c": data}),
                                        accepted_mc=ld.Dataset.from_arrays(scalars={"c": mc}, weights=w_mc),
                                        name="toy")])
    generated = ld.Dataset.from_arrays(scalars={"c": gen}, weights=np.full(gen.size, scale))
    return lik, generated


def test_fraction_error_agrees_with_a_bootstrap():
    lik, generated = _toy(1500, seed=5)
    fit = lik.fit()
    assert fit.valid
    ens = lik.bootstrap_fit(60, fit.values, seed=3)
    assert len(ens.fits.valid) >= 55 and len(ens) == len(ens.fits.valid)
    ff = lik.fit_fractions("toy", fit.values, generated_mc=generated, covariance=fit, ensemble=ens)
    for wave in ("S", "P", "D"):
        e = ff[wave]
        sigma_boot, k = e.std(), len(e.draws)
        stat = sigma_boot / math.sqrt(2 * (k - 1))  # the standard error of a standard deviation
        assert abs(e.standard_error - sigma_boot) < 3 * stat, (wave, e.standard_error, sigma_boot)
        assert abs(e.mean() - e.central) < 4 * sigma_boot / math.sqrt(k)
    lum = ld.Luminosity(1.0, ld.AreaUnit.PICOBARN)
    xs = lik.cross_section("toy", generated, lum, fit.values, covariance=fit)
    assert xs.total.components["covariance"] > 0


def test_typed_errors(pair, gens):
    ours, _ = pair
    with pytest.raises(ModelError, match="unknown likelihood term: no term named 'nope'; terms: 't'"):
        ours.projection("nope", generated_mc=gens[0], tags=["S"])
    with pytest.raises(ModelError, match="its model has no tag 'F'; its tags: 'D', 'P', 'S'"):
        ours.intensity_integrals("t", generated_mc=gens[0], tags=["S", "F"])
    with pytest.raises(ModelError, match="not a string"):
        ours.projection("t", generated_mc=gens[0], tags="S")
    with pytest.raises(ModelError, match="no tag 'X'"):
        ours.fit_fractions("t", POINT, waves=["X"])
    with pytest.raises(ModelError, match="pass generated_mc="):
        ours.intensity_integrals("t").generated_integral(POINT)
    nll, _ = likelihoods(ld.NLL)
    with pytest.raises(ModelError, match="does not determine an absolute rate: 't' is an NLL"):
        nll.yield_context("t", generated_mc=gens[0], parameters=POINT).generated_fitted_yield()
    with pytest.raises(ModelError, match="does not determine an absolute rate"):
        nll.cross_section("t", gens[0], ld.Luminosity(1.0, ld.AreaUnit.BARN), POINT)
    with pytest.raises(ParameterError, match="luminosity must be finite and positive"):
        ld.Luminosity(-1.0, ld.AreaUnit.BARN)
    with pytest.raises(ParameterError, match="luminosity must be a Luminosity"):
        ours.cross_section("t", gens[0], 2.0, POINT)
    with pytest.raises(ParameterError, match=r"covariance must be \(8, 8\)"):
        ours.fit_fractions("t", POINT, covariance=np.eye(3))
    with pytest.raises(ParameterError, match=r"ensemble draws must be \(K, 8\)"):
        ours.fit_fractions("t", POINT, ensemble=np.zeros((4, 2)))
    bad = ld.Dataset.from_arrays(scalars={"x": np.ones(3), "c": np.zeros(3)})
    with pytest.raises(ld.SchemaError, match="phi"):
        ours.projection("t", generated_mc=bad, tags=["S"])


def test_project_is_the_scaled_accepted_projection(pair):
    ours, _ = pair
    w = ours.project(POINT)
    proj = ours.projection("t", tags=None)
    raw = proj.weights(POINT)
    assert np.allclose(w, raw * ours_ds(DATA).sum_weights() / math.fsum(raw), rtol=1e-15)


@needs_laddu
def test_laddus_results_names_are_exported():
    for name in ("AreaUnit", "CrossSection", "Estimate", "IntensityIntegrals", "LikelihoodProjection",
                 "Luminosity", "ScalarErrorView", "Yield"):
        assert hasattr(laddu, name) and name in ld.__all__ and hasattr(ld, name), name
    for method in ("projection", "intensity_integrals", "yield_context", "cross_section"):
        assert callable(getattr(laddu.Likelihood, method)) and callable(getattr(ld.Likelihood, method))
    for member in ("BARN", "MILLIBARN", "MICROBARN", "NANOBARN", "PICOBARN", "FEMTOBARN"):
        assert int(getattr(ld.AreaUnit, member)) == int(getattr(laddu.AreaUnit, member))
    for method in ("central", "draws", "error", "interval", "mean", "median", "quantile", "source_id",
                   "standard_error", "std"):
        assert hasattr(laddu.Estimate, method) and hasattr(ld.Estimate, method), method
    e, el = ld.Estimate(2.0, draws=[1.0, 2.0, 4.0]), laddu.Estimate(2.0, draws=[1.0, 2.0, 4.0])
    assert e.std() == pytest.approx(el.std(), rel=1e-14)
    assert e.interval(0.68) == pytest.approx(el.interval(0.68))
    a, b = ld.Estimate(2.0, standard_error=0.1), ld.Estimate(3.0, standard_error=0.2)
    al, bl = laddu.Estimate(2.0, standard_error=0.1), laddu.Estimate(3.0, standard_error=0.2)
    for op in ("__add__", "__sub__", "__mul__", "__truediv__"):
        mine, want = getattr(a, op)(b), getattr(al, op)(bl)
        assert mine.central == pytest.approx(want.central) and mine.standard_error == pytest.approx(
            want.standard_error, rel=1e-12), op
    lum = ld.Luminosity(2.0, ld.AreaUnit.PICOBARN).to_unit(ld.AreaUnit.NANOBARN)
    assert lum.value == pytest.approx(laddu.Luminosity(2.0, laddu.AreaUnit.PICOBARN).to_unit(
        laddu.AreaUnit.NANOBARN).value, rel=1e-15)


def test_streamed_samples_and_mcmc_like_ensembles(pair, gens):
    """A streamed generated MC gives the resident integrals bitwise; an MCMC summary's flat
    chain (by parameter name, any order) is an ensemble."""
    ours, _ = pair
    streamed = ours_ds(GEN).with_memory_policy("streaming")
    a = ours.intensity_integrals("t", generated_mc=gens[0], tags=["P"])
    b = ours.intensity_integrals("t", generated_mc=streamed, tags=["P"])
    assert a.generated_integral(POINT) == b.generated_integral(POINT)
    names = ours.parameter_names

    class Chain:
        parameter_names = names[::-1]

        def flat(self):
            rows = np.array([[POINT[n] * (1 + 0.02 * k) for n in names] for k in range(4)])
            return rows[:, ::-1]

    y = ours.yield_context("t", generated_mc=gens[0], parameters=POINT, ensemble=Chain())
    want = [ours.intensity_integrals("t", generated_mc=gens[0]).generated_integral(
        {n: POINT[n] * (1 + 0.02 * k) for n in names}) for k in range(4)]
    assert y.generated_fitted_yield().draws.tolist() == want


@needs_laddu
def test_yields_and_cross_sections_of_tagged_waves(pair, gens):
    """tags= (laddu-dask's): the fitted yields of some waves are laddu's tagged integrals."""
    ours, theirs = pair
    y = ours.yield_context("t", generated_mc=gens[0], parameters=POINT, tags=["S", "P"])
    want = theirs.intensity_integrals("t", generated_mc=gens[1], tags=["S", "P"])
    assert y.accepted_fitted_yield().central == pytest.approx(want.accepted_integral(POINT), rel=1e-10)
    assert y.generated_fitted_yield().central == pytest.approx(want.generated_integral(POINT), rel=1e-10)
    assert y.selected_yield().central == math.fsum(DATA[1].tolist())
    assert y.selected_yield().central == pytest.approx(want.data_weight_sum, rel=1e-15)
    xs = ours.cross_section("t", gens[0], ld.Luminosity(0.5, ld.AreaUnit.FEMTOBARN), POINT, tags=["D"])
    d = theirs.intensity_integrals("t", generated_mc=gens[1], tags=["D"]).generated_integral(POINT)
    assert xs.total.central == pytest.approx(d / 0.5, rel=1e-10)


def test_bad_covariances_and_estimates_are_typed_errors(pair):
    ours, _ = pair

    class NoHesse:
        covariance = None
        parameter_names = ours.parameter_names

    class Partial:
        covariance = np.eye(2)
        parameter_names = ["m", "g"]

    with pytest.raises(ParameterError, match="no covariance"):
        ours.fit_fractions("t", POINT, covariance=NoHesse())
    with pytest.raises(ParameterError, match="lacks parameter"):
        ours.fit_fractions("t", POINT, covariance=Partial())
    with pytest.raises(ParameterError, match="non-finite"):
        ours.fit_fractions("t", POINT, covariance=np.full((8, 8), np.nan))
    # a bootstrap whose refits were all invalid: said where the ensemble is passed, not later
    # as "this Estimate has no draws (pass an ensemble)" from interval()
    empty = ld.Ensemble(np.empty((0, len(ours.parameter_names))), ours.parameter_names)
    with pytest.raises(ParameterError, match=r"the ensemble has no draws \(bootstrap_fit keeps only"):
        ours.fit_fractions("t", POINT, ensemble=empty)
    with pytest.raises(ParameterError, match="finite central value"):
        ld.Estimate(math.inf)
    with pytest.raises(ParameterError, match="unknown uncertainty source 'shape'"):
        ld.Estimate(1.0, components={"shape": 0.1})
    with pytest.raises(ParameterError, match="has no draws"):
        ld.Estimate(1.0).std()
    with pytest.raises(ParameterError, match="unit must be an AreaUnit"):
        ld.Luminosity(1.0, "pb")
