"""Line shapes: q, rho, Sheet, Chew-Mandelstam, Blatt-Weisskopf, Breit-Wigners, Flatte (issue 11).

References:

* laddu 0.28.1 itself: each expression written once against laddu's API (``lib`` is
  ``laddu`` or ``laddu_dask``), evaluated on the same random events (``s`` from below the
  pseudo-threshold, negative ``s`` included, to far above threshold; complex ``s``;
  momenta), per-event values within 1e-12 relative; gradients of models with free masses,
  widths, couplings and ``q_r`` against laddu's ``Model.value_and_gradient`` and against
  central finite differences;
* closed forms independent of both: the Blatt-Weisskopf factors from the spherical Hankel
  functions in exact integer arithmetic for every l = 0..8, the BW peak and pole values,
  ``rho -> 1`` at high ``s``, ``Im C = -rho`` above threshold and a real ``C`` below it, the
  one-channel Flatte as the barrier-free relativistic BW.

laddu 0.28.1's l = 6 barrier has a wrong constant in its denominator (18261468225, the l = 7
constant, in place of 108056025 = (11!!)^2), so its B_6 is not 1 at q = q_r; laddu-dask uses
the correct factor (README, "Where laddu-dask differs from laddu"), and the l = 6 comparisons
check that laddu's values are exactly the formula with its constant.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from laddu_reference import agreement, compiled_values, laddu, laddu_values, needs_laddu
from test_gradients import assert_close_to_fd, finite_differences

import laddu_dask as ld
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.data.batch import EventBatch
from laddu_dask.errors import ModelError
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.prepared import PreparedModel

N = 240
RNG = np.random.default_rng(2026)
THRESHOLDS = [(0.4 - 0.5) ** 2, (0.4 + 0.5) ** 2]
S = np.concatenate([RNG.uniform(-0.5, 5.0, N - 6), [THRESHOLDS[0], 0.5, THRESHOLDS[1], 1.21, 1.44, 30.0]])
SCALARS = {
    "s": S,
    "s_im": RNG.uniform(-0.4, 0.4, N),
    "k": RNG.uniform(1e-3, 2.5, N),
}
P4S = {"x": np.column_stack([np.full(N, 2.0), np.zeros(N), np.zeros(N), RNG.uniform(-1, 1, N)])}
COLUMNS = {**SCALARS, **{f"x_{c}": P4S["x"][:, i] for i, c in enumerate(("e", "px", "py", "pz"))}}
PAIRS = [(0.13957, 0.493677), (0.4, 0.5), (0.497611, 0.497611)]
LS = [0, 1, 2, 3, 4, 5, 7, 8]  # l = 6: see the module docstring
#: Events exactly at the threshold and pseudo-threshold of the (0.4, 0.5) pair, where q = 0
#: and the rounding of (m1 -+ m2)^2 decides the value; compared with laddu everywhere else,
#: tested by closed forms here.
AT_THRESHOLD = np.isin(S, THRESHOLDS)


def ours(expr, params=()):
    return compiled_values(expr, COLUMNS, params, n=N)


def theirs(expr, params=None):
    return laddu_values(expr, P4S, SCALARS, params)


def s_of(lib):
    return lib.scalar("s")


def complex_s(lib):
    return lib.scalar("s") + 1j * lib.scalar("s_im")


def hankel_barrier_squared(z: np.ndarray, l: int) -> np.ndarray:  # noqa: E741
    """``B_l(z)^2 = z^l D_l(1) / D_l(z)``, ``D_l(x^2) = |sum_k a_k i^k x^(l-k)|^2 = x^(2l) |x h_l(x)|^2``
    (spherical Hankel function), ``a_k = (l+k)! / (k! (l-k)! 2^k)``, coefficients in exact rationals."""
    f = math.factorial
    a = [Fraction(f(l + k), f(k) * f(l - k) * 2**k) for k in range(l + 1)]
    sign = [(-1) ** (k // 2) for k in range(l + 1)]
    coeffs = [Fraction(0)] * (l + 1)  # coefficient of z^j
    for i, ai in enumerate(a):
        for j, aj in enumerate(a):
            if (i - j) % 2 == 0:  # the real part squared and the imaginary part squared
                coeffs[(2 * l - i - j) // 2] += sign[i] * sign[j] * ai * aj
    z = np.asarray(z, dtype=complex)
    return z**l * float(sum(coeffs)) / sum(float(c) * z**j for j, c in enumerate(coeffs))


# ---------------------------------------------------------------------------------------
# against laddu 0.28.1, event by event
# ---------------------------------------------------------------------------------------
CASES = {}
for _m1, _m2 in PAIRS:
    for _sheet in ("PHYSICAL", "UNPHYSICAL"):
        CASES[f"q {_sheet} {_m1} {_m2}"] = (
            lambda lib, m1=_m1, m2=_m2, sh=_sheet: lib.q(s_of(lib), mass1=m1, mass2=m2,
                                                         sheet=getattr(lib.Sheet, sh)))
        CASES[f"rho {_sheet} {_m1} {_m2}"] = (
            lambda lib, m1=_m1, m2=_m2, sh=_sheet: lib.rho(s_of(lib), mass1=m1, mass2=m2,
                                                           sheet=getattr(lib.Sheet, sh)))
    CASES[f"chew_mandelstam {_m1} {_m2}"] = (
        lambda lib, m1=_m1, m2=_m2: lib.chew_mandelstam(s_of(lib), mass1=m1, mass2=m2))
    CASES[f"chew_mandelstam complex s {_m1} {_m2}"] = (
        lambda lib, m1=_m1, m2=_m2: lib.chew_mandelstam(complex_s(lib), mass1=m1, mass2=m2))
CASES["q default sheet complex s"] = lambda lib: lib.q(complex_s(lib), mass1=0.3, mass2=0.4)
CASES["rho default sheet"] = lambda lib: lib.rho(s_of(lib), mass1=0.3, mass2=0.4)
CASES["q of Vec4 masses"] = lambda lib: lib.q(lib.Vec4.event("x").m2(), mass1=0.5, mass2=0.7)
for _l in LS:
    for _kind in ("FULL", "TENSOR"):
        CASES[f"blatt_weisskopf real q l={_l} {_kind}"] = (
            lambda lib, l=_l, kind=_kind: lib.blatt_weisskopf(lib.scalar("k"), l=l,
                                                              kind=getattr(lib.BarrierKind, kind)))
        CASES[f"blatt_weisskopf complex q l={_l} {_kind}"] = (
            lambda lib, l=_l, kind=_kind: lib.blatt_weisskopf(
                lib.q(s_of(lib), mass1=0.4, mass2=0.5), l=l, kind=getattr(lib.BarrierKind, kind)))
        CASES[f"blatt_weisskopf_custom l={_l} {_kind}"] = (
            lambda lib, l=_l, kind=_kind: lib.blatt_weisskopf_custom(
                lib.scalar("k"), l=lib.L(l), kind=getattr(lib.BarrierKind, kind), q_r=0.35))
    CASES[f"relativistic_breit_wigner l={_l}"] = (
        lambda lib, l=_l: lib.relativistic_breit_wigner(s_of(lib), mass=1.3, width=0.15, mass1=0.4, mass2=0.5,
                                                        l=l))
    CASES[f"relativistic_breit_wigner complex s l={_l}"] = (
        lambda lib, l=_l: lib.relativistic_breit_wigner(complex_s(lib), mass=1.3, width=0.15, mass1=0.14,
                                                        mass2=0.49, l=l))
    CASES[f"relativistic_breit_wigner_custom q_r l={_l}"] = (
        lambda lib, l=_l: lib.relativistic_breit_wigner_custom(
            s_of(lib), mass=1.3, width=0.15, mass1=0.4, mass2=0.5, l=l, q_r=0.25))
for _l in range(9):
    CASES[f"relativistic_breit_wigner_custom no barriers l={_l}"] = (
        lambda lib, l=_l: lib.relativistic_breit_wigner_custom(
            s_of(lib), mass=1.3, width=0.15, mass1=0.4, mass2=0.5, l=l, barrier_factors=False))
CASES["relativistic_breit_wigner default l"] = lambda lib: lib.relativistic_breit_wigner(
    s_of(lib), mass=1.1, width=0.2, mass1=0.14, mass2=0.14)
CASES["breit_wigner"] = lambda lib: lib.breit_wigner(s_of(lib), mass=1.3, width=0.15)
CASES["breit_wigner complex s"] = lambda lib: lib.breit_wigner(complex_s(lib), mass=1.3, width=0.15)


@needs_laddu
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_laddu(name):
    build = CASES[name]
    got, want = ours(build(ld))[~AT_THRESHOLD], theirs(build(laddu))[~AT_THRESHOLD]
    assert np.all(np.isfinite(want)), name
    assert agreement(got, want) < 1e-12, (name, agreement(got, want))


@needs_laddu
@pytest.mark.parametrize("l", range(9))
def test_barrier_matrix_matches_laddu(l):  # noqa: E741
    m1s, m2s, poles = [0.13957, 0.4, 0.497611], [0.13957, 0.5, 0.497611], [0.98, 1.5, 1.7]
    mine = ld.blatt_weisskopf_barriers(ld.scalar("s"), channel_mass_1=m1s, channel_mass_2=m2s,
                                       pole_masses=poles, l=l, q_r=0.3)
    lad = laddu.blatt_weisskopf_barriers(laddu.scalar("s"), channel_mass_1=laddu.vector(m1s),
                                         channel_mass_2=laddu.vector(m2s), pole_masses=laddu.vector(poles),
                                         l=l, q_r=0.3)
    assert mine.shape == (3, 3)
    for c in range(3):
        for p in range(3):
            got, want = ours(mine.at(c, p))[~AT_THRESHOLD], theirs(lad.at(c, p))[~AT_THRESHOLD]
            if l == 6:  # a ratio of two B_6: laddu's wrong constant cancels only partly
                want_ratio = ours(ld.blatt_weisskopf_custom(ld.q(ld.scalar("s"), mass1=m1s[c], mass2=m2s[c]),
                                                            l=6, q_r=0.3))
                want = want_ratio[~AT_THRESHOLD] / complex(ld.blatt_weisskopf_custom(
                    ld.q(poles[p] ** 2, mass1=m1s[c], mass2=m2s[c]), l=6, q_r=0.3).attr)
            assert agreement(got, want) < 1e-12, (c, p, agreement(got, want))


@needs_laddu
def test_laddu_l6_is_its_formula_with_the_l7_constant():
    """The one documented difference: laddu's B_6 is the formula with 18261468225."""
    k = SCALARS["k"]
    z = (k / 0.1973) ** 2
    den = [1, 21, 630, 18900, 496125, 9823275, 18261468225]
    laddu_formula = np.sqrt(118394977 * z**6 / sum(c * z ** (6 - j) for j, c in enumerate(den)))
    want = theirs(laddu.blatt_weisskopf(laddu.scalar("k"), l=6, kind=laddu.BarrierKind.FULL))
    assert agreement(want, laddu_formula) < 1e-12
    got = ours(ld.blatt_weisskopf(ld.scalar("k"), l=6, kind=ld.BarrierKind.FULL))
    assert agreement(got, np.sqrt(hankel_barrier_squared(z, 6))) < 1e-12
    assert complex(ld.blatt_weisskopf(0.1973, l=6).attr) == pytest.approx(1.0, rel=1e-15)


# ---------------------------------------------------------------------------------------
# gradients: against laddu and central finite differences
# ---------------------------------------------------------------------------------------
def lineshape_model(lib, with_chew_mandelstam=True):
    """Free masses, widths, couplings, a daughter mass and q_r."""
    s = lib.scalar("s")
    m, w = lib.parameter("m", initial=1.3), lib.parameter("w", initial=0.15)
    qr = lib.parameter("qr", initial=0.25)
    rbw = lib.relativistic_breit_wigner_custom(s, mass=m, width=w, mass1=0.4, mass2=0.5, l=3, q_r=qr)
    bw = lib.breit_wigner(s, mass=lib.parameter("m2", initial=1.7), width=lib.parameter("w2", initial=0.1))
    bar = lib.blatt_weisskopf_custom(lib.q(s, mass1=0.14, mass2=lib.parameter("md", initial=0.5)),
                                     l=2, kind=lib.BarrierKind.TENSOR, q_r=qr)
    out = rbw * lib.complex(lib.parameter("c_re"), lib.parameter("c_im")) + bw * bar
    if with_chew_mandelstam:
        out = out + lib.chew_mandelstam(s, mass1=0.14, mass2=lib.parameter("md", initial=0.5)) * w
    return out


PARAMS = [1.35, 0.12, 0.3, 0.7, -0.4, 1.65, 0.09, 0.52]  # m, w, qr, c_re, c_im, m2, w2, md


@needs_laddu
def test_gradient_matches_laddu_above_threshold():
    """laddu 0.28.1's ``Model.evaluate``/``value_and_gradient`` differ from its own
    ``Dataset.evaluate`` (and the closed forms) wherever a square root or logarithm has a
    negative or complex argument: below threshold, for negative s, and in the Chew-Mandelstam
    log (its imaginary part is dropped), so the comparison with laddu's gradient is made
    above every threshold and without the Chew-Mandelstam term; ``Dataset.evaluate`` agrees
    with us everywhere (test_values_match_laddu)."""
    above = S > 0.81 + 1e-9
    cm = CompiledModel.from_expr(lineshape_model(ld, False))
    theirs_model = laddu.Model(lineshape_model(laddu, False))
    assert cm.parameter_names == list(theirs_model.parameter_names) == [
        "m", "w", "qr", "c_re", "c_im", "m2", "w2", "md"]
    cache = cm.event_cache({c: COLUMNS[c] for c in cm.columns})
    value, jac = cm.values_and_jacobian(cache, PARAMS)
    ds = laddu.Dataset.from_arrays(p4s=P4S, scalars=SCALARS)
    lv, lg = theirs_model.value_and_gradient(ds, parameters=PARAMS)
    assert agreement(value[above], np.asarray(lv)[above]) < 1e-12
    lg = np.asarray(lg)[above]
    assert np.all(np.abs(jac[above] - lg) <= 1e-10 * np.abs(lg).max(axis=0))


def test_gradient_matches_finite_differences_everywhere():
    """The full model (below thresholds, negative s, Chew-Mandelstam) against central
    differences; the threshold events, where B_l / q^l is 0 / 0, left out."""
    cm = CompiledModel.from_expr(lineshape_model(ld))
    cache = cm.event_cache({c: COLUMNS[c][~AT_THRESHOLD] for c in cm.columns})
    n = int((~AT_THRESHOLD).sum())
    params = np.array(PARAMS)
    value, jac = cm.values_and_jacobian(cache, PARAMS)
    assert np.all(np.isfinite(value)) and np.all(np.isfinite(jac))
    fd = finite_differences(cm, cache, params, n)
    coarse = finite_differences(cm, cache, params, n, rel_step=4e-6)
    assert_close_to_fd(jac, fd, value, coarse)


def test_flatte_gradient_matches_finite_differences():
    s = ld.scalar("s")
    g1, g2 = ld.parameter("g1", initial=0.165), ld.parameter("g2", initial=0.69)
    expr = ld.flatte(s, mass=ld.parameter("m0", initial=0.965), couplings=[g1, g2],
                     channels=[(0.13957, 0.13957), (0.493677, ld.parameter("mk", initial=0.493677))])
    cm = CompiledModel.from_expr(expr)
    cache = cm.event_cache({c: COLUMNS[c] for c in cm.columns})
    params = np.array([0.97, 0.17, 0.7, 0.49])
    value, jac = cm.values_and_jacobian(cache, list(params))
    assert_close_to_fd(jac, finite_differences(cm, cache, params, N), value,
                       finite_differences(cm, cache, params, N, rel_step=4e-6))


def test_event_parts_are_cached_and_fused_kernels_agree():
    """With free masses and widths the breakup momentum at s and its barrier are event-only
    (cached), the pole-side momentum and barrier parameter-only; the fused kernel gives the
    array kernel's values and gradients."""
    s = ld.scalar("s")
    m, w = ld.parameter("m", initial=1.3), ld.parameter("w", initial=0.15)
    amp = (ld.relativistic_breit_wigner(s, mass=m, width=w, mass1=0.4, mass2=0.5, l=2)
           * ld.blatt_weisskopf(ld.q(s, mass1=0.4, mass2=0.5), l=2)
           + ld.parameter("g") * ld.flatte(s, mass=m, couplings=[w, 0.5],
                                           channels=[(0.14, 0.14), (0.49, 0.49)])
           + ld.chew_mandelstam(s, mass1=0.14, mass2=0.49) * ld.breit_wigner(s, mass=m, width=w))
    model = amp.norm_sqr()
    cm = CompiledModel.from_expr(model)
    # every square root and log is of event quantities alone (cached) or of parameters alone
    assert not {n.op for n in cm.split.mixed_nodes} & {"sqrt", "log", "powi"}, cm.split.mixed_nodes
    params = [1.35, 0.12, 0.8]
    keep = ~AT_THRESHOLD
    cols = {c: COLUMNS[c][keep] for c in cm.columns}
    cache = cm.event_cache(cols)
    value, jac = cm.values_and_jacobian(cache, params)
    pm = PreparedModel.prepare(cm, Execution())
    batch = EventBatch(columns=cols, weights=np.ones(int(keep.sum())))
    fused_value, fused_jac = pm.evaluate_batch_with_gradient(params, batch)
    np.testing.assert_allclose(fused_value, value, rtol=1e-12)
    np.testing.assert_allclose(fused_jac, jac, rtol=1e-11, atol=1e-12 * np.abs(jac).max())


# ---------------------------------------------------------------------------------------
# closed forms
# ---------------------------------------------------------------------------------------
def numpy_q(s, m1, m2):
    s = np.asarray(s, dtype=complex)
    return np.sqrt((s - (m1 + m2) ** 2) * (s - (m1 - m2) ** 2)) / (2 * np.sqrt(s))


@pytest.mark.parametrize("l", range(9))
def test_barrier_factors_are_the_spherical_hankel_functions(l):  # noqa: E741
    k = SCALARS["k"]
    z = (k / 0.1973) ** 2
    full = ours(ld.blatt_weisskopf(ld.scalar("k"), l=l, kind=ld.BarrierKind.FULL))
    assert agreement(full, np.sqrt(hankel_barrier_squared(z, l))) < 1e-12
    tensor = ours(ld.blatt_weisskopf(ld.scalar("k"), l=l, kind=ld.BarrierKind.TENSOR))
    assert agreement(tensor * k**l, full) < 1e-12
    # 1 at q = q_r for any q_r; q^l at threshold; a constant at high momentum
    for q_r in (0.1973, 0.3, 1.0):
        assert complex(ld.blatt_weisskopf_custom(q_r, l=l, q_r=q_r).attr) == pytest.approx(1.0, rel=1e-14)
    small = 1e-4
    lead = np.sqrt(hankel_barrier_squared(np.array([1e-8]), l)[0].real / 1e-8**l)
    got = complex(ld.blatt_weisskopf(small, l=l, kind=ld.BarrierKind.TENSOR).attr).real
    assert got == pytest.approx(lead / 0.1973**l, rel=1e-6)
    high = complex(ld.blatt_weisskopf(1e5, l=l).attr).real
    assert high == pytest.approx(math.sqrt(hankel_barrier_squared(np.array([1e12]), l)[0].real), rel=1e-9)


def test_breit_wigner_peaks_at_the_mass_and_has_its_pole_value():
    grid = np.linspace(1.0, 2.5, 30001)
    cols = {"s": grid}
    for mass, width in [(1.3, 0.15), (1.5, 0.01)]:
        bw = compiled_values(ld.breit_wigner(ld.scalar("s"), mass=mass, width=width), cols, n=grid.size)
        assert grid[np.argmax(np.abs(bw))] == pytest.approx(mass**2, abs=1e-4)
        assert complex(ld.breit_wigner(mass**2, mass=mass, width=width).attr) == 1j / (mass * width)
    for l in range(9):  # noqa: E741
        for custom in ({}, {"q_r": 0.4}, {"barrier_factors": False}):
            rbw = ld.relativistic_breit_wigner_custom(1.3**2, mass=1.3, width=0.15, mass1=0.4, mass2=0.5, l=l,
                                                      **custom)
            assert complex(rbw.attr) == pytest.approx(1j / (1.3 * 0.15), rel=1e-13)


def test_relativistic_breit_wigner_default_is_the_custom_one_and_ksks_graph():
    s = ld.scalar("s")
    a = ld.relativistic_breit_wigner(s, mass=1.3, width=0.1, mass1=0.3, mass2=0.2, l=2)
    assert a is ld.relativistic_breit_wigner_custom(s, mass=1.3, width=0.1, mass1=0.3, mass2=0.2, l=2)
    assert a is ld.relativistic_breit_wigner_custom(s, mass=1.3, width=0.1, mass1=0.3, mass2=0.2, l=2,
                                                    barrier_factors=True, q_r=0.1973)
    # the running width written out: Gamma0 (M/sqrt s)(q/q0) B^2/B0^2, physical-sheet momenta
    sv = S
    q, q0 = numpy_q(sv, 0.3, 0.2), numpy_q(1.3**2, 0.3, 0.2)
    b2 = hankel_barrier_squared((q / 0.1973) ** 2, 2) / hankel_barrier_squared((q0 / 0.1973) ** 2, 2)
    want = 1 / (1.3**2 - sv - 1j * 1.3 * 0.1 * (1.3 / np.sqrt(sv + 0j)) * (q / q0) * b2)
    assert agreement(ours(a), want) < 1e-11


def test_at_threshold_the_momentum_vanishes():
    """At s = (m1 +- m2)^2 exactly: q = 0, the barrier vanishes for l > 0, the running width
    is zero (the relativistic BW is 1 / (M^2 - s)), and B_l / q^l is 0 / 0 (nan, as in laddu)."""
    at = S[AT_THRESHOLD]
    qv = ours(ld.q(ld.scalar("s"), mass1=0.4, mass2=0.5))[AT_THRESHOLD]
    assert np.array_equal(qv, [0j, 0j])
    for l in range(9):  # noqa: E741
        rbw = ours(ld.relativistic_breit_wigner(ld.scalar("s"), mass=1.3, width=0.15, mass1=0.4, mass2=0.5,
                                                l=l))[AT_THRESHOLD]
        assert agreement(rbw, 1 / (1.3**2 - at)) < 1e-15
        full = ours(ld.blatt_weisskopf(ld.q(ld.scalar("s"), mass1=0.4, mass2=0.5), l=l))[AT_THRESHOLD]
        assert np.array_equal(full, [1.0, 1.0] if l == 0 else [0.0, 0.0])
    tensor = ours(ld.blatt_weisskopf(ld.q(ld.scalar("s"), mass1=0.4, mass2=0.5), l=1,
                                     kind=ld.BarrierKind.TENSOR))[AT_THRESHOLD]
    assert np.all(np.isnan(tensor))


def test_q_and_rho_on_both_sheets():
    m1, m2 = 0.4, 0.5
    phys = ours(ld.q(ld.scalar("s"), mass1=m1, mass2=m2))
    unphys = ours(ld.q(ld.scalar("s"), mass1=m1, mass2=m2, sheet=ld.Sheet.UNPHYSICAL))
    assert np.array_equal(unphys, -phys)
    assert agreement(phys, numpy_q(S, m1, m2)) < 1e-13
    above, below = S > (m1 + m2) ** 2, (S > (m1 - m2) ** 2) & (S < (m1 + m2) ** 2)
    assert above.sum() > 20 and below.sum() > 20
    assert np.all(phys[above].real > 0) and np.all(phys[above].imag == 0)
    assert np.all(phys[below].real == 0) and np.all(phys[below].imag > 0)  # +i|q| physical
    assert np.all(unphys[below].imag < 0)
    r = ours(ld.rho(ld.scalar("s"), mass1=m1, mass2=m2))
    assert agreement(r, 2 * phys / np.sqrt(S + 0j)) < 1e-13
    for big in (1e6, 1e10):
        assert complex(ld.rho(big, mass1=m1, mass2=m2).attr) == pytest.approx(1.0, abs=1e-5 * 1e6 / big)


def test_chew_mandelstam_imaginary_part_and_below_threshold():
    m1, m2 = 0.13957, 0.493677
    c = ours(ld.chew_mandelstam(ld.scalar("s"), mass1=m1, mass2=m2))
    r = ours(ld.rho(ld.scalar("s"), mass1=m1, mass2=m2))
    above = S > (m1 + m2) ** 2
    assert np.allclose(c[above].imag, -r[above].real, rtol=1e-12, atol=1e-15)  # Im C = -rho
    between = (S > (m2 - m1) ** 2) & (S < (m1 + m2) ** 2)
    assert between.sum() >= 5
    assert np.all(np.abs(c[between].imag) < 1e-12 * np.abs(c[between]))  # real below threshold
    # equal masses above threshold: chi = rho^2, C = rho (log((1 + rho)/(1 - rho)) - i pi) / pi
    s = 2.0
    rho2 = math.sqrt(1 - 4 * 0.3**2 / s)
    want = rho2 * (math.log((1 + rho2) / (1 - rho2)) - 1j * math.pi) / math.pi
    got = complex(ld.chew_mandelstam(s, mass1=0.3, mass2=0.3).attr)
    assert got == pytest.approx(complex(want), rel=1e-13)


def test_flatte_closed_forms():
    s = ld.scalar("s")
    # one channel: the barrier-free relativistic BW with g = Gamma0 / rho(M^2)
    g = 0.15 / complex(ld.rho(1.3**2, mass1=0.4, mass2=0.5).attr).real
    one = ours(ld.flatte(s, mass=1.3, couplings=[g], channels=[(0.4, 0.5)]))
    rbw = ours(ld.relativistic_breit_wigner_custom(s, mass=1.3, width=0.15, mass1=0.4, mass2=0.5, l=0,
                                                   barrier_factors=False))
    assert agreement(one, rbw) < 1e-12
    # two channels, written out; below the KK threshold the closed channel shifts the real part
    mpi, mk = 0.13957, 0.493677
    f0 = ours(ld.flatte(s, mass=0.965, couplings=[0.165, 0.694], channels=[(mpi, mpi), (mk, mk)]))
    rho_pi = 2 * numpy_q(S, mpi, mpi) / np.sqrt(S + 0j)
    rho_k = 2 * numpy_q(S, mk, mk) / np.sqrt(S + 0j)
    want = 1 / (0.965**2 - S - 1j * 0.965 * (0.165 * rho_pi + 0.694 * rho_k))
    assert agreement(f0, want) < 1e-12
    closed = (S > 4 * mpi**2) & (S < 4 * mk**2)
    assert np.all(rho_k[closed].real == 0) and closed.sum() > 10


def test_complex_s_breit_wigner_and_json_forms():
    assert complex(ld.breit_wigner(1.2 + 0.3j, mass=1.0, width=0.2).attr) == pytest.approx(
        1 / (1.0 - (1.2 + 0.3j) - 0.2j), rel=1e-15)
    assert repr(ld.Sheet.PHYSICAL) == "Sheet.PHYSICAL" and repr(ld.BarrierKind.TENSOR) == "BarrierKind.TENSOR"
    assert ld.Sheet.UNPHYSICAL.to_json() == '"Unphysical"' and ld.BarrierKind.FULL.to_json() == '"Full"'
    assert ld.Sheet.from_json('"Physical"') is ld.Sheet.PHYSICAL
    assert ld.BarrierKind.from_json(ld.BarrierKind.TENSOR.to_json()) is ld.BarrierKind.TENSOR
    if laddu is not None:
        assert laddu.Sheet.UNPHYSICAL.to_json() == ld.Sheet.UNPHYSICAL.to_json()
        assert laddu.BarrierKind.TENSOR.to_json() == ld.BarrierKind.TENSOR.to_json()
        assert repr(laddu.Sheet.PHYSICAL) == repr(ld.Sheet.PHYSICAL)


# ---------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------
def test_bad_arguments_are_model_errors_naming_the_argument():
    s, k = ld.scalar("s"), ld.scalar("k")
    rbw = {"mass": 1.3, "width": 0.1, "mass1": 0.3, "mass2": 0.2}
    with pytest.raises(ModelError, match=r"l = 0\.\.8, got l = 9"):
        ld.blatt_weisskopf(k, l=9)
    with pytest.raises(ModelError, match=r"l = 0\.\.8, got l = -1"):
        ld.relativistic_breit_wigner(s, l=-1, **rbw)
    with pytest.raises(ModelError, match="l must be an integer, got 1.5"):
        ld.relativistic_breit_wigner_custom(s, l=1.5, **rbw)
    with pytest.raises(ModelError, match="l must be an integer, got True"):
        ld.blatt_weisskopf_custom(k, l=True, q_r=0.2)
    with pytest.raises(ModelError, match="needs the orbital angular momentum l"):
        ld.blatt_weisskopf(k)
    with pytest.raises(ModelError, match=r"kind must be BarrierKind\.FULL or BarrierKind\.TENSOR, got 'F"):
        ld.blatt_weisskopf(k, l=1, kind="FULL")
    with pytest.raises(ModelError, match=r"kind must be .* got Sheet\.PHYSICAL"):
        ld.blatt_weisskopf_custom(k, l=1, kind=ld.Sheet.PHYSICAL, q_r=0.2)
    with pytest.raises(ModelError, match=r"sheet must be Sheet\.PHYSICAL or Sheet\.UNPHYSICAL, got 'phys"):
        ld.q(s, mass1=0.1, mass2=0.2, sheet="physical")
    with pytest.raises(ModelError, match=r"sheet must be .* got BarrierKind\.FULL"):
        ld.rho(s, mass1=0.1, mass2=0.2, sheet=ld.BarrierKind.FULL)
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ModelError, match="q_r must be positive and finite"):
            ld.blatt_weisskopf_custom(k, l=1, q_r=bad)
        with pytest.raises(ModelError, match="q_r must be positive and finite"):
            ld.relativistic_breit_wigner_custom(s, l=1, q_r=bad, **rbw)
    with pytest.raises(ModelError, match="q_r must be real"):
        ld.blatt_weisskopf_barriers(s, channel_mass_1=[0.1], channel_mass_2=[0.1], pole_masses=[1.0], l=1,
                                    q_r=ld.parameter("r") + 1j)
    with pytest.raises(ModelError, match="barrier_factors must be True or False, got 1"):
        ld.relativistic_breit_wigner_custom(s, l=1, barrier_factors=1, **rbw)
    with pytest.raises(ModelError, match="mass2 must be real"):
        ld.q(s, mass1=0.1, mass2=ld.scalar("k") * 1j)
    with pytest.raises(ModelError, match="chew_mandelstam needs non-zero daughter masses, got mass1 = 0"):
        ld.chew_mandelstam(s, mass1=0.0, mass2=0.5)
    with pytest.raises(ModelError, match="same length, got 2 and 1"):
        ld.blatt_weisskopf_barriers(s, channel_mass_1=[0.1, 0.2], channel_mass_2=[0.1], pole_masses=[1.0],
                                    l=1)
    with pytest.raises(ModelError, match="at least one channel and one pole"):
        ld.blatt_weisskopf_barriers(s, channel_mass_1=[0.1], channel_mass_2=[0.1], pole_masses=[], l=1)
    with pytest.raises(ModelError, match="one coupling per channel .* got 1 couplings and 2 channels"):
        ld.flatte(s, mass=1.0, couplings=[0.1], channels=[(0.1, 0.1), (0.2, 0.2)])
    with pytest.raises(ModelError, match=r"flatte channel 0 must be a pair of daughter masses"):
        ld.flatte(s, mass=1.0, couplings=[0.1], channels=[(0.1, 0.1, 0.1)])
    with pytest.raises(ModelError, match=r"couplings\[0\] must be real"):
        ld.flatte(s, mass=1.0, couplings=[1j * s], channels=[(0.1, 0.1)])
    with pytest.raises(ModelError, match="not a Sheet in JSON"):
        ld.Sheet.from_json('"Full"')
