"""The proven phase-space envelope: ``Generator.phase_space_envelope()`` and
``unweighted(proven_envelope=True)`` (laddu's keyword).

References: the largest proposal weight by closed forms on dense grids (the two-body
weights ``q / (4 pi m)`` and the t-exchange weight ``1 / (16 pi sqrt(s) p rho(t))`` at the
end of the ``t`` range where the proposal density is smallest), the largest weight of many
generated events, and laddu 0.28.1's proven envelope of the same channels (also an upper
bound: the one here must not be looser, and laddu's coordinate counts are the same).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.integrate
import scipy.stats

import laddu_dask as ld
from laddu_dask.errors import GenerationError, ModelError, ParameterError

try:
    from tests import laddu_reference as lr
    from tests.generation.test_generation import P_VALUE, _breakup, _columns, _m2, three_body_channel
except ImportError:  # pytest's default "prepend" import mode puts tests/ on sys.path
    import laddu_reference as lr
    from test_generation import P_VALUE, _breakup, _columns, _m2, three_body_channel

M_PI0, M_KS, M_P = ld.particles.PI_ZERO.mass, ld.particles.K_SHORT.mass, ld.particles.PROTON.mass


def _three_body_weight(m: np.ndarray) -> np.ndarray:
    """Mass width (1) x q(2.5; m, m_pi) / (4 pi 2.5) x q(m; m_K, m_K) / (4 pi m)."""
    return _breakup(2.5, m, M_PI0) / (4 * math.pi * 2.5) * _breakup(m, M_KS, M_KS) / (4 * math.pi * m)


def _photoproduction_weight(energy: np.ndarray, m: np.ndarray, fraction: float, slope: float) -> np.ndarray:
    """The largest weight over t of laddu's tutorial channel at beam energy ``energy`` and X mass
    ``m``: the t density is smallest at the range's lower end."""
    s = M_P**2 + 2 * M_P * energy
    root = np.sqrt(s)
    p_in, p_out = _breakup(root, 0.0, M_P), _breakup(root, m, M_P)
    width = 4 * p_in * p_out
    density = fraction / width + (1 - fraction) * slope / np.expm1(slope * width)
    return 1.0 / (16 * math.pi * root * p_in * density) * _breakup(m, M_KS, M_KS) / (4 * math.pi * m)


def photoproduction(lib, fraction=0.2, slope=4.0):
    from laddu_dask_bench.generation_bench import channel

    if slope == 4.0:
        return channel(lib, fraction)
    return lib.Channel("steep", edges=[
        lib.Edge("beam", particle=lib.particles.PHOTON,
                 initial_momentum=lib.InitialMomentum.energy(8.5, direction=[0.0, 0.0, 1.0])),
        lib.Edge("target", particle=lib.particles.PROTON,
                 initial_momentum=lib.InitialMomentum.momentum([0, 0, 0])),
        lib.Edge("X", particle=lib.Particle(mass=1.5)), lib.Edge("recoil", particle=lib.particles.PROTON)],
        vertices=[lib.Vertex("production", incoming=["beam", "target"], outgoing=["X", "recoil"],
                             generation=lib.VertexProposal.t_exchange(
                                 incoming="beam", outgoing="X", slope=slope, uniform_fraction=fraction))])


def test_the_envelope_bounds_the_three_body_weight_tightly():
    report = ld.Generator(three_body_channel()).phase_space_envelope()
    grid = np.linspace(1.0, 2.0, 1_000_001)
    largest = float(_three_body_weight(grid).max())
    assert largest <= report.maximum_weight <= largest * (1 + 1e-6)
    assert report.weight_interval == (0.0, report.maximum_weight)
    assert (report.continuous_dimensions, report.piecewise_regions) == (5, 1)
    # a histogram scalar multiplies the bound by its largest inverse density (total x width / count)
    histogram = ld.Histogram([1.0, 3.0], bin_edges=[0.0, 1.0, 2.0])
    with_scalar = ld.Generator(three_body_channel(), scalars={"h": ld.ScalarSource.histogram(histogram)})
    scaled = with_scalar.phase_space_envelope()
    assert math.isclose(scaled.maximum_weight, 4 * report.maximum_weight, rel_tol=1e-12)
    assert (scaled.continuous_dimensions, scaled.piecewise_regions) == (6, 2)


def test_the_envelope_bounds_the_photoproduction_weight_tightly():
    generator = ld.Generator(photoproduction(ld))
    report = generator.phase_space_envelope()
    energy, m = np.meshgrid(np.linspace(8.0, 9.0, 801), np.linspace(1.0, 2.0, 801))
    largest = float(_photoproduction_weight(energy, m, 0.2, 4.0).max())
    assert largest <= report.maximum_weight <= largest * (1 + 1e-3)
    events, _ = generator.weighted(100_000, seed=2)
    assert events.weights().max() <= report.maximum_weight
    assert (report.continuous_dimensions, report.piecewise_regions) == (6, 2)


@lr.needs_laddu
def test_the_envelope_is_no_looser_than_laddus_and_counts_the_same_coordinates():
    laddu = lr.laddu
    for build in (three_body_channel, photoproduction):
        ours = ld.Generator(build(ld)).phase_space_envelope()
        theirs = laddu.Generator(build(laddu)).phase_space_envelope()
        assert ours.maximum_weight <= theirs.maximum_weight * (1 + 1e-12), build.__name__
        assert (ours.continuous_dimensions, ours.piecewise_regions) == \
            (theirs.continuous_dimensions, theirs.piecewise_regions)
    sources = {lib: {"pol": lib.ScalarSource.uniform(0.0, 2.0), "one": lib.ScalarSource.fixed(1.0)}
               for lib in (ld, laddu)}
    ours = ld.Generator(three_body_channel(), scalars=sources[ld]).phase_space_envelope()
    theirs = laddu.Generator(three_body_channel(laddu), scalars=sources[laddu]).phase_space_envelope()
    assert ours.maximum_weight <= theirs.maximum_weight and ours.continuous_dimensions == 6


def test_unweighted_with_the_proven_envelope_draws_phase_space():
    generator = ld.Generator(three_body_channel())
    events, report = generator.unweighted(3000, seed=8, proven_envelope=True, partition_events=1000)
    proof = generator.phase_space_envelope()
    assert report.envelope == proof.maximum_weight and report.pilot_proposals == 0
    assert report.proven_weight_interval == proof.weight_interval
    assert (report.proven_continuous_dimensions, report.proven_piecewise_regions,
            report.proven_subdivisions) == (5, 1, proof.subdivisions)
    assert ld.GenerationReport.from_json(report.to_json()) == report
    # the accepted masses follow the phase-space density q1 q2 / m (its envelope is nearly tight:
    # the acceptance is the mean weight over the largest)
    grid = np.linspace(1.0, 2.0, 200_001)
    table = scipy.integrate.cumulative_trapezoid(_three_body_weight(grid), grid, initial=0.0)
    norm = table[-1]

    def cdf(x):
        return np.interp(x, grid, table / norm)

    masses = np.sqrt(_m2(_columns(events, "X")))
    assert scipy.stats.kstest(masses, cdf).pvalue > P_VALUE
    assert math.isclose(report.acceptance_rate, norm / proof.maximum_weight, rel_tol=0.05)


def test_the_proven_envelope_refuses_what_laddu_refuses():
    generator = ld.Generator(three_body_channel())
    model = ld.Model(ld.Vec4.event("ks1").e())
    for keywords, what in (({"max_weight": 1.0}, "max_weight"), ({"grow_envelope": True}, "grow_envelope")):
        with pytest.raises(ParameterError, match=f"proven_envelope=True cannot be combined with {what}"):
            generator.unweighted(10, proven_envelope=True, **keywords)
    with pytest.raises(ParameterError, match="cannot be combined with a model"):
        generator.unweighted(10, model, proven_envelope=True)
    # a steep, purely exponential t proposal has no finite bound (its density underflows)
    with pytest.raises(GenerationError, match="no finite positive proven bound"):
        ld.Generator(photoproduction(ld, fraction=0.0, slope=80.0)).phase_space_envelope()
    # a t-exchange of an edge that is not initial is laddu's limitation too
    produced = ld.Channel("P -> target pi0, beam target -> X recoil", edges=[
        ld.Edge("beam", particle=ld.particles.PHOTON,
                initial_momentum=ld.InitialMomentum.energy(8.5, direction=[0.0, 0.0, 1.0])),
        ld.Edge("P", particle=ld.Particle(mass=1.5), initial_momentum=ld.InitialMomentum.momentum([0, 0, 0])),
        ld.Edge("target", particle=ld.particles.PROTON), ld.Edge("pion", particle=ld.particles.PI_ZERO),
        ld.Edge("X", particle=ld.Particle(mass=1.2)), ld.Edge("recoil", particle=ld.particles.PROTON)],
        vertices=[ld.Vertex("decay", incoming=["P"], outgoing=["target", "pion"]),
                  ld.Vertex("production", incoming=["beam", "target"], outgoing=["X", "recoil"],
                            generation=ld.VertexProposal.t_exchange(incoming="beam", outgoing="X"))])
    with pytest.raises(ModelError, match="vertex 'production' to scatter two initial edges"):
        ld.Generator(produced).phase_space_envelope()
