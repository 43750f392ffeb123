"""The sequential-helicity model of laddu's ``python/examples/closure.py``, written once.

gamma p -> X p, X -> K_S K_S, with an f0(1500) and an f2(1270) in X: each wave is the product
of a production and a decay Wigner D function (helicity frames from the declared channel),
Clebsch-Gordan couplings of the helicities, and a relativistic Breit-Wigner; the intensity
is the incoherent average over the external helicities of |f0 + c f2|^2 with
``c = f2_magnitude * exp(i f2_phase)``.  Every function takes the library ``ld`` (``laddu``
or ``laddu_dask``) and uses only laddu 0.28.1's public API, so the same code builds both
models.  The physics (frames, couplings, normalization, masses, widths) follows
``closure.py``; the code is written for these tests.
"""

from __future__ import annotations

import itertools
import math

#: The resonances: (name, spin, mass, width), the PDG values closure.py uses.
F0 = ("f0(1500)", 0, 1.522, 0.108)
F2 = ("f2(1270)", 2, 1.275_412_049_919_005, 0.186_554_356_637_326_4)

#: The f2 coupling the pseudo-data are generated with (closure.py's truth).
TRUTH = {"f2_magnitude": 0.65, "f2_phase": 0.7}


def build_channel(ld):
    """The reaction, with the generation settings closure.py gives it."""
    kaon = ld.particles.K_SHORT
    beam = ld.InitialMomentum.uniform_energy(low=8.0, high=9.0, direction=[0.0, 0.0, 1.0])
    at_rest = ld.InitialMomentum.momentum([0.0, 0.0, 0.0])
    edges = [
        ld.Edge("gamma", p4="gamma", particle=ld.particles.PHOTON, output=True, initial_momentum=beam),
        ld.Edge("target", p4="target", particle=ld.particles.PROTON, output=True, initial_momentum=at_rest),
        ld.Edge("X", mass_proposal=ld.MassProposal(2.0 * kaon.mass, high=2.0)),
        ld.Edge("recoil", p4="recoil", particle=ld.particles.PROTON, output=True),
        ld.Edge("ks1", p4="ks1", particle=kaon, output=True),
        ld.Edge("ks2", p4="ks2", particle=kaon, output=True),
    ]
    t_channel = ld.VertexProposal.t_exchange(incoming="gamma", outgoing="X", slope=4.0, uniform_fraction=0.2)
    vertices = [
        ld.Vertex("production", incoming=["gamma", "target"], outgoing=["X", "recoil"], generation=t_channel),
        ld.Vertex("decay", incoming=["X"], outgoing=["ks1", "ks2"], generation=ld.VertexProposal.isotropic()),
    ]
    return ld.Channel("gamma p -> K_S K_S p", edges=edges, vertices=vertices)


def _helicity_angles(ld, channel):
    """(phi, theta) of X in the production frame about the beam, and of ks1 in the X helicity
    frame (z along X, y along beam x X)."""
    production, decay = channel.vertex("production"), channel.vertex("decay")
    beam, meson = production.vec3("gamma"), production.vec3("X")
    lab_y = ld.Vec3.y_axis()
    normal = beam.cross(meson)
    return (
        (production.phi("X", z_axis=beam, y_hint=lab_y), production.theta("X", z_axis=beam, y_hint=lab_y)),
        (decay.phi("ks1", z_axis=meson, y_hint=normal), decay.theta("ks1", z_axis=meson, y_hint=normal)),
    )


def _total_spin(channel, resonance_spin):
    """The lowest total spin reachable from both gamma p and X p (closure.py's choice)."""
    initial = channel.particle("gamma").spin.coupled_with(channel.particle("target").spin)
    final = resonance_spin.coupled_with(channel.particle("recoil").spin)
    common = [j for j in initial if j in final]
    if not common:
        raise ValueError("the production vertex has no common total spin")
    return common[0]


def _wave(ld, channel, angles, spin, line_shape, helicities):
    """One resonance's amplitude for the external helicities (photon, target, recoil, ks1, ks2)."""
    (prod_phi, prod_theta), (dec_phi, dec_theta) = angles
    s_gamma, s_target, s_recoil, s_k1, s_k2 = (
        channel.particle(edge).spin for edge in ("gamma", "target", "recoil", "ks1", "ks2"))
    l_gamma, l_target, l_recoil, l_k1, l_k2 = helicities
    total = _total_spin(channel, spin)
    orbital = ld.L(spin)
    decay_m = l_k1 - l_k2
    initial_m = l_gamma - l_target
    couple = ld.clebsch_gordan
    fixed = (couple(j1=s_gamma, m1=l_gamma, j2=s_target, m2=-l_target, j=total, m=initial_m)
             * couple(j1=s_k1, m1=l_k1, j2=s_k2, m2=-l_k2, j=ld.S(0), m=decay_m)
             * couple(j1=orbital, m1=ld.M(0), j2=ld.S(0), m2=decay_m, j=spin, m=decay_m))
    angular = ld.Expr(0.0)
    for l_res in spin.projections():
        final_m = l_res - l_recoil
        weight = fixed * couple(j1=spin, m1=l_res, j2=s_recoil, m2=-l_recoil, j=total, m=final_m)
        if weight == 0.0:
            continue
        d_production = ld.WignerD(total, initial_m, final_m).D(alpha=prod_phi, beta=prod_theta).conj()
        d_decay = ld.WignerD(spin, l_res, decay_m).D(alpha=dec_phi, beta=dec_theta).conj()
        angular += weight * d_production * d_decay
    norm = math.sqrt(total.multiplicity * spin.multiplicity) / (4.0 * math.pi)
    norm *= math.sqrt(orbital.multiplicity / spin.multiplicity)
    return norm * line_shape * angular


def build_model(ld, channel):
    """The unpolarized intensity of closure.py: (1/4) sum over helicities |f0 + c f2|^2."""
    s = channel.s("X")
    m_k = channel.particle("ks1").mass
    angles = _helicity_angles(ld, channel)
    waves = {}
    for name, spin, mass, width in (F0, F2):
        resonance = ld.Particle(name, spin=ld.S(spin), parity=ld.Parity.POSITIVE, mass=mass)
        shape = ld.relativistic_breit_wigner(s, mass=resonance.mass, width=width, mass1=m_k, mass2=m_k,
                                             l=spin)
        waves[name] = (resonance.spin, shape)
    magnitude = ld.parameter("f2_magnitude", initial=0.35, bounds=(0.0, 2.0), scale=0.5)
    phase = ld.parameter("f2_phase", initial=0.0, bounds=(-math.pi, math.pi), periodic=True, scale=1.0)
    coupling = ld.polar_complex(magnitude, phase)
    photon = [m for m in channel.particle("gamma").spin.projections() if m != ld.M(0)]
    others = [channel.particle(edge).spin.projections() for edge in ("target", "recoil", "ks1", "ks2")]
    intensity = ld.Expr(0.0)
    for helicities in itertools.product(photon, *others):
        f0, f2 = (_wave(ld, channel, angles, *waves[name], helicities).tagged(tag)
                  for name, tag in ((F0[0], "f0"), (F2[0], "f2")))
        intensity += (f0 + coupling * f2).norm_sqr()
    return ld.Model(intensity * 0.25)


def generate(laddu, directory, *, data_events: int, mc_events: int, seed: int):
    """Pseudo-data (accept-reject at :data:`TRUTH`) and weighted phase-space MC from laddu's own
    generator, written as laddu-convention Parquet files; returns their paths."""
    channel = build_channel(laddu)
    generator = laddu.Generator(channel)
    execution = laddu.Execution("jit", threads=2, precision="f64")
    data_path, mc_path = directory / "closure_data.parquet", directory / "closure_mc.parquet"
    if data_events:
        data, _ = generator.unweighted(data_events, build_model(laddu, channel), parameters=TRUTH,
                                       execution=execution, seed=seed, pilot_proposals=20_000,
                                       grow_envelope=True)
        data.write_to(laddu.ParquetSink(str(data_path)))
    mc, _ = generator.weighted(mc_events, execution=execution, seed=seed + 1)
    mc.write_to(laddu.ParquetSink(str(mc_path)))
    return data_path, mc_path
