"""The GPU runtime: Execution(device="gpu") end to end against the CPU.

Without CuPy or a CUDA device these tests skip with the reason (the generated CUDA
source is still compiled by nvcc in tests/compile/test_cuda.py); on a GPU machine they compare
GPU f64 with CPU f64 to 1e-12 and GPU f32 within the float32 error bound of the NLL
(tests/tolerances.py, with CUDA's single-precision maths at up to 4 ulp per operation), for
resident and streamed datasets.
"""

from __future__ import annotations

import numpy as np
import pytest
from gpu_reference import GPU_SKIP

import laddu_dask as ld
from laddu_dask import ksks

REASON = GPU_SKIP


def test_gpu_request_without_a_gpu_is_a_clear_error():
    if REASON is None:
        pytest.skip("this machine has a GPU")
    with pytest.raises(ValueError, match="device='gpu'"):
        ld.Execution(device="gpu")
    assert ld.Execution(device="auto").device == "cpu"


def test_bad_gpu_index_and_device_are_rejected():
    with pytest.raises(ValueError, match="device must be one of 'cpu', 'gpu', 'auto'"):
        ld.Execution(device="tpu")
    if REASON is None:
        with pytest.raises(ValueError, match="GPU index 99 does not exist"):
            ld.Execution(device="gpu", gpu=99)


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
# f64: both sides sum exactly; per-event values differ only by the rounding of the CUDA and
# NumPy math libraries (laddu and the CPU kernels agree to 2e-12 per event, 1e-15 summed).
# f32: the derived bound of tests/tolerances.py (rtol unused)
@pytest.mark.parametrize("precision, rtol", [("f64", 1e-12), ("f32", None)])
@pytest.mark.parametrize("policy", ["resident", "streaming"])
def test_gpu_likelihood_matches_cpu(tmp_path, precision, rtol, policy):
    paths = ksks.write_sample(tmp_path, n_data=5000, n_mc=50000, seed=3)
    point = np.array([ksks.TRUTH[n] for n in ksks.TRUTH]) * 1.01

    def likelihood(ex):
        data = ld.read_parquet(paths["data"], memory_policy=policy)
        mc = ld.read_parquet(paths["accmc"], memory_policy=policy)
        return ld.Likelihood([ld.NLL(ksks.model(), data=data, accepted_mc=mc)], execution=ex)

    v_cpu, g_cpu = likelihood(ld.Execution()).value_and_gradient(point)
    ex = ld.Execution(device="gpu", precision=precision)
    v_gpu, g_gpu = likelihood(ex).value_and_gradient(point)
    if precision == "f64":
        assert v_gpu == pytest.approx(v_cpu, rel=rtol)
        assert np.max(np.abs(g_gpu - g_cpu)) <= rtol * np.max(np.abs(g_cpu)) * 10
    else:
        assert v_gpu != v_cpu  # f32 really ran
        bound, gbound = _f32_bounds(paths, point)
        assert abs(v_gpu - v_cpu) <= bound
        assert np.all(np.abs(g_gpu - g_cpu) <= gbound)
    resources = [d.resource for d in ex.memory_decisions()]
    assert resources == ["host", "device", "host", "device"]
    assert [d.strategy for d in ex.memory_decisions()][1] == policy


#: CUDA's single-precision functions are within 4 ulp of the exact result (CUDA C++
#: Programming Guide, "Mathematical Functions": expf, logf, sinf, cosf, atan2f, powf at most
#: 4 ulp; +, -, *, / and sqrtf correctly rounded), so each operation's relative error is at
#: most 4 u instead of the u of bound (1): the bound scales linearly in it.
CUDA_F32_ULPS = 4


def _f32_bounds(paths, point):
    """The float32 error bound of the NLL and its gradient at ``point`` on the device."""
    from conftest import read_p4s
    from tolerances import nll_f32_bound

    from laddu_dask.compile.compiled import CompiledModel

    sides = []
    for key in ("data", "accmc"):
        p4s, w = read_p4s(paths[key])
        sides.append(({f"{k}_{c}": v[:, j] for k, v in p4s.items()
                       for j, c in enumerate(("e", "px", "py", "pz"))}, w))
    bound, gbound = nll_f32_bound(CompiledModel.from_expr(ksks.model()), *sides, point)
    return CUDA_F32_ULPS * bound, CUDA_F32_ULPS * gbound


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_resident_request_beyond_the_device_budget_names_the_resource(tmp_path):
    paths = ksks.write_sample(tmp_path, n_data=100, n_mc=20000, seed=3)
    ex = ld.Execution(device="gpu", memory=ld.MemoryPlan(device=1000))
    mc = ld.read_parquet(paths["accmc"], memory_policy="resident")
    pm = ld.PreparedModel.prepare(ld.CompiledModel.from_expr(ksks.model()), ex)
    with pytest.raises(ld.BudgetError, match="device"):
        pm.prepare_dataset(ex, mc, name="mc")
