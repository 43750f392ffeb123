"""Polarized photoproduction (laddu's tutorial): gamma p -> X p, X -> K_S K_S, linear beam polarization.

Every function takes the library module ``ld`` (``laddu`` or ``laddu_dask``) first and uses
only laddu 0.28.1's public API, so the same code builds the model with both.

The model follows the tutorial's sequential helicity amplitude. For photon, target and
recoil helicities ``(lg, lt, lr)``::

    A[lg, lt, lr] = sum_waves c_w R_w(s) sum_lX  C_prod D^{J_P *}_{lg - lt, lX - lr}(phi_P, theta_P, 0)
                                                  C_dec  D^{J_w *}_{lX, 0}(phi_H, theta_H, 0)

with an S wave (J = 0) and a D wave (J = 2), relativistic Breit-Wigner line shapes,
``C_prod = <1 lg, 1/2 -lt | J_P lg - lt>`` and ``C_dec = <L 0, 0 0 | J 0>``; the sum over
X helicities runs over ``|lX - lr| <= J_P`` (``J_P = 3/2``, photon and target spins
stretched). The production angles are those of X about the beam in the gamma p frame
(lab y as the y hint), the decay angles those of the first K_S about X with the
production normal as y. The two photon helicities form a vector
contracted with the 2x2 polarization density matrix::

    I = sum_{lt, lr} Re( A^dagger rho_gamma A ),
    rho_gamma = 1/2 [[1, -P exp(-2 i Phi)], [-P exp(2 i Phi), 1]]

(the sum over target and recoil helicities is incoherent).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from laddu_dask import ksks

from .topology import photoproduction

HALF = Fraction(1, 2)
#: The total angular momentum of the gamma p system (photon spin 1 and target spin 1/2
#: stretched); X helicities with ``|lX - lr| > J_P`` do not contribute.
J_PRODUCTION = Fraction(3, 2)
#: (name, J, mass, width) of the waves, GeV.
WAVES = (("s_wave", 0, 1.507, 0.109), ("d_wave", 2, 1.525, 0.073))
#: Three parameter points by name (the D-wave coupling and both line shapes move).
POINTS = (
    {"s_wave_mass": 1.507, "s_wave_width": 0.109, "d_wave_mass": 1.525, "d_wave_width": 0.073,
     "d_wave_magnitude": 0.6, "d_wave_phase": 0.4},
    {"s_wave_mass": 1.45, "s_wave_width": 0.2, "d_wave_mass": 1.6, "d_wave_width": 0.12,
     "d_wave_magnitude": 1.7, "d_wave_phase": -2.1},
    {"s_wave_mass": 1.7, "s_wave_width": 0.05, "d_wave_mass": 1.3, "d_wave_width": 0.3,
     "d_wave_magnitude": 0.05, "d_wave_phase": 3.0},
)


def reaction(ld):
    """The gamma p -> X p, X -> K_S K_S channel on the columns of :func:`events`."""
    daughters = (("ks1", "kshort1", "K_SHORT"), ("ks2", "kshort2", "K_SHORT"))
    return photoproduction(ld, "gamma p -> K_S K_S p", daughters, recoil="proton")


def angles(ld, channel):
    """``(theta_P, phi_P, theta_H, phi_H)``: production and helicity-frame decay angles."""
    production, decay = channel.vertex("production"), channel.vertex("decay")
    beam_axis = production.vec3("gamma")
    helicity_axis = production.vec3("X")
    normal = beam_axis.cross(helicity_axis)
    theta_p = production.theta("X", z_axis=beam_axis, y_hint=ld.Vec3.y_axis())
    phi_p = production.phi("X", z_axis=beam_axis, y_hint=ld.Vec3.y_axis())
    theta_h = decay.theta("ks1", z_axis=helicity_axis, y_hint=normal)
    phi_h = decay.phi("ks1", z_axis=helicity_axis, y_hint=normal)
    return theta_p, phi_p, theta_h, phi_h


def wave_parts(ld, channel, waves=WAVES):
    """``[(J, coupling * line shape), ...]`` of ``waves`` (the S and D waves), each tagged with its name."""
    kaon = ld.particles.K_SHORT
    parts = []
    for name, j, mass, width in waves:
        line = ld.relativistic_breit_wigner(
            channel.s("X"),
            mass=ld.parameter(f"{name}_mass", initial=mass, bounds=(1.2, 1.8), unit="GeV"),
            width=ld.parameter(f"{name}_width", initial=width, bounds=(0.01, 0.4), unit="GeV"),
            mass1=kaon.mass,
            mass2=kaon.mass,
            l=ld.L(j),
        )
        if j == 0:  # the reference wave fixes the overall phase and magnitude
            coupling = ld.complex(
                ld.parameter(f"{name}_re", fixed=1.0), ld.parameter(f"{name}_im", fixed=0.0)
            )
        else:
            coupling = ld.polar_complex(
                ld.parameter(f"{name}_magnitude", initial=0.5, bounds=(0.0, None)),
                ld.parameter(f"{name}_phase", initial=0.0, bounds=(-math.pi, math.pi), periodic=True),
            )
        parts.append((j, (coupling * line).tagged(name)))
    return parts


def helicity_amplitude(ld, parts, angle_exprs, lg, lt, lr):
    """``A[lg, lt, lr]``: the coherent sum over waves and X helicities."""
    theta_p, phi_p, theta_h, phi_h = angle_exprs
    cg_production = ld.clebsch_gordan(
        j1=ld.S(1), m1=ld.M(lg), j2=ld.S(HALF), m2=ld.M(-lt), j=ld.J(J_PRODUCTION), m=ld.M(lg - lt)
    )
    total = None
    for j, wave in parts:
        cg_decay = ld.clebsch_gordan(j1=ld.L(j), m1=ld.M(0), j2=ld.S(0), m2=ld.M(0), j=ld.J(j), m=ld.M(0))
        for lx in (h for h in range(-j, j + 1) if abs(h - lr) <= J_PRODUCTION):
            d_production = ld.WignerD(ld.J(J_PRODUCTION), ld.M(lg - lt), ld.M(lx - lr)).D(
                alpha=phi_p, beta=theta_p
            ).conj()
            d_decay = ld.WignerD(ld.J(j), ld.M(lx), ld.M(0)).D(alpha=phi_h, beta=theta_h).conj()
            term = wave * cg_production * d_production * cg_decay * d_decay
            total = term if total is None else total + term
    return total


def intensity(ld, waves=WAVES, channel=None):
    """The polarized intensity ``sum_{lt, lr} Re(A^dagger rho_gamma A)`` of ``waves`` (on the
    vertices and edges of ``channel``, :func:`reaction` by default)."""
    channel = reaction(ld) if channel is None else channel
    parts = wave_parts(ld, channel, waves)
    angle_exprs = angles(ld, channel)
    polarization = ld.scalar("beam_polarization")
    polarization_angle = ld.scalar("polarization_angle")
    rho_gamma = 0.5 * ld.matrix(
        [
            [1.0, -polarization * ld.cis(-2.0 * polarization_angle)],
            [-polarization * ld.cis(2.0 * polarization_angle), 1.0],
        ]
    )
    total = None
    for lt in (HALF, -HALF):
        for lr in (HALF, -HALF):
            amplitudes = ld.vector(
                [helicity_amplitude(ld, parts, angle_exprs, lg, lt, lr) for lg in (1, -1)]
            )
            term = (amplitudes.conj() @ (rho_gamma @ amplitudes)).real()
            total = term if total is None else total + term
    return total


def build_model(ld, waves=WAVES, channel=None):
    """The tutorial model as ``ld.Model`` (of the S and D waves, or of ``waves``; on
    ``channel``, :func:`reaction` by default)."""
    return ld.Model(intensity(ld, waves, channel))


def events(n: int, seed: int, weighted: bool = False) -> dict:
    """``{"p4s": ..., "scalars": ..., "weights": ...}`` for ``ld.Dataset.from_arrays(**events(...))``.

    Physical gamma p -> p K_S K_S events (the toy generator's phase space: X mass flat in
    [1, 2] GeV, exponential |t|, flat decay angles) with a target proton at rest, and the
    beam polarization (magnitude in [0.3, 0.4], GlueX's four plane angles). Four-vectors
    are ``(E, px, py, pz)`` rows, laddu's order.
    """
    rng = np.random.default_rng(seed)
    p4s, *_ = ksks.phase_space(n, rng)
    p4s["target"] = np.tile([ksks.M_PROTON, 0.0, 0.0, 0.0], (n, 1))
    scalars = {
        "beam_polarization": rng.uniform(0.3, 0.4, n),
        "polarization_angle": np.deg2rad(rng.choice([0.0, 45.0, 90.0, 135.0], n)),
    }
    weights = rng.uniform(0.5, 1.5, n) if weighted else None
    return {"p4s": p4s, "scalars": scalars, "weights": weights}
