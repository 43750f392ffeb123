"""The Generator's report and memory budget (issue 23, items 12 and 13).

Item 13: ``GenerationReport.sum_weights`` and ``sum_squared_weights`` are ``math.fsum`` of
every event's ``w`` and ``w * w``, bitwise the same for any partitioning of the same events.
Item 12: a budget the Generator cannot meet is a ``BudgetError``, by the rule a likelihood
uses (``runtime.memory.decide_storage``), never thousands of tiny partitions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.errors import BudgetError
from laddu_dask.generation.report import GenerationReport, PartitionStats, merge_stats


def _photoproduction() -> ld.Channel:
    """gamma p -> X p, X -> K_S K_S: varying phase-space weights (mass and t proposals)."""
    beam = ld.Edge("beam", particle=ld.particles.PHOTON,
                   initial_momentum=ld.InitialMomentum.uniform_energy(low=8.0, high=9.0, direction=[0, 0, 1]))
    target = ld.Edge("target", particle=ld.particles.PROTON,
                     initial_momentum=ld.InitialMomentum.momentum([0, 0, 0]))
    x = ld.Edge("X", mass_proposal=ld.MassProposal(1.0, high=2.0), output=False)
    return ld.Channel("gamma p -> K_S K_S p", edges=[
        beam, target, x, ld.Edge("recoil", particle=ld.particles.PROTON),
        ld.Edge("ks1", particle=ld.particles.K_SHORT), ld.Edge("ks2", particle=ld.particles.K_SHORT)],
        vertices=[ld.Vertex("production", incoming=["beam", "target"], outgoing=["X", "recoil"],
                            generation=ld.VertexProposal.t_exchange(incoming="beam", outgoing="X", slope=4.0,
                                                                    uniform_fraction=0.5)),
                  ld.Vertex("decay", incoming=["X"], outgoing=["ks1", "ks2"])])


def _totals(parts: list[np.ndarray]) -> tuple[float, float]:
    stats = merge_stats([PartitionStats.of(p, proposals=len(p), produced=len(p)) for p in parts])
    report = GenerationReport.build(stats, requested=sum(len(p) for p in parts), seed=0)
    return report.sum_weights, report.sum_squared_weights


# -- item 13: exact totals -----------------------------------------------------------------


def test_report_totals_are_fsum_of_every_event_for_any_partitioning():
    events, report = ld.Generator(_photoproduction()).weighted(3000, seed=5, partition_events=250)
    w = events.weights()
    assert len(np.unique(w)) > 2000  # the weights vary
    want = (math.fsum(w.tolist()), math.fsum(x * x for x in w.tolist()))
    assert (report.sum_weights, report.sum_squared_weights) == want and report.partitions == 12
    rng = np.random.default_rng(1)
    layouts = [[w], list(w[:, None]), np.array_split(w, 7)]
    layouts += [np.split(w, np.sort(rng.choice(np.arange(1, len(w)), size=k, replace=False)))
                for k in (1, 3, 17, 200, 1500) for _ in range(4)]
    for parts in layouts:
        got = _totals(parts)
        assert got == want, (len(parts), [g.hex() for g in got], [x.hex() for x in want])
    # grouping the chunks of a task first (as an unweighted task does) changes nothing either
    a, b, c = (PartitionStats.of(p, proposals=len(p), produced=len(p)) for p in np.array_split(w, 3))
    assert merge_stats([a.add(b), c]).sums == merge_stats([a, b.add(c)]).sums == merge_stats([a, b, c]).sums


def test_rounding_each_partition_first_would_lose_the_tie_breaker():
    # per-partition fsums 1.0 and 2**-53 round to 1.0; the exact total 1 + 2**-52 is a double
    tiny = 2.0**-53
    weights = np.array([1.0, tiny, tiny])
    want = (1.0 + 2.0**-52, math.fsum([1.0, tiny * tiny, tiny * tiny]))
    assert _totals([weights[:2], weights[2:]]) == _totals([weights]) == want
    assert want[0] == math.fsum([1.0, tiny, tiny]) != 1.0


# -- item 12: a budget the Generator cannot meet -------------------------------------------


@pytest.mark.parametrize("kind", ["weighted", "unweighted"])
def test_a_budget_too_small_for_one_partition_is_a_budget_error(tmp_path, kind):
    generate = getattr(ld.Generator(_photoproduction()), kind)
    for keywords in ({}, {"partition_events": 1}):
        with pytest.raises(BudgetError, match=rf"host memory budget too small for one chunk: dataset "
                                              rf"'generated {kind} events' .* but the host budget of 1 bytes "
                                              r"is smaller; raise the budget: not even one event"):
            generate(2000, seed=1, memory=1, path=tmp_path / "mc", **keywords)
    assert not (tmp_path / "mc").exists()  # refused before anything was written
    # 500 events fit: an automatic partition is never cut below the likelihood's floor (1024)
    one = 864 * (2 if kind == "unweighted" else 1)  # bytes per event (asserted below)
    with pytest.raises(BudgetError, match=r"use a smaller partition_events \(about 500 events would fit\)"):
        generate(2000, seed=1, memory=500 * one)
    execution = ld.Execution(num_workers=2)
    events, report = generate(2000, seed=1, memory=500 * one, partition_events=500, execution=execution)
    assert events.n_events == 2000 and report.partitions == 4 and report.estimated_peak_bytes == 500 * one
    (decision,) = execution.memory_decisions()
    assert decision.dataset == f"generated {kind} events" and decision.strategy == "streaming"
    assert decision.peak_bytes == 500 * one and decision.budget_bytes == 500 * one  # one task at once

