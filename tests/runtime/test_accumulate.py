"""Exact partial sums: bitwise equal to the correctly rounded exact sum, in any merge order."""

from __future__ import annotations

import itertools
import math
import pickle
import random
import struct
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from laddu_dask.runtime.accumulate import ExactPartials, exact_sum

MAX = sys.float_info.max
TINY = math.ulp(0.0)  # smallest subnormal


def reference(terms) -> float:
    """Correctly rounded exact sum of finite terms: math.fsum, else exact fractions.

    math.fsum raises OverflowError on intermediate overflow (even when the exact sum is
    finite); the Fraction route is exact and its float() is correctly rounded. An exact
    sum beyond the float range is +-inf (our documented convention). An exact zero is
    +0.0 (math.fsum in Python 3.11; later versions may return -0.0 for all -0.0 terms).
    """
    terms = [float(t) for t in terms]
    try:
        value = math.fsum(terms)
    except OverflowError:
        exact = sum((Fraction(t) for t in terms), Fraction(0))
        try:
            value = float(exact)
        except OverflowError:
            value = math.inf if exact > 0 else -math.inf
    return value + 0.0  # -0.0 -> +0.0


def bits(value: float) -> bytes:
    return struct.pack("<d", value)


def assert_same(actual: float, expected: float) -> None:
    if math.isnan(expected):
        assert math.isnan(actual)
    else:
        assert bits(actual) == bits(expected), (actual, expected)


finite = st.floats(allow_nan=False, allow_infinity=False)
scaled = st.builds(
    math.ldexp,
    st.floats(min_value=-1.0, max_value=1.0, allow_nan=False),
    st.integers(min_value=-1080, max_value=1023),
)
magnitudes = st.sampled_from([0.0, -0.0, TINY, -TINY, 2.2e-308, 1e-300, 1.0, 1e16, 1e300, MAX, -MAX])
any_float = st.one_of(finite, scaled, magnitudes)


@st.composite
def cancelling(draw) -> list[float]:
    """Terms whose large parts cancel exactly, hiding small ones, shuffled."""
    big = draw(st.lists(any_float, max_size=20))
    small = draw(st.lists(any_float, max_size=10))
    terms = big + [-x for x in big] + small
    draw(st.randoms(use_true_random=False)).shuffle(terms)
    return terms


term_lists = st.one_of(st.lists(any_float, max_size=60), cancelling())


@given(term_lists)
def test_equals_correctly_rounded_sum(terms):
    assert_same(exact_sum(terms), reference(terms))
    assert_same(float(ExactPartials.from_terms(np.array(terms)).to_floats()[0]), reference(terms))


@st.composite
def random_tree(draw, terms_strategy=term_lists):
    terms = draw(terms_strategy)
    rng = draw(st.randoms(use_true_random=False))
    cuts = sorted(rng.randint(0, len(terms)) for _ in range(rng.randint(0, 8)))
    bounds = [0, *cuts, len(terms)]
    chunks = [terms[a:b] for a, b in itertools.pairwise(bounds)]
    return terms, chunks, rng


@given(random_tree())
def test_any_partition_and_merge_order_is_bitwise_identical(case):
    terms, chunks, rng = case
    parts = [ExactPartials.from_terms(np.array(chunk, dtype=np.float64)) for chunk in chunks]
    while len(parts) > 1:  # a random tree: merge a random group, in a random order
        group = rng.sample(range(len(parts)), rng.randint(2, min(4, len(parts))))
        picked = [parts[i] for i in group]
        parts = [p for i, p in enumerate(parts) if i not in group]
        merged = ExactPartials.merge(picked) if rng.random() < 0.5 else sum(reversed(picked))
        parts.insert(rng.randint(0, len(parts)), merged)
    whole = ExactPartials.from_terms(np.array(terms, dtype=np.float64))
    assert parts[0] == whole
    assert_same(float(parts[0].to_floats()[0]), reference(terms))


def test_catastrophic_cancellation():
    terms = [1e16, 1.0, -1e16, 1e-3, 3.0, -1e16, 1e16]
    assert sum(terms) != math.fsum(terms)  # a plain sum gets this wrong
    assert_same(exact_sum(terms), math.fsum(terms))
    assert exact_sum(terms) == 4.001


def test_extremes():
    assert exact_sum([TINY, TINY, -TINY]) == TINY
    assert exact_sum([2.5e-308, -2.4e-308]) == math.fsum([2.5e-308, -2.4e-308])
    assert exact_sum([MAX, MAX, -MAX]) == MAX  # math.fsum raises here
    assert exact_sum([MAX, MAX]) == math.inf  # math.fsum raises OverflowError
    assert exact_sum([-MAX, -MAX, 1.0]) == -math.inf
    assert exact_sum([MAX, math.ulp(MAX) / 2 - math.ulp(MAX) / 8]) == MAX
    assert exact_sum([MAX, math.ulp(MAX) / 2]) == math.inf  # halfway, ties to even
    assert exact_sum([]) == 0.0
    assert bits(exact_sum([-0.0, -0.0])) == bits(0.0)


def test_many_huge_terms_overflow_retry():
    # bin sums of terms above 2**1003 overflow in float64; the block is redone scaled
    terms = [1.7e308] * 40 + [1.0, TINY] + [-1.7e308] * 40 + [1e300] * 3
    random.Random(1).shuffle(terms)
    assert_same(exact_sum(terms), reference(terms))
    assert exact_sum([MAX] * 1000 + [-MAX] * 999) == MAX


def test_large_array_several_blocks():
    rng = np.random.default_rng(7)
    n = (1 << 20) + 12345  # more than one exact block
    terms = rng.normal(size=n) * 10.0 ** rng.integers(-30, 30, size=n)
    terms[::1000] = 1e20
    terms[1::1000] = -1e20
    assert_same(exact_sum(terms), math.fsum(terms.tolist()))


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, max_side=12), elements=any_float))
@settings(max_examples=50)
def test_rows_are_independent(matrix):
    values = ExactPartials.from_terms(matrix).to_floats()
    assert values.shape == (matrix.shape[0],)
    for row, value in zip(matrix, values, strict=True):
        assert_same(float(value), reference(row.tolist()))


def test_float32_and_integer_input():
    rng = np.random.default_rng(3)
    terms32 = (rng.normal(size=(3, 1000)) * 1e5).astype(np.float32)
    values = ExactPartials.from_terms(terms32).to_floats()
    for row, value in zip(terms32, values, strict=True):
        assert value == math.fsum(row.astype(np.float64).tolist())
    assert exact_sum(np.arange(10)) == 45.0
    assert exact_sum(np.array([1.5, 2.25], dtype=">f8")) == 3.75  # byte-swapped


def test_cupy_like_input_is_copied_to_host():
    class FakeDeviceArray:
        def get(self):
            return np.array([0.1, 0.2, 0.3])

    assert exact_sum(FakeDeviceArray()) == math.fsum([0.1, 0.2, 0.3])


@pytest.mark.parametrize(
    ("terms", "expected"),
    [
        ([1.0, math.inf], math.inf),
        ([1.0, -math.inf, -math.inf], -math.inf),
        ([math.inf, -math.inf], math.nan),
        ([math.nan, 1.0], math.nan),
        ([np.uint64(0x7FF0000000000001).view(np.float64), 1.0], math.nan),  # low-payload nan
        ([-math.inf, MAX, MAX], math.nan),  # finite part overflows: inf + -inf
        ([math.inf, -1e300, MAX], math.inf),
    ],
)
def test_non_finite_terms_behave_like_a_plain_sum(terms, expected):
    assert_same(exact_sum(np.array(terms, dtype=np.float64)), expected)


def test_non_finite_terms_merge_in_any_order():
    chunks = [[1.0, math.inf], [2.0], [-math.inf, 5.0], [math.nan]]
    parts = [ExactPartials.from_terms(c) for c in chunks]
    assert math.isnan(ExactPartials.merge(parts[:3]).to_floats()[0])
    assert math.isnan(ExactPartials.merge(parts[::-1]).to_floats()[0])
    assert ExactPartials.merge([parts[0], parts[1]]).to_floats()[0] == math.inf
    assert ExactPartials.from_terms([1.0, 2.0]).special == (0.0,)


def test_k_mismatch_and_bad_input():
    two = ExactPartials.from_terms(np.zeros((2, 3)))
    three = ExactPartials.zeros(3)
    with pytest.raises(ValueError, match="2 and 3 quantities"):
        two + three
    with pytest.raises(ValueError, match=r"2 and 3 quantities \(part 1\)"):
        ExactPartials.merge([two, three])
    with pytest.raises(ValueError, match="at least one"):
        ExactPartials.merge([])
    with pytest.raises(TypeError, match="part 1 is a float"):
        ExactPartials.merge([two, 1.0])
    with pytest.raises(ValueError, match=r"shape \(n,\) or \(K, n\), got shape \(2, 2, 2\)"):
        ExactPartials.from_terms(np.zeros((2, 2, 2)))
    with pytest.raises(TypeError, match="must be real"):
        ExactPartials.from_terms(np.ones(3, dtype=complex))
    with pytest.raises(ValueError, match="as many special sums"):
        ExactPartials((1, 2), (0.0,))


def test_zeros_len_and_sum_builtin():
    parts = [ExactPartials.from_terms([[1.0], [2.0]]) for _ in range(3)]
    assert len(parts[0]) == 2
    assert sum(parts) == ExactPartials.merge(parts)
    assert (ExactPartials.zeros(2) + parts[0]) == parts[0]
    assert sum(parts).to_floats().tolist() == [3.0, 6.0]
    assert len(ExactPartials.from_terms(np.zeros((0, 5)))) == 0


def test_pickle_round_trip():
    p = ExactPartials.from_terms(np.array([[1e16, 1.0, -1e16, TINY], [math.inf, 1.0, 2.0, 3.0]]))
    q = pickle.loads(pickle.dumps(p))
    assert q == p
    assert q.to_floats().tobytes() == p.to_floats().tobytes()
    assert "k=2" in repr(q)


def _certified_reference(rows: list[list[float]], bound: list[float]) -> list[float] | None:
    """What certified_floats must return, from exact fractions: the correctly rounded sums,
    or None (Uncertified) where a sum and the sum shifted by its bound round apart."""
    out = []
    for row, b in zip(rows, bound):
        exact = sum((Fraction(t) for t in row), Fraction(0))
        value = float(exact)
        if b and float(exact - Fraction(b)) != float(exact + Fraction(b)):
            return None
        out.append(value)
    return out


def _near_tie_rows(rng: random.Random) -> tuple[list[list[float]], list[float]]:
    """Rows whose exact sum lies within a few ulps of a rounding tie (the hard case of the
    certification), with bounds from zero to several ulps."""
    rows, bound = [], []
    for _ in range(rng.randint(1, 2)):
        big = rng.uniform(1.0, 2.0) * 2.0 ** rng.randint(-30, 30)
        half = math.ulp(big) / 2  # big + half is a tie
        row = [big, half, rng.choice([0.0, 1.0, -1.0]) * math.ulp(half) * rng.randint(0, 3)]
        for _ in range(rng.randint(0, 3)):  # pairs that cancel exactly
            v = rng.uniform(-1, 1) * big
            row += [v, -v]
        rng.shuffle(row)
        rows.append(row)
        bound.append(rng.choice([0.0, 0.0, math.ulp(half), 4 * math.ulp(half), half / 3, 2 * half]))
    width = max(len(r) for r in rows)
    return [r + [0.0] * (width - len(r)) for r in rows], bound


def test_certified_sums_against_exact_fractions():
    """The certification (sums held as a few doubles and an error bound, the kernels' output)
    returns the correctly rounded sums exactly when no sum can round otherwise within its
    bound, else Uncertified; near ties, large cancellations and an intermediate overflow."""
    from laddu_dask.runtime.accumulate import CertifiedPartials, Uncertified

    rng = random.Random(20261201)
    cases = [_near_tie_rows(rng) for _ in range(400)]
    cases += [([[MAX, MAX, -MAX]], [0.0]), ([[MAX, MAX, -MAX]], [1.0]),  # fsum overflows midway
              ([[1e16, 1.0, -1e16, 3.0]], [0.0]), ([[0.1] * 10], [1e-17])]
    outcomes = {"certified": 0, "uncertified": 0}
    for rows, bound in cases:
        expected = _certified_reference(rows, bound)
        partials = CertifiedPartials(np.array(rows), np.array(bound))
        if expected is None:
            with pytest.raises(Uncertified):
                partials.certified_floats()
            outcomes["uncertified"] += 1
        else:
            got = partials.certified_floats()
            assert [struct.pack("<d", v) for v in got.tolist()] == [struct.pack("<d", v) for v in expected]
            outcomes["certified"] += 1
    assert min(outcomes.values()) > 50  # both outcomes are exercised


def test_certified_sums_of_non_finite_terms_are_not_certified():
    from laddu_dask.runtime.accumulate import CertifiedPartials, Uncertified

    inf = float("inf")
    assert CertifiedPartials(np.array([[inf, 1.0]]), np.zeros(1)).certified_floats()[0] == inf
    assert math.isnan(CertifiedPartials(np.array([[inf, -inf]]), np.zeros(1)).certified_floats()[0])
    with pytest.raises(Uncertified, match="not finite"):
        CertifiedPartials(np.array([[inf, 1.0]]), np.array([1e-300])).certified_floats()
    with pytest.raises(Uncertified, match="not finite"):
        CertifiedPartials(np.array([[1.0, 2.0]]), np.array([inf])).certified_floats()


def _exact(row) -> Fraction:
    return sum((Fraction(t) for t in row), Fraction(0))


@given(st.lists(term_lists, min_size=1, max_size=4))
@settings(max_examples=200)
def test_compact_keeps_each_exact_sum_in_a_few_doubles(rows):
    """What a worker sends: each row rewritten as a short expansion with the same exact sum
    (exact fractions as the reference), or left whole where it cannot be (not finite, an
    intermediate overflow, a sum spanning too many bits); bounds unchanged."""
    from laddu_dask.runtime.accumulate import CertifiedPartials

    width = max(CertifiedPartials.COMPACT_WIDTH + 1, *map(len, rows))
    matrix = np.array([r + [0.0] * (width - len(r)) for r in rows])
    bound = np.linspace(0.0, 1e-3, len(rows))
    partials = CertifiedPartials(matrix, bound)
    compact = partials.compact()
    assert compact.bound is partials.bound
    if compact is partials:  # left whole: only where a shorter exact form was not written
        assert any(not math.isfinite(reference(r)) or _overflows(r) for r in matrix.tolist()) or \
            any(len(_fsum_chain(r)) > CertifiedPartials.MAX_EXPANSION for r in matrix.tolist())
        return
    assert compact.terms.shape[1] <= CertifiedPartials.MAX_EXPANSION
    for before, after in zip(matrix.tolist(), compact.terms.tolist(), strict=True):
        assert _exact(after) == _exact(before)


def _overflows(row) -> bool:
    try:
        math.fsum(row)
    except OverflowError:
        return True
    return False


def _fsum_chain(row) -> list[float]:
    out: list[float] = []
    while (left := math.fsum([*row, *(-e for e in out)])) != 0.0 and len(out) <= 40:
        out.append(left)
    return out


def test_compact_rows_of_many_partitions_certify_alike_in_two_or_three_doubles():
    """Rows as the kernels give them (per partition: a sum and its compensation), merged from
    500 partitions: two or three doubles each once compacted, and the certification (value
    or Uncertified) is the one of all the terms, on the near-tie cases too."""
    from laddu_dask.runtime.accumulate import CertifiedPartials, Uncertified

    rng = random.Random(7)
    rows = []
    for _ in range(3):
        row = []
        for _ in range(500):
            s = rng.uniform(-1, 1) * 10.0 ** rng.randint(-3, 6)
            row += [s, rng.uniform(-0.5, 0.5) * math.ulp(s)]
        rows.append(row)
    wide = CertifiedPartials(np.array(rows), np.array([0.0, 1e-30, 0.0]))
    compact = wide.compact()
    assert compact.terms.shape[1] <= 3
    assert compact.certified_floats().tobytes() == wide.certified_floats().tobytes()
    cases = [_near_tie_rows(rng) for _ in range(300)]
    for rows, bound in cases:
        rows = [r + [0.0] * (CertifiedPartials.COMPACT_WIDTH + 1) for r in rows]  # wide enough
        both = [CertifiedPartials(np.array(rows), np.array(bound)), None]
        both[1] = both[0].compact()
        outcomes = []
        for p in both:
            try:
                outcomes.append(p.certified_floats().tobytes())
            except Uncertified:
                outcomes.append("uncertified")
        assert outcomes[0] == outcomes[1]
