"""Port of laddu's tutorial "Sharing resonance parameters across channels".

Two reactions, gamma p -> X p with X -> pi+ pi- (channel A) and X -> K+ K- (channel B),
share one resonance: first a relativistic Breit-Wigner pole whose mass and width are
parameters named alike in both models, then a two-pole K-matrix whose pole masses and
couplings are shared the same way. Each channel's pseudo-data are drawn from its model at
a known point (accept-reject on NumPy phase-space events), and the joint likelihood is
fitted as the tutorial does.

Run it with either library: the ``import laddu as ld`` line is the only one naming it.
"""

import math

import laddu as ld
import numpy as np
from tutorial_models.coupled_channel import events

# --- the two reactions, declared once each ------------------------------------------------


def reaction(name, first, second):
    photon, proton = ld.particles.PHOTON, ld.particles.PROTON
    return ld.Channel(
        name,
        edges=[
            ld.Edge("gamma", p4="beam", particle=photon),
            ld.Edge("target", p4="target", particle=proton),
            ld.Edge("X"),
            ld.Edge("recoil", p4="recoil", particle=proton),
            ld.Edge("a1", p4="daughter1", particle=first),
            ld.Edge("a2", p4="daughter2", particle=second),
        ],
        vertices=[
            ld.Vertex("production", incoming=["gamma", "target"], outgoing=["X", "recoil"]),
            ld.Vertex("decay", incoming=["X"], outgoing=["a1", "a2"]),
        ],
    )


channel_a = reaction("gamma p -> pi+ pi- p", ld.particles.PI_PLUS, ld.particles.PI_MINUS)
channel_b = reaction("gamma p -> K+ K- p", ld.particles.K_PLUS, ld.particles.K_MINUS)
channels = [channel_a, channel_b]
daughters = [("PI_PLUS", "PI_MINUS"), ("K_PLUS", "K_MINUS")]

# --- a shared Breit-Wigner pole --------------------------------------------------------------

pole_mass = ld.parameter("pole_mass", initial=1.50, bounds=(1.30, 1.70), unit="GeV")
pole_width = ld.parameter("pole_width", initial=0.15, bounds=(0.01, 0.50), unit="GeV")


def line_shape(channel):
    return ld.relativistic_breit_wigner(
        channel.s("X"),
        mass=pole_mass,
        width=pole_width,
        mass1=channel.particle("a1").mass,
        mass2=channel.particle("a2").mass,
        l=0,
    )


coupling_a = ld.complex(ld.parameter("channel_a_re", fixed=1.0), ld.parameter("channel_a_im", fixed=0.0))
coupling_b = ld.polar_complex(
    ld.parameter("channel_b_magnitude", initial=0.5, bounds=(0.0, None)),
    ld.parameter("channel_b_phase", initial=0.0, bounds=(-math.pi, math.pi), periodic=True),
)
model_a = ld.Model((coupling_a * line_shape(channel_a)).norm_sqr())
model_b = ld.Model((coupling_b * line_shape(channel_b)).norm_sqr())


# --- pseudo-data: phase-space events kept with probability I / max I at a known point ------


def pseudo_data(model, pool, truth, seed):
    """Accept-reject ``pool`` (``from_arrays`` keywords) against ``model`` at ``truth``."""
    values = np.asarray(model.evaluate(ld.Dataset.from_arrays(**pool), parameters=truth, real=True))
    keep = np.random.default_rng(seed).uniform(0.0, values.max(), len(values)) < values
    p4s = {name: p4[keep] for name, p4 in pool["p4s"].items()}
    scalars = {name: column[keep] for name, column in pool["scalars"].items()}
    return ld.Dataset.from_arrays(p4s=p4s, scalars=scalars)


N_POOL, N_MC = 6000, 3000
pools = [events(pair, N_POOL, seed=40 + i) for i, pair in enumerate(daughters)]
accepted_mc_a, accepted_mc_b = (ld.Dataset.from_arrays(**events(pair, N_MC, seed=50 + i))
                                for i, pair in enumerate(daughters))
bw_truth = {"pole_mass": 1.48, "pole_width": 0.20, "channel_b_magnitude": 0.8, "channel_b_phase": 0.6}
data_a = pseudo_data(model_a, pools[0], {n: bw_truth[n] for n in model_a.parameter_names}, seed=60)
data_b = pseudo_data(model_b, pools[1], {n: bw_truth[n] for n in model_b.parameter_names}, seed=61)

# --- compose and fit the channel likelihoods ---------------------------------------------------

joint = ld.Likelihood(
    [
        ld.NLL(model_a, data=data_a, accepted_mc=accepted_mc_a, name="channel_a"),
        ld.NLL(model_b, data=data_b, accepted_mc=accepted_mc_b, name="channel_b"),
    ]
)
start = {"pole_mass": 1.52, "pole_width": 0.12}
fit = joint.fit(initial=start, terminators=[ld.ganesh.MaxSteps(1000)])

# --- the same sharing through a two-pole K-matrix --------------------------------------------


def f_vector(channel):
    """The production amplitude F = (I + K C)^-1 P at ``channel``'s s, both poles shared."""
    s = channel.s("X")
    pole_masses = ld.vector(
        [ld.parameter(f"pole_{a}_mass", initial=m, bounds=(1.0, 2.2), unit="GeV")
         for a, m in ((1, 1.3), (2, 1.7))]
    )
    couplings = ld.matrix([[ld.parameter(f"g_{c}_{a}", initial=0.5) for a in (1, 2)] for c in ("pipi", "kk")])
    masses = [(ch.particle("a1").mass, ch.particle("a2").mass) for ch in channels]
    barriers = ld.blatt_weisskopf_barriers(
        s,
        channel_mass_1=ld.vector([m1 for m1, _ in masses]),
        channel_mass_2=ld.vector([m2 for _, m2 in masses]),
        pole_masses=pole_masses,
        l=0,
    )
    k = ld.k_matrix(s, pole_masses=pole_masses, couplings=couplings, barriers=barriers)
    production = ld.vector(
        [ld.complex(ld.parameter("beta_1_re", fixed=1.0), ld.parameter("beta_1_im", fixed=0.0)),
         ld.cparameter("beta_2", initial=0.5 + 0.5j)]
    )
    p = ld.p_vector(s, pole_masses=pole_masses, production=production, couplings=couplings, barriers=barriers)
    rho = [ld.rho(s, mass1=m1, mass2=m2) for m1, m2 in masses]
    phase_space = ld.matrix([[-1j * rho[0], 0.0], [0.0, -1j * rho[1]]])
    return ld.f_vector(s, pole_masses=pole_masses, k=k, p=p, phase_space=phase_space)


k_models = [ld.Model(f_vector(channel)[i].norm_sqr()) for i, channel in enumerate(channels)]
k_truth = {"pole_1_mass": 1.28, "pole_2_mass": 1.72, "g_pipi_1": 0.7, "g_kk_1": 0.3, "g_pipi_2": 0.4,
           "g_kk_2": 0.8, "beta_2 real": 0.6, "beta_2 imag": 0.3}
k_data = [pseudo_data(model, pool, {n: k_truth[n] for n in model.parameter_names}, seed=70 + i)
          for i, (model, pool) in enumerate(zip(k_models, pools))]
k_terms = zip(k_models, k_data, (accepted_mc_a, accepted_mc_b), ("channel_a", "channel_b"))
k_joint = ld.Likelihood([ld.NLL(m, data=d, accepted_mc=mc, name=name) for m, d, mc, name in k_terms])
k_start = dict(k_truth, pole_1_mass=1.3, g_kk_2=0.7)
k_fit = k_joint.fit(initial=k_start, terminators=[ld.ganesh.MaxSteps(1000)])

def report():
    for name, result in (("shared pole", fit), ("K-matrix", k_fit)):
        print(name, result.converged, result.objective)
        print(dict(zip(result.parameter_names, np.round(result.values, 4))))
