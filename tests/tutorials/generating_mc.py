"""Port of laddu's tutorials "Generating model-independent Monte Carlo" and "Generating
model-weighted Monte Carlo".

gamma p -> X p, X -> K_S K_S with generation proposals on the channel: a photon energy
flat in [8, 9] GeV, a target at rest, an X mass proposal from threshold to 2 GeV, a
forward-peaked t-exchange production with a uniform admixture and an isotropic decay.
The generator also samples two scalar columns (a beam polarization). Weighted phase space
comes first, then unweighted pseudo-data of a resonance model, drawn against an envelope.

The two libraries draw different events from the same seed, so what they produce agrees
only statistically (the test compares means within a few standard errors).

Run it with either library: the ``import laddu as ld`` line is the only one naming it.
"""

import math

import laddu as ld
import numpy as np

generation_channel = ld.Channel(
    "gamma p -> K_S K_S p",
    edges=[
        ld.Edge(
            "gamma",
            p4="gamma",
            particle=ld.particles.PHOTON,
            output=True,
            initial_momentum=ld.InitialMomentum.uniform_energy(low=8.0, high=9.0, direction=[0.0, 0.0, 1.0]),
        ),
        ld.Edge(
            "target",
            p4="target",
            particle=ld.particles.PROTON,
            output=True,
            initial_momentum=ld.InitialMomentum.momentum([0.0, 0.0, 0.0]),
        ),
        ld.Edge("X", mass_proposal=ld.MassProposal(2.0 * ld.particles.K_SHORT.mass, high=2.0)),
        ld.Edge("recoil", p4="recoil", particle=ld.particles.PROTON, output=True),
        ld.Edge("ks1", p4="ks1", particle=ld.particles.K_SHORT, output=True),
        ld.Edge("ks2", p4="ks2", particle=ld.particles.K_SHORT, output=True),
    ],
    vertices=[
        ld.Vertex(
            "production",
            incoming=["gamma", "target"],
            outgoing=["X", "recoil"],
            generation=ld.VertexProposal.t_exchange(
                incoming="gamma", outgoing="X", slope=4.0, uniform_fraction=0.2
            ),
        ),
        ld.Vertex("decay", incoming=["X"], outgoing=["ks1", "ks2"], generation=ld.VertexProposal.isotropic()),
    ],
)
generation_channel.validate_generation()

# --- weighted phase space with generated scalar columns ---------------------------------------

generator = ld.Generator(
    generation_channel,
    scalars={"pol_magnitude": ld.ScalarSource.uniform(0.2, 0.3), "pol_angle": ld.ScalarSource.fixed(0.0)},
)
N_WEIGHTED = 4000
generated_mc, weighted_report = generator.weighted(N_WEIGHTED, seed=17)

mass_x = generation_channel.mass("X")
mass_values = np.asarray(generated_mc.evaluate(mass_x, real=True))
weights = np.asarray(generated_mc.weights())
pol_magnitude = np.asarray(generated_mc.evaluate(ld.scalar("pol_magnitude"), real=True))
pol_angle = np.asarray(generated_mc.evaluate(ld.scalar("pol_angle"), real=True))
recoil = ld.Vec4.event("recoil")
initial_energy = np.asarray(generated_mc.evaluate(ld.Vec4.event("gamma").e() + ld.Vec4.event("target").e(),
                                                  real=True))
final_energy = np.asarray(generated_mc.evaluate(
    recoil.e() + ld.Vec4.event("ks1").e() + ld.Vec4.event("ks2").e(), real=True))

# --- a model to weight and unweight phase space -------------------------------------------------

decay = generation_channel.vertex("decay")
helicity_axis = generation_channel.vertex("production").vec3("X")
normal = generation_channel.vertex("production").vec3("gamma").cross(helicity_axis)
theta = decay.theta("ks1", z_axis=helicity_axis, y_hint=normal)
phi = decay.phi("ks1", z_axis=helicity_axis, y_hint=normal)
m_k = ld.particles.K_SHORT.mass
line_shape = ld.relativistic_breit_wigner(
    generation_channel.s("X"),
    mass=ld.parameter("mass_0", initial=1.50, bounds=(1.35, 1.65), unit="GeV"),
    width=ld.parameter("width_0", initial=0.12, bounds=(0.01, 0.30), unit="GeV"),
    mass1=m_k,
    mass2=m_k,
    l=0,
)
angular = ld.WignerD(ld.J(2), ld.M(0), ld.M(0)).D(alpha=phi, beta=theta).conj()
second = ld.polar_complex(
    ld.parameter("second_magnitude", initial=0.3, bounds=(0.0, 3.0)),
    ld.parameter("second_phase", initial=0.0, bounds=(-math.pi, math.pi), periodic=True),
)
model = ld.Model((line_shape.tagged("reference") + (second * angular).tagged("second")).norm_sqr())
truth = {"mass_0": 1.50, "width_0": 0.12, "second_magnitude": 0.7, "second_phase": 0.9}

weighted_model_mc, model_report = generator.weighted(N_WEIGHTED, model=model, parameters=truth, seed=20)
model_weights = np.asarray(weighted_model_mc.weights())
N_UNWEIGHTED = 600
pseudo_data, unweighted_report = generator.unweighted(
    N_UNWEIGHTED, model, parameters=truth, seed=21, pilot_proposals=20_000, safety_factor=2.0,
    grow_envelope=True, max_proposals=5_000_000,
)
pseudo_mass = np.asarray(pseudo_data.evaluate(mass_x, real=True))
pseudo_cos_theta = np.cos(np.asarray(pseudo_data.evaluate(theta, real=True)))


def report():
    print(f"weighted: {len(generated_mc)} events, weights mean {weights.mean():.6g}, "
          f"<m> = {np.average(mass_values, weights=weights):.5f}")
    print(f"energy conservation: {np.abs(initial_energy - final_energy).max():.2e}")
    print(f"model-weighted: weights mean {model_weights.mean():.6g}")
    print(f"unweighted: {len(pseudo_data)} of {unweighted_report.proposals} proposals "
          f"({100 * unweighted_report.acceptance_rate:.2f}%), <m> = {pseudo_mass.mean():.5f}, "
          f"<cos^2> = {np.mean(pseudo_cos_theta**2):.4f}")
