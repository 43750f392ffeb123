"""laddu 0.28.1's ``Likelihood.nll``, ``value(parameters=...)``,
``value_and_gradient(parameters=...)`` and ``fit_stochastic`` (issue 24, points 2 and 4),
against laddu itself on the likelihood of ``tests/test_fit_laddu_api.py``."""

from __future__ import annotations

import numpy as np
import pytest
from laddu_reference import laddu, needs_laddu
from test_fit_laddu_api import _likelihood

import laddu_dask as ld

POINT = [0.3, 0.2]


@pytest.fixture(scope="module")
def pair():
    return _likelihood(ld), (_likelihood(laddu) if laddu is not None else None)


@needs_laddu
def test_value_nll_and_gradient_take_parameters_by_keyword_as_laddus(pair):
    ours, theirs = pair
    want = theirs.value(parameters=POINT)
    assert theirs.nll(parameters=POINT) == want
    for got in (ours.value(parameters=POINT), ours.nll(parameters=POINT), ours.value(POINT), ours.nll(POINT),
                ours.value(parameters={"c1": 0.3, "c2": 0.2})):
        assert got == pytest.approx(want, rel=1e-12)
    v, g = ours.value_and_gradient(parameters=POINT)
    vl, gl = theirs.value_and_gradient(parameters=POINT)
    assert v == pytest.approx(vl, rel=1e-12)
    np.testing.assert_allclose(g, np.asarray(gl), rtol=1e-10)
    np.testing.assert_array_equal(ours.gradient(parameters=POINT), g)
