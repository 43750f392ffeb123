"""Generation with laddu 0.28.1's shaped proposals (``InitialMomentum.histogram_energy``,
``VertexProposal.t_exchange_histogram`` and ``t_exchange_pole``): the drawn energies and
``t`` values and the phase-space weights agree with laddu's statistically (fixed seeds, so
deterministic), and with the shapes' closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from laddu_reference import laddu, needs_laddu
from scipy import stats

import laddu_dask as ld
from laddu_dask.errors import ModelError

N = 20_000


def _channel(lib, beam, proposal):
    return lib.Channel(
        "c",
        edges=[
            lib.Edge("beam", particle=lib.particles.PHOTON, initial_momentum=beam),
            lib.Edge(
                "target",
                particle=lib.particles.PROTON,
                initial_momentum=lib.InitialMomentum.momentum([0, 0, 0]),
            ),
            lib.Edge("X", particle=lib.Particle(mass=1.5)),
            lib.Edge("recoil", particle=lib.particles.PROTON),
        ],
        vertices=[
            lib.Vertex(
                "production", incoming=["beam", "target"], outgoing=["X", "recoil"], generation=proposal
            )
        ],
    )


def _case(lib, name):
    z = [0, 0, 1]
    if name == "histogram_energy":
        h = lib.Histogram([1.0, 3.0, 2.0], bin_edges=[8.0, 8.5, 9.0, 9.5])
        return _channel(
            lib,
            lib.InitialMomentum.histogram_energy(h, direction=z),
            lib.VertexProposal.t_exchange(incoming="beam", outgoing="X"),
        )
    if name == "t_exchange_pole":
        return _channel(
            lib,
            lib.InitialMomentum.energy(8.5, direction=z),
            lib.VertexProposal.t_exchange_pole(incoming="beam", outgoing="X", exchange_mass=0.5, power=2.0),
        )
    h = lib.Histogram([1.0, 3.0, 2.0], bin_edges=[-3.0, -2.0, -1.0, 0.0])
    return _channel(
        lib,
        lib.InitialMomentum.uniform_energy(low=8.0, high=9.0, direction=z),
        lib.VertexProposal.t_exchange_histogram(incoming="beam", outgoing="X", histogram=h),
    )


def _observed(lib, ds):
    """Beam energy, ``t = (beam - X)^2`` and weight of every event."""
    beam, x = lib.Vec4.event("beam"), lib.Vec4.event("X")
    e = np.real(np.asarray(ds.evaluate(beam.e(), real=True)))
    t = np.real(np.asarray(ds.evaluate((beam - x).m2(), real=True)))
    return e, t, np.asarray(ds.weights())


@needs_laddu
@pytest.mark.parametrize("name", ["histogram_energy", "t_exchange_pole", "t_exchange_histogram"])
def test_shaped_proposals_draw_laddus_distributions_and_weights(name):
    (e, t, w), (el, tl, wl) = (
        _observed(lib, lib.Generator(_case(lib, name)).weighted(N, seed=3)[0]) for lib in (ld, laddu)
    )
    se = np.hypot(w.std(), wl.std()) / np.sqrt(N)
    assert abs(w.mean() - wl.mean()) < 4 * se  # the phase-space integral
    assert stats.ks_2samp(t, tl).pvalue > 1e-3 and stats.ks_2samp(e, el).pvalue > 1e-3
    if name == "histogram_energy":  # bins drawn in proportion to the counts 1 : 3 : 2
        share = np.histogram(e, bins=[8.0, 8.5, 9.0, 9.5])[0] / N
        np.testing.assert_allclose(share, [1 / 6, 1 / 2, 1 / 3], atol=4 * np.sqrt(0.25 / N))
    if name == "t_exchange_pole":  # the weight times the density is phase space: flat in t
        low, high = float(t.min()), float(t.max())
        inside = (t > -2.0) & (t < -0.1)
        mine = np.histogram(t[inside], bins=4, weights=w[inside])[0]
        assert np.std(mine) < 0.15 * np.mean(mine) and low < -2.0 and high > -0.1


@needs_laddu
@pytest.mark.parametrize("name", ["histogram_energy", "t_exchange_pole", "t_exchange_histogram"])
def test_the_proven_envelope_bounds_shaped_proposals_as_laddus(name):
    """laddu's dimensions and piecewise regions (a region per drawn histogram bin); a bound
    above every weight drawn and no looser than laddu's."""
    generator = ld.Generator(_case(ld, name))
    ours = generator.phase_space_envelope()
    theirs = laddu.Generator(_case(laddu, name)).phase_space_envelope()
    assert (ours.continuous_dimensions, ours.piecewise_regions) == \
        (theirs.continuous_dimensions, theirs.piecewise_regions)
    drawn = float(np.max(generator.weighted(N, seed=7)[0].weights()))
    assert drawn <= ours.maximum_weight <= theirs.maximum_weight * (1 + 1e-8)
    events, report = generator.unweighted(300, seed=2, proven_envelope=True)
    assert events.n_events == 300 and report.envelope == ours.maximum_weight


def test_a_pole_inside_the_sampled_range_is_refused():
    from laddu_dask.generation.shaped_proposals import sample_pole

    with pytest.raises(ModelError, match="must lie above the physical t range"):
        sample_pole(0.5, 2.0, np.array([-1.0]), np.array([0.5]), np.random.default_rng(1), 1)
