"""Grouped exact sums (``laddu_dask.sums.grouped``; tests first written against the surviving
mutants of ``runtime/grouped.py``, issue 30, point 3).

Every group's sum of every quantity is checked against an independent reference: the
correctly rounded exact sum of that group's terms (``math.fsum``, or ``fractions.Fraction``
where an intermediate sum leaves the float64 range), and a plain sum for non-finite terms.
Both paths are reached: the dense one (few groups: a fit fraction's totals) and the
binned one (many groups: a projection's histogram).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laddu_dask.sums import GroupedPartials, reduction


def _reference(groups, terms, shape, first_row=0):
    """The correctly rounded sum per (group, row), by Fraction (plain sum if not finite)."""
    terms = np.atleast_2d(terms)
    out = np.zeros(shape)
    for g in range(shape[0]):
        for r in range(terms.shape[0]):
            values = terms[r][np.asarray(groups) == g].tolist()
            if all(map(math.isfinite, values)):
                out[g, first_row + r] = float(sum(map(Fraction, values), Fraction(0)))
            else:
                with np.errstate(invalid="ignore"):
                    out[g, first_row + r] = float(np.sum([v for v in values if not math.isfinite(v)]))
    return out


def _terms(rng, k, n):
    """Terms of mixed magnitudes and signs, cancelling: each sum needs exact arithmetic."""
    return rng.normal(0.0, 1.0, (k, n)) * 10.0 ** rng.integers(-20, 20, (k, n))


@pytest.mark.parametrize("groups_span", [1, 3, 200])  # dense, dense, binned
def test_sums_per_group_are_correctly_rounded(groups_span):
    rng = np.random.default_rng(groups_span)
    k, n, shape = 2, 5000, (groups_span + 1, 3)
    groups = rng.integers(-1, groups_span, n)  # -1: in no group
    terms = _terms(rng, k, n)
    got = GroupedPartials.from_terms(groups, terms, shape, first_row=1).to_floats()
    assert got.shape == shape
    np.testing.assert_array_equal(got, _reference(groups, terms, shape, first_row=1))
    assert not got[:, 0].any()  # rows before first_row untouched


@pytest.mark.parametrize("offset", [0, 7])  # the groups need not start at 0 (bin 0's key)
def test_a_single_group_sums_every_row(offset):
    rng = np.random.default_rng(40 + offset)
    terms = _terms(rng, 4, 3000)
    groups = np.full(3000, offset)
    got = GroupedPartials.from_terms(groups, terms, (offset + 1, 4)).to_floats()
    np.testing.assert_array_equal(got[offset], [math.fsum(row.tolist()) for row in terms])
    assert not got[:offset].any()


def test_a_one_dimensional_row_and_integer_input():
    got = GroupedPartials.from_terms([0, 1, 1, 0], [1, 2, 3, 4], (2, 1)).to_floats()
    assert got.tolist() == [[5.0], [5.0]]


@pytest.mark.parametrize("span", [1, 300])
def test_many_columns_in_several_slices_and_blocks(span):
    """More columns than a slice (2**15 / k) and than a block (2**20 terms): the bins are
    flushed between blocks; the sums stay exact."""
    rng = np.random.default_rng(50 + span)
    n = (1 << 20) + 12_345
    terms = rng.normal(0.0, 1.0, (1, n)) * 2.0 ** rng.integers(-30, 30, n)
    groups = rng.integers(0, span, n)
    got = GroupedPartials.from_terms(groups, terms, (span, 1)).to_floats()[:, 0]
    expected = [math.fsum(terms[0][groups == g].tolist()) for g in range(span)]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("span", [1, 300])
@pytest.mark.filterwarnings("error::RuntimeWarning")  # no overflow or invalid warning reaches the user
def test_non_finite_terms_give_the_plain_sums(span):
    n = 600
    terms = np.ones((2, n))
    groups = np.arange(n) % span
    terms[0, 0], terms[0, 1 % n] = np.inf, 1.0  # group 0: inf
    terms[1, 0], terms[1, span] = np.inf, -np.inf  # group 0 of row 1: inf - inf
    terms[0, 2] = np.nan  # group 2 % span: nan
    got = GroupedPartials.from_terms(groups, terms, (span, 2)).to_floats()
    np.testing.assert_array_equal(got, _reference(groups, terms, (span, 2)))
    assert math.isnan(got[0, 1]) and math.isnan(got[2 % span, 0])
    if span > 2:
        assert got[0, 0] == math.inf


@pytest.mark.parametrize("span", [1, 300])
@pytest.mark.filterwarnings("error::RuntimeWarning")  # no overflow or invalid warning reaches the user
def test_terms_above_two_to_the_1003_are_summed_exactly(span):
    """Bin sums of terms this large overflow: the exact slow path takes over; a group whose
    exact sum is beyond the float64 range gives inf."""
    rng = np.random.default_rng(60 + span)
    n = 900
    groups = np.arange(n) % span
    terms = rng.normal(0.0, 1.0, (1, n)) * 2.0**1000
    terms[0, :4] = [1.7e308, 1.7e308, -1.7e308, 3.0]
    got = GroupedPartials.from_terms(groups, terms, (span, 1)).to_floats()
    np.testing.assert_array_equal(got, _reference(groups, terms, (span, 1)))
    up = GroupedPartials.from_terms([0, 0], [1.7e308, 1.7e308], (1, 1)).to_floats()
    assert up.tolist() == [[math.inf]]
    down = GroupedPartials.from_terms(np.arange(400) % 300, np.full(400, -1.7e308), (300, 1)).to_floats()
    assert down[:100, 0].tolist() == [-math.inf] * 100 and down[100:, 0].tolist() == [-1.7e308] * 200


def test_merge_in_any_split_is_the_sum_of_all_terms():
    rng = np.random.default_rng(70)
    n, shape = 4000, (50, 2)
    groups = rng.integers(-1, 50, n)
    terms = _terms(rng, 2, n)
    terms[1, 5] = np.inf
    cuts = [0, 1, 700, 701, 2500, n]
    parts = [GroupedPartials.from_terms(groups[a:b], terms[:, a:b], shape)
             for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    parts.append(GroupedPartials.from_terms(groups[:0], terms[:, :0], shape))
    expected = _reference(groups, terms, shape)
    np.testing.assert_array_equal(GroupedPartials.merge(parts).to_floats(), expected)
    np.testing.assert_array_equal(GroupedPartials.merge(parts[::-1], shape).to_floats(), expected)
    single = GroupedPartials.from_terms(np.zeros(3, np.int64), [[1.0, 2.0, 3.0]], (1, 1))
    assert GroupedPartials.merge([single, single]).to_floats().tolist() == [[12.0]]


def test_merge_of_no_parts_is_zero_of_the_given_shape():
    empty = GroupedPartials.merge([], (3, 2))
    assert empty.shape == (3, 2)
    assert empty.keys.dtype == np.int64 and empty.keys.size == 0 and empty.values.size == 0
    assert empty.to_floats().tolist() == [[0.0, 0.0]] * 3


def test_terms_in_no_group_give_zero_sums():
    """Regression: ``to_floats`` of partials without any key raised ``ValueError`` (a
    projection whose bins hold no event)."""
    assert GroupedPartials.from_terms([-1, -1], [1.0, 2.0], (2, 1)).to_floats().tolist() == [[0.0], [0.0]]
    assert GroupedPartials.from_terms([], np.zeros((1, 0)), (1, 1)).to_floats().tolist() == [[0.0]]


def test_merge_needs_one_shape():
    a = GroupedPartials.from_terms([0], [1.0], (1, 1))
    b = GroupedPartials.from_terms([0], [1.0], (2, 1))
    with pytest.raises(ValueError, match="^GroupedPartials merge only with partials of one shape$"):
        GroupedPartials.merge([a, b])
    with pytest.raises(ValueError, match="^GroupedPartials merge only with partials of one shape$"):
        GroupedPartials.merge([])


def test_a_non_finite_term_leaves_the_other_rows_of_its_slice_exact():
    """Dense path: one row has an inf, the other row's finite terms in the same slice keep
    their exact sum."""
    terms = np.array([[1.0, np.inf, 2.0, 0.5], [1e16, 1.0, -1e16, 0.25]])
    got = GroupedPartials.from_terms(np.zeros(4, np.int64), terms, (1, 2)).to_floats()
    assert got.tolist() == [[math.inf, math.fsum([1e16, 1.0, -1e16, 0.25])]]


def test_a_group_of_more_than_two_million_terms_is_flushed_in_time_and_stays_exact():
    """The dense path sums the top 32 bits of each term into float64 bins, exact for up to
    2**21 terms of one sign and exponent; it empties the bins every 2**20 columns. Here 3 * 2**20
    terms just below 2 whose 32nd bit varies (so a bin holding all of them would need 54 bits),
    and one term cancelling their bulk: the sum must still be the correctly rounded one."""
    n = 3 * 2**20
    last_bit = (np.random.default_rng(5).random(n) < 0.5) * 2.0**-31
    terms = np.empty((1, n + 1))
    terms[0, :n] = np.nextafter(2.0, 0.0) - last_bit
    terms[0, n] = -2.0 * n
    got = GroupedPartials.from_terms(np.zeros(n + 1, dtype=np.int64), terms, (1, 1)).to_floats()
    assert got[0, 0] == math.fsum(terms[0].tolist())


@pytest.mark.parametrize("span", [1, 300])
def test_float32_terms_are_summed_as_their_exact_float64_values(span):
    """A float32 kernel's terms widen to float64 exactly before their bits are binned."""
    rng = np.random.default_rng(61)
    terms = (rng.normal(0.0, 1.0, (2, 900)) * 10.0 ** rng.integers(-8, 8, (2, 900))).astype(np.float32)
    groups = np.arange(900) % span
    got = GroupedPartials.from_terms(groups, terms, (span, 2)).to_floats()
    np.testing.assert_array_equal(got, _reference(groups, terms.astype(np.float64), (span, 2)))


@st.composite
def cancelling_groups(draw):
    """Rows of terms in groups (``-1``: none), each group's terms mostly pairs ``+-x`` of
    magnitudes up to ``2**900`` that cancel exactly, around small terms of many magnitudes,
    shuffled so that a pair's halves fall in different partitions."""
    rows = draw(st.integers(1, 3))
    span = draw(st.sampled_from([1, 2, 5, 40]))  # few keys: the dense path; many: the binned one
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pairs, small = draw(st.integers(0, 30)), draw(st.integers(0, 30))
    huge = rng.uniform(1.0, 2.0, (rows, pairs)) * 2.0 ** rng.integers(60, 900, (rows, pairs))
    tiny = rng.uniform(-1.0, 1.0, (rows, small)) * 2.0 ** rng.integers(-1074, 60, (rows, small))
    terms = np.concatenate([huge, -huge, tiny], axis=1)
    groups = np.concatenate([np.tile(rng.integers(-1, span, pairs), 2), rng.integers(-1, span, small)])
    order = rng.permutation(groups.size)
    return groups[order], terms[:, order], span


@pytest.mark.parametrize("partitions", [1, 3, 7])
@given(case=cancelling_groups())
@settings(max_examples=60)
def test_grouped_sums_are_fsum_per_group_bitwise_for_any_partitions(partitions, case):
    """Every group's sum, over 1, 3 or 7 partitions merged by the generic reduction, is
    ``math.fsum`` of that group's terms, to the bit."""
    groups, terms, span = case
    shape = (span, terms.shape[0])
    chunks = zip(np.array_split(groups, partitions), np.array_split(terms, partitions, axis=1), strict=True)
    got = reduction(chunks, lambda c: GroupedPartials.from_terms(c[0], c[1], shape),
                    functools.partial(GroupedPartials.merge, shape=shape), GroupedPartials.to_floats)
    want = np.array([[math.fsum(row[groups == g].tolist()) for row in terms] for g in range(span)])
    assert got.tobytes() == want.tobytes()
