"""Reaction topology and vertex frames (issue 11, item 4), against laddu 0.28.1 itself.

The channels are written once against laddu's API (``lib`` is ``laddu`` or ``laddu_dask``) and
built with both libraries; every frame quantity (masses, Mandelstam s, t, u, frame momenta,
helicity, Gottfried-Jackson and production angles, through one- and two-step decay chains
and inferred momenta) agrees per event on generated events to 1e-12.  A closed-form check
recovers, event by event, the helicity angles a generator put into the X rest frame, and
finds the two daughters back to back with the two-body breakup momentum.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from laddu_reference import laddu, needs_laddu

import laddu_dask as ld
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.errors import ModelError

N = 300
M_P, M_K, M_PI = 0.93827208816, 0.497611, 0.13957039


def _boost(p: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Four-vectors ``p`` (N, 4: e, px, py, pz) seen by an observer moving with ``-beta``."""
    b2 = (beta**2).sum(axis=1)
    gamma = 1.0 / np.sqrt(1.0 - b2)
    bp = (beta * p[:, 1:]).sum(axis=1)
    coef = gamma**2 / (gamma + 1.0) * bp + gamma * p[:, 0]
    return np.column_stack([gamma * (p[:, 0] + bp), p[:, 1:] + beta * coef[:, None]])


def _two_body(m: np.ndarray, m1, m2, direction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two daughters (masses ``m1``, ``m2``) of a parent of mass ``m`` at rest, the first along
    the unit vectors ``direction``."""
    q = np.sqrt((m**2 - (m1 + m2) ** 2) * (m**2 - (m1 - m2) ** 2)) / (2.0 * m)
    p = q[:, None] * direction
    return np.column_stack([np.sqrt(q**2 + m1**2), p]), np.column_stack([np.sqrt(q**2 + m2**2), -p])


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=1)[:, None]


def _direction(cos: np.ndarray, phi: np.ndarray) -> np.ndarray:
    sin = np.sqrt(1.0 - cos**2)
    return np.column_stack([sin * np.cos(phi), sin * np.sin(phi), cos])


def generate(rng: np.random.Generator, n: int = N) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """gamma p -> X p, X -> K K (and X -> pi0 Y, Y -> pi+ pi-) in the laboratory, the target at
    rest, with the X decay angles put in the helicity frame: z along X in the centre-of-momentum
    frame, y along beam x X, x = y x z."""
    e_beam = rng.uniform(8.0, 9.0, n)
    beam = np.column_stack([e_beam, np.zeros(n), np.zeros(n), e_beam])
    target = np.column_stack([np.full(n, M_P), np.zeros((n, 3))])
    total = beam + target
    w = np.sqrt(total[:, 0] ** 2 - total[:, 3] ** 2)
    m_x, m_y = rng.uniform(1.1, 2.0, n), rng.uniform(0.3, 0.9, n)
    z_h = _direction(rng.uniform(-1.0, 1.0, n), rng.uniform(-np.pi, np.pi, n))
    x_cm, recoil_cm = _two_body(w, m_x, M_P, z_h)
    y_h = _unit(np.cross(np.tile([0.0, 0.0, 1.0], (n, 1)), z_h))
    x_h = np.cross(y_h, z_h)
    cos_h, phi_h = rng.uniform(-1.0, 1.0, n), rng.uniform(-np.pi, np.pi, n)
    d = _direction(cos_h, phi_h)
    d = d[:, :1] * x_h + d[:, 1:2] * y_h + d[:, 2:] * z_h
    k1, k2 = _two_body(m_x, M_K, M_K, d)
    pi0, y_x = _two_body(m_x, M_PI, m_y, d)
    pip_y, pim_y = _two_body(m_y, M_PI, M_PI, _unit(rng.normal(size=(n, 3))))
    beta_y, beta_x = y_x[:, 1:] / y_x[:, :1], x_cm[:, 1:] / x_cm[:, :1]
    to_lab = total[:, 1:] / total[:, :1]
    lab = {"beam": beam, "target": target, "recoil": _boost(recoil_cm, to_lab)}
    for name, rest in (("kshort1", k1), ("kshort2", k2), ("pi0", pi0),
                       ("pip", _boost(pip_y, beta_y)), ("pim", _boost(pim_y, beta_y))):
        lab[name] = _boost(_boost(rest, beta_x), to_lab)
    return lab, {"cos_h": cos_h, "phi_h": phi_h, "m_x": m_x}


P4S, TRUTH = generate(np.random.default_rng(1104))
COLUMNS = {f"{k}_{c}": v[:, i] for k, v in P4S.items() for i, c in enumerate(("e", "px", "py", "pz"))}


def kk_channel(lib, recoil_p4="recoil"):
    """gamma p -> X p, X -> K_S K_S, written in laddu's API (X inferred from its daughters)."""
    return lib.Channel(
        "gamma p -> K_S K_S p",
        edges=[lib.Edge("gamma", p4="beam", particle=lib.particles.PHOTON),
               lib.Edge("target", p4="target", particle=lib.particles.PROTON),
               lib.Edge("X"),
               lib.Edge("recoil", p4=recoil_p4, particle=lib.particles.PROTON),
               lib.Edge("ks1", p4="kshort1", particle=lib.particles.K_SHORT),
               lib.Edge("ks2", p4="kshort2", particle=lib.particles.K_SHORT)],
        vertices=[lib.Vertex("production", incoming=["gamma", "target"], outgoing=["X", "recoil"]),
                  lib.Vertex("decay", incoming=["X"], outgoing=["ks1", "ks2"])],
    )


def chain_channel(lib):
    """gamma p -> X p, X -> pi0 Y, Y -> pi+ pi-: a two-step frame path; the recoil is inferred
    from the production vertex and the beam is given as a Vec4 expression."""
    return lib.Channel(
        "gamma p -> p pi0 pi+ pi-",
        edges=[lib.Edge("gamma", p4=lib.Vec4.event("beam")), lib.Edge("target", p4="target"),
               lib.Edge("X"), lib.Edge("recoil"), lib.Edge("pi0", p4="pi0"), lib.Edge("Y"),
               lib.Edge("pip", p4="pip"), lib.Edge("pim", p4="pim")],
        vertices=[lib.Vertex("production", incoming=["gamma", "target"], outgoing=["X", "recoil"]),
                  lib.Vertex("x decay", incoming=["X"], outgoing=["pi0", "Y"]),
                  lib.Vertex("y decay", incoming=["Y"], outgoing=["pip", "pim"])],
    )


def _angles(prefix, frame, edge, z, y):
    return {f"{prefix} costheta": lambda: frame.costheta(edge, z_axis=z, y_hint=y),
            f"{prefix} theta": lambda: frame.theta(edge, z_axis=z, y_hint=y),
            f"{prefix} phi": lambda: frame.phi(edge, z_axis=z, y_hint=y)}


def quantities(lib) -> dict:
    """name -> zero-argument builder of one frame expression, in laddu's spelling."""
    kk, chain = kk_channel(lib), chain_channel(lib)
    prod, dec = kk.vertex("production"), kk.vertex("decay")
    beam_axis, x_axis = prod.vec3("gamma"), prod.vec3("X")
    normal = beam_axis.cross(x_axis)
    out = {
        "mass X": lambda: kk.mass("X"), "s X": lambda: kk.s("X"), "mass recoil": lambda: kk.mass("recoil"),
        "production s": prod.s, "production t": prod.t, "production u": prod.u,
        "mandelstam T": lambda: prod.mandelstam(lib.MandelstamChannel.T),
        "mandelstam parsed u": lambda: prod.mandelstam(lib.MandelstamChannel("U")),
        "inferred recoil t": lambda: chain.vertex("production").t(),
        "inferred recoil u": lambda: chain.vertex("production").u(),
        "mass Y": lambda: chain.mass("Y"), "mass recoil inferred": lambda: chain.mass("recoil"),
    }
    for edge in ("X", "gamma", "recoil"):
        for c in ("px", "py", "pz"):
            out[f"production vec3 {edge}.{c}"] = lambda e=edge, c=c: getattr(prod.vec3(e), c)()
    for edge in ("ks1", "ks2", "gamma", "recoil"):
        for c in ("px", "py", "pz"):
            out[f"decay vec3 {edge}.{c}"] = lambda e=edge, c=c: getattr(dec.vec3(e), c)()
    out |= _angles("helicity", dec, "ks1", x_axis, normal)
    out |= _angles("helicity ks2", dec, "ks2", x_axis, normal)
    out |= _angles("gottfried-jackson", dec, "ks1", dec.vec3("gamma"), normal)
    out |= _angles("production", prod, "X", beam_axis, lib.Vec3.y_axis())
    cp, cx, cy = chain.vertex("production"), chain.vertex("x decay"), chain.vertex("y decay")
    cnormal = cp.vec3("gamma").cross(cp.vec3("X"))
    out |= _angles("x helicity", cx, "Y", cp.vec3("X"), cnormal)
    out |= _angles("y helicity", cy, "pip", cx.vec3("Y"), cx.vec3("gamma").cross(cx.vec3("Y")))
    out |= _angles("y gottfried-jackson", cy, "pip", cy.vec3("gamma"), cy.vec3("target"))
    for c in ("px", "py", "pz"):
        out[f"y decay vec3 pim.{c}"] = lambda c=c: getattr(cy.vec3("pim"), c)()
    return out


NAMES = sorted(quantities(ld))


def ours(expr) -> np.ndarray:
    cm = CompiledModel.from_expr(expr)
    cache = cm.event_cache({c: COLUMNS[c] for c in cm.columns})
    return np.asarray(cm.values(cache, [], n=N))


def theirs(expr) -> np.ndarray:
    ds = laddu.Dataset.from_arrays(p4s=P4S, scalars={})
    return np.asarray(ds.evaluate(expr))


def agreement(got: np.ndarray, want: np.ndarray) -> float:
    """The largest difference relative to the value, or to the quantity's scale (its largest
    magnitude on the sample) where the value is smaller: a momentum component or a cosine
    that crosses zero is compared at the size it has, not at its accidental zeros."""
    scale = np.maximum(np.abs(want), max(np.max(np.abs(want)), 1e-12))
    return float(np.max(np.abs(got - want) / scale))


@needs_laddu
@pytest.mark.parametrize("name", NAMES)
def test_frame_quantities_match_laddu(name):
    got = ours(quantities(ld)[name]())
    want = theirs(quantities(laddu)[name]())
    assert np.all(np.isfinite(got))
    assert agreement(got, want) < 1e-12, name


def test_helicity_angles_of_a_generated_decay_are_recovered():
    dec, prod = kk_channel(ld).vertex("decay"), kk_channel(ld).vertex("production")
    z, y = prod.vec3("X"), prod.vec3("gamma").cross(prod.vec3("X"))
    cos_h = ours(dec.costheta("ks1", z_axis=z, y_hint=y))
    np.testing.assert_allclose(cos_h, TRUTH["cos_h"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours(dec.phi("ks1", z_axis=z, y_hint=y)), TRUTH["phi_h"], rtol=0, atol=1e-11)
    np.testing.assert_allclose(ours(kk_channel(ld).mass("X")).real, TRUTH["m_x"], rtol=1e-13)
    # back to back in the X rest frame, with the two-body breakup momentum
    m = TRUTH["m_x"]
    q = np.sqrt(m**2 / 4.0 - M_K**2)
    for c in ("px", "py", "pz"):
        total = ours(getattr(dec.vec3("ks1"), c)() + getattr(dec.vec3("ks2"), c)())
        assert np.max(np.abs(total)) < 1e-12
    np.testing.assert_allclose(ours(dec.vec3("ks1").mag()), q, rtol=1e-12)
    np.testing.assert_allclose(ours(dec.p4("ks1").m2()), M_K**2, rtol=1e-10)  # the boosts keep the mass
    np.testing.assert_allclose(ours(dec.p4("X").e()), m, rtol=1e-13)  # X at rest in its own frame


def test_particles_as_laddu_has_them():
    names = [n for n in dir(laddu.particles) if n.isupper()] if laddu is not None else []
    for name in names:
        mine, ref = getattr(ld.particles, name), getattr(laddu.particles, name)
        assert (mine.name, mine.mass_checked, mine.charge_checked, mine.ids) == (
            ref.name, ref.mass_checked, ref.charge_checked, ref.ids), name
        assert isinstance(mine.spin, ld.S) and repr(mine.spin) == repr(ref.spin), name
        for key in ("parity", "c_parity", "g_parity", "isospin", "statistics", "self_conjugate", "species",
                    "antiparticle_species", "strangeness", "charm", "bottomness", "topness", "baryon_number",
                    "electron_lepton_number", "muon_lepton_number", "tau_lepton_number"):
            want = getattr(ref, f"{key}_checked")
            assert repr(getattr(mine, f"{key}_checked")) == repr(want), (name, key)
    for name in ("PHOTON", "PROTON", "K_SHORT", "PI_PLUS", "PI_MINUS", "PI_ZERO", "ETA", "NEUTRON"):
        assert isinstance(getattr(ld.particles, name), ld.Particle)
    assert ld.particles.K_SHORT.mass == 0.497611 and ld.particles.PHOTON.mass == 0.0
    assert kk_channel(ld).particle("recoil") is ld.particles.PROTON


def test_particle_properties_and_errors():
    pion = ld.Particle("pi+", spin=0, parity="-", charge=1, mass=0.13957, ids={"pdg": 211})
    assert (pion.charge, pion.parity, pion.c_parity_checked, pion.ids) == (1, -1, None, {"pdg": 211})
    assert isinstance(pion.parity, ld.Parity) and pion.parity == ld.Parity.NEGATIVE and pion.spin == ld.S(0)
    with pytest.raises(ModelError, match=r"particle pi\+ does not define `c_parity`"):
        _ = pion.c_parity
    with pytest.raises(ModelError, match="spin must be a non-negative integer or half-integer, got 0.3"):
        ld.Particle("x", spin=0.3)
    with pytest.raises(ModelError, match="spin must be a non-negative integer or half-integer, got 'half'"):
        ld.Particle("x", spin="half")
    assert ld.Particle(spin=1.5).spin == Fraction(3, 2) == ld.S(1.5) == ld.Particle(spin=ld.J(1.5)).spin
    # closure.py's spin algebra works on a particle's spin (laddu's S)
    assert ld.particles.PHOTON.spin.coupled_with(ld.particles.PROTON.spin) == [ld.J(0.5), ld.J(1.5)]
    assert ld.L(ld.Particle(spin=2).spin) == ld.L(2) and ld.particles.PROTON.spin.multiplicity == 2
    if laddu is not None:  # laddu's own S is taken
        assert ld.Particle(spin=laddu.particles.OMEGA_MINUS.spin).spin == Fraction(3, 2)
    # the polarized-photoproduction tutorial's resonance: statistics and isospin as laddu types them
    x = ld.Particle("X", spin=ld.S(1), statistics=ld.Statistics.BOSON, isospin=ld.Isospin(1, projection=0))
    assert (x.statistics, x.isospin.isospin, x.isospin.projection) == (ld.Statistics.BOSON, ld.J(1), ld.M(0))
    assert ld.Statistics.from_spin(ld.particles.PROTON.spin) == ld.Statistics.FERMION
    with pytest.raises(ModelError, match="isospin projection must satisfy -I <= I3 <= I, got I = 1, I3 = 2"):
        ld.Isospin(1, projection=2)
    with pytest.raises(ModelError, match="integral exactly when the isospin is, got I = 1, I3 = 1/2"):
        ld.Isospin(1, projection=0.5)
    with pytest.raises(ModelError, match="a particle isospin must be a Isospin, got 1"):
        ld.Particle("x", isospin=1)
    with pytest.raises(ModelError, match="statistics must be Statistics.BOSON, .* got 'anyon'"):
        ld.Particle("x", statistics="anyon")
    with pytest.raises(ModelError, match="mass must be finite and non-negative, got -1.0"):
        ld.Particle("x", mass=-1.0)
    with pytest.raises(ModelError, match=r"parity must be a Parity, \+1, -1, '\+' or '-', got 2"):
        ld.Particle("x", parity=2)


def test_bad_topologies_are_typed_errors():
    edges = [ld.Edge(n, p4=n) for n in ("a", "b", "c", "d")]
    with pytest.raises(ModelError, match="an edge name cannot be empty"):
        ld.Edge("")
    with pytest.raises(ModelError, match="edge 'a': p4 must be a four-vector name or a Vec4, got int"):
        ld.Edge("a", p4=3)
    with pytest.raises(ModelError, match="edge 'a': particle must be a Particle, got str"):
        ld.Edge("a", particle="proton")
    with pytest.raises(ModelError, match="vertex 'v': an edge cannot appear more than once .* .edge 'a'"):
        ld.Vertex("v", incoming=["a", "b"], outgoing=["a"])
    with pytest.raises(ModelError, match="vertex 'v': a vertex requires at least one incoming"):
        ld.Vertex("v", incoming=[], outgoing=["a"])
    with pytest.raises(ModelError, match="channel 'c': duplicate edge name 'a'"):
        ld.Channel("c", edges=[*edges, ld.Edge("a")], vertices=[])
    v = ld.Vertex("v", incoming=["a", "b"], outgoing=["c", "d"])
    with pytest.raises(ModelError, match="channel 'c': duplicate vertex name 'v'"):
        ld.Channel("c", edges=edges, vertices=[v, v])
    with pytest.raises(ModelError, match="channel 'c': vertex 'w' refers to unknown edge 'zz'"):
        ld.Channel("c", edges=edges, vertices=[ld.Vertex("w", incoming=["a"], outgoing=["zz"])])
    channel = ld.Channel("c", edges=edges, vertices=[v])
    with pytest.raises(ModelError, match="channel 'c': unknown vertex 'nope'"):
        channel.vertex("nope")
    with pytest.raises(ModelError, match="channel 'c': unknown edge 'nope'"):
        channel.mass("nope")
    with pytest.raises(ModelError, match="channel 'c': edge 'a' has no particle properties"):
        channel.particle("a")
    frame = channel.vertex("v")
    with pytest.raises(ModelError, match="z_axis must be a Vec3, got Vec4"):
        frame.costheta("c", z_axis=ld.Vec4.event("a"), y_hint=ld.Vec3.y_axis())
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'z_axis'"):
        frame.phi("c", y_hint=ld.Vec3.y_axis())
    with pytest.raises(ModelError, match="'x' is not a Mandelstam channel: use 's', 't' or 'u'"):
        frame.mandelstam("x")
    decay = kk_channel(ld).vertex("decay")
    with pytest.raises(ModelError, match="vertex 'decay' is not 2-to-2, so it has no Mandelstam s"):
        decay.s()
    # an edge that nothing determines, and one determined in a cycle
    loose = ld.Channel("loose", edges=[ld.Edge("a", p4="a"), ld.Edge("b"), ld.Edge("c", p4="c")],
                       vertices=[ld.Vertex("v", incoming=["a"], outgoing=["c"])])
    with pytest.raises(ModelError, match="channel 'loose': edge 'b' has no p4 and could not be inferred"):
        loose.mass("b")
    cyclic = ld.Channel("cyc", edges=[ld.Edge("a"), ld.Edge("b")],
                        vertices=[ld.Vertex("v", incoming=["a"], outgoing=["b"])])
    with pytest.raises(ModelError, match="channel 'cyc': cyclic momentum inference involving edge 'a'"):
        cyclic.mass("a")
    # an edge produced by two vertices: its momentum, and the frame below it, are ambiguous
    lines = [ld.Edge(n, p4=n) for n in ("beam", "target", "recoil")] + [ld.Edge("x")]
    twice = ld.Channel("twice", edges=lines,
                       vertices=[ld.Vertex("v1", incoming=["beam"], outgoing=["x"]),
                                 ld.Vertex("v2", incoming=["target"], outgoing=["x"]),
                                 ld.Vertex("w", incoming=["x"], outgoing=["recoil"])])
    np.testing.assert_allclose(ours(twice.s("x")), ours(ld.Vec4.event("recoil").m2()), rtol=1e-15)  # from w
    unresolved = ld.Channel("twice", edges=[ld.Edge(n, p4=n) for n in ("a", "b")] + [ld.Edge("x")],
                            vertices=[ld.Vertex("v1", incoming=["a"], outgoing=["x"]),
                                      ld.Vertex("v2", incoming=["b"], outgoing=["x"])])
    with pytest.raises(ModelError, match="channel 'twice': ambiguous momentum inference for edge 'x'"):
        unresolved.mass("x")
    with pytest.raises(ModelError, match="channel 'twice': ambiguous frame path to vertex 'w'"):
        twice.vertex("w").vec3("recoil")
    ring = ld.Channel("ring", edges=[ld.Edge("a", p4="a"), ld.Edge("b", p4="b")],
                      vertices=[ld.Vertex("v", incoming=["a"], outgoing=["b"]),
                                ld.Vertex("w", incoming=["b"], outgoing=["a"])])
    with pytest.raises(ModelError, match="channel 'ring': could not find a root vertex for 'v'"):
        ring.vertex("v").vec3("a")


def test_frame_angles_are_event_only_and_reprs():
    dec, prod = kk_channel(ld).vertex("decay"), kk_channel(ld).vertex("production")
    cos = dec.costheta("ks1", z_axis=prod.vec3("X"), y_hint=ld.Vec3.y_axis())
    cm = CompiledModel.from_expr(ld.parameter("a", initial=2.0) * cos)
    # the whole frame is event-only: one cached value per event, one multiply per evaluation
    assert (cm.parameter_names, len(cm.split.cache), len(cm.split.mixed_nodes)) == (["a"], 1, 1)
    cache = cm.event_cache({c: COLUMNS[c] for c in cm.columns})
    np.testing.assert_allclose(np.asarray(cm.values(cache, [3.0], n=N)), 3.0 * ours(cos), rtol=1e-15)
    assert repr(ld.Edge("a", p4="beam")) == "Edge(\"a\", p4='beam')"
    assert repr(kk_channel(ld)) == 'Channel("gamma p -> K_S K_S p", edges=6, vertices=2)'
    assert repr(ld.MandelstamChannel.T) == "MandelstamChannel.T" and dec.name == "decay"
    assert kk_channel(ld).edge_p4("X") is None and kk_channel(ld).edge_p4("ks1") == "kshort1"


def test_a_model_of_frame_angles_runs_through_the_likelihood():
    dec, prod = kk_channel(ld).vertex("decay"), kk_channel(ld).vertex("production")
    cos = dec.costheta("ks1", z_axis=prod.vec3("X"), y_hint=prod.vec3("gamma").cross(prod.vec3("X")))
    a = ld.parameter("a", initial=0.3, bounds=(-0.9, 0.9))
    events = ld.Dataset.from_arrays(p4s=P4S)
    lik = ld.Likelihood([ld.NLL(ld.Model(1.0 + a * cos), data=events, accepted_mc=events)])
    value, gradient = lik.value_and_gradient([0.3])
    c = ours(cos)
    intensity = 1.0 + 0.3 * c
    assert value == pytest.approx(-2.0 * (np.log(intensity).sum() - N * np.log(intensity.sum())), rel=1e-13)
    want = -2.0 * ((c / intensity).sum() - N * c.sum() / intensity.sum())
    assert gradient[0] == pytest.approx(want, rel=1e-11)


def _proposals(lib):
    """The generation settings of laddu's ``closure.py`` channel, in laddu's API."""
    return dict(
        beam=lib.InitialMomentum.uniform_energy(low=8.0, high=9.0, direction=[0.0, 0.0, 1.0]),
        target=lib.InitialMomentum.momentum([0.0, 0.0, 0.0]),
        x=lib.MassProposal(2.0 * lib.particles.K_SHORT.mass, high=2.0),
        production=lib.VertexProposal.t_exchange(incoming="gamma", outgoing="X", slope=4.0,
                                                 uniform_fraction=0.2),
        decay=lib.VertexProposal.isotropic(),
    )


@pytest.mark.parametrize("lib", [ld, pytest.param(laddu, marks=needs_laddu)], ids=["laddu_dask", "laddu"])
def test_a_channel_with_laddus_generation_settings_builds(lib):
    """closure.py's channel (initial momenta, a mass proposal, t-exchange and isotropic vertices)
    builds unchanged, and its frames are those of the same channel without the settings."""
    p = _proposals(lib)
    channel = lib.Channel(
        "gamma p -> K_S K_S p",
        edges=[lib.Edge("gamma", p4="beam", particle=lib.particles.PHOTON, initial_momentum=p["beam"]),
               lib.Edge("target", p4="target", particle=lib.particles.PROTON, initial_momentum=p["target"]),
               lib.Edge("X", mass_proposal=p["x"]),
               lib.Edge("recoil", p4="recoil", particle=lib.particles.PROTON),
               lib.Edge("ks1", p4="kshort1", particle=lib.particles.K_SHORT),
               lib.Edge("ks2", p4="kshort2", particle=lib.particles.K_SHORT)],
        vertices=[lib.Vertex("production", incoming=["gamma", "target"], outgoing=["X", "recoil"],
                             generation=p["production"]),
                  lib.Vertex("decay", incoming=["X"], outgoing=["ks1", "ks2"], generation=p["decay"])],
    )
    assert channel.vertex_names == ["production", "decay"]
    if lib is ld:
        assert str(channel.s("X")) == str(kk_channel(ld).s("X"))
        assert (p["x"].value, p["x"].high, p["beam"].values, p["production"].slope) == (
            0.995222, 2.0, (8.0, 9.0), 4.0)


BAD_PROPOSALS = [
    (lambda lib: lib.MassProposal(1.0, high=0.5), "value < high"),
    (lambda lib: lib.MassProposal(-1.0), "fixed mass must be non-negative"),
    (lambda lib: lib.InitialMomentum.uniform_energy(low=9.0, high=8.0, direction=[0, 0, 1]),
     "finite low < high"),
    (lambda lib: lib.InitialMomentum.momentum([0.0, 0.0]), "sequence of 3"),
    (lambda lib: lib.VertexProposal.t_exchange(incoming="a", outgoing="b", uniform_fraction=1.5),
     "uniform_fraction must be between 0 and 1"),
]


@pytest.mark.parametrize(("make", "message"), BAD_PROPOSALS)
def test_bad_generation_settings_are_refused_as_laddu_refuses_them(make, message):
    with pytest.raises(ModelError, match=message):
        make(ld)
    if laddu is not None:  # laddu refuses the same settings
        with pytest.raises(ValueError):
            make(laddu)


def test_generation_settings_of_the_wrong_kind_or_edges_name_the_edge_or_vertex():
    with pytest.raises(ModelError, match="edge 'X': mass_proposal must be a MassProposal, got float"):
        ld.Edge("X", mass_proposal=3.0)
    with pytest.raises(ModelError, match="edge 'gamma': initial_momentum must be a InitialMomentum"):
        ld.Edge("gamma", initial_momentum=[0.0, 0.0, 8.0])
    with pytest.raises(ModelError, match="vertex 'v': generation must be a VertexProposal, got str"):
        ld.Vertex("v", incoming=["a"], outgoing=["b", "c"], generation="isotropic")
    bad = ld.VertexProposal.t_exchange(incoming="gamma", outgoing="recoil2")
    with pytest.raises(ModelError, match="vertex 'production': its t-exchange proposal names 'gamma' -> "
                                         "'recoil2', which are not an incoming and an outgoing edge"):
        ld.Vertex("production", incoming=["gamma", "target"], outgoing=["X", "recoil"], generation=bad)
