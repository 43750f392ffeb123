"""The K-matrix with P-vector production (laddu_dask.expr.kmatrix) against laddu 0.28.1.

A 3-channel, 2-pole model (pi pi, K K, eta eta; f0-like poles, barrier ratios, a K and a P
background, phase space ``-i diag(rho)``) is written once and built with both libraries by
swapping the module: per-event K, P and F entries, the model value and gradient, and an NLL
with its gradient.  An independent NumPy evaluation of laddu's formulas checks F too.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from cuda_emulation import HostEmulation
from laddu_reference import agreement, laddu, needs_laddu

import laddu_dask as ld
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.compile.cuda import generate_cuda_source
from laddu_dask.errors import ModelError

N = 200
RNG = np.random.default_rng(2011)
#: Above the three thresholds and at least 0.05 GeV^2 from the poles, where laddu 0.28.1's
#: ``Model`` is its own reference (below a threshold it drops the imaginary part of ``rho``,
#: while its ``Dataset.evaluate`` and we keep it; see the README table).
S_VALUES = np.concatenate([RNG.uniform(1.21, 1.77, N // 2), RNG.uniform(1.88, 3.2, N - N // 2)])
#: Below and between the thresholds, at a threshold and within 1e-6 GeV^2 of both poles.
S_BELOW = np.concatenate([RNG.uniform(0.1, 1.2, 40),
                          [0.98**2 + 1e-6, 1.35**2 - 1e-6, (2 * 0.4937) ** 2 + 1e-4]])
CHANNEL_MASSES = ((0.1396, 0.1396), (0.4937, 0.4937), (0.5479, 0.5479))
POLES = (0.98, 1.35)
G = ((0.4, 0.9), (0.3, -0.5), (0.2, 0.4))
POINT = {"g00": 0.45, "g01": 0.85, "g10": 0.31, "g11": -0.52, "g20": 0.18, "g21": 0.37,
         "c01": 0.07, "beta0 real": 1.1, "beta0 imag": -0.3, "beta1 real": 0.6, "beta1 imag": 0.8}
P4S = {"beam": np.column_stack([np.full(N, 8.0), np.zeros(N), np.zeros(N), np.full(N, 8.0)])}


def phase_space(lib, s, m1, m2):
    """``rho = 2 q / sqrt(s)``: laddu's ``rho``; ours until ``ld.rho`` lands (issue 11, item 3)."""
    if lib is laddu:
        return laddu.rho(s, mass1=m1, mass2=m2)
    return 2.0 * ld.breakup_momentum(s, m1, m2) / s.to_complex().sqrt()


def build(lib):
    s = lib.scalar("s")
    masses = lib.vector(list(POLES))
    g = lib.matrix([[lib.parameter(f"g{i}{a}", initial=G[i][a]) for a in range(2)] for i in range(3)])
    barriers = lib.blatt_weisskopf_barriers(
        s, channel_mass_1=lib.vector([m[0] for m in CHANNEL_MASSES]),
        channel_mass_2=lib.vector([m[1] for m in CHANNEL_MASSES]), pole_masses=masses, l=0)
    c01 = lib.parameter("c01", initial=0.05)
    background = lib.matrix([[0.1, c01, 0.0], [c01, -0.2, 0.0], [0.0, 0.0, 0.05]])
    k = lib.k_matrix(s, pole_masses=masses, couplings=g, barriers=barriers, background=background)
    beta = lib.vector([lib.cparameter("beta0", initial=1.0), lib.cparameter("beta1", initial=0.5j)])
    p = lib.p_vector(s, pole_masses=masses, production=beta, couplings=g, barriers=barriers,
                     background=lib.vector([0.1, 0.0, 0.2j]))
    rho = [phase_space(lib, s, m1, m2) for m1, m2 in CHANNEL_MASSES]
    c = lib.matrix([[-1j * rho[i] if i == j else 0.0 for j in range(3)] for i in range(3)])
    f = lib.f_vector(s, pole_masses=masses, k=k, p=p, phase_space=c)
    return k, p, f


def intensity(lib):
    _, _, f = build(lib)
    return f[0].norm_sqr() + 0.3 * f[1].norm_sqr() + 1e-3


def our_events(s=S_VALUES):
    return ld.Dataset.from_arrays(scalars={"s": s})


def laddu_events(s=S_VALUES):
    return laddu.Dataset.from_arrays(p4s={"beam": P4S["beam"][: len(s)]}, scalars={"s": s})


def _params(model):
    return [POINT[n] for n in model.parameter_names]


def _entries(k, p, f):
    # by index: a laddu vector has no length, so list() would never stop
    return [k.at(i, j) for i in range(3) for j in range(3)] + [p[i] for i in range(3)] + [
        f[i] for i in range(3)
    ]


@needs_laddu
def test_k_p_and_f_entries_match_laddu_per_event():
    ours, theirs = _entries(*build(ld)), _entries(*build(laddu))
    for mine, ref in zip(ours, theirs, strict=True):
        m_ours, m_ref = ld.Model(mine), laddu.Model(ref)
        # laddu's entry of a matrix keeps every parameter of the matrix; ours the ones it reads
        assert set(m_ours.parameter_names) <= set(m_ref.parameter_names)
        got = m_ours.evaluate(our_events(), parameters=_params(m_ours))
        want = m_ref.evaluate(laddu_events(), parameters=_params(m_ref))
        assert agreement(got, want) < 1e-12


@needs_laddu
@pytest.mark.parametrize("kernel", ["numpy", "fused"])
def test_intensity_value_and_gradient_match_laddu(kernel):
    ours, theirs = ld.Model(intensity(ld)), laddu.Model(intensity(laddu))
    # the same parameters, in another order (the README table): compare them by name
    assert sorted(ours.parameter_names) == sorted(theirs.parameter_names)
    ex = ld.Execution(kernel=kernel)
    value, grad = ours.value_and_gradient(our_events(), parameters=_params(ours), execution=ex)
    want_value, want_grad = theirs.value_and_gradient(laddu_events(), parameters=_params(theirs))
    assert agreement(value, np.asarray(want_value)) < 1e-12
    order = [list(theirs.parameter_names).index(n) for n in ours.parameter_names]
    want_grad = np.asarray(want_grad)[:, order]
    scale = np.max(np.abs(want_grad), axis=0)
    assert np.max(np.abs(grad - want_grad) / scale) < 1e-10


def _mp_f_vector(s_value: float, channel: int) -> complex:
    """``F = (I - i K' rho)^{-1} P'`` with the uncleared ``K'``, ``P'``, in 40-digit arithmetic."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    s = mp.mpf(s_value)
    g = [[mp.mpf(POINT[f"g{i}{a}"]) for a in range(2)] for i in range(3)]
    bg = [[0.1, POINT["c01"], 0.0], [POINT["c01"], -0.2, 0.0], [0.0, 0.0, 0.05]]
    beta = [mp.mpc(POINT[f"beta{a} real"], POINT[f"beta{a} imag"]) for a in range(2)]
    d = [mp.mpf(m) ** 2 - s for m in POLES]
    rho = [mp.sqrt(mp.mpc((s - (m1 + m2) ** 2) * (s - (m1 - m2) ** 2))) / s for m1, m2 in CHANNEL_MASSES]
    k, p = mp.matrix(3, 3), mp.matrix(3, 1)
    for i in range(3):  # l = 0: the barrier ratios are 1
        p[i] = sum(beta[a] * g[i][a] / d[a] for a in range(2)) + [0.1, 0.0, 0.2j][i]
        for j in range(3):
            k[i, j] = sum(g[i][a] * g[j][a] / d[a] for a in range(2)) + bg[i][j]
    return complex(mp.lu_solve(mp.eye(3) - 1j * k * mp.diag(rho), p)[channel])


def test_f_vector_matches_high_precision_formula_below_thresholds_and_by_the_poles():
    """Independent of laddu: below and between thresholds, at one, and 1e-6 from each pole,
    where the pole-cleared system's condition number is about 1e6."""
    _, _, f = build(ld)
    for channel in (0, 1):
        model = ld.Model(f[channel])
        got = model.evaluate(our_events(S_BELOW), parameters=_params(model))
        want = np.array([_mp_f_vector(s, channel) for s in S_BELOW])
        rel = np.abs(got - want) / np.abs(want)
        assert rel[:-3].max() < 1e-12 and rel[-1] < 1e-12  # off the poles
        assert rel[-3:-1].max() < 1e-8  # within 1e-6 GeV^2 of a pole


@needs_laddu
def test_nll_value_and_gradient_match_laddu():
    data_s, mc_s = S_VALUES[::2], np.concatenate([RNG.uniform(1.21, 1.77, 200), RNG.uniform(1.88, 3.2, 200)])
    ours = ld.NLL(ld.Model(intensity(ld)), data=our_events(data_s), accepted_mc=our_events(mc_s))
    theirs = laddu.NLL(laddu.Model(intensity(laddu)), data=laddu_events(data_s),
                       accepted_mc=laddu.Dataset.from_arrays(
                           p4s={"beam": np.tile([8.0, 0.0, 0.0, 8.0], (400, 1))}, scalars={"s": mc_s}))
    names = ld.Model(intensity(ld)).parameter_names
    their_names = laddu.Model(intensity(laddu)).parameter_names
    value, grad = ld.Likelihood([ours]).value_and_gradient([POINT[n] for n in names])
    want_value, want_grad = laddu.Likelihood([theirs]).value_and_gradient([POINT[n] for n in their_names])
    want_grad = np.asarray(want_grad)[[list(their_names).index(n) for n in names]]
    assert abs(value - want_value) / abs(want_value) < 1e-12
    assert np.max(np.abs(np.asarray(grad) - want_grad)) / np.max(np.abs(want_grad)) < 1e-10


def test_bad_shapes_and_channel_counts_are_model_errors():
    s = ld.scalar("s")
    masses = ld.vector([1.0, 1.5])
    g = ld.matrix([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ModelError, match="couplings has 1 pole columns but pole_masses has length 2"):
        ld.k_matrix(s, pole_masses=masses, couplings=ld.matrix([[1.0], [2.0]]), barriers=g)
    with pytest.raises(ModelError, match=r"barriers must be Matrix\[2x2\], got Matrix\[3x2\]"):
        ld.k_matrix(s, pole_masses=masses, couplings=g, barriers=ld.matrix([[1.0, 1.0]] * 3))
    with pytest.raises(ModelError, match=r"the K background must be Matrix\[2x2\], got Matrix\[1x1\]"):
        ld.k_matrix(s, pole_masses=masses, couplings=g, barriers=g, background=ld.matrix([[1.0]]))
    with pytest.raises(ModelError, match=r"pole_masses must be a vector, got Matrix\[2x2\]"):
        ld.k_matrix(s, pole_masses=g, couplings=g, barriers=g)
    with pytest.raises(ModelError, match=r"s must be a scalar expression, got Vector\[2\]"):
        ld.k_matrix(masses, pole_masses=masses, couplings=g, barriers=g)
    with pytest.raises(ModelError, match=r"production must be Vector\[2\], got Vector\[3\]"):
        ld.p_vector(s, pole_masses=masses, production=ld.vector([1.0] * 3), couplings=g, barriers=g)
    with pytest.raises(ModelError, match=r"the P background must be Vector\[2\], got Vector\[1\]"):
        ld.p_vector(s, pole_masses=masses, production=masses, couplings=g, barriers=g,
                    background=ld.vector([1.0]))
    with pytest.raises(ModelError, match=r"phase_space must be a matrix, got Vector\[2\]"):
        ld.f_vector(s, pole_masses=masses, k=g, p=masses, phase_space=masses)
    with pytest.raises(ModelError, match=r"K must be Matrix\[3x3\], got Matrix\[2x2\]"):
        ld.f_vector(s, pole_masses=masses, k=g, p=ld.vector([1.0] * 3), phase_space=g)
    with pytest.raises(ModelError, match="F vectors require at least one pole"):
        ld.f_vector(s, pole_masses=ld.vector([]), k=g, p=masses, phase_space=g)
    with pytest.raises(ModelError, match="channel_mass_2 must have the same length, got 2 and 1"):
        ld.blatt_weisskopf_barriers(s, channel_mass_1=masses, channel_mass_2=ld.vector([0.1]),
                                    pole_masses=masses, l=1)


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not found on PATH (host emulation)")
def test_cuda_printer_evaluates_the_k_matrix_model(tmp_path):
    """The printed CUDA source of the 3-channel model (host emulation) against the CPU kernels."""
    cm = CompiledModel.from_expr(intensity(ld))
    emu = HostEmulation(generate_cuda_source(cm.split, "f64", prefix="m_"), tmp_path)
    cache = cm.event_cache({"s": np.concatenate([S_VALUES, S_BELOW])})
    params = [POINT[n] for n in ld.Model(intensity(ld)).parameter_names]
    n = len(S_VALUES) + len(S_BELOW)
    want = cm.values(cache, tuple(params), n)
    got = emu.values(cache, params, n)
    near_poles = [len(S_VALUES) + len(S_BELOW) - 3, len(S_VALUES) + len(S_BELOW) - 2]
    away = np.setdiff1d(np.arange(n), near_poles)
    assert agreement(got[away], want[away]) < 1e-12
    # within 1e-6 GeV^2 of a pole the solve's condition number (1e6) amplifies the printed
    # complex division's other rounding (one reciprocal per quotient)
    assert agreement(got[near_poles], want[near_poles]) < 1e-8


@needs_laddu
def test_a_phase_space_vector_is_refused_as_laddu_refuses_it():
    """laddu 0.28.1's ``f_vector`` docstring allows a "channel phase-space vector or diagonal
    matrix", yet laddu refuses a vector when the expression is built; so do we (a matrix
    only, ``ModelError``). The tutorial models pass ``-i diag(rho)`` as a matrix."""
    def f_of_vector(lib):
        s = lib.scalar("s")
        masses, g = lib.vector([1.2, 1.6]), lib.matrix([[0.5, 0.3], [0.2, 0.7]])
        k = lib.k_matrix(s, pole_masses=masses, couplings=g, barriers=g)
        p = lib.p_vector(s, pole_masses=masses, production=lib.vector([1.0, 0.5j]), couplings=g, barriers=g)
        return lib.f_vector(s, pole_masses=masses, k=k, p=p, phase_space=lib.vector([1j, 1j]))

    assert "phase-space vector or diagonal matrix" in laddu.f_vector.__doc__
    with pytest.raises(laddu.LadduError, match=r"phase_space must be matrix\[2x2\], got vector\[2\]"):
        f_of_vector(laddu)
    with pytest.raises(ModelError, match=r"phase_space must be a matrix, got Vector\[2\]"):
        f_of_vector(ld)
