"""The other ways a local evaluation runs: single precision, and Dask's threaded scheduler.

References: the f64 pool evaluation (bitwise for ``scheduler="dask"``: the sums are exact, so
the scheduler cannot change a bit; to single-precision accuracy for ``precision="f32"``).
"""

from __future__ import annotations

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask import ksks


@pytest.fixture(scope="module")
def columns(ksks_sample):
    """``{"data": (columns, weights), "accmc": (columns, weights)}`` of the samples."""
    from conftest import read_p4s

    out = {}
    for key in ("data", "accmc"):
        p4s, w = read_p4s(ksks_sample[key])
        out[key] = ({f"{k}_{c}": v[:, j] for k, v in p4s.items()
                     for j, c in enumerate(("e", "px", "py", "pz"))}, w)
    return out


def _nll_f32_bound(columns, point) -> tuple[float, np.ndarray]:
    """The float32 error bound of ``NLL = -2 (S_d - N_w ln S_m)`` and its gradient at
    ``point``: the bounds B of the exact sums ``S_d = sum_data w ln I`` and
    ``S_m = sum_accmc w I`` (tests/tolerances.py) propagated to first order, plus the float64
    roundings of the combination (fewer than 8 operations, each within u64 of its result,
    itself below ``2 (|S_d| + |N_w ln S_m|)``)."""
    from tolerances import U64, condition, f32_bound

    cm = ld.CompiledModel.from_expr(ksks.model("bw"))
    params = cm.parameter_vector(point)
    sums, bounds = {}, {}
    for key in ("data", "accmc"):
        cols, w = columns[key]
        kappa = condition(cm, cols, params)
        value, jac = cm.values_and_jacobian(cm.event_cache({c: cols[c] for c in cm.columns}), params)
        f, g = value.real, jac.real
        if key == "data":  # terms w ln I, w I'/I: sensitivities w, w I'/I
            sums[key] = (np.sum(w * np.log(f)), (w[:, None] * g / f[:, None]).sum(axis=0))
            bounds[key] = (f32_bound(w, kappa), f32_bound(w[:, None] * g / f[:, None], kappa))
        else:  # terms w I, w I': sensitivities w I, w I'
            sums[key] = (np.sum(w * f), (w[:, None] * g).sum(axis=0))
            bounds[key] = (f32_bound(w * f, kappa), f32_bound(w[:, None] * g, kappa))
    n_w = float(np.sum(columns["data"][1]))
    (s_d, g_d), (s_m, g_m) = sums["data"], sums["accmc"]
    (b_d, bg_d), (b_m, bg_m) = bounds["data"], bounds["accmc"]
    value = 2 * (b_d + n_w * b_m / s_m) + 8 * U64 * 2 * (abs(s_d) + abs(n_w * np.log(s_m)))
    grad = (2 * (bg_d + n_w * (bg_m + np.abs(g_m) * b_m / s_m) / s_m)
            + 8 * U64 * 2 * (np.abs(g_d) + np.abs(n_w * g_m / s_m)))
    return value, grad


@pytest.fixture(scope="module")
def samples(ksks_sample):
    return (ld.read_parquet(ksks_sample["data"], chunk_size=700),
            ld.read_parquet(ksks_sample["accmc"], chunk_size=900))


def _likelihood(samples, **execution):
    data, mc = samples
    return ld.Likelihood([ld.NLL(ksks.model("bw"), data=data, accepted_mc=mc)],
                         execution=ld.Execution(**execution))


@pytest.mark.parametrize("kernel", ["fused", "numpy"])
def test_dask_scheduler_equals_the_pool_bitwise(samples, kernel):
    pool = _likelihood(samples, kernel=kernel)
    threaded = _likelihood(samples, kernel=kernel, scheduler="dask")
    start = ksks.displaced_start()
    for point in (dict(ksks.TRUTH), start):
        v1, g1 = pool.value_and_gradient(point)
        v2, g2 = threaded.value_and_gradient(point)
        assert v1 == v2 and threaded.value(point) == v1
        np.testing.assert_array_equal(g1, g2)
    f1 = pool.fit(initial=start)
    f2 = threaded.fit(initial=start)
    assert f1.fval == f2.fval and f1.values == f2.values and f1.n_calls == f2.n_calls


@pytest.mark.parametrize("kernel", ["fused", "numpy"])
def test_f32_likelihood_and_fit_agree_with_f64(samples, columns, kernel):
    f64 = _likelihood(samples, kernel=kernel)
    f32 = _likelihood(samples, kernel=kernel, precision="f32")
    point = ksks.displaced_start()
    v64, g64 = f64.value_and_gradient(point)
    v32, g32 = f32.value_and_gradient(point)
    assert isinstance(v32, float) and g32.dtype == np.float64
    assert v32 != v64  # f32 really ran
    # within the float32 error bound of the per-event values, summed exactly and propagated
    # through the NLL (tests/tolerances.py)
    bound, gbound = _nll_f32_bound(columns, point)
    assert abs(v32 - v64) <= bound
    assert np.all(np.abs(g32 - g64) <= gbound)
    r64 = f64.fit(initial=point)
    r32 = f32.fit(initial=point)
    assert r64.valid and r32.valid
    # the same minimum, well within the statistical errors (measured: 0.003 sigma); HESSE's
    # finite differences of an f32 surface move the errors by up to 3.6% (measured)
    for name in f64.parameter_names:
        assert abs(r32.values[name] - r64.values[name]) < 0.02 * r64.errors[name], name
        assert r32.errors[name] == pytest.approx(r64.errors[name], rel=0.08)
    # |min f32 - min f64| <= the larger bound at the two minima, plus what MIGRAD leaves
    # above each minimum (its EDM)
    at = [_nll_f32_bound(columns, r.values)[0] for r in (r32, r64)]
    assert abs(r32.fval - r64.fval) <= max(at) + r32.edm + r64.edm
