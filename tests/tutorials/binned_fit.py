"""Port of laddu's tutorials "Fitting models across bins of event data" and "From fitted
intensities to cross sections", with the bootstrap of "Fitting a model to unbinned event data".

Data and accepted MC of gamma p -> X p, X -> K_S K_S are partitioned in m(K_S K_S) with
``Dataset.bin_by``; every interval gets its own angular model (an S wave plus a D wave of
free polar coupling, times a free yield, an ``ExtendedNLL`` term so the yield means
events), and one block-diagonal likelihood fits all intervals at once. A paired Poisson
bootstrap refits the replicas, and the cross section of one interval is propagated from
the fit with the bootstrap ensemble.

Pseudo-data are phase-space events kept by a toy mass-dependent acceptance and by
accept-reject against a D-wave coupling that rises with the mass.

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
s_wave = ld.WignerD(ld.J(0), ld.M(0), ld.M(0)).D(alpha=phi, beta=theta).conj().tagged("s")
d_wave = ld.WignerD(ld.J(2), ld.M(1), ld.M(0)).D(alpha=phi, beta=theta).conj().tagged("d")
mass = channel.mass("X")


def subset(dataset, keep):
    """The events of ``dataset`` where ``keep`` is true (four-vectors read back by expression)."""
    p4s = {}
    for name in dataset.p4_names():
        p4 = ld.Vec4.event(name)
        columns = [dataset.evaluate(c, real=True) for c in (p4.e(), p4.px(), p4.py(), p4.pz())]
        p4s[name] = np.column_stack(columns)[keep]
    return ld.Dataset.from_arrays(p4s=p4s, scalars={})


# --- generated MC, accepted MC and pseudo-data ---------------------------------------------

N_GENERATED = 12_000
pool = events(N_GENERATED, 31)
pool = {"p4s": pool["p4s"], "scalars": {}}
generated_mc = ld.Dataset.from_arrays(**pool)
masses = np.asarray(generated_mc.evaluate(mass, real=True))
accepted = np.random.default_rng(32).uniform(size=N_GENERATED) < 0.3 + 0.4 * (masses - 1.0)
accepted_mc = subset(generated_mc, accepted)

truth_model = ld.Model((s_wave + ld.polar_complex(0.3 + 0.8 * (mass - 1.0), 0.5) * d_wave).norm_sqr())
truth_values = np.asarray(truth_model.evaluate(generated_mc, parameters=[], real=True))
drawn = np.random.default_rng(33).uniform(0.0, truth_values.max(), N_GENERATED) < truth_values
data = subset(generated_mc, drawn & accepted)

# --- partition observed and normalization data ---------------------------------------------

binning = ld.Bin(np.linspace(1.0, 2.0, 4))
data_bins = data.bin_by(mass, bins=binning)
accepted_bins = accepted_mc.bin_by(mass, bins=binning)
generated_bins = generated_mc.bin_by(mass, bins=binning)

# --- one event likelihood per interval -----------------------------------------------------

terms = []
for observed, normalization in zip(data_bins, accepted_bins, strict=True):
    if len(observed.dataset) == 0 or len(normalization.dataset) == 0:
        continue
    prefix = f"bin_{observed.index:02d}"
    magnitude = ld.parameter(f"{prefix}_d_magnitude", initial=0.2, bounds=(0.0, 5.0))
    phase = ld.parameter(f"{prefix}_d_phase", initial=0.3, bounds=(-math.pi, math.pi), periodic=True)
    scale = ld.parameter(f"{prefix}_yield", initial=0.3, bounds=(0.01, 10.0))
    amplitude = s_wave + ld.polar_complex(magnitude, phase) * d_wave
    terms.append(ld.ExtendedNLL(ld.Model(scale * amplitude.norm_sqr()), data=observed.dataset,
                                accepted_mc=normalization.dataset, name=prefix))

likelihood = ld.Likelihood(terms)
initial = likelihood.sample_parameters(seed=9)
value, gradient = likelihood.value_and_gradient(initial)
fit = likelihood.fit(initial=initial, terminators=[ld.ganesh.MaxSteps(1000)])
fitted = dict(zip(fit.parameter_names, fit.values, strict=True))

# --- bootstrap and the cross section of the middle interval ---------------------------------

bootstrap = likelihood.bootstrap_fit(
    12, initial=fit.values, seed=12345, terminators=[ld.ganesh.MaxSteps(500)]
)
luminosity = ld.Luminosity(2.5, ld.AreaUnit.PICOBARN)
cross_section = likelihood.cross_section(
    "bin_01",
    generated_mc=generated_bins[1].dataset,
    luminosity=luminosity,
    parameters=fitted,
    ensemble=bootstrap,
)
total = cross_section.total
low, high = total.interval(0.68)


def report():
    print(f"{len(data)} data events, {len(accepted_mc)} accepted of {N_GENERATED} generated")
    print(f"fit: {fit.converged}, objective {fit.objective:.10f}")
    for name, x in fitted.items():
        print(f"  {name:20s} {x: .5f}")
    draws = np.asarray(bootstrap.draws)
    print("bootstrap means", dict(zip(bootstrap.parameter_names, np.round(draws.mean(axis=0), 4))))
    print(f"cross section (bin 01): {total.central:.6g} pb, 68% [{low:.6g}, {high:.6g}]")
