"""What this installation of laddu-dask can do (laddu's ``backend()`` and ``capabilities()``).

Examples
--------
>>> import laddu_dask as ld
>>> ld.backend()
'dask'
>>> caps = ld.capabilities()
>>> caps["backend"], caps["likelihood"], caps["fit"], caps["generation"], caps["mpi"]
('dask', True, True, True, False)
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from laddu_dask.runtime.execution import _gpu_available


def backend() -> str:
    """The evaluation backend: ``"dask"`` (laddu says ``"local"`` or ``"mpi"``; here every
    evaluation is Dask work, embedded in the process or on a cluster)."""
    return "dask"


def capabilities() -> dict[str, bool | str]:
    """laddu's flags for this installation: ``backend``, ``jit`` (Numba kernels), ``gpu`` (CuPy
    with a CUDA device), ``mpi`` (never: clusters are Dask's), ``likelihood``, ``fit``,
    ``generation``; and laddu-dask's ``cluster`` (``distributed`` importable)."""
    return {
        "backend": backend(),
        "jit": importlib.util.find_spec("numba") is not None,
        "gpu": _gpu_available(),
        "mpi": False,
        "likelihood": True,
        "fit": True,
        "generation": True,
        "cluster": importlib.util.find_spec("distributed") is not None,
    }


# ---------------------------------------------------------------------------------------
# the GPUs (laddu's gpu.devices(); laddu's are wgpu adapters, ours CuPy's CUDA devices)
# ---------------------------------------------------------------------------------------
#: PCI vendor identifiers of NVIDIA and AMD (CuPy on CUDA or on ROCm/HIP)
_VENDORS = {"Cuda": 0x10DE, "Hip": 0x1002}
#: Linux's PCI devices, one folder per bus identifier with ``vendor`` and ``device`` files
_SYSFS_PCI = Path("/sys/bus/pci/devices")


class GpuDevice:
    """A CUDA device laddu-dask can evaluate on (laddu's ``gpu.Device``, ``ld.gpu.Device``).

    Returned by :func:`gpu_devices`; not created directly.  The properties are laddu's, read
    from the CUDA runtime through CuPy: ``index`` (the device ordinal, what
    ``Execution(device=index)`` takes), ``name``, ``vendor`` and ``device`` (PCI identifiers,
    ``device`` 0 where the system does not say), ``device_type`` (``"DiscreteGpu"`` or
    ``"IntegratedGpu"``), ``pci_bus_id``, ``driver`` and ``driver_info`` (the vendor and the
    CUDA driver version), ``backend`` (``"Cuda"``; laddu's are graphics APIs), ``supports_f64``
    (always: CUDA devices compute in double precision), ``max_buffer_size`` and
    ``max_storage_buffer_binding_size`` (the device memory: CUDA has no binding limit) and
    ``max_compute_workgroup_size_x`` (threads per block along x).
    """

    __slots__ = ("_info",)

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("cannot create 'gpu.Device' instances: ld.gpu.devices() lists them")

    @classmethod
    def _of(cls, info: dict[str, Any]) -> GpuDevice:
        out = object.__new__(cls)
        out._info = info
        return out

    def __repr__(self) -> str:
        i = self._info
        return f"Device(index={i['index']}, name={json.dumps(i['name'])}, backend={json.dumps(i['backend'])})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GpuDevice) and other._info == self._info

    __hash__ = None  # type: ignore[assignment]

    index = property(lambda self: self._info["index"], doc="int: the ordinal Execution(device=) takes.")
    name = property(lambda self: self._info["name"], doc="str: the device's name.")
    vendor = property(lambda self: self._info["vendor"], doc="int: PCI vendor identifier.")
    device = property(lambda self: self._info["device"], doc="int: PCI device identifier (0 if unknown).")
    device_type = property(lambda self: self._info["device_type"], doc="str: DiscreteGpu or IntegratedGpu.")
    pci_bus_id = property(lambda self: self._info["pci_bus_id"], doc="str: PCI bus identifier.")
    driver = property(lambda self: self._info["driver"], doc="str: the driver's vendor.")
    driver_info = property(lambda self: self._info["driver_info"], doc="str: the CUDA driver version.")
    backend = property(lambda self: self._info["backend"], doc="str: the compute API, Cuda (or Hip).")
    supports_f64 = property(lambda self: self._info["supports_f64"], doc="bool: double precision.")
    max_buffer_size = property(lambda self: self._info["max_buffer_size"], doc="int: device memory in bytes.")
    max_storage_buffer_binding_size = property(lambda self: self._info["max_buffer_size"],
                                               doc="int: device memory in bytes (no binding limit).")
    max_compute_workgroup_size_x = property(lambda self: self._info["max_compute_workgroup_size_x"],
                                            doc="int: threads per block along x.")


def _pci_id(bus_id: str, what: str) -> int | None:
    """The ``vendor`` or ``device`` identifier of a PCI device from Linux's sysfs, if readable."""
    try:
        return int((_SYSFS_PCI / bus_id.lower() / what).read_text().strip(), 16)
    except (OSError, ValueError):
        return None


def gpu_devices() -> list[GpuDevice]:
    """The CUDA devices CuPy sees, in ordinal order; ``[]`` without CuPy, a driver or a device.

    Examples
    --------
    >>> from laddu_dask.runtime.capabilities import gpu_devices
    >>> all(d.supports_f64 for d in gpu_devices())
    True
    """
    try:
        import cupy

        runtime = cupy.cuda.runtime
        count = runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - any import or driver failure means no GPU, as _gpu_available
        return []
    backend = "Hip" if getattr(runtime, "is_hip", False) else "Cuda"
    version = runtime.driverGetVersion()  # CUDA: 1000 major + 10 minor
    driver_info = f"CUDA {version // 1000}.{version % 1000 // 10}" if backend == "Cuda" else f"HIP {version}"
    out = []
    for index in range(count):
        props = runtime.getDeviceProperties(index)
        name = props["name"]
        bus_id = runtime.deviceGetPCIBusId(index)
        out.append(GpuDevice._of({
            "index": index,
            "name": name.decode() if isinstance(name, bytes) else str(name),
            "vendor": _pci_id(bus_id, "vendor") or _VENDORS[backend],
            "device": _pci_id(bus_id, "device") or 0,
            "device_type": "IntegratedGpu" if props.get("integrated") else "DiscreteGpu",
            "pci_bus_id": bus_id,
            "driver": "NVIDIA" if backend == "Cuda" else "AMD",
            "driver_info": driver_info,
            "backend": backend,
            "supports_f64": True,
            "max_buffer_size": int(props["totalGlobalMem"]),
            "max_compute_workgroup_size_x": int(props["maxThreadsDim"][0]),
        }))
    return out
