"""The base module of exact sums (``laddu_dask.sums``): the generic chunk / combine /
aggregate reduction and the generation report built on it.

References never share the code under test: ``math.fsum`` (correctly rounded), exact
``fractions.Fraction`` sums, and hand-built cases.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest
from test_generation_report import _photoproduction

import laddu_dask as ld
from laddu_dask.generation.report import GenerationReport, PartitionStats, merge_stats
from laddu_dask.runtime import accumulate
from laddu_dask.sums import (
    ExactPartials,
    GroupedPartials,
    combine_tree,
    exact_aggregate,
    exact_chunk,
    exact_sum,
    merge,
    reduction,
)

pytestmark = pytest.mark.timeout(120)


def _ill_conditioned(n_pairs: int, seed: int, top: int = 900) -> np.ndarray:
    """Terms whose plain sum is badly wrong: pairs ``+-x * 2**k`` of huge magnitudes (``k``
    up to ``top``) that cancel exactly, around small terms of many magnitudes, in a shuffled
    (fixed) order."""
    rng = np.random.default_rng(seed)
    huge = rng.uniform(1.0, 2.0, n_pairs) * 2.0 ** rng.integers(60, top, n_pairs)
    small = rng.uniform(-1.0, 1.0, 3 * n_pairs) * 2.0 ** rng.integers(-1000, 10, 3 * n_pairs)
    terms = np.concatenate([huge, -huge, small, [2.0**-1074, 1.0, 2.0**-53]])
    return terms[rng.permutation(terms.size)]


def _chunks(terms: np.ndarray, count: int) -> list[np.ndarray]:
    return np.array_split(terms, count)


def _exact_reduction(chunks: list[np.ndarray], split_every: int | None) -> float:
    return reduction(chunks, exact_chunk, ExactPartials.merge, exact_aggregate, split_every=split_every)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("count", [1, 2, 3, 7, 50])
@pytest.mark.parametrize("split_every", [None, 2, 3, 8])
def test_reduction_of_ill_conditioned_terms_is_fsum_for_any_chunks_and_tree(seed, count, split_every):
    terms = _ill_conditioned(200, seed)
    want = math.fsum(terms.tolist())
    assert want == float(sum(map(Fraction, terms.tolist()), Fraction(0)))
    assert float(np.sum(terms)) != want  # a plain sum is wrong here: the test can tell
    got = _exact_reduction(_chunks(terms, count), split_every)
    assert got == want, (got.hex(), want.hex())


def test_rounding_each_chunk_before_the_merge_would_be_wrong():
    """Each chunk's correctly rounded sum loses its tie-breaker; only exact partials keep it."""
    tiny = 2.0**-53
    chunks = [np.array([1.0, tiny]) for _ in range(7)]
    want = math.fsum([1.0, tiny] * 7)
    assert want == 7.0 + 2.0**-50
    assert math.fsum(exact_sum(c) for c in chunks) == 7.0 != want  # rounded per chunk
    assert _exact_reduction(chunks, None) == _exact_reduction(chunks, 2) == want


def test_combine_tree_merges_split_every_at_a_time_in_order():
    calls = []

    def combine(parts):
        calls.append(list(parts))
        return "(" + "".join(parts) + ")"

    assert combine_tree(list("abcde"), combine, split_every=2) == "(((ab)(cd))((e)))"
    assert calls[:3] == [["a", "b"], ["c", "d"], ["e"]]
    assert combine_tree(list("abcde"), combine) == "(abcde)"
    assert combine_tree(["a"], combine, split_every=4) == "(a)"  # one part is still combined once
    assert combine_tree([], combine, split_every=3) == "()"  # the empty sum is the combine's
    for bad in (1, 0, 2.5, True):
        with pytest.raises(ValueError, match=r"^split_every must be an integer >= 2, got "):
            combine_tree(list("ab"), combine, split_every=bad)


def test_reduction_runs_chunk_combine_aggregate_in_that_order():
    got = reduction([[1, 2], [3], [4, 5, 6]], len, sum, lambda total: total * 10, split_every=2)
    assert got == 60


def test_merge_is_the_partials_own_merge_and_empty_needs_the_size():
    a, b = ExactPartials.from_terms([[1e300, 1.0]]), ExactPartials.from_terms([[-1e300, 2.0**-60]])
    assert merge([a, b]) == ExactPartials.merge([a, b])
    assert merge([a, b]).to_floats().tolist() == [1.0 + 2.0**-60]
    assert ExactPartials.merge([], k=3) == ExactPartials.zeros(3)
    with pytest.raises(ValueError, match=r"^ExactPartials\.merge needs at least one ExactPartials$"):
        ExactPartials.merge([])


def test_the_runtime_names_the_base_types_without_defining_them_again():
    assert accumulate.ExactPartials is ExactPartials
    assert accumulate.exact_sum is exact_sum
    assert ExactPartials.__module__ == "laddu_dask.sums.exact"  # the base package of exact sums
    assert GroupedPartials.__module__ == "laddu_dask.sums.grouped"


# -- exact sums by group (histograms) -----------------------------------------------------------


@pytest.mark.parametrize("n_groups", [1, 4, 9, 45, 100])  # 90 and 200 quantities: binned in passes
def test_group_sums_are_fsum_of_each_groups_terms(n_groups):
    rng = np.random.default_rng(n_groups)
    terms = np.stack([_ill_conditioned(50, n_groups), _ill_conditioned(50, n_groups + 10)])
    groups = rng.integers(-1, n_groups, terms.shape[1])
    groups[groups == n_groups - 1] = -1 if n_groups > 1 else 0  # one group (of several) left empty
    got = ExactPartials.from_groups(groups, terms, n_groups).to_floats().reshape(n_groups, 2)
    for g in range(n_groups):
        for r in range(2):
            assert got[g, r] == math.fsum(terms[r, groups == g].tolist()), (g, r)


def test_group_sums_merge_across_chunks_exactly():
    terms = _ill_conditioned(100, 5)
    groups = np.arange(terms.size) % 3
    parts = [ExactPartials.from_groups(g, t, 3) for g, t in zip(np.array_split(groups, 7),
                                                                np.array_split(terms, 7), strict=True)]
    got = ExactPartials.merge(parts).to_floats().tolist()
    assert got == [math.fsum(terms[groups == g].tolist()) for g in range(3)]


def test_non_finite_terms_make_only_their_groups_sum_non_finite():
    terms = [[np.inf, 1.0, 2.0, np.nan, 1e308, 1e308, np.nan]]  # group 2 overflows; the nan counts nowhere
    got = ExactPartials.from_groups([0, 1, 0, 1, 2, 2, -1], terms, 4)
    assert [str(v) for v in got.to_floats().tolist()] == ["inf", "nan", "inf", "0.0"]
    huge = [[1e308, 1e308, -1e308, 2.0**977, -(2.0**977), 1.0]]  # bin sums above the float range
    assert ExactPartials.from_groups([0, 0, 0, 1, 1, 1], huge, 2).to_floats().tolist() == [1e308, 1.0]


def test_group_sums_refuse_groups_out_of_range():
    with pytest.raises(ValueError, match=r"^groups must be 2 integers in \[-1, 2\)"):
        ExactPartials.from_groups([0, 2], [1.0, 2.0], 2)
    with pytest.raises(ValueError, match=r"^groups must be 2 integers in \[-1, 2\)"):
        ExactPartials.from_groups([0], [1.0, 2.0], 2)


def test_a_histogram_of_cancelling_weights_is_fsum_per_bin_for_any_partitioning():
    rng = np.random.default_rng(4)
    x = rng.uniform(-0.5, 2.5, 2000)
    w = _ill_conditioned(400, 4, top=500)[:2000]  # squares stay finite
    edges = [0.0, 0.5, 1.0, 2.0]
    slot = np.searchsorted(edges, x, side="right")
    want = [math.fsum(w[slot == k].tolist()) for k in range(len(edges) + 1)]
    squares = [math.fsum((w[slot == k] ** 2).tolist()) for k in range(len(edges) + 1)]
    for chunk in (2000, 700, 97):
        ds = ld.Dataset.from_arrays(scalars={"x": x}, weights=w, chunk_size=chunk)
        h = ds.histogram(ld.scalar("x"), bin_edges=edges)
        assert [h.underflow, *h.counts, h.overflow] == want, chunk
        constituents, under, over = h.squared_weight_constituents()
        assert [under, *constituents, over] == [squares[0], *np.square(h.errors).tolist(), squares[-1]]
        j = ds.joint_histogram([ld.scalar("x")], bin_edges=[edges])
        assert j.values.tolist() == want[1:-1]
        assert j.diagnostics.out_of_range_weight == math.fsum([*w[slot == 0], *w[slot == len(edges)]])
        assert ds.stats().sum_weights == ds.sum_weights() == math.fsum(w.tolist())


# -- the generation report: exact totals for 1, 3 and 7 partitions -------------------------------


def _report(parts: list[np.ndarray]) -> GenerationReport:
    """The report of tasks that produced ``parts`` (the Generator's chunk, combine, aggregate)."""
    stats = merge_stats([PartitionStats.of(p, proposals=len(p), produced=len(p)) for p in parts])
    return GenerationReport.build(stats, requested=sum(map(len, parts)), seed=0, partitions=len(parts))


def _fsum_totals(w: np.ndarray) -> tuple[float, float]:
    return math.fsum(w.tolist()), math.fsum(x * x for x in w.tolist())


@functools.cache
def _generated_weights() -> np.ndarray:
    events, _ = ld.Generator(_photoproduction()).weighted(2100, seed=9, partition_events=2100)
    return events.weights()


@pytest.mark.parametrize("weights", ["generated", "tie-breaking"])
def test_report_totals_of_the_same_events_are_bitwise_equal_for_1_3_and_7_partitions(weights):
    if weights == "generated":
        w = _generated_weights()
        assert len(np.unique(w)) > 2000
    else:  # each partition's own rounded sum would drop its 2**-53: 7.0 instead of 7 + 2**-50
        w = np.tile([1.0, 2.0**-53], 7)
    want = _fsum_totals(w)
    reports = {k: _report(np.array_split(w, k)) for k in (1, 3, 7)}
    for k, report in reports.items():
        got = (report.sum_weights, report.sum_squared_weights)
        assert got == want, (k, [g.hex() for g in got], [x.hex() for x in want])
        assert report.partitions == k and report.produced == len(w)
    assert len({r.to_json().replace(f'"partitions": {r.partitions}', "") for r in reports.values()}) == 1


@pytest.mark.parametrize("partitions", [1, 3, 7])
def test_a_generators_report_is_fsum_of_its_events_in_1_3_or_7_partitions(partitions):
    n = 2100
    events, report = ld.Generator(_photoproduction()).weighted(n, seed=9, partition_events=n // partitions)
    assert report.partitions == events.n_partitions == partitions
    assert (report.sum_weights, report.sum_squared_weights) == _fsum_totals(events.weights())
