"""The other ways a local evaluation runs: single precision, and Dask's threaded scheduler.

References: the f64 pool evaluation (bitwise for ``scheduler="dask"``: the sums are exact, so
the scheduler cannot change a bit; to single-precision accuracy for ``precision="f32"``).
"""

from __future__ import annotations

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask import ksks
from laddu_dask.compile.compiled import CompiledModel


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
    assert f1.fval == f2.fval and np.array_equal(f1.values, f2.values) and f1.n_calls == f2.n_calls


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
    from tolerances import nll_f32_bound

    def bounds(at):
        return nll_f32_bound(CompiledModel.from_expr(ksks.model("bw")), columns["data"], columns["accmc"], at)

    bound, gbound = bounds(point)
    assert abs(v32 - v64) <= bound
    assert np.all(np.abs(g32 - g64) <= gbound)
    r64 = f64.fit(initial=point, method="migrad")  # f32's noise floor stops L-BFGS-B's line search
    r32 = f32.fit(initial=point, method="migrad")
    assert r64.valid and r32.valid
    # the same minimum, well within the statistical errors (measured: 0.003 sigma); HESSE's
    # finite differences of an f32 surface move the errors by up to 3.6% (measured)
    for name in f64.parameter_names:
        assert abs(r32.named_parameters[name] - r64.named_parameters[name]) < 0.02 * r64.errors[name], name
        assert r32.errors[name] == pytest.approx(r64.errors[name], rel=0.08)
    # |min f32 - min f64| <= the larger bound at the two minima, plus what MIGRAD leaves
    # above each minimum (its EDM)
    at = [bounds(r.values)[0] for r in (r32, r64)]
    assert abs(r32.fval - r64.fval) <= max(at) + r32.edm + r64.edm
