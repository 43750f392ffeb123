"""Whether the GPU tests can run here: one rule for every test module.

A GPU test is skipped, with the reason, only when CuPy is not installed or the CUDA
runtime reports that there is no device (or no driver). Any other failure of the CUDA
runtime is not a reason to skip: the tests then run and fail with the driver's error.
These are the only tests a clean clone skips (the README: on a machine with a CUDA
device, ``pip install -e ".[gpu]"`` and ``python3 -m pytest -q -m gpu``).
"""

from __future__ import annotations

import pytest

#: How to run the GPU tests (in every skip reason).
_HOW = 'on a CUDA machine: pip install -e ".[gpu]"; python3 -m pytest -q -m gpu'
#: cudaErrorInsufficientDriver, cudaErrorNoDevice: the machine has no usable GPU.
_NO_DEVICE_STATUSES = (35, 100)


def gpu_skip_reason() -> str | None:
    """Why the GPU tests cannot run here, or ``None`` when they can."""
    try:
        import cupy
    except ImportError:
        return f"GPU-only test: CuPy not installed ({_HOW})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as err:
        if getattr(err, "status", None) in _NO_DEVICE_STATUSES:
            return f"GPU-only test: no CUDA device ({err}; {_HOW})"
        return None  # a broken driver is a failure to report, not a skip
    return None if count > 0 else f"GPU-only test: no CUDA device ({_HOW})"


GPU_SKIP = gpu_skip_reason()
_SKIP_WITHOUT_GPU = pytest.mark.skipif(GPU_SKIP is not None, reason=GPU_SKIP or "")


def needs_gpu(test):
    """Mark ``test`` as a GPU test (``-m gpu``) that needs a CUDA device and CuPy."""
    return pytest.mark.gpu(_SKIP_WITHOUT_GPU(test))
