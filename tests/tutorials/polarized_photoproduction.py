"""Port of laddu's tutorial "Building a polarized photoproduction model".

gamma p -> X p, X -> K_S K_S with a linearly polarized beam: an S wave (the reference,
its coupling fixed) and a D wave, each a relativistic Breit-Wigner times the sequential
helicity amplitude (Wigner D of the production and helicity-frame decay angles taken
from the channel's named vertices, Clebsch-Gordan couplings from typed quantum numbers).
The two photon-helicity amplitudes are contracted with the 2x2 linear-polarization
density matrix, and target and recoil helicities are summed incoherently. Pseudo-data
are drawn from the model at a known point, then fitted from the model's defaults.

Run it with either library: the ``import laddu as ld`` line is the only one naming it.
"""

import math
from fractions import Fraction

import laddu as ld
import numpy as np
from tutorial_models.polarized import events

HALF = Fraction(1, 2)
J_PRODUCTION = ld.J(Fraction(3, 2))  # photon spin 1 and target spin 1/2, stretched

channel = ld.Channel(
    "gamma p -> K_S K_S p",
    edges=[
        ld.Edge("gamma", p4="beam", particle=ld.particles.PHOTON),
        ld.Edge("target", p4="target", particle=ld.particles.PROTON),
        ld.Edge("X"),
        ld.Edge("recoil", p4="proton", particle=ld.particles.PROTON),
        ld.Edge("ks1", p4="kshort1", particle=ld.particles.K_SHORT),
        ld.Edge("ks2", p4="kshort2", particle=ld.particles.K_SHORT),
    ],
    vertices=[
        ld.Vertex("production", incoming=["gamma", "target"], outgoing=["X", "recoil"]),
        ld.Vertex("decay", incoming=["X"], outgoing=["ks1", "ks2"]),
    ],
)

# --- production and decay angles from named vertices ---------------------------------------

production = channel.vertex("production")
decay = channel.vertex("decay")
beam_axis = production.vec3("gamma")
helicity_axis = production.vec3("X")
production_normal = beam_axis.cross(helicity_axis)
theta_p = production.theta("X", z_axis=beam_axis, y_hint=ld.Vec3.y_axis())
phi_p = production.phi("X", z_axis=beam_axis, y_hint=ld.Vec3.y_axis())
theta_h = decay.theta("ks1", z_axis=helicity_axis, y_hint=production_normal)
phi_h = decay.phi("ks1", z_axis=helicity_axis, y_hint=production_normal)

# --- the waves: coupling times line shape --------------------------------------------------

m_k = ld.particles.K_SHORT.mass
waves = []
for name, spin, mass, width in (("s_wave", 0, 1.507, 0.109), ("d_wave", 2, 1.525, 0.073)):
    line_shape = ld.relativistic_breit_wigner(
        channel.s("X"),
        mass=ld.parameter(f"{name}_mass", initial=mass, bounds=(1.2, 1.8), unit="GeV"),
        width=ld.parameter(f"{name}_width", initial=width, bounds=(0.01, 0.4), unit="GeV"),
        mass1=m_k,
        mass2=m_k,
        l=ld.L(spin),
    )
    if spin == 0:  # the reference wave fixes the overall magnitude and phase
        coupling = ld.complex(ld.parameter("s_wave_re", fixed=1.0), ld.parameter("s_wave_im", fixed=0.0))
    else:
        coupling = ld.polar_complex(
            ld.parameter("d_wave_magnitude", initial=0.5, bounds=(0.0, None)),
            ld.parameter("d_wave_phase", initial=0.0, bounds=(-math.pi, math.pi), periodic=True),
        )
    waves.append((spin, (coupling * line_shape).tagged(name)))


def helicity_amplitude(photon, target, recoil):
    """A[photon, target, recoil]: coherent over the waves and the X helicities."""
    m_initial = ld.M(photon - target)
    cg_production = ld.clebsch_gordan(
        j1=ld.S(1), m1=ld.M(photon), j2=ld.S(HALF), m2=ld.M(-target), j=J_PRODUCTION, m=m_initial
    )
    total = ld.Expr(0.0)
    for spin, wave in waves:
        j_x = ld.J(spin)
        cg_decay = ld.clebsch_gordan(j1=ld.L(spin), m1=ld.M(0), j2=ld.S(0), m2=ld.M(0), j=j_x, m=ld.M(0))
        for lambda_x in range(-spin, spin + 1):
            if abs(lambda_x - recoil) > J_PRODUCTION.value:
                continue
            d_production = ld.WignerD(J_PRODUCTION, m_initial, ld.M(lambda_x - recoil)).D(
                alpha=phi_p, beta=theta_p
            ).conj()
            d_decay = ld.WignerD(j_x, ld.M(lambda_x), ld.M(0)).D(alpha=phi_h, beta=theta_h).conj()
            total = total + wave * cg_production * d_production * cg_decay * d_decay
    return total


# --- linear beam polarization: A^dagger rho_gamma A ---------------------------------------------

polarization = ld.scalar("beam_polarization")
polarization_angle = ld.scalar("polarization_angle")
rho_gamma = 0.5 * ld.matrix(
    [
        [1.0, -polarization * ld.cis(-2.0 * polarization_angle)],
        [-polarization * ld.cis(2.0 * polarization_angle), 1.0],
    ]
)
intensity = ld.Expr(0.0)
for target in (HALF, -HALF):
    for recoil in (HALF, -HALF):
        helicity_amplitudes = ld.vector([helicity_amplitude(photon, target, recoil) for photon in (1, -1)])
        intensity = intensity + (helicity_amplitudes.conj() @ (rho_gamma @ helicity_amplitudes)).real()
model = ld.Model(intensity)

# --- pseudo-data at a known point, and a fit from the defaults ----------------------------------

truth = {"s_wave_mass": 1.50, "s_wave_width": 0.12, "d_wave_mass": 1.53, "d_wave_width": 0.09,
         "d_wave_magnitude": 0.7, "d_wave_phase": 0.9}
pool = events(4000, 11)
values = np.asarray(model.evaluate(ld.Dataset.from_arrays(**pool), parameters=truth, real=True))
keep = np.random.default_rng(12).uniform(0.0, values.max(), len(values)) < values
data = ld.Dataset.from_arrays(
    p4s={k: v[keep] for k, v in pool["p4s"].items()},
    scalars={k: v[keep] for k, v in pool["scalars"].items()},
)
accepted_mc = ld.Dataset.from_arrays(**events(2500, 13))
likelihood = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=accepted_mc, name="signal")])
initial = likelihood.default_parameters
value, gradient = likelihood.value_and_gradient(initial)
fit = likelihood.fit(initial=initial, terminators=[ld.ganesh.MaxSteps(500)])


def report():
    print(f"{len(data)} events; NLL at the defaults {value:.10f}; after the fit {fit.objective:.10f}")
    for name, x, err in zip(fit.parameter_names, fit.values, fit.standard_errors):
        print(f"  {name:18s} {x: .5f} +- {err:.5f}  (truth {truth[name]})")
