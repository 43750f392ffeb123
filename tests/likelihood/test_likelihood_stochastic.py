"""laddu 0.28.1's ``Likelihood.nll``, ``value(parameters=...)``,
``value_and_gradient(parameters=...)`` and ``fit_stochastic`` (issue 24, points 2 and 4),
against laddu itself on the likelihood of ``tests/likelihood/test_fit_laddu_api.py``."""

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


def _steps(lib, lik, fraction, seed, n, alpha=1e-3, x0=POINT):
    return lik.fit_stochastic(x0, config=lib.ganesh.AdamConfig(alpha=alpha), fraction=fraction, seed=seed,
                              terminators=[lib.ganesh.MaxSteps(n)], use_parameter_metadata=False,
                              default_callbacks=False)


@needs_laddu
def test_fit_stochastic_on_every_event_is_laddus_adam(pair):
    """``fraction=1``: every batch is the whole data, so the run is laddu's step by step."""
    ours, theirs = pair
    s, sl = _steps(ld, ours, 1.0, 4, 5), _steps(laddu, theirs, 1.0, 4, 5)
    np.testing.assert_allclose(s.x, np.asarray(sl.x), rtol=1e-10)
    assert s.fx == pytest.approx(sl.fx, rel=1e-12)
    assert type(s) is ld.ganesh.MinimizationSummary and s.evals.f == sl.evals.f == 6
    assert str(s.message) == str(sl.message) == "Message: Maximum number of steps reached (5)"
    named = ours.fit_stochastic(fraction=1.0, terminators=[ld.ganesh.MaxSteps(1)])
    assert named.parameter_names == list(theirs.fit_stochastic(
        fraction=1.0, terminators=[laddu.ganesh.MaxSteps(1)]).parameter_names) == ["c1", "c2"]


@needs_laddu
def test_stochastic_values_are_distributed_as_laddus(pair):
    """One step of a vanishing learning rate: ``fx`` is the stochastic value at the start on
    one batch. Over 30 seeds both libraries' values scatter around the exact likelihood
    with the spread of per-event Bernoulli batches, ``4 (1 - f) / f sum (ln I)^2``."""
    ours, theirs = pair
    f = 0.3
    mine = np.array([_steps(ld, ours, f, seed, 1, alpha=1e-12).fx for seed in range(30)])
    want = np.array([_steps(laddu, theirs, f, seed, 1, alpha=1e-12).fx for seed in range(30)])
    exact = theirs.value(POINT)
    data, _ = __import__("test_fit_laddu_api")._columns()
    x = data["x"]
    log_i = np.log((1.0 + 0.3 * x + 0.2 * x * x) ** 2 + 0.05)
    sigma = np.sqrt(4 * (1 - f) / f * np.sum(log_i**2))
    for values in (mine, want):
        assert abs(values.mean() - exact) < 4 * sigma / np.sqrt(len(values))
        assert 0.6 < values.std(ddof=1) / sigma < 1.5
    assert abs(mine.mean() - want.mean()) < 4 * sigma * np.sqrt(2 / len(mine))
    # equal seeds repeat the batches; another seed draws others
    again = _steps(ld, ours, f, 3, 1, alpha=1e-12).fx
    assert again == mine[3] and again != mine[4]


@needs_laddu
@pytest.mark.parametrize("fraction", [0.0, 1.5, -0.1])
def test_fraction_outside_zero_one_is_refused_as_by_laddu(pair, fraction):
    ours, theirs = pair
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\]"):
        theirs.fit_stochastic(fraction=fraction)
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\]"):
        ours.fit_stochastic(fraction=fraction)


def test_fit_stochastic_takes_only_an_adam_config(pair):
    with pytest.raises(TypeError, match="config must be a ganesh.AdamConfig"):
        pair[0].fit_stochastic(config=ld.ganesh.LBFGSBConfig())
