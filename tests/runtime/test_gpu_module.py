"""``ld.gpu``: laddu 0.28.1's GPU discovery, reporting the CUDA devices laddu-dask uses.

laddu lists wgpu adapters; laddu-dask lists CuPy's CUDA devices (the README's difference
table).  Without CuPy or a device the list is empty; the properties are checked on a
stand-in CuPy runtime here, and on a real device by the ``gpu`` test.
"""

from __future__ import annotations

import re
import sys
import types

import pytest
from gpu_reference import GPU_SKIP, needs_gpu
from laddu_reference import laddu, needs_laddu

import laddu_dask as ld
from laddu_dask.runtime import capabilities

PROPERTIES = ("index", "name", "vendor", "device", "device_type", "pci_bus_id", "driver", "driver_info",
              "backend", "supports_f64", "max_buffer_size", "max_storage_buffer_binding_size",
              "max_compute_workgroup_size_x")


def _fake_cupy(count=2, fail=False, hip=False):
    """A CuPy whose runtime reports ``count`` devices (an H100-like one, then an integrated one)."""
    props = [{"name": b"NVIDIA H100 80GB HBM3", "totalGlobalMem": 85_045_395_456,
              "maxThreadsDim": (1024, 1024, 64), "integrated": 0},
             {"name": "Orin", "totalGlobalMem": 32 * 2**30, "maxThreadsDim": (512, 1024, 64),
              "integrated": 1}]

    def device_count():
        if fail:
            raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
        return count

    runtime = types.SimpleNamespace(getDeviceCount=device_count, getDeviceProperties=lambda i: props[i],
                                    deviceGetPCIBusId=lambda i: ["0000:3B:00.0", "0000:00:02.0"][i],
                                    driverGetVersion=lambda: 12040, is_hip=hip)
    return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime))


@pytest.fixture
def two_devices(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    (tmp_path / "0000:3b:00.0").mkdir()  # sysfs knows the first device's PCI identifiers
    (tmp_path / "0000:3b:00.0" / "vendor").write_text("0x10de\n")
    (tmp_path / "0000:3b:00.0" / "device").write_text("0x2330\n")
    monkeypatch.setattr(capabilities, "_SYSFS_PCI", tmp_path)
    return ld.gpu.devices()


def test_devices_report_the_cuda_runtime(two_devices):
    first, second = two_devices
    assert [getattr(first, p) for p in PROPERTIES] == [
        0, "NVIDIA H100 80GB HBM3", 0x10DE, 0x2330, "DiscreteGpu", "0000:3B:00.0", "NVIDIA", "CUDA 12.4",
        "Cuda", True, 85_045_395_456, 85_045_395_456, 1024]
    assert [getattr(second, p) for p in PROPERTIES] == [
        1, "Orin", 0x10DE, 0, "IntegratedGpu", "0000:00:02.0", "NVIDIA", "CUDA 12.4", "Cuda", True,
        32 * 2**30, 32 * 2**30, 512]  # not in sysfs: NVIDIA's vendor identifier, device 0
    assert repr(first) == 'Device(index=0, name="NVIDIA H100 80GB HBM3", backend="Cuda")'
    assert ld.gpu.is_available() is True


@needs_laddu
def test_device_properties_and_repr_are_shaped_as_laddus(two_devices):
    """Each property is a property of laddu's type; the repr has laddu's form."""
    theirs = laddu.gpu.devices()  # laddu lists any wgpu adapter, a software renderer too
    for name in PROPERTIES:
        assert isinstance(getattr(ld.gpu.Device, name), property)
        if theirs:
            assert type(getattr(two_devices[0], name)) is type(getattr(theirs[0], name)), name
    form = r'Device\(index=\d+, name="[^"]*", backend="\w+"\)'
    assert all(re.fullmatch(form, repr(d)) for d in [*two_devices, *theirs])


def test_devices_cannot_be_created_directly():
    with pytest.raises(TypeError, match=r"cannot create 'gpu.Device' instances: ld.gpu.devices\(\) lists"):
        ld.gpu.Device()


@pytest.mark.parametrize("cupy", [None, _fake_cupy(fail=True), _fake_cupy(count=0)],
                         ids=["no CuPy", "no driver", "no device"])
def test_without_a_gpu_the_list_is_empty(monkeypatch, cupy):
    monkeypatch.setitem(sys.modules, "cupy", cupy)  # None: ``import cupy`` raises ImportError
    assert ld.gpu.devices() == [] and ld.gpu.is_available() is False


def test_hip_devices_name_their_backend(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(count=1, hip=True))
    monkeypatch.setattr(capabilities, "_SYSFS_PCI", tmp_path)
    (device,) = ld.gpu.devices()
    assert (device.backend, device.vendor, device.driver) == ("Hip", 0x1002, "AMD")
    assert device.driver_info == "HIP 12040"


def test_this_machine_agrees_with_capabilities():
    assert ld.gpu.is_available() is ld.capabilities()["gpu"] is (GPU_SKIP is None)
    assert len(ld.gpu.devices()) == (0 if GPU_SKIP else __import__("cupy").cuda.runtime.getDeviceCount())


@needs_gpu
def test_real_devices_are_cupys_and_execute():
    import cupy

    for device in ld.gpu.devices():
        props = cupy.cuda.runtime.getDeviceProperties(device.index)
        assert device.name == props["name"].decode() and device.max_buffer_size == props["totalGlobalMem"]
        assert device.vendor == 0x10DE and device.supports_f64
        assert ld.Execution(device=device.index).device == "gpu"
