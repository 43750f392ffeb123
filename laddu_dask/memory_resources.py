"""What memory this machine has: the host's (from psutil) and each CUDA device's (from CuPy).

laddu 0.28.1's :class:`MemoryResource` (one physical memory: its name, total and
available bytes and where those figures came from) and :class:`MemoryState` (the host
and the devices, re-read by :meth:`~MemoryState.refresh`, a device's capacity
overridable by the user). Host figures come from :func:`psutil.virtual_memory` (psutil
comes with ``distributed``); devices are the CUDA devices CuPy sees, with
``cudaMemGetInfo``'s figures; without CuPy (or a GPU) there are none. A process-wide
state, :meth:`MemoryState.current`, keeps the overrides a script makes.

Examples
--------
>>> from laddu_dask.memory_resources import MemoryState
>>> state = MemoryState()
>>> state.host.id, state.host.name, state.host.capacity_source
('host', 'Host memory', 'operating_system')
>>> state.host.total_bytes >= state.host.available_bytes > 0
True
>>> state.override_device_capacity("gpu-test", 2**30, available_bytes=2**29)
>>> [(d.id, d.total_bytes, d.capacity_source) for d in state.devices if d.id == "gpu-test"]
[('gpu-test', 1073741824, 'user')]
"""

from __future__ import annotations

import json as json_module
import os
import sys
import threading
from dataclasses import asdict, dataclass, replace
from typing import Any

from laddu_dask.budgets import MemoryBudget
from laddu_dask.errors import BudgetError
from laddu_dask.validate import integer

__all__ = ["MemoryResource", "MemoryState", "device_memory", "host_memory", "process_memory"]

#: PCI vendor of the devices the CUDA runtime drives (NVIDIA), and of ROCm's (AMD) under CuPy-HIP
_NVIDIA, _AMD = 0x10DE, 0x1002


def host_memory() -> tuple[int, int]:
    """``(total, available)`` bytes of host memory, from psutil (or ``sysconf`` without it)."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil comes with distributed
        page = os.sysconf("SC_PAGE_SIZE")
        return os.sysconf("SC_PHYS_PAGES") * page, os.sysconf("SC_AVPHYS_PAGES") * page
    memory = psutil.virtual_memory()
    return int(memory.total), int(memory.available)


def device_memory(index: int | None = None) -> tuple[int, int]:
    """``(total, available)`` bytes of CUDA device ``index`` (``None``: the current one), from
    ``cudaMemGetInfo`` (needs CuPy).

    Raises
    ------
    BudgetError
        When CuPy is not installed (the figures cannot be read).
    """
    try:
        import cupy
    except ImportError as err:
        raise BudgetError(
            "a device memory budget given as a percentage needs CuPy to read the GPU's "
            "memory size, and CuPy is not installed; give the budget in bytes instead"
        ) from err
    if index is None:
        free, total = cupy.cuda.runtime.memGetInfo()
    else:
        with cupy.cuda.Device(index):
            free, total = cupy.cuda.runtime.memGetInfo()
    return int(total), int(free)


def process_memory() -> dict[str, int | None]:
    """This process's memory: ``resident_bytes`` and ``virtual_bytes`` now (psutil), and
    ``sampled_high_water_bytes``, the peak resident size the kernel recorded (``getrusage``;
    ``None`` where the platform has none).

    Examples
    --------
    >>> p = process_memory()
    >>> sorted(p), p["sampled_high_water_bytes"] >= p["resident_bytes"] > 0
    (['resident_bytes', 'sampled_high_water_bytes', 'virtual_bytes'], True)
    """
    import psutil

    info = psutil.Process().memory_info()
    peak: int | None
    try:
        import resource

        # ru_maxrss is in KiB on Linux, in bytes on macOS
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
        peak = max(peak, int(info.rss))  # a sample taken between the two reads
    except ImportError:  # pragma: no cover - Windows
        peak = getattr(info, "peak_wset", None)
    return {"resident_bytes": int(info.rss), "virtual_bytes": int(info.vms), "sampled_high_water_bytes": peak}


@dataclass(frozen=True)
class MemoryResource:
    """One physical memory: the host's, or one device's (laddu's ``MemoryResource``).

    Attributes
    ----------
    id : str
        ``"host"``, ``"cuda:<index>"`` for a CUDA device, or the id an override gave.
    name : str
        ``"Host memory"``, the device's name, or the override's.
    kind : {"host", "device"}
        Which memory.
    total_bytes, available_bytes : int or None
        Capacity and what is free, when known.
    capacity_source : str
        Where the figures come from: ``"operating_system"`` (psutil), ``"cuda"`` (the CUDA
        runtime, through CuPy) or ``"user"`` (:meth:`MemoryState.override_device_capacity`).
    adapter_index, vendor_id, device_id, pci_bus_id : int, int, int, str or None
        A device's CuPy index, PCI vendor, PCI device id (not known to the CUDA runtime:
        ``None``) and PCI bus id; ``None`` for the host and for overrides.

    Examples
    --------
    >>> r = MemoryResource("host", "Host memory", "host", 1000, 400, "operating_system")
    >>> r
    MemoryResource(name="Host memory", total_bytes=1000, available_bytes=400, source=operating_system)
    >>> MemoryResource.from_json(r.to_json()) == r
    True
    >>> r.budget("50% available").resolve(r.total_bytes, r.available_bytes)
    200
    """

    id: str
    name: str
    kind: str
    total_bytes: int | None
    available_bytes: int | None
    capacity_source: str
    adapter_index: int | None = None
    vendor_id: int | None = None
    device_id: int | None = None
    pci_bus_id: str | None = None

    def budget(self, value: MemoryBudget | int | str) -> MemoryBudget:
        """``value`` as a :class:`~laddu_dask.budgets.MemoryBudget` for this resource
        (resolve it with ``budget.resolve(total_bytes, available_bytes)``)."""
        return MemoryBudget(value)

    def to_json(self) -> str:
        """laddu's JSON form: ``id``, ``name``, ``kind``, ``total_bytes``, ``available_bytes``,
        ``capacity_source`` and ``device_identity`` (``null``, or the adapter index, PCI vendor,
        device and bus ids, ``0``/``""`` where unknown, as laddu writes them)."""
        identity = None
        if self.adapter_index is not None:
            identity = {"adapter_index": self.adapter_index, "vendor_id": self.vendor_id or 0,
                        "device_id": self.device_id or 0, "pci_bus_id": self.pci_bus_id or ""}
        data = {k: v for k, v in asdict(self).items() if k in
                ("id", "name", "kind", "total_bytes", "available_bytes", "capacity_source")}
        return json_module.dumps({**data, "device_identity": identity})

    @staticmethod
    def from_json(json: str) -> MemoryResource:
        """The resource :meth:`to_json` (or laddu's) wrote.

        Raises
        ------
        ValueError
            For text that is not JSON of a resource (naming the missing field).
        """
        try:
            data = json_module.loads(json)
        except (TypeError, ValueError):
            raise ValueError(f"MemoryResource.from_json needs JSON, got {json!r}") from None
        if not isinstance(data, dict):
            raise ValueError(f"MemoryResource.from_json needs a JSON object, got {json!r}")
        for key in ("id", "name", "kind", "capacity_source"):
            if not isinstance(data.get(key), str):
                raise ValueError(f"MemoryResource.from_json: missing field {key!r} (a string) in {json!r}")
        identity = data.get("device_identity") or {}
        return MemoryResource(
            data["id"], data["name"], data["kind"], data.get("total_bytes"), data.get("available_bytes"),
            data["capacity_source"], identity.get("adapter_index"), identity.get("vendor_id") or None,
            identity.get("device_id") or None, identity.get("pci_bus_id") or None)

    def __repr__(self) -> str:
        return (f'MemoryResource(name="{self.name}", total_bytes={self.total_bytes}, '
                f"available_bytes={self.available_bytes}, source={self.capacity_source})")


def _host() -> MemoryResource:
    total, available = host_memory()
    return MemoryResource("host", "Host memory", "host", total, available, "operating_system")


def _cuda_devices() -> list[MemoryResource]:
    """The CUDA devices CuPy sees (none without CuPy or a driver)."""
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: no devices
        return []
    runtime = cupy.cuda.runtime
    vendor = _AMD if getattr(runtime, "is_hip", False) else _NVIDIA
    out = []
    for i in range(count):
        total, available = device_memory(i)
        name = runtime.getDeviceProperties(i)["name"]
        out.append(MemoryResource(
            f"cuda:{i}", name.decode() if isinstance(name, bytes) else str(name), "device", total, available,
            "cuda", adapter_index=i, vendor_id=vendor, pci_bus_id=str(runtime.deviceGetPCIBusId(i))))
    return out


class MemoryState:
    """The host's and the devices' memory, as discovered now (laddu's ``MemoryState``).

    ``MemoryState()`` discovers afresh; :meth:`current` is the process-wide state (the
    overrides a script makes there are kept). Figures are read at construction and by
    :meth:`refresh`; a user's override of a device survives a refresh.

    Examples
    --------
    >>> state = MemoryState()
    >>> state.host.kind, all(d.kind == "device" for d in state.devices)
    ('host', True)
    >>> sorted(state.report())
    ['process', 'resources']
    """

    _current: MemoryState | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self._overrides: dict[str, MemoryResource] = {}
        self.refresh()

    @staticmethod
    def current() -> MemoryState:
        """The process-wide state (created at the first call)."""
        with MemoryState._lock:
            if MemoryState._current is None:
                MemoryState._current = MemoryState()
            return MemoryState._current

    def refresh(self) -> None:
        """Read the host's and the devices' figures again (overrides are kept)."""
        self._host = _host()
        self._discovered = _cuda_devices()

    @property
    def host(self) -> MemoryResource:
        """The host's memory."""
        return self._host

    @property
    def devices(self) -> list[MemoryResource]:
        """Each device: those CuPy sees (an override replaces one of the same id), then the
        overrides of other ids, in the order they were made."""
        seen = {d.id for d in self._discovered}
        return ([self._overrides.get(d.id, d) for d in self._discovered]
                + [r for i, r in self._overrides.items() if i not in seen])

    def override_device_capacity(self, id: str, total_bytes: int, *,  # noqa: A002 - laddu's keyword
                                 available_bytes: int | None = None, name: str | None = None) -> None:
        """Set device ``id``'s capacity by hand (``capacity_source`` ``"user"``); an id no
        device has adds one. ``available_bytes`` defaults to ``total_bytes`` and is at most it;
        ``name`` defaults to ``id`` (as in laddu, also when an earlier override named it).

        Raises
        ------
        ValueError
            ``id`` empty or ``"host"`` (the host is not a device), a byte count below zero.
        """
        if not isinstance(id, str) or not id or id == "host":
            raise ValueError(f"override_device_capacity: id must name a device (not 'host'), got {id!r}")
        total = integer(total_bytes, "total_bytes", minimum=0)
        available = total if available_bytes is None else integer(available_bytes, "available_bytes",
                                                                  minimum=0)
        found = next((d for d in self._discovered if d.id == id), None)
        base = found or MemoryResource(id, id, "device", None, None, "user")
        self._overrides[id] = replace(base, name=id if name is None else name, total_bytes=total,
                                      available_bytes=min(available, total), capacity_source="user")

    def resources(self) -> list[MemoryResource]:
        """The devices, then the host (laddu's order in :meth:`report`)."""
        return [*self.devices, self.host]

    def report(self) -> dict[str, Any]:
        """laddu's report: ``resources`` (per resource its ``id``, ``name``, ``total_bytes``,
        ``available_bytes``, ``capacity_source``, and ``reserved_bytes``/``high_water_bytes``,
        0 here: laddu-dask plans memory per :class:`Execution`, whose ``memory_report`` has
        them) and ``process`` (:func:`process_memory`)."""
        return {"resources": [resource_row(r, 0, 0) for r in self.resources()], "process": process_memory()}


def resource_row(resource: MemoryResource, reserved: int, high_water: int) -> dict[str, Any]:
    """One ``resources`` entry of a report (laddu's keys)."""
    return {"id": resource.id, "name": resource.name, "total_bytes": resource.total_bytes,
            "available_bytes": resource.available_bytes, "reserved_bytes": reserved,
            "high_water_bytes": high_water, "capacity_source": resource.capacity_source}
