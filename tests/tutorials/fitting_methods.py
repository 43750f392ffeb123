"""Port of laddu's tutorial "Fitting a model to unbinned event data", with several ganesh methods.

The model of "Expressions, amplitudes, and models": an S-wave relativistic Breit-Wigner
(the reference wave) and a second wave of free polar coupling times a Wigner D function of
the helicity-frame decay angles, tagged for projections. Pseudo-data are drawn from it at
a known point; the normalized ``NLL`` is built and inspected (value and gradient at a
sampled start), and the likelihood minimized from one start with laddu's default (L-BFGS-B) and with other
ganesh minimizers: Nelder-Mead, conjugate gradient, trust region and CMA-ES. A projection
of the fitted tagged waves closes the chapter.

Run it with either library: the ``import laddu as ld`` line is the only one naming it.
"""

import math

import laddu as ld
import numpy as np
from tutorial_models.polarized import events

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

# --- the model of the expressions chapter ------------------------------------------------------

production, decay = channel.vertex("production"), channel.vertex("decay")
helicity_axis = production.vec3("X")
normal = production.vec3("gamma").cross(helicity_axis)
theta = decay.theta("ks1", z_axis=helicity_axis, y_hint=normal)
phi = decay.phi("ks1", z_axis=helicity_axis, y_hint=normal)
angular = ld.WignerD(ld.J(2), ld.M(1), ld.M(0)).D(alpha=phi, beta=theta).conj()

m_k = ld.particles.K_SHORT.mass
line_shape = ld.relativistic_breit_wigner(
    channel.s("X"),
    mass=ld.parameter("mass_0", initial=1.50, bounds=(1.35, 1.65), unit="GeV"),
    width=ld.parameter("width_0", initial=0.12, bounds=(0.01, 0.30), unit="GeV"),
    mass1=m_k,
    mass2=m_k,
    l=0,
)
second = ld.polar_complex(
    ld.parameter("second_magnitude", initial=0.3, bounds=(0.0, 3.0)),
    ld.parameter("second_phase", initial=0.0, bounds=(-math.pi, math.pi), periodic=True),
)
reference_wave = line_shape.tagged("reference")
second_wave = (second * angular).tagged("second")
model = ld.Model((reference_wave + second_wave).norm_sqr())

# --- pseudo-data at a known point (accept-reject on phase-space events) -------------------------

truth = {"mass_0": 1.50, "width_0": 0.12, "second_magnitude": 0.4, "second_phase": 0.9}
pool = events(8000, 101)
pool = {"p4s": pool["p4s"], "scalars": {}}
intensities = np.asarray(model.evaluate(ld.Dataset.from_arrays(**pool), parameters=truth, real=True))
keep = np.random.default_rng(102).uniform(0.0, intensities.max(), len(intensities)) < intensities
data = ld.Dataset.from_arrays(p4s={k: v[keep] for k, v in pool["p4s"].items()}, scalars={})
accepted_mc = ld.Dataset.from_arrays(**{**events(3000, 103), "scalars": {}, "weights": None})
generated_mc = accepted_mc

# --- build and inspect the objective -------------------------------------------------------------

term = ld.NLL(model, data=data, accepted_mc=accepted_mc, name="signal")
likelihood = ld.Likelihood([term])
initial = likelihood.sample_parameters(seed=100)
value, gradient = likelihood.value_and_gradient(initial)

# --- minimize with several ganesh methods from one start -----------------------------------------

start = {"mass_0": 1.45, "width_0": 0.16, "second_magnitude": 0.6, "second_phase": 0.5}
configs = {
    "default": None,
    "lbfgsb": ld.ganesh.LBFGSBConfig(),
    "nelder_mead": ld.ganesh.NelderMeadConfig(),
    "conjugate_gradient": ld.ganesh.ConjugateGradientConfig(),
    "trust_region": ld.ganesh.TrustRegionConfig(),
    "cmaes": ld.ganesh.CMAESConfig(initial_sigma=0.1),
}
fits = {
    name: likelihood.fit(initial=start, config=config, seed=7, terminators=[ld.ganesh.MaxSteps(300)])
    for name, config in configs.items()
}
fit = fits["default"]
fitted = dict(zip(fit.parameter_names, fit.values, strict=True))

# --- project the fitted tagged waves ----------------------------------------------------------------

projection_model = model.projection(["second"])
at_fit = {k: fitted[k] for k in projection_model.parameter_names}
second_intensity = np.asarray(projection_model.evaluate(generated_mc, parameters=at_fit, real=True))


def report():
    print(f"{len(data)} events; NLL at the sampled start {value:.10f}")
    for name, result in fits.items():
        values = ", ".join(f"{x:.5f}" for x in result.values)
        print(f"  {name:20s} {result.objective:.10f} converged={result.converged} [{values}]")
    print(f"second wave alone, summed over the MC: {second_intensity.sum():.8g}")
