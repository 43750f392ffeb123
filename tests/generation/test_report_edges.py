"""Tests that kill the surviving mutants of ``laddu_dask/generation/report.py`` (docs/mutation.md).

References are hand-computed cases and ``math.fsum`` over the weights.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from laddu_dask.generation.report import GenerationReport, PartitionStats, merge_stats


def _report(**changes) -> GenerationReport:
    fields = dict(requested=10, produced=8, proposals=20, rejected=12, envelope=2.5,
                  maximum_weight=3.0, minimum_weight=0.25, sum_weights=7.5,
                  sum_squared_weights=11.125, seed=42, chunk_events=4, partitions=2,
                  pilot_proposals=100, estimated_peak_bytes=4096)
    fields.update(changes)
    return GenerationReport(**fields)


def test_json_carries_every_field_under_laddus_names():
    report = _report()
    fields = json.loads(report.to_json())
    assert fields == {"requested": 10, "produced": 8, "proposals": 20, "rejected": 12, "envelope": 2.5,
                      "maximum_weight": 3.0, "minimum_weight": 0.25, "sum_weights": 7.5,
                      "sum_squared_weights": 11.125, "seed": 42, "chunk_events": 4, "partitions": 2,
                      "pilot_proposals": 100, "estimated_peak_bytes": 4096,
                      "actual_high_water_bytes": None, "proven_weight_interval": None,
                      "proven_continuous_dimensions": None, "proven_piecewise_regions": None,
                      "proven_subdivisions": None}


@pytest.mark.parametrize("interval", [None, (0.5, 2.5)])
def test_json_round_trip_is_the_same_report(interval):
    report = _report(proven_weight_interval=interval, proven_continuous_dimensions=None if interval is None
                     else 2, proven_piecewise_regions=None if interval is None else 3,
                     proven_subdivisions=None if interval is None else 7)
    again = GenerationReport.from_json(report.to_json())
    assert again == report
    assert again.proven_weight_interval is None or type(again.proven_weight_interval) is tuple
    assert again.acceptance_rate == 8 / 20


def test_exceeded_task_reports_only_its_largest_weight():
    stats = PartitionStats.exceeded(9.5)
    assert (stats.proposals, stats.produced, stats.maximum, stats.minimum) == (0, 0, 9.5, math.inf)
    assert (stats.sum_weights, stats.sum_squared_weights) == (0.0, 0.0)


def test_statistics_of_a_hand_computed_partition():
    w = np.array([0.5, 2.0, -1.5, 3.0])
    stats = PartitionStats.of(w, proposals=9, produced=4)
    assert (stats.proposals, stats.produced, stats.maximum, stats.minimum) == (9, 4, 3.0, -1.5)
    assert stats.sum_weights == 4.0 and stats.sum_squared_weights == 0.25 + 4.0 + 2.25 + 9.0


def test_merged_statistics_are_fsum_of_every_weight_whatever_the_split():
    rng = np.random.default_rng(3)
    w = rng.normal(size=400) * 10.0 ** rng.integers(-8, 9, size=400)
    parts = [PartitionStats.of(w[a:b], proposals=2 * (b - a), produced=b - a)
             for a, b in [(0, 1), (1, 150), (150, 150), (150, 400)]]
    merged = merge_stats(parts)
    assert merged.sum_weights == math.fsum(w.tolist())
    assert merged.sum_squared_weights == math.fsum((w * w).tolist())
    assert (merged.proposals, merged.produced) == (800, 400)
    assert (merged.maximum, merged.minimum) == (w.max(), w.min())
    pairwise = parts[0].add(parts[1]).add(parts[2]).add(parts[3])
    assert (pairwise.sum_weights, pairwise.sum_squared_weights, pairwise.maximum, pairwise.minimum,
            pairwise.proposals, pairwise.produced) == (merged.sum_weights, merged.sum_squared_weights,
                                                       merged.maximum, merged.minimum, 800, 400)


def test_report_built_from_statistics_counts_the_rejected_proposals():
    stats = PartitionStats.of(np.array([1.0, 2.0]), proposals=7, produced=2)
    report = GenerationReport.build(stats, requested=2, seed=5, envelope=4.0)
    assert (report.produced, report.proposals, report.rejected) == (2, 7, 5)
    assert (report.maximum_weight, report.minimum_weight) == (2.0, 1.0)
    assert (report.sum_weights, report.sum_squared_weights) == (3.0, 5.0)
    assert report.acceptance_rate == 2 / 7
    empty = GenerationReport.build(PartitionStats.empty(), requested=0, seed=5)
    assert (empty.minimum_weight, empty.acceptance_rate, empty.rejected) == (0.0, 0.0, 0)


def test_an_empty_partition_keeps_its_counts():
    stats = PartitionStats.of(np.array([]), proposals=5, produced=0)
    assert (stats.proposals, stats.produced, stats.maximum, stats.minimum) == (5, 0, 0.0, math.inf)
    assert (stats.sum_weights, stats.sum_squared_weights) == (0.0, 0.0)


def test_integer_weights_are_squared_as_doubles():
    """int64 squares would wrap around silently; the report squares in float64."""
    stats = PartitionStats.of(np.array([2**40, 3]), proposals=2, produced=2)
    assert stats.sum_squared_weights == math.fsum([2.0**80, 9.0])


def test_a_square_beyond_the_double_range_is_inf_without_a_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stats = PartitionStats.of(np.array([1e200, 1.0]), proposals=2, produced=2)
    assert (stats.sum_weights, stats.sum_squared_weights) == (1e200, math.inf)


def test_merging_nothing_is_the_empty_statistics():
    merged = merge_stats([])
    assert (merged.proposals, merged.produced, merged.maximum, merged.minimum) == (0, 0, 0.0, math.inf)
    assert (merged.sum_weights, merged.sum_squared_weights) == (0.0, 0.0)


def test_merged_extremes_are_those_of_every_partition():
    parts = [PartitionStats.of(np.array([-0.5, 0.25]), proposals=3, produced=2),
             PartitionStats.of(np.array([4.0]), proposals=1, produced=1), PartitionStats.empty()]
    merged = merge_stats(parts)
    assert (merged.maximum, merged.minimum, merged.proposals, merged.produced) == (4.0, -0.5, 4, 3)


def test_every_field_of_a_built_report():
    from types import SimpleNamespace

    stats = PartitionStats.of(np.array([-1.5, 2.0, 0.5]), proposals=11, produced=3)
    proof = SimpleNamespace(weight_interval=[0.25, 2.5], continuous_dimensions=2, piecewise_regions=3,
                            subdivisions=7)
    report = GenerationReport.build(stats, requested=4, seed=9, envelope=2.5, chunk_events=6, partitions=2,
                                    pilot_proposals=50, estimated_peak_bytes=1024, proven=proof)
    assert report == GenerationReport(
        requested=4, produced=3, proposals=11, rejected=8, envelope=2.5, maximum_weight=2.0,
        minimum_weight=-1.5, sum_weights=1.0, sum_squared_weights=2.25 + 4.0 + 0.25, seed=9,
        chunk_events=6, partitions=2, pilot_proposals=50, estimated_peak_bytes=1024,
        actual_high_water_bytes=None, proven_weight_interval=(0.25, 2.5), proven_continuous_dimensions=2,
        proven_piecewise_regions=3, proven_subdivisions=7)
    plain = GenerationReport.build(stats, requested=4, seed=9)
    assert (plain.chunk_events, plain.partitions, plain.pilot_proposals, plain.estimated_peak_bytes,
            plain.envelope, plain.actual_high_water_bytes, plain.proven_weight_interval,
            plain.proven_subdivisions) == (0, 0, 0, 0, None, None, None, None)
