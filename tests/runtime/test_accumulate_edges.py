"""Tests written against the surviving mutants of ``runtime/accumulate.py`` (issue 30, point 3).

References are independent of the code under test: ``fractions.Fraction`` sums (exact;
their conversion to float is correctly rounded), ``math.fsum``, plain sums for non-finite
terms, and hand-computed cases.  Errors are checked by type and message.
"""

from __future__ import annotations

import math
import tracemalloc
import warnings
from fractions import Fraction

import numpy as np
import pytest

from laddu_dask.runtime import accumulate
from laddu_dask.runtime.accumulate import CertifiedPartials, ExactPartials, Uncertified, exact_sum, fsum_rows
from laddu_dask.sums import exact as exact_sums

TINY = 5e-324  # the smallest subnormal: 2**-1074, an odd multiple of the fixed-point quantum


def _exact(values) -> Fraction:
    return sum(map(Fraction, values), Fraction(0))


def test_strings_are_refused_with_a_type_error_naming_the_dtype():
    with pytest.raises(TypeError, match=r"^terms must be real numbers, got dtype <U1$"):
        exact_sum(["a", "b"])
    with pytest.raises(TypeError, match=r"^terms must be real, got dtype complex128$"):
        exact_sum([1j])


def test_a_term_of_exponent_field_2000_in_an_overflowing_block_keeps_its_value():
    """Bins of terms above 2**1003 overflow; the block is redone with the terms from 2**977
    (exponent field 2000) on scaled down by 2**-600 and scaled back exactly."""
    terms = [2.0**977, 1e308, 1e308, -1e308, -1e308, 3.0 * 2.0**977, -(2.0**978)]
    assert exact_sum(terms) == float(_exact(terms)) == 2.0**978
    terms = [2.0**977, 1e308, 1e308, -1e308, -1e308, 1.0]
    assert exact_sum(terms) == float(_exact(terms))


def test_ordinary_terms_are_binned_in_one_pass(monkeypatch):
    """The overflow redo is only for blocks with terms above 2**1003 (nan and inf included
    in a block do not cause it); its result is the exact sum either way."""
    calls = []
    original = exact_sums.block_bins

    def counting(block, scale_huge):
        calls.append(scale_huge)
        return original(block, scale_huge)

    monkeypatch.setattr(exact_sums, "block_bins", counting)
    assert ExactPartials.from_terms([[1.0, -2.5, 1e300], [np.inf, 3.0, -1e-300]]).to_floats().tolist() == [
        -1.5 + 1e300, math.inf]
    assert calls == [False]
    calls.clear()
    assert exact_sum([1e308, 1e308, -1e308]) == 1e308
    assert calls == [False, True]


def test_a_special_bin_does_not_end_the_others():
    """+inf sits in the last positive exponent bin; the negative terms' bins and the next
    rows' come after it."""
    p = ExactPartials.from_terms([[np.inf, -1.0, -0.5], [2.0, 3.0, -7.0]])
    assert p.to_floats().tolist() == [math.inf, -2.0]
    assert p.fixed[1] == -2 << 1074
    assert p.special == (math.inf, 0.0)


def test_non_finite_terms_raise_no_floating_point_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(exact_sum([np.inf, -np.inf, 1.0]))
        assert math.isnan(fsum_rows(np.array([[np.inf, -np.inf]]))[0])
        assert ExactPartials.from_terms([np.inf, 2.0]).to_floats().tolist() == [math.inf]


def test_zeros_of_zero_quantities_and_the_error_for_negative():
    empty = ExactPartials.zeros(0)
    assert len(empty) == 0 and empty.fixed == () and empty.special == ()
    assert empty.to_floats().shape == (0,)
    with pytest.raises(ValueError, match=r"^number of quantities must be >= 0, got -1$"):
        ExactPartials.zeros(-1)


def test_adding_infinite_sums_is_their_plain_sum():
    up, down = ExactPartials.from_terms([np.inf, 1.0]), ExactPartials.from_terms([-np.inf])
    assert (up + up).to_floats().tolist() == [math.inf]
    assert (down + down).to_floats().tolist() == [-math.inf]
    assert math.isnan((up + down).to_floats()[0])


def test_only_the_integer_zero_adds_from_the_left():
    p = ExactPartials.from_terms([1.5])
    assert (0 + p) is p
    assert sum([p, p]).to_floats().tolist() == [3.0]
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'int' and 'ExactPartials'"):
        5 + p  # noqa: B018
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'float' and 'ExactPartials'"):
        0.0 + p  # noqa: B018


def test_merge_of_nothing_is_an_error():
    with pytest.raises(ValueError, match=r"^ExactPartials\.merge needs at least one ExactPartials$"):
        ExactPartials.merge([])


@pytest.mark.timeout(20)  # a wrong sign or remainder in the expansion loops forever
@pytest.mark.parametrize("terms", [
    [1.7e308, 1.7e308],  # the exact sum is beyond the float64 range
    [-1.7e308, -1.7e308, -1.0],
    [1.7e308, 1.7e308, 1.7e308, -1.0, 1e-300],
    [1.0, TINY],  # parts down to the quantum 2**-1074
    [TINY],
    [-TINY, 3.0 * TINY, 2.0**-1000],
])
def test_expansion_parts_sum_exactly_to_the_partial_sum(terms):
    p = ExactPartials.from_terms(terms)
    row = p.to_expansion()[0]
    assert _exact(row.tolist()) == _exact(terms)
    assert all(map(math.isfinite, row.tolist()))
    assert fsum_rows(p.to_expansion()).tolist() == p.to_floats().tolist()
    nonzero = [abs(x) for x in row.tolist() if x]
    assert nonzero == sorted(nonzero, reverse=True)


def test_expansion_ends_with_the_non_finite_part():
    e = ExactPartials.from_terms([[np.inf, 1.0, 2.0**-60], [3.0, -np.inf, -np.inf]]).to_expansion()
    assert e.tolist() == [[1.0, 2.0**-60, math.inf], [3.0, -math.inf, 0.0]]
    assert fsum_rows(e).tolist() == [math.inf, -math.inf]


def test_expansion_of_zero_sums_is_one_zero_column():
    assert ExactPartials.zeros(2).to_expansion().tolist() == [[0.0], [0.0]]
    assert ExactPartials.zeros(0).to_expansion().shape == (0, 1)


def test_fsum_rows_after_a_non_finite_row():
    rows = np.array([[np.inf, 1.0], [1e16, 1.0], [-np.inf, 2.0], [0.1, 0.2]])
    assert fsum_rows(rows).tolist() == [math.inf, math.fsum([1e16, 1.0]), -math.inf, math.fsum([0.1, 0.2])]


def test_merge_of_wide_rows_is_compressed_exactly():
    """Three parts of 200 columns: 600 > MAX_WIDTH, so the merged rows are an exact expansion."""
    rng = np.random.default_rng(80)
    parts = [CertifiedPartials(rng.normal(0.0, 1.0, (2, 200)) * 10.0 ** rng.integers(-30, 30, (2, 200)),
                               np.zeros(2)) for _ in range(3)]
    merged = CertifiedPartials.merge(parts)
    assert merged.terms.shape[1] <= CertifiedPartials.MAX_WIDTH
    for r in range(2):
        every = [x for p in parts for x in p.terms[r].tolist()]
        assert _exact(merged.terms[r].tolist()) == _exact(every)
        assert merged.certified_floats()[r] == math.fsum(every)


def test_merged_bounds_are_the_sum_of_the_bounds_rounded_up():
    bounds = ([1.0, 0.5], [2.0, 0.25], [4.0, 0.0])
    parts = [CertifiedPartials(np.array([[1.0], [2.0]]), np.array(b)) for b in bounds]
    merged = CertifiedPartials.merge(parts)
    assert merged.terms.tolist() == [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]
    assert (merged.bound >= [7.0, 0.75]).all()
    assert (merged.bound <= np.array([7.0, 0.75]) * (1.0 + 1e-9)).all()
    assert CertifiedPartials.merge(parts[:1]) is parts[0]


def test_a_non_finite_bound_is_not_certified():
    with pytest.raises(Uncertified, match=r"^a sum or a magnitude sum is not finite$"):
        CertifiedPartials(np.array([[1.0, 2.0]]), np.array([np.inf])).certified_floats()


def test_a_sum_within_its_bound_of_a_rounding_boundary_is_not_certified():
    # the fast path: 1 - 1e-16 and 1 + 1e-16 round apart
    with pytest.raises(Uncertified, match=r"^a fast sum lies too close to a rounding boundary$"):
        CertifiedPartials(np.array([[1.0]]), np.array([1e-16])).certified_floats()
    # the general path (math.fsum overflows on the way): 1e308 +- 1e300 round apart
    terms = np.array([[1e308, 1e308, -1e308]])
    with pytest.raises(Uncertified, match=r"^a fast sum lies too close to a rounding boundary$"):
        CertifiedPartials(terms, np.array([1e300])).certified_floats()
    assert CertifiedPartials(terms, np.array([1.0])).certified_floats().tolist() == [1e308]
    assert CertifiedPartials(np.array([[1.0]]), np.array([1e-17])).certified_floats().tolist() == [1.0]


def _peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("n, dtype", [(10, np.float64), (1 << 21, np.float32), (1 << 21, np.float64)])
def test_work_bytes_is_the_memory_from_terms_holds(n, dtype):
    """``work_bytes(n)`` is what :meth:`ExactPartials.from_terms` holds besides its input
    (measured by tracemalloc, which sees NumPy's arrays): exactly its five slices of terms
    and four arrays of bins for float32 input (the float64 copy is one of the slices), up
    to a few Python objects; float64 input is not copied, whole or per slice."""
    terms = np.random.default_rng(90).normal(0.0, 1.0, n).astype(dtype)
    ExactPartials.from_terms(terms)  # first calls' caches apart
    peak = _peak_bytes(lambda: ExactPartials.from_terms(terms))
    slack = 8192
    assert peak <= accumulate.work_bytes(n) + slack
    if dtype is np.float32 or n < 100:
        assert peak >= accumulate.work_bytes(n) - slack


def test_certified_common_case_stays_in_plain_floats(monkeypatch):
    """Finite sums with a bound far from a rounding boundary are decided in plain
    ``math.fsum`` calls; the NumPy path (``fsum_rows``) is for the rest."""
    calls = []
    original = accumulate.fsum_rows
    monkeypatch.setattr(accumulate, "fsum_rows", lambda terms: calls.append(terms.shape) or original(terms))
    sums = CertifiedPartials(np.array([[1e16, 1.0, -1e16], [0.5, 0.25, 0.125]]), np.array([1e-20, 1e-30]))
    assert sums.certified_floats().tolist() == [1.0, 0.875]
    assert calls == []
    assert CertifiedPartials(np.array([[1.0, np.inf]]), np.zeros(1)).certified_floats().tolist() == [math.inf]
    assert calls == [(1, 2)]


def test_merge_up_to_max_width_concatenates_the_rows():
    rng = np.random.default_rng(91)
    half = CertifiedPartials.MAX_WIDTH // 2
    parts = [CertifiedPartials(rng.normal(0.0, 1.0, (1, half)), np.zeros(1)) for _ in range(2)]
    merged = CertifiedPartials.merge(parts)
    np.testing.assert_array_equal(merged.terms, np.hstack([p.terms for p in parts]))
    wider = CertifiedPartials.merge([*parts, CertifiedPartials(np.ones((1, 1)), np.zeros(1))])
    assert wider.terms.shape[1] < CertifiedPartials.MAX_WIDTH
    every = [x for p in parts for x in p.terms[0].tolist()] + [1.0]
    assert _exact(wider.terms[0].tolist()) == _exact(every)
