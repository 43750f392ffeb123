"""Whether the GPU tests can run here: one rule for every test module.

A GPU test is skipped, with the reason, only when CuPy is not installed or the CUDA
runtime reports that there is no device (or no driver). Any other failure of the CUDA
runtime is not a reason to skip: the tests then run and fail with the driver's error.
"""

from __future__ import annotations

import pytest

#: cudaErrorInsufficientDriver, cudaErrorNoDevice: the machine has no usable GPU.
_NO_DEVICE_STATUSES = (35, 100)


def gpu_skip_reason() -> str | None:
    """Why the GPU tests cannot run here, or ``None`` when they can."""
    try:
        import cupy
    except ImportError:
        return "CuPy not installed"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as err:
        if getattr(err, "status", None) in _NO_DEVICE_STATUSES:
            return f"no CUDA device ({err})"
        return None  # a broken driver is a failure to report, not a skip
    return None if count > 0 else "no CUDA device"


GPU_SKIP = gpu_skip_reason()
#: Marks a test that needs a CUDA device and CuPy.
needs_gpu = pytest.mark.skipif(GPU_SKIP is not None, reason=GPU_SKIP or "")
