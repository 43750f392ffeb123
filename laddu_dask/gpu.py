"""laddu's ``gpu`` module: the GPUs laddu-dask can evaluate on (``ld.gpu``).

laddu 0.28.1 lists the wgpu adapters of its graphics backend (Vulkan, Metal, DX12, GL; a
software renderer counts); laddu-dask evaluates on CUDA devices through CuPy, so
:func:`devices` lists those, with laddu's :class:`Device` properties, and is empty where
CuPy, a driver or a device is missing (see docs/differences.md, the differences with laddu).

Examples
--------
>>> import laddu_dask as ld
>>> ld.gpu.is_available() == bool(ld.gpu.devices()) == ld.capabilities()["gpu"]
True
"""

from laddu_dask.runtime.capabilities import GpuDevice as Device
from laddu_dask.runtime.capabilities import gpu_devices


def devices() -> list[Device]:
    """The CUDA devices laddu-dask can use, in ordinal order (``[]`` without a GPU).

    Returns
    -------
    list of Device
        One per device; ``Execution(device=d.index)`` evaluates on ``d``.
    """
    return gpu_devices()


def is_available() -> bool:
    """Whether at least one CUDA device is usable (``devices()`` is not empty)."""
    return bool(gpu_devices())


__all__ = ["Device", "devices", "is_available"]
