"""laddu's partial particle descriptions (``Particle.jp``, ``meson``, ...) and the JSON of
``Particle``, ``Isospin`` and ``Statistics``, against laddu 0.28.1's own text."""

from __future__ import annotations

import json

import pytest
from laddu_reference import laddu, needs_laddu

import laddu_dask as ld
from laddu_dask.errors import ModelError

DESCRIPTIONS = {
    "unknown": lambda lib: lib.Particle.unknown(),
    "hadron": lambda lib: lib.Particle.hadron(),
    "meson": lambda lib: lib.Particle.meson(),
    "baryon": lambda lib: lib.Particle.baryon(),
    "antibaryon": lambda lib: lib.Particle.baryon(-1),
    "boson": lambda lib: lib.Particle.boson(2),
    "lepton": lambda lib: lib.Particle.lepton(electron=-1, tau=1),
    "jp half-integer": lambda lib: lib.Particle.jp(1.5, parity="+"),
    "jpc": lambda lib: lib.Particle.jpc(1, parity=-1, c_parity=-1),
    # laddu's constructor stores the statistics a spin implies, laddu-dask's keeps what it is given
    # (the README's difference table), so the full description gives them
    "full": lambda lib: lib.Particle("X", species="X", spin=1, parity="-", charge=-1, mass=1.5,
                                     isospin=lib.Isospin(1, projection=-1), ids={"pdg": 9, "geant": 3},
                                     statistics=lib.Statistics.BOSON),
}


@needs_laddu
@pytest.mark.parametrize("name", list(DESCRIPTIONS))
def test_descriptions_are_laddus_field_by_field(name):
    ours, theirs = DESCRIPTIONS[name](ld), DESCRIPTIONS[name](laddu)
    if name == "full":  # laddu orders the ids as its hash map does
        assert json.loads(ours.to_json()) == json.loads(theirs.to_json())
    else:
        assert ours.to_json() == theirs.to_json()
    assert ld.Particle.from_json(json=theirs.to_json()) == ours


@needs_laddu
def test_every_builtin_particle_writes_laddus_json_and_reads_it_back():
    names = [n for n in dir(laddu.particles) if n.isupper()]
    assert len(names) == 64
    for name in names:
        text = getattr(laddu.particles, name).to_json()
        assert getattr(ld.particles, name).to_json() == text, name
        assert ld.Particle.from_json(text) == getattr(ld.particles, name), name


@needs_laddu
def test_isospin_and_statistics_json_are_laddus():
    for args in [(0.5, -0.5), (1, None), (1.5, 1.5)]:
        theirs = laddu.Isospin(args[0], projection=args[1])
        ours = ld.Isospin(args[0], projection=args[1])
        assert ours.to_json() == theirs.to_json()
        assert ld.Isospin.from_json(theirs.to_json()) == ours
    for member in ("BOSON", "FERMION"):
        text = getattr(laddu.Statistics, member).to_json()
        assert getattr(ld.Statistics, member).to_json() == text
        assert ld.Statistics.from_json(text) == getattr(ld.Statistics, member)


def test_a_half_integer_boson_and_bad_json_are_model_errors():
    with pytest.raises(ModelError, match=r"^a boson's spin must be a non-negative integer, got 0\.5$"):
        ld.Particle.boson(0.5)
    with pytest.raises(ModelError, match=r"^not a Particle in JSON: it has no species, .*, ids$"):
        ld.Particle.from_json('{"name": "x"}')
    with pytest.raises(ModelError, match=r"^not a Particle in JSON \(JSONDecodeError: "):
        ld.Particle.from_json("{")
    with pytest.raises(ModelError, match=r"^not an Isospin in JSON \(KeyError: 'projection'\)"):
        ld.Isospin.from_json('{"isospin": 1}')
