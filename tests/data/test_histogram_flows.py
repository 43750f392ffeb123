"""``Histogram.underflow`` and ``overflow``: read-only properties as laddu 0.28.1's, through
fill, merge and normalisation."""

from __future__ import annotations

import pytest
from laddu_reference import laddu, needs_laddu

import laddu_dask as ld


def _steps(lib):
    h = lib.Histogram([1.0, 2.0], bin_edges=[0.0, 1.0, 2.0], underflow=0.5, overflow=0.25)
    h.fill(-3.0, weight=2.0)
    h.fill(2.0, weight=1.5)  # the last edge is overflow
    h.merge(lib.Histogram([0.0, 1.0], bin_edges=[0.0, 1.0, 2.0], underflow=4.0))
    return h, h.normalized(), h.normalized(include_flow=True)


@needs_laddu
def test_flows_are_laddus_read_only_properties():
    for got, want in zip(_steps(ld), _steps(laddu), strict=True):
        assert (got.underflow, got.overflow) == pytest.approx((want.underflow, want.overflow), rel=1e-15)
    h = _steps(ld)[0]
    assert (h.underflow, h.overflow) == (6.5, 1.75)
    for name in ("underflow", "overflow"):
        with pytest.raises(AttributeError):
            setattr(h, name, 1.0)
        with pytest.raises(AttributeError):
            setattr(_steps(laddu)[0], name, 1.0)
