"""The proposal counts of unweighted generation (issue 30, item 1): ``GenerationReport.proposals``,
``rejected`` and ``acceptance_rate`` against counts known without the generator's code.

The channel is a two-body decay at rest, ``X(1.8) -> K_S K_S``: every proposal has the same
phase-space weight, the closed form ``p* / (4 pi M)``.  With that weight as the envelope every
proposal is accepted, so the proposals are exactly the events, in every partition; with twice
that weight each proposal is accepted with probability 1/2 exactly, so the proposals of ``n``
events follow a negative binomial law (mean ``2 n``, standard deviation ``sqrt(2 n)``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import laddu_dask as ld


def _two_body() -> ld.Generator:
    x = ld.Edge("X", particle=ld.Particle(mass=1.8), initial_momentum=ld.InitialMomentum.momentum([0, 0, 0]))
    return ld.Generator(ld.Channel("X -> K_S K_S", edges=[
        x, ld.Edge("a", particle=ld.particles.K_SHORT), ld.Edge("b", particle=ld.particles.K_SHORT)],
        vertices=[ld.Vertex("decay", incoming=["X"], outgoing=["a", "b"])]))


def _constant_weight(generator: ld.Generator) -> float:
    """The one phase-space weight of every proposal, checked against its closed form."""
    events, _ = generator.weighted(20, seed=1)
    (weight,) = np.unique(events.weights())
    m, big_m = ld.particles.K_SHORT.mass, 1.8
    assert weight == pytest.approx(math.sqrt(big_m**2 / 4 - m**2) / (4 * math.pi * big_m), rel=1e-12)
    return float(weight)


@pytest.mark.parametrize(("events", "partition_events"), [(23, 5), (7, 1), (12, 12)])
def test_with_the_weight_as_envelope_every_proposal_is_an_event(events, partition_events):
    generator = _two_body()
    weight = _constant_weight(generator)
    sample, report = generator.unweighted(events, seed=3, max_weight=weight,
                                          partition_events=partition_events)
    assert report.partitions == -(-events // partition_events)
    assert (report.produced, report.proposals, report.rejected) == (events, events, 0)
    assert report.acceptance_rate == 1.0 and report.envelope == weight
    assert sample.n_events == events and sample.weights().tolist() == [1.0] * events


def test_half_acceptance_counts_about_two_proposals_per_event_in_one_event_partitions():
    generator = _two_body()
    weight = _constant_weight(generator)
    n = 200
    _, report = generator.unweighted(n, seed=3, max_weight=2.0 * weight, partition_events=1)
    assert report.partitions == n and report.produced == n
    # negative binomial: proposals = 2 n +- sqrt(2 n) = 400 +- 20; five standard deviations
    assert abs(report.proposals - 2 * n) < 5 * math.sqrt(2 * n), report.proposals
    assert report.rejected == report.proposals - n and report.rejected > 0
    assert report.acceptance_rate == n / report.proposals
