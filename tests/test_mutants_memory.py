"""Tests that kill the surviving mutants of ``laddu_dask/runtime/memory.py`` (docs/mutation-m2.md).

References are hand-computed cases: a machine whose memory sizes are given (a fake ``os.sysconf``,
a fake CuPy), sizes and messages worked out by hand.
"""

from __future__ import annotations

import sys
import types

import pytest

from laddu_dask.errors import BudgetError
from laddu_dask.runtime.memory import MemoryBudget, MemoryPlan, parse_bytes

GiB = 2**30
MiB = 2**20


@pytest.mark.parametrize(("spec", "expected"), [(0.0, 0), (0.5, 0), (1.0, 1), (2.75, 2)])
def test_float_sizes_below_one_byte_are_zero_bytes_not_an_error(spec, expected):
    assert parse_bytes(spec) == expected


@pytest.mark.parametrize("spec", [-0.5, float("inf"), float("nan")])
def test_negative_or_non_finite_float_sizes_are_refused(spec):
    with pytest.raises(BudgetError, match=rf"memory size must be a finite number >= 0, got {spec!r}"):
        parse_bytes(spec)


@pytest.fixture
def machine_without_psutil(monkeypatch):
    """A host whose memory is read with ``os.sysconf``: 4096-byte pages, 1000 of them, 250 free."""
    sizes = {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 1000, "SC_AVPHYS_PAGES": 250}
    monkeypatch.setitem(sys.modules, "psutil", None)  # `import psutil` raises ImportError
    monkeypatch.setattr("laddu_dask.runtime.memory.os.sysconf", lambda name: sizes[name])


def test_without_psutil_a_share_of_the_total_is_read_from_sysconf(machine_without_psutil):
    assert MemoryPlan(host="50%").host_bytes() == 2_048_000  # 1000 pages of 4096 bytes, halved


def test_without_psutil_a_share_of_the_available_is_read_from_sysconf(machine_without_psutil):
    assert MemoryPlan(host="40% available").host_bytes() == 409_600  # 250 pages of 4096 bytes, 40 %


@pytest.fixture
def gpu(monkeypatch):
    """A CuPy whose current device has 1000 bytes, 250 of them free."""
    runtime = types.SimpleNamespace(memGetInfo=lambda: (250, 1000))  # CUDA's order: (free, total)
    cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime))
    monkeypatch.setitem(sys.modules, "cupy", cupy)


@pytest.mark.parametrize(("spec", "expected"), [("50%", 500), ("50% available", 125), ("1 KiB", 1024),
                                                (None, None)])
def test_a_device_budget_is_resolved_against_cupys_memory_sizes(gpu, spec, expected):
    assert MemoryPlan(device=spec).device_bytes() == expected


def test_a_device_share_with_only_one_size_given_asks_cupy_for_both(gpu):
    assert MemoryPlan(device="50% available").device_bytes(total=4000) == 125
    assert MemoryPlan(device="50%").device_bytes(available=4000) == 500


def test_a_device_share_without_cupy_says_to_give_bytes(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(BudgetError, match=r"^a device memory budget given as a percentage needs CuPy to "
                                          r"read the GPU's memory size, and CuPy is not installed; give "
                                          r"the budget in bytes instead$") as err:
        MemoryPlan(device="70%").device_bytes()
    assert isinstance(err.value.__cause__, ImportError)


def test_equal_budgets_and_plans_hash_equal_and_act_as_one_key():
    assert hash(MemoryBudget("1 KiB")) == hash(MemoryBudget(1024))
    assert len({MemoryBudget("1 KiB"), MemoryBudget(1024), MemoryBudget("2 KiB")}) == 2
    assert len({MemoryBudget("50%"), MemoryBudget("50% total"), MemoryBudget("50% available")}) == 2
    plans = {MemoryPlan(host="2 GiB", device="50%"): "a",
             MemoryPlan(host=2 * GiB, device="50 % of total"): "b"}
    assert plans == {MemoryPlan(host="2 GiB", device="50%"): "b"}
