"""Reaction channels and generation proposals as laddu 0.28.1's JSON (``Channel``,
``InitialMomentum``, ``MandelstamChannel``, ``MassProposal``, ``VertexProposal``
``to_json``/``from_json``), and the proposals ``InitialMomentum.histogram_energy``,
``VertexProposal.t_exchange_histogram`` and ``t_exchange_pole``: the same objects built in
both libraries write the same bytes, and each library reads the other's text back to it."""

from __future__ import annotations

import pytest
from laddu_reference import laddu, needs_laddu

import laddu_dask as ld
from laddu_dask.errors import ModelError


def _objects(lib):
    energy = lib.Histogram([1.0, 2.0, 0.5], bin_edges=[8.0, 8.5, 9.0, 9.5])
    t_hist = lib.Histogram([1.0, 2.0], bin_edges=[-1.0, -0.5, 0.0])
    filled = lib.Histogram.from_values_with_edges(
        [0.1, 0.2, -3.0, 5.0], bin_edges=[0.0, 0.5, 1.0], weights=[3.0, 4.0, 0.5, 0.25]
    )
    beam = lib.Edge(
        "beam",
        p4="beam",
        particle=lib.particles.PHOTON,
        initial_momentum=lib.InitialMomentum.uniform_energy(low=8.0, high=9.0, direction=[0, 0, 1]),
    )
    target = lib.Edge(
        "target",
        p4=lib.Vec4(lib.scalar("m"), 0.0, 0.0, 0.0),
        particle=lib.particles.PROTON,
        output=False,
        initial_momentum=lib.InitialMomentum.p4([0.938, 0.0, 0.0, 0.0]),
    )
    meson = lib.Edge("X", mass_proposal=lib.MassProposal(1.0, high=2.0))
    recoil = lib.Edge("recoil", particle=lib.particles.PROTON)
    kaons = [lib.Edge(k, mass_proposal=lib.MassProposal(0.497611)) for k in ("k1", "k2")]
    t = lib.VertexProposal.t_exchange(incoming="beam", outgoing="X", slope=3.0, uniform_fraction=0.25)
    channel = lib.Channel(
        "gamma p",
        edges=[beam, target, meson, recoil, *kaons],
        vertices=[
            lib.Vertex("production", incoming=["beam", "target"], outgoing=["X", "recoil"], generation=t),
            lib.Vertex(
                "decay", incoming=["X"], outgoing=["k1", "k2"], generation=lib.VertexProposal.isotropic()
            ),
        ],
    )
    return {
        "mandelstam": [lib.MandelstamChannel(m) for m in "stu"],
        "mass": [lib.MassProposal(1.0), lib.MassProposal(1e-7, high=1e16), lib.MassProposal(0.0001)],
        "initial": [
            lib.InitialMomentum.p4([9.0, 0.0, 0.0, 9.0]),
            lib.InitialMomentum.momentum([0.0, 0.0, 9.0]),
            lib.InitialMomentum.energy(8.0, direction=[0, 0, 2]),
            lib.InitialMomentum.uniform_energy(low=8.0, high=9.0, direction=[0, 1, 1]),
            lib.InitialMomentum.histogram_energy(energy, direction=[0, 0, 1]),
        ],
        "vertex": [
            lib.VertexProposal.isotropic(),
            lib.VertexProposal.t_exchange(incoming="beam", outgoing="X"),
            lib.VertexProposal.t_exchange(
                incoming="beam", outgoing="X", slope=3.0, uniform_fraction=0.1, t_min=-2.0, t_max=-0.1
            ),
            lib.VertexProposal.t_exchange(incoming="beam", outgoing="X", slope=3.0),
            lib.VertexProposal.t_exchange_histogram(incoming="beam", outgoing="X", histogram=t_hist),
            lib.VertexProposal.t_exchange_histogram(incoming="beam", outgoing="X", histogram=filled),
            lib.VertexProposal.t_exchange_pole(incoming="beam", outgoing="X", exchange_mass=0.77, power=2.0),
        ],
        "channel": [channel],
    }


@needs_laddu
@pytest.mark.parametrize("group", ["mandelstam", "mass", "initial", "vertex", "channel"])
def test_json_is_laddus_byte_for_byte_and_reads_both_ways(group):
    for ours, theirs in zip(_objects(ld)[group], _objects(laddu)[group], strict=True):
        text, want = ours.to_json(), theirs.to_json()
        assert text == want
        assert type(ours).from_json(want).to_json() == want  # laddu's text read by us
        assert type(theirs).from_json(text).to_json() == text  # ours read by laddu


def test_read_back_objects_are_the_same_settings():
    objects = _objects(ld)
    for ours in objects["mass"] + objects["initial"] + objects["vertex"][:4]:
        assert type(ours).from_json(ours.to_json()) == ours
    assert ld.MandelstamChannel.from_json('"T"') is ld.MandelstamChannel.T
    channel = ld.Channel.from_json(objects["channel"][0].to_json())
    assert channel.edge_names == ["beam", "target", "X", "recoil", "k1", "k2"]
    assert channel.vertex_names == ["production", "decay"] and channel.edge_p4("beam") == "beam"
    assert channel.particle("recoil").mass == ld.particles.PROTON.mass
    pole = ld.VertexProposal.t_exchange_pole(incoming="beam", outgoing="X", exchange_mass=0.77, power=2.0)
    assert (pole.exchange_mass, pole.power, pole.incoming, pole.outgoing) == (0.77, 2.0, "beam", "X")
    energy = ld.InitialMomentum.histogram_energy(
        ld.Histogram([1.0, 3.0], bin_edges=[8.0, 8.5, 9.0]), direction=[0, 0, 1]
    )
    assert (energy.kind, energy.values, energy.weights) == ("histogram_energy", (8.0, 8.5, 9.0), (1.0, 3.0))


@needs_laddu
@pytest.mark.parametrize(
    "cls, text",
    [
        ("MassProposal", '{"kind":"nope"}'),
        ("Channel", "[1]"),
        ("MandelstamChannel", '"X"'),
        ("VertexProposal", "nojson"),
        ("InitialMomentum", '{"P4":{"e":1.0}}'),
    ],
)
def test_text_that_is_not_an_objects_json_is_refused(cls, text):
    with pytest.raises(ValueError):
        getattr(laddu, cls).from_json(text)
    with pytest.raises(ModelError, match=f"{cls}.from_json: not"):
        getattr(ld, cls).from_json(text)


@needs_laddu
@pytest.mark.parametrize("counts", [[0.0, 0.0], [-1.0, 2.0]], ids=["empty", "negative"])
def test_histogram_proposals_need_sampling_support_as_in_laddu(counts):
    for lib, error in ((laddu, Exception), (ld, ModelError)):
        energy = lib.Histogram(counts, bin_edges=[8.0, 8.5, 9.0])
        with pytest.raises(error, match="positive (finite )?total"):
            lib.InitialMomentum.histogram_energy(energy, direction=[0, 0, 1])
        t_hist = lib.Histogram(counts, bin_edges=[-1.0, -0.5, 0.0])
        with pytest.raises(ValueError, match="positive total"):
            lib.VertexProposal.t_exchange_histogram(incoming="a", outgoing="b", histogram=t_hist)


def test_a_histogram_proposal_is_hashable_and_equal_to_its_json():
    h = ld.Histogram([1.0, 2.0], bin_edges=[-1.0, -0.5, 0.0])
    p = ld.VertexProposal.t_exchange_histogram(incoming="a", outgoing="b", histogram=h)
    assert ld.VertexProposal.from_json(p.to_json()) == p and hash(p) == hash(
        ld.VertexProposal.from_json(p.to_json())
    )
