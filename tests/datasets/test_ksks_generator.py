"""Tests of the project's K_S K_S toy generator and of the laddu reference likelihood.

References: ``tests/ksks_reference.py`` (the toy's definition computed another way: a 4x4
Lorentz matrix and Lorentz invariants for the angles, SciPy's spherical harmonics, the
generating densities integrated by quadrature), hand-computed values, ``math.fsum`` and laddu.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from laddu_dask import ksks
from laddu_dask.errors import ParameterError, SchemaError

try:
    from tests import ksks_reference as kr
    from tests import laddu_reference as lr
except ImportError:  # pytest's default "prepend" import mode puts tests/ on sys.path
    import ksks_reference as kr
    import laddu_reference as lr

needs_laddu = pytest.mark.skipif(not lr.laddu_available(), reason="laddu is not installed")


@pytest.fixture(scope="module")
def sample():
    """A small generated data / accepted-MC pair (module-wide, deterministic)."""
    return ksks.generate(n_data=4000, n_mc=12000, seed=2024)


# --- agreement with the toy's definition (tests/ksks_reference.py) --------------------------


def test_truth_and_names_match_the_laddu_reference():
    """The toy's truth is the one the laddu reference likelihood fits."""
    assert ksks.TRUTH == lr.TRUTH
    assert ksks.PARAMETER_NAMES == lr.PARAMETER_NAMES == tuple(lr.TRUTH)


def test_constants_are_the_definition():
    """PDG masses, the 8.5 GeV beam, m(X) in [1, 2] GeV and the |t| slope of 3 GeV^-2."""
    assert (ksks.M_KS, ksks.M_PROTON, ksks.E_BEAM) == (kr.M_KS, kr.M_PROTON, kr.E_BEAM)
    assert (ksks.MASS_RANGE, ksks.T_SLOPE) == (kr.MASS_RANGE, kr.T_SLOPE)


def test_angles_match_a_lorentz_matrix_boost_and_the_invariants():
    p4, m, costheta, phi = ksks.phase_space(3000, np.random.default_rng(11))
    s, ct, ph = ksks.angles(p4)
    s_ref, ct_ref, ph_ref = kr.angles(p4)
    np.testing.assert_allclose(s, s_ref, rtol=1e-12)
    np.testing.assert_allclose(ct, ct_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ph, ph_ref, rtol=0, atol=1e-9)
    np.testing.assert_allclose(ct, kr.costheta_invariant(p4), rtol=0, atol=1e-9)
    # and the generator put kshort1 at the angles it drew
    np.testing.assert_allclose(ct_ref, costheta, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ph_ref, phi, rtol=0, atol=1e-9)


@pytest.mark.parametrize("params", [ksks.TRUTH, dict(ksks.TRUTH, d1_re=0.3, s_width=0.2)])
def test_intensity_matches_scipy_harmonics_and_breit_wigners(params):
    rng = np.random.default_rng(12)
    m = rng.uniform(1.0, 2.0, 2000)
    ct, phi = rng.uniform(-1, 1, 2000), rng.uniform(-math.pi, math.pi, 2000)
    np.testing.assert_allclose(
        ksks.truth_intensity(m**2, ct, phi, params), kr.intensity(m**2, ct, phi, params), rtol=1e-12
    )


def test_acceptance_hand_computed():
    """0.5 (1 + 0.3 cos theta) (1 - 0.2 cos 2 phi) (0.7 + 0.3 (m - 1 GeV)), at hand-worked points."""
    ct = np.array([1.0, -1.0, 0.0, 0.5])
    phi = np.array([0.0, math.pi / 2, math.pi / 4, math.pi])
    m = np.array([2.0, 1.0, 1.5, 1.2])
    # 0.5*1.3*0.8*1.0; 0.5*0.7*1.2*0.7; 0.5*1.0*1.0*0.85; 0.5*1.15*0.8*0.76
    want = np.array([0.52, 0.294, 0.425, 0.3496])
    np.testing.assert_allclose(ksks.acceptance(ct, phi, m), want, rtol=1e-14)


@pytest.mark.parametrize(
    ("observable", "reference"),
    [
        ("abs_t", lambda t: t),
        ("proton_momentum", kr.proton_lab_momentum),
    ],
)
def test_phase_space_distribution_matches_the_generating_densities(observable, reference):
    """Mean |t| and mean lab proton momentum of 40,000 events against the integrals of the
    densities (m flat, |t| exponential between its limits): pulls within 5 standard errors."""
    n = 40_000
    p4, _, _, _ = ksks.phase_space(n, np.random.default_rng(1))
    target = np.array([ksks.M_PROTON, 0.0, 0.0, 0.0])
    q = target - p4["proton"]
    values = {"abs_t": -(q[:, 0] ** 2 - (q[:, 1:] ** 2).sum(1)),
              "proton_momentum": np.linalg.norm(p4["proton"][:, 1:], axis=1)}[observable]
    want = kr.expectation(reference)
    pull = (values.mean() - want) / (values.std() / math.sqrt(n))
    assert abs(pull) < 5.0, (observable, values.mean(), want)


def test_abs_t_stays_within_its_kinematic_limits():
    p4, m, _, _ = ksks.phase_space(5000, np.random.default_rng(7))
    q = np.array([ksks.M_PROTON, 0.0, 0.0, 0.0]) - p4["proton"]
    abs_t = -(q[:, 0] ** 2 - (q[:, 1:] ** 2).sum(1))
    limits = np.array([kr.abs_t_limits(x) for x in m])
    assert (abs_t >= limits[:, 0] - 1e-9).all() and (abs_t <= limits[:, 1] + 1e-9).all()


def test_spherical_harmonics_match_scipy():
    special = pytest.importorskip("scipy.special")
    rng = np.random.default_rng(4)
    ct, phi = rng.uniform(-1, 1, 300), rng.uniform(-math.pi, math.pi, 300)
    for l in range(5):
        for m in range(-l, l + 1):
            ref = special.sph_harm_y(l, m, np.arccos(ct), phi)
            np.testing.assert_allclose(
                ksks.spherical_harmonic(l, m, ct, phi), ref, rtol=1e-12, atol=1e-13
            )


# --- kinematics of our own generator --------------------------------------------------------


def _mass2(p):
    return p[:, 0] ** 2 - (p[:, 1:] ** 2).sum(1)


def test_generated_events_conserve_four_momentum_and_masses():
    p4, m, _, _ = ksks.phase_space(5000, np.random.default_rng(5))
    initial = p4["beam"] + np.array([ksks.M_PROTON, 0.0, 0.0, 0.0])
    final = p4["proton"] + p4["kshort1"] + p4["kshort2"]
    np.testing.assert_allclose(final, initial, rtol=0, atol=1e-11)
    np.testing.assert_allclose(_mass2(p4["beam"]), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.sqrt(_mass2(p4["proton"])), ksks.M_PROTON, rtol=1e-10)
    np.testing.assert_allclose(np.sqrt(_mass2(p4["kshort1"])), ksks.M_KS, rtol=1e-10)
    np.testing.assert_allclose(np.sqrt(_mass2(p4["kshort2"])), ksks.M_KS, rtol=1e-9)
    np.testing.assert_allclose(np.sqrt(_mass2(p4["kshort1"] + p4["kshort2"])), m, rtol=1e-12)
    assert ((m >= 1.0) & (m <= 2.0)).all()


def test_angles_recovered_from_four_vectors():
    p4, m, costheta, phi = ksks.phase_space(5000, np.random.default_rng(6))
    s, ct, ph = ksks.angles(p4)
    np.testing.assert_allclose(s, m**2, rtol=1e-12)
    np.testing.assert_allclose(ct, costheta, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ph, phi, rtol=0, atol=1e-9)


def test_generated_data_and_mc_samples(sample):
    data, mc = sample
    assert set(data) == set(mc) == set(ksks.P4_NAMES)
    assert all(v.shape == (4000, 4) and v.dtype == np.float64 for v in data.values())
    assert all(v.shape == (12000, 4) for v in mc.values())
    s_d, _, _ = ksks.angles(data)
    s_m, ct_m, phi_m = ksks.angles(mc)
    # data follow the resonances: mass within 1.3-1.7 GeV far more often than phase space
    near = lambda s: np.mean((np.sqrt(s) > 1.3) & (np.sqrt(s) < 1.7))  # noqa: E731
    assert near(s_d) > 0.75 and abs(near(s_m) - 0.4) < 0.05
    # acceptance shapes the MC: <costheta> = 0.3 <ct^2> = 0.1, <cos 2 phi> = -0.1
    assert abs(ct_m.mean() - 0.1) < 0.02
    assert abs(np.cos(2 * phi_m).mean() + 0.1) < 0.02


def test_generate_is_deterministic():
    a = ksks.generate(n_data=300, n_mc=500, seed=9)
    b = ksks.generate(n_data=300, n_mc=500, seed=9)
    c = ksks.generate(n_data=300, n_mc=500, seed=10)
    for x, y in zip(a, b, strict=True):
        for name in ksks.P4_NAMES:
            np.testing.assert_array_equal(x[name], y[name])
    assert not np.array_equal(a[0]["kshort1"], c[0]["kshort1"])
    empty, mc = ksks.generate(n_data=0, n_mc=3, seed=1)
    assert empty["beam"].shape == (0, 4) and mc["beam"].shape == (3, 4)


def test_bad_input_errors():
    with pytest.raises(ValueError, match="n_data must be a non-negative integer, got -1"):
        ksks.generate(n_data=-1)
    with pytest.raises(ValueError, match="n_mc must be a non-negative integer, got 2.5"):
        ksks.generate(n_data=1, n_mc=2.5)
    with pytest.raises(SchemaError, match="missing four-vector 'kshort2'"):
        ksks.angles({"beam": np.zeros((1, 4)), "kshort1": np.zeros((1, 4))})
    good = {"beam": np.zeros((2, 4)), "kshort1": np.zeros((2, 4)), "kshort2": np.zeros((2, 4))}
    with pytest.raises(SchemaError, match=r"four-vector 'beam' must have shape \(n, 4\)"):
        ksks.angles(dict(good, beam=np.zeros((2, 3))))
    with pytest.raises(SchemaError, match="different lengths"):
        ksks.angles(dict(good, kshort1=np.zeros((3, 4))))
    with pytest.raises(ParameterError, match="missing parameter 'd2_im'"):
        params = {k: v for k, v in ksks.TRUTH.items() if k != "d2_im"}
        ksks.truth_intensity(np.ones(1), np.zeros(1), np.zeros(1), params)
    with pytest.raises(ValueError, match=r"\|m\| <= l"):
        ksks.spherical_harmonic(1, 2, np.zeros(1), np.zeros(1))
    with pytest.raises(ValueError, match="parts must be a positive integer, got 0"):
        ksks.write_sample("unused-dir-never-created", n_data=1, n_mc=1, parts=0)


# --- Parquet output ------------------------------------------------------------------------

_COLUMNS = [f"{n}_{c}" for n in ksks.P4_NAMES for c in ("e", "px", "py", "pz")] + ["weight"]


def _read(path):
    table = pq.read_table(path)
    assert table.column_names == _COLUMNS
    return table


@pytest.mark.parametrize("parts", [1, 3])
def test_write_sample_files(tmp_path, parts):
    paths = ksks.write_sample(tmp_path, n_data=200, n_mc=300, seed=4, parts=parts)
    assert set(paths) == {"data", "accmc", "truth"}
    data, mc = ksks.generate(n_data=200, n_mc=300, seed=4)
    for key, ref in (("data", data), ("accmc", mc)):
        if parts == 1:
            assert paths[key] == os.path.join(tmp_path, f"{key}.parquet")
            files = [paths[key]]
        else:
            files = sorted(Path(paths[key]).glob("*.parquet"))
            assert [f.name for f in files] == [f"part-{i:04d}.parquet" for i in range(parts)]
        tables = [_read(f) for f in files]
        assert sum(t.num_rows for t in tables) == len(ref["beam"])
        cols = {c: np.concatenate([t[c].to_numpy() for t in tables]) for c in _COLUMNS}
        for name in ksks.P4_NAMES:
            got = np.column_stack([cols[f"{name}_{c}"] for c in ("e", "px", "py", "pz")])
            np.testing.assert_array_equal(got, ref[name])
        np.testing.assert_array_equal(cols["weight"], 1.0)
    assert json.loads(Path(paths["truth"]).read_text()) == ksks.TRUTH
    # rewriting replaces the previous sample and leaves no temporary files behind
    ksks.write_sample(tmp_path, n_data=50, n_mc=60, seed=5, parts=parts)
    samples = ["data.parquet", "accmc.parquet"] if parts == 1 else ["data", "accmc"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["truth.json", *samples])
    assert pq.read_table(paths["data"]).num_rows == 50


# --- laddu reference likelihood -------------------------------------------------------------


def _numpy_rbw(s, mass, width, l):
    """Relativistic BW as documented for laddu 0.28 (q_r = 0.1973 GeV, full BW factors)."""
    m1 = m2 = lr.M_KS

    def q(x):
        x = np.asarray(x, dtype=complex)
        return np.sqrt((x - (m1 + m2) ** 2) * (x - (m1 - m2) ** 2)) / (2 * np.sqrt(x))

    def barrier2(qq):
        z = qq**2 / 0.1973**2
        return {0: 1.0 + 0 * z, 2: 13 * z**2 / ((z - 3) ** 2 + 9 * z)}[l]

    q_s, q_0 = q(s), q(mass**2)
    gamma = width * mass / np.sqrt(s + 0j) * (q_s / q_0) * barrier2(q_s) / barrier2(q_0)
    return 1.0 / (mass**2 - s - 1j * mass * gamma)


def _numpy_intensity(s, ct, phi, p, lineshape):
    if lineshape == "bw":
        return ksks.truth_intensity(s, ct, phi, p)
    amp = _numpy_rbw(s, p["s_mass"], p["s_width"], 0) * ksks.spherical_harmonic(0, 0, ct, phi)
    d = sum(
        complex(p[f"d{m}_re"], p[f"d{m}_im"]) * ksks.spherical_harmonic(2, m, ct, phi)
        for m in range(3)
    )
    amp = amp + _numpy_rbw(s, p["d_mass"], p["d_width"], 2) * d
    return np.abs(amp) ** 2


def _numpy_nll(data, mc, p, lineshape):
    i_data = _numpy_intensity(*ksks.angles(data), p, lineshape)
    i_mc = _numpy_intensity(*ksks.angles(mc), p, lineshape)
    n_w = len(i_data)
    return -2.0 * (math.fsum(np.log(i_data)) - n_w * math.log(math.fsum(i_mc)))


POINT = dict(lr.TRUTH, s_mass=1.49, d_width=0.1, d1_im=0.2)


@needs_laddu
@pytest.mark.parametrize("lineshape", ["bw", "rbw"])
def test_laddu_nll_matches_numpy(sample, lineshape):
    data, mc = sample
    nll = lr.laddu_ksks_nll(data, mc, lineshape=lineshape)
    assert nll.parameter_names == list(lr.PARAMETER_NAMES)
    for p in (lr.TRUTH, POINT):
        assert nll.value(p) == pytest.approx(_numpy_nll(data, mc, p, lineshape), rel=1e-12)


@needs_laddu
def test_laddu_gradient_matches_finite_differences(sample):
    import laddu as ld

    data, mc = sample
    execution = ld.Execution("jit", threads=2, precision="f64")
    nll = lr.laddu_ksks_nll(data, mc, "rbw", execution=execution)
    value, grad = nll.value_and_gradient(POINT)
    # laddu's threaded JIT sums in a scheduling-dependent order: equal to rounding, not bitwise
    assert value == pytest.approx(nll.value(POINT), rel=1e-13)
    x0 = nll.vector(POINT)
    for i in range(len(x0)):
        h = 1e-6 * max(1.0, abs(x0[i]))
        up, down = x0.copy(), x0.copy()
        up[i] += h
        down[i] -= h
        fd = (nll.value(up) - nll.value(down)) / (2 * h)
        assert grad[i] == pytest.approx(fd, rel=1e-5, abs=1e-3 * np.abs(grad).max())


@needs_laddu
@pytest.mark.parametrize("lineshape", ["bw", "rbw"])
def test_laddu_gradient_at_truth_is_small(sample, lineshape):
    """Data pull toward truth: along a large shift d, g(truth).d << g(truth + d).d."""
    data, mc = sample
    nll = lr.laddu_ksks_nll(data, mc, lineshape=lineshape)
    x_true = nll.vector(lr.TRUTH)
    g_true = nll.value_and_gradient(x_true)[1]
    shifts = {
        "s_mass": 0.03,
        "s_width": 0.05,
        "d_mass": -0.03,
        "d_width": 0.04,
        "d0_re": 0.3,
        "d1_im": -0.3,
        "d2_re": 0.3,
    }
    for name, step in shifts.items():
        d = np.zeros_like(x_true)
        d[nll.parameter_names.index(name)] = step
        g_far = nll.value_and_gradient(x_true + d)[1]
        assert g_far @ d > 0, name
        assert abs(g_true @ d) < 0.25 * (g_far @ d), name


@needs_laddu
def test_laddu_fixed_lineshapes_and_parameter_interface(sample):
    data, mc = sample
    full = lr.laddu_ksks_nll(data, mc, "rbw")
    fixed = lr.laddu_ksks_nll(data, mc, "rbw", fixed_lineshapes=True)
    assert (
        fixed.parameter_names
        == list(lr.COEFFICIENT_NAMES)
        == ["d0_re", "d0_im", "d1_re", "d1_im", "d2_re", "d2_im"]
    )
    # fixed names in a dict are ignored; constant folding may change the last bit
    assert fixed.value(lr.TRUTH) == pytest.approx(full.value(lr.TRUTH), rel=1e-14)
    seq = [lr.TRUTH[n] for n in fixed.parameter_names]
    assert fixed.value(seq) == fixed.value(lr.TRUTH)
    assert fixed.value_and_gradient(seq)[1].shape == (6,)
    with pytest.raises(KeyError, match="unknown parameter"):
        full.value(dict(lr.TRUTH, bogus=1.0))
    with pytest.raises(KeyError, match=r"missing value\(s\) for parameter\(s\) \['d2_im'\]"):
        full.value({k: v for k, v in lr.TRUTH.items() if k != "d2_im"})
    with pytest.raises(ValueError, match="expected 6 values"):
        fixed.value([1.0, 2.0])
    with pytest.raises(ValueError, match="lineshape must be one of"):
        lr.laddu_ksks_nll(data, mc, "flatte")


@needs_laddu
def test_laddu_reads_written_parquet(tmp_path, sample):
    paths = ksks.write_sample(tmp_path / "one", n_data=300, n_mc=500, seed=8)
    split = ksks.write_sample(tmp_path / "split", n_data=300, n_mc=500, seed=8, parts=3)
    data, mc = ksks.generate(n_data=300, n_mc=500, seed=8)
    ref = lr.laddu_ksks_nll(data, mc).value(POINT)
    for written in (paths, split):
        value = lr.laddu_ksks_nll(written["data"], written["accmc"]).value(POINT)
        assert value == pytest.approx(ref, rel=1e-13)
