"""Fit fractions (``laddu_dask/results/fractions.py``) pinned by a hand-computed case: tests
written for the mutants mutmut found surviving (issue 30, point 3; ``docs/mutation.md``).

Three real waves ``A = s``, ``B = p x``, ``C = d x^2`` (``Model.tags`` sorts them by name)
and the model ``|A + B + C|^2``.  The reference integrals are ``math.fsum(w amp^2)`` over
the events of the closed-form amplitude ``amp`` of each wave subset, the fractions their
ratios, the covariance errors those of a central finite difference of the same closed form
(never the module's ``_ratio``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.errors import ModelError
from laddu_dask.results.fractions import fit_fractions

WAVES = ("A", "B", "C")
POINT = np.array([0.75, -0.5, 1.25])  # s, p, d
ACC_X, ACC_W = np.array([-1.0, -0.5, 0.25, 1.0]), np.array([1.0, 2.0, 0.5, 1.5])
GEN_X, GEN_W = np.array([-1.0, -0.75, 0.0, 0.5, 1.0, 2.0]), np.array([1.0, 1.0, 2.0, 0.5, 1.0, 0.75])
COVARIANCE = np.array([[0.04, 0.01, 0.0], [0.01, 0.09, -0.02], [0.0, -0.02, 0.16]])
DRAWS = np.array([[0.5, 0.25, 1.0], [1.0, -1.0, 0.5]])


def _likelihood(tagged=True):
    x = ld.scalar("x")
    amps = [ld.parameter(n, initial=float(v)) * x**k
            for k, (n, v) in enumerate(zip("spd", POINT, strict=True))]
    if tagged:
        amps = [a.tagged(w) for a, w in zip(amps, WAVES, strict=True)]
    total = amps[0] + amps[1] + amps[2]
    data = ld.Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0])})
    mc = ld.Dataset.from_arrays(scalars={"x": ACC_X}, weights=ACC_W)
    return ld.Likelihood([ld.ExtendedNLL(ld.Model(total * total), data=data, accepted_mc=mc, name="t")])


GEN = ld.Dataset.from_arrays(scalars={"x": GEN_X}, weights=GEN_W)


def integral(point, waves, xs=GEN_X, ws=GEN_W):
    """``sum w |A_waves|^2`` by the closed form (all waves when ``waves`` is empty)."""
    amp = sum(point[k] * xs**k for k, w in enumerate(WAVES) if not waves or w in waves)
    return math.fsum(ws * amp * amp)


def fraction(point, waves, xs=GEN_X, ws=GEN_W):
    total = integral(point, (), xs, ws)
    if len(waves) == 1:
        return integral(point, waves, xs, ws) / total
    a, b = waves
    both = integral(point, waves, xs, ws)
    return (both - integral(point, (a,), xs, ws) - integral(point, (b,), xs, ws)) / total


def covariance_error(waves, xs=GEN_X, ws=GEN_W):
    """``sqrt(g C g)`` with ``g`` a central finite difference of the closed form."""
    h = 1e-6
    grad = np.array([(fraction(POINT + h * e, waves, xs, ws) - fraction(POINT - h * e, waves, xs, ws))
                     / (2 * h) for e in np.eye(3)])
    return math.sqrt(grad @ COVARIANCE @ grad)


@pytest.fixture(scope="module")
def lik():
    return _likelihood()


@pytest.fixture(scope="module")
def ff(lik):
    return fit_fractions(lik, "t", POINT.tolist(), generated_mc=GEN, covariance=COVARIANCE, ensemble=DRAWS)


def test_fractions_interference_errors_and_draws_on_the_generated_mc(ff):
    assert ff.waves == list(WAVES) and ff.sample == "generated"
    assert list(ff.fractions) == list(WAVES)
    assert list(ff.interference) == [("A", "B"), ("A", "C"), ("B", "C")]
    for key in [*((w,) for w in WAVES), *itertools.combinations(WAVES, 2)]:
        est = ff[key[0]] if len(key) == 1 else ff[key]
        assert est.central == pytest.approx(fraction(POINT, key), rel=1e-13, abs=1e-15), key
        assert est.components["covariance"] == pytest.approx(covariance_error(key), rel=1e-6), key
        assert est.standard_error == est.components["covariance"]
        want = [fraction(d, key) for d in DRAWS]
        assert est.draws.tolist() == pytest.approx(want, rel=1e-13, abs=1e-15), key
    assert ff.total == pytest.approx(integral(POINT, ()), rel=1e-14)
    assert ff.sum() == pytest.approx(1.0, rel=1e-13)  # the three waves make the model


def test_integrals_of_the_whole_model_one_wave_and_two(ff):
    assert ff.integral() == pytest.approx(integral(POINT, ()), rel=1e-14)
    for w in WAVES:
        assert ff.integral(w) == pytest.approx(integral(POINT, (w,)), rel=1e-14)
    assert ff.integral("C", "A") == pytest.approx(integral(POINT, ("A", "C")), rel=1e-14)
    with pytest.raises(KeyError, match=r"no integral of 'A', 'A': the fit fractions have those of one wave "
                                       r"or two of A, B, C, and of the whole model"):
        ff.integral("A", "A")
    with pytest.raises(KeyError, match=r"no integral of 'A', 'B', 'C': .* two of A, B, C,"):
        ff.integral("A", "B", "C")


def test_lookup_by_either_order_and_errors_name_the_waves(ff):
    assert ff["C", "B"] is ff.interference[("B", "C")]
    assert ff["B", "C"] is ff.interference[("B", "C")]
    with pytest.raises(KeyError, match=r"no wave 'F'; waves: A, B, C"):
        ff["F"]
    with pytest.raises(KeyError, match=r"no interference term of 'A' and 'F'; waves: A, B, C"):
        ff["A", "F"]


def test_to_dict_and_repr(ff):
    d = ff.to_dict()
    assert list(d) == ["A", "B", "C", "A x B", "A x C", "B x C"]
    assert d["B x C"] == (ff["B", "C"].central, ff["B", "C"].standard_error)
    assert d["A"][1] == pytest.approx(covariance_error(("A",)), rel=1e-6)
    text = repr(ff).split("\n")
    assert text[0] == "FitFractions (generated MC)"
    s = fraction(POINT, ("A",))
    assert text[1] == f"  {'A':>12s}  {s: .5f} +- {covariance_error(('A',)):.5f}"
    assert len(text) == 7


def test_accepted_mc_without_covariance_a_subset_of_waves(lik):
    ff = lik.fit_fractions("t", POINT.tolist(), waves=["C", "A"])
    assert ff.waves == ["C", "A"] and ff.sample == "accepted"
    assert list(ff.interference) == [("C", "A")]
    assert ff["A"].central == pytest.approx(fraction(POINT, ("A",), ACC_X, ACC_W), rel=1e-13)
    assert ff["A", "C"].central == pytest.approx(fraction(POINT, ("A", "C"), ACC_X, ACC_W), rel=1e-13)
    assert ff.total == pytest.approx(integral(POINT, (), ACC_X, ACC_W), rel=1e-14)
    assert ff["C"].standard_error is None and ff["C"].draws is None
    assert "covariance" not in ff["C"].components
    assert repr(ff).split("\n")[1] == f"  {'C':>12s}  {fraction(POINT, ('C',), ACC_X, ACC_W): .5f}"
    assert ff.sum() != pytest.approx(1.0)  # B is left out


def test_bad_waves_are_model_errors_naming_the_term(lik):
    with pytest.raises(ModelError, match=r"term 't': a wave is named twice in \['A', 'A'\]"):
        fit_fractions(lik, "t", POINT.tolist(), waves=["A", "A"])
    with pytest.raises(ModelError,
                       match=r"term 't': its model has no tagged waves \(tag them with Expr.tagged\)"):
        fit_fractions(_likelihood(tagged=False), "t", POINT.tolist())


def test_an_unknown_wave_is_a_model_error_naming_the_term_and_its_tags(lik):
    with pytest.raises(ModelError, match=r"^term 't': its model has no tag 'F'; its tags: 'A', 'B', 'C'$"):
        fit_fractions(lik, "t", POINT.tolist(), waves=["A", "F"])


def test_a_zero_total_is_an_error_naming_the_fraction(lik):
    with np.errstate(divide="ignore", invalid="ignore"), \
            pytest.raises(ModelError, match=r"^the fit fraction of 'A' is nan \(an integral is zero\)$"):
        fit_fractions(lik, "t", [0.0, 0.0, 0.0])
