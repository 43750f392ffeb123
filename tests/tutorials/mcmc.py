"""Port of the sampling part of laddu's fitting chapter: the posterior of a fitted model by MCMC.

The model of "Expressions, amplitudes, and models" with its line shape fixed (a known
resonance) and the second wave's polar coupling free. After an L-BFGS-B fit, the
likelihood ``exp(-NLL / 2)`` is sampled with both of ganesh's samplers, the affine-invariant
ensemble sampler (AIES) and the ensemble slice sampler (ESS), from walkers around the
minimum; the burn-in is removed and the chain thinned with ``Ensemble.from_mcmc``.

The two libraries' chains are different random walks: they agree only statistically.

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
production, decay = channel.vertex("production"), channel.vertex("decay")
helicity_axis = production.vec3("X")
normal = production.vec3("gamma").cross(helicity_axis)
theta = decay.theta("ks1", z_axis=helicity_axis, y_hint=normal)
phi = decay.phi("ks1", z_axis=helicity_axis, y_hint=normal)
angular = ld.WignerD(ld.J(2), ld.M(1), ld.M(0)).D(alpha=phi, beta=theta).conj()
m_k = ld.particles.K_SHORT.mass
line_shape = ld.relativistic_breit_wigner(channel.s("X"), mass=1.50, width=0.12, mass1=m_k, mass2=m_k, l=0)
second = ld.polar_complex(
    ld.parameter("second_magnitude", initial=0.3, bounds=(0.0, 3.0)),
    ld.parameter("second_phase", initial=0.0, bounds=(-math.pi, math.pi), periodic=True),
)
model = ld.Model((line_shape.tagged("reference") + (second * angular).tagged("second")).norm_sqr())

truth = {"second_magnitude": 0.4, "second_phase": 0.9}
pool = {"p4s": events(3000, 201)["p4s"], "scalars": {}}
intensities = np.asarray(model.evaluate(ld.Dataset.from_arrays(**pool), parameters=truth, real=True))
keep = np.random.default_rng(202).uniform(0.0, intensities.max(), len(intensities)) < intensities
data = ld.Dataset.from_arrays(p4s={k: v[keep] for k, v in pool["p4s"].items()}, scalars={})
accepted_mc = ld.Dataset.from_arrays(p4s=events(1500, 203)["p4s"], scalars={})
likelihood = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=accepted_mc, name="signal")])
fit = likelihood.fit(initial=[0.5, 0.5])

# --- walkers around the minimum, then both samplers -----------------------------------------------

N_WALKERS, N_STEPS, BURN_IN = 10, 150, 50
rng = np.random.default_rng(204)
walkers = np.asarray(fit.values) + 0.3 * np.asarray(fit.standard_errors) * rng.standard_normal((N_WALKERS, 2))
aies = likelihood.sample(ld.ganesh.AIESInit(walkers), config=ld.ganesh.AIESConfig(), seed=5,
                         terminators=[ld.ganesh.MaxSteps(N_STEPS)])
ess = likelihood.sample(ld.ganesh.ESSInit(walkers), config=ld.ganesh.ESSConfig(), seed=6,
                        terminators=[ld.ganesh.MaxSteps(N_STEPS)])
posteriors = {
    "aies": ld.Ensemble.from_mcmc(aies, discard=BURN_IN, thin=5),
    "ess": ld.Ensemble.from_mcmc(ess, discard=BURN_IN, thin=5),
}


def report():
    print(f"{len(data)} events; fit {dict(zip(fit.parameter_names, np.round(fit.values, 5)))} "
          f"+- {np.round(fit.standard_errors, 5)}")
    for name, summary in (("aies", aies), ("ess", ess)):
        draws = np.asarray(posteriors[name].draws)
        print(f"  {name}: chain {summary.dimension}, {len(draws)} kept; mean {draws.mean(axis=0)}, "
              f"std {draws.std(axis=0, ddof=1)}")
