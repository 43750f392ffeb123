"""``ld.amplitudes``: laddu 0.28.1's module of resonance and coupled-channel builders.

Each builder is taken from the ``amplitudes`` module of both libraries, built with the same
keywords (parameters among them) and evaluated event by event: the values agree to 1e-12.
"""

from __future__ import annotations

import numpy as np
import pytest
from laddu_reference import agreement, laddu, needs_laddu

import laddu_dask as ld
from laddu_dask.errors import ModelError

RNG = np.random.default_rng(24)
N = 64
#: above every threshold of the channels below and away from the poles (1.05, 1.35 GeV)
S = np.concatenate([RNG.uniform(1.2, 1.75, N // 2), RNG.uniform(1.9, 3.0, N - N // 2)])
POINT = {"m": 1.31, "w": 0.17, "g00": 0.45, "g01": 0.85, "g10": 0.31, "g11": -0.52,
         "b0 real": 1.1, "b0 imag": -0.3, "b1 real": 0.6, "b1 imag": 0.8}
MASSES = ((0.1396, 0.1396), (0.4937, 0.4937))
POLES = (1.05, 1.35)


def _coupled(lib):
    """The K-matrix, P-vector and F-vector of two channels and two poles, built with ``lib.amplitudes``."""
    amp, s = lib.amplitudes, lib.scalar("s")
    poles = lib.vector(list(POLES))
    g = lib.matrix([[lib.parameter(f"g{i}{a}") for a in range(2)] for i in range(2)])
    barriers = amp.blatt_weisskopf_barriers(
        s, channel_mass_1=lib.vector([m[0] for m in MASSES]),
        channel_mass_2=lib.vector([m[1] for m in MASSES]), pole_masses=poles, l=1, q_r=0.25)
    k = amp.k_matrix(s, pole_masses=poles, couplings=g, barriers=barriers,
                     background=lib.matrix([[0.1, 0.02], [0.02, -0.2]]))
    beta = lib.vector([lib.cparameter("b0"), lib.cparameter("b1")])
    p = amp.p_vector(s, pole_masses=poles, production=beta, couplings=g, barriers=barriers,
                     background=lib.vector([0.1, 0.2j]))
    rho = [lib.rho(s, mass1=m1, mass2=m2) for m1, m2 in MASSES]
    c = lib.matrix([[-1j * rho[i] if i == j else 0.0 for j in range(2)] for i in range(2)])
    f = amp.f_vector(s, pole_masses=poles, k=k, p=p, phase_space=c)
    return barriers, k, p, f


def _bw(lib):
    return lib.amplitudes.breit_wigner(lib.scalar("s"), mass=lib.parameter("m"), width=lib.parameter("w"))


def _rbw(lib):
    return lib.amplitudes.relativistic_breit_wigner(lib.scalar("s"), mass=lib.parameter("m"),
                                                    width=lib.parameter("w"), mass1=0.14, mass2=0.49, l=2)


def _rbw_default_l(lib):
    return lib.amplitudes.relativistic_breit_wigner(lib.scalar("s"), mass=1.3, width=0.15, mass1=0.14,
                                                    mass2=0.14)


def _rbw_custom(lib):
    return lib.amplitudes.relativistic_breit_wigner_custom(lib.scalar("s"), mass=lib.parameter("m"),
                                                           width=0.2, mass1=0.4, mass2=0.5, l=3, q_r=0.3)


def _rbw_custom_bare(lib):
    return lib.amplitudes.relativistic_breit_wigner_custom(lib.scalar("s"), mass=1.3, width=0.2, mass1=0.4,
                                                           mass2=0.5, l=1, barrier_factors=False)


CASES = {
    "breit_wigner": _bw,
    "relativistic_breit_wigner": _rbw,
    "relativistic_breit_wigner default l": _rbw_default_l,
    "relativistic_breit_wigner_custom": _rbw_custom,
    "relativistic_breit_wigner_custom without barriers": _rbw_custom_bare,
}
for _i in range(2):
    for _a in range(2):
        CASES[f"blatt_weisskopf_barriers[{_i},{_a}]"] = lambda lib, i=_i, a=_a: _coupled(lib)[0].at(i, a)
        CASES[f"k_matrix[{_i},{_a}]"] = lambda lib, i=_i, a=_a: _coupled(lib)[1].at(i, a)
    CASES[f"p_vector[{_i}]"] = lambda lib, i=_i: _coupled(lib)[2][i]
    CASES[f"f_vector[{_i}]"] = lambda lib, i=_i: _coupled(lib)[3][i]


def _values(lib, expr):
    model = lib.Model(expr)
    data = lib.Dataset.from_arrays(p4s={"beam": np.tile([8.0, 0.0, 0.0, 8.0], (N, 1))}, scalars={"s": S})
    return np.asarray(model.evaluate(data, parameters=[POINT[n] for n in model.parameter_names]))


@needs_laddu
@pytest.mark.parametrize("name", sorted(CASES))
def test_amplitudes_module_matches_laddus(name):
    got, want = _values(ld, CASES[name](ld)), _values(laddu, CASES[name](laddu))
    assert np.all(np.isfinite(want)) and np.ptp(np.abs(want)) > 0.0  # values that vary by event
    assert agreement(got, want) < 1e-12, agreement(got, want)


@needs_laddu
def test_the_module_holds_laddus_names_and_they_are_the_top_level_builders():
    names = [n for n in dir(laddu.amplitudes) if not n.startswith("_")]
    assert sorted(ld.amplitudes.__all__) == sorted(names)
    assert all(getattr(ld.amplitudes, n) is getattr(ld, n) for n in names)


def test_bad_angular_momentum_is_a_model_error():
    with pytest.raises(ModelError, match="l"):
        ld.amplitudes.relativistic_breit_wigner_custom(ld.scalar("s"), mass=1.0, width=0.1, mass1=0.1,
                                                       mass2=0.1, l=1.5)
