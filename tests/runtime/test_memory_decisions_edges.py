"""Tests that kill the surviving mutants of ``laddu_dask/runtime/memory.py`` (docs/mutation.md).

References are hand-computed cases: a machine whose memory sizes are given (a fake ``os.sysconf``,
a fake CuPy), sizes and messages worked out by hand.
"""

from __future__ import annotations

import dataclasses
import sys
import types

import pytest

from laddu_dask.errors import BudgetError
from laddu_dask.runtime.memory import MemoryBudget, MemoryPlan, decide_storage, format_bytes, parse_bytes

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
    monkeypatch.setattr("laddu_dask.memory_resources.os.sysconf", lambda name: sizes[name])


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


# -- decide_storage: every field and every sentence, at the boundaries -------------------
def _fields(**kwargs) -> dict:
    return dataclasses.asdict(decide_storage(**{"dataset": "d", **kwargs}))


def test_no_budget_keeps_resident_or_streams_as_requested():
    assert _fields(policy="fastest", resident_bytes=3 * GiB, partition_bytes=300, chunk_size=10,
                   partitions=5, budget_bytes=None, workers=2, resource="device") == {
        "dataset": "d", "resource": "device", "strategy": "resident", "requested_policy": "fastest",
        "chunk_size": 10, "partitions": 5, "estimated_bytes": 3 * GiB, "peak_bytes": 3 * GiB,
        "budget_bytes": None,
        "reason": "resident: no device memory budget is set, so the prepared data "
                  "(3.00 GiB (3221225472 bytes)) stay in memory"}
    assert _fields(policy="streaming", resident_bytes=3 * GiB, partition_bytes=300, chunk_size=10,
                   partitions=5, budget_bytes=None, workers=2) == {
        "dataset": "d", "resource": "host", "strategy": "streaming", "requested_policy": "streaming",
        "chunk_size": 10, "partitions": 5, "estimated_bytes": 3 * GiB, "peak_bytes": 600,
        "budget_bytes": None,
        "reason": "streaming: no host memory budget is set, so chunks of 10 events are streamed as requested"}


@pytest.mark.parametrize("policy", ["resident", "fastest"])
def test_resident_data_exactly_filling_the_budget_stay_resident(policy):
    assert _fields(policy=policy, resident_bytes=1000, partition_bytes=300, chunk_size=10, partitions=5,
                   budget_bytes=1000, workers=2) == {
        "dataset": "d", "resource": "host", "strategy": "resident", "requested_policy": policy,
        "chunk_size": 10, "partitions": 5, "estimated_bytes": 1000, "peak_bytes": 1000,
        "budget_bytes": 1000, "reason": "resident: the prepared data (1000 bytes) fit in the host budget "
                                        "of 1000 bytes"}


def test_streamed_chunks_exactly_filling_the_budget_stream():
    assert _fields(policy="streaming", resident_bytes=100, partition_bytes=300, chunk_size=10,
                   partitions=5, budget_bytes=600, workers=2) == {
        "dataset": "d", "resource": "host", "strategy": "streaming", "requested_policy": "streaming",
        "chunk_size": 10, "partitions": 5, "estimated_bytes": 100, "peak_bytes": 600,
        "budget_bytes": 600, "reason": "streaming as requested: 2 chunk(s) of 10 events at once need "
                                       "600 bytes, within the host budget of 600 bytes"}
    assert _fields(policy="fastest", resident_bytes=601, partition_bytes=300, chunk_size=10,
                   partitions=5, budget_bytes=600, workers=2, resource="device") == {
        "dataset": "d", "resource": "device", "strategy": "streaming", "requested_policy": "fastest",
        "chunk_size": 10, "partitions": 5, "estimated_bytes": 601, "peak_bytes": 600,
        "budget_bytes": 600, "reason": "streaming: resident storage would need 601 bytes, more than the "
                                       "device budget of 600 bytes; 2 chunk(s) of 10 events at once need "
                                       "600 bytes"}


def test_resident_one_byte_over_the_budget_is_refused_with_the_numbers():
    with pytest.raises(BudgetError, match=r"^dataset 'd' needs 601 bytes of device memory to stay resident, "
                                          r"but the device budget of 600 bytes is smaller; raise the budget "
                                          r"or use memory_policy='streaming'$"):
        decide_storage("d", "resident", 601, 1, 1, 1, 600, resource="device")


def test_a_budget_that_fits_exactly_one_event_per_chunk_says_about_1():
    # 100 bytes per chunk of 10 events: 10 bytes an event; a 10-byte budget holds one event
    with pytest.raises(BudgetError, match=r"^host memory budget too small for one chunk: dataset 'd' "
                                          r"streams 1 chunk\(s\) of 10 events at once, 100 bytes each "
                                          r"\(100 bytes in all\), but the host budget of 10 bytes is "
                                          r"smaller; use a smaller chunk_events \(about 1 events would "
                                          r"fit\) or raise the budget$"):
        decide_storage("d", "streaming", 10**6, 100, 10, 1, 10, workers=3, chunk_keyword="chunk_events")


def test_fastest_when_nothing_fits_says_both():
    with pytest.raises(BudgetError, match=r"^dataset 'd' does not fit resident \(601 bytes\) and streaming "
                                          r"fails too: host memory budget too small for one chunk: "
                                          r"dataset 'd' streams 2 chunk\(s\) of 10 events at once, 400 "
                                          r"bytes each \(800 bytes in all\), but the host budget of 600 "
                                          r"bytes is smaller; use a smaller chunk_size \(about 7 events "
                                          r"would fit\) or raise the budget$"):
        decide_storage("d", "fastest", 601, 400, 10, 5, 600, workers=2)  # 600 // (2 * 40) = 7


def test_chunks_of_zero_events_count_the_chunk_bytes_as_one_event():
    with pytest.raises(BudgetError, match=r"streams 1 chunk\(s\) of 0 events at once, 50 bytes each "
                                          r"\(50 bytes in all\), but the host budget of 40 bytes is smaller; "
                                          r"raise the budget: not even one event per chunk fits$"):
        decide_storage("d", "streaming", 10, 50, 0, 1, 40)
    assert decide_storage("d", "streaming", 10, 50, 0, 1, 50).peak_bytes == 50


def test_no_partitions_still_plan_for_one_chunk():
    d = decide_storage("d", "streaming", 10, 50, 4, 0, 1000, workers=8)
    assert (d.strategy, d.peak_bytes, d.partitions) == ("streaming", 50, 0)
    assert d.reason.startswith("streaming as requested: 1 chunk(s) of 4 events")


def test_one_worker_and_zero_sizes_and_budget_are_allowed():
    d = decide_storage("d", "fastest", 0, 0, 0, 0, 0, workers=1)
    assert (d.strategy, d.peak_bytes, d.budget_bytes) == ("resident", 0, 0)


@pytest.mark.parametrize("name", ["resident_bytes", "partition_bytes", "chunk_size", "partitions",
                                  "budget_bytes"])
def test_each_negative_size_is_named(name):
    args = {"resident_bytes": 1, "partition_bytes": 1, "chunk_size": 1, "partitions": 1,
            "budget_bytes": 1, name: -1}
    with pytest.raises(ValueError, match=rf"^{name} must be an integer >= 0, got -1$"):
        decide_storage("d", "fastest", **args)


def test_an_unknown_resource_lists_the_allowed_ones():
    with pytest.raises(ValueError, match=r"^memory resource must be one of 'host', 'device', got 'disk'$"):
        decide_storage("d", "fastest", 1, 1, 1, 1, None, resource="disk")


def test_an_unknown_policy_is_named_as_the_memory_policy():
    with pytest.raises(ValueError, match=r"^memory policy must be one of 'resident', 'disk', 'streaming', "
                                         r"'fastest', got 'fast'$"):
        decide_storage("d", "fast", 1, 1, 1, 1, None)


def test_by_default_one_chunk_is_streamed_at_a_time():
    d = decide_storage("d", "streaming", 10, 50, 4, 8, 1000)
    assert (d.peak_bytes, d.reason) == (50, "streaming as requested: 1 chunk(s) of 4 events at once need "
                                            "50 bytes, within the host budget of 1000 bytes")


@pytest.mark.parametrize(("n", "text"), [(1023, "1023 bytes"), (-1023, "-1023 bytes"),
                                         (1024, "1.00 kiB (1024 bytes)"), (1025, "1.00 kiB (1025 bytes)")])
def test_sizes_from_one_kib_are_written_in_units(n, text):
    assert format_bytes(n) == text


@pytest.mark.parametrize("spec", [None, "unlimited", " None "])
def test_an_unlimited_budget_has_no_spec(spec):
    budget = MemoryBudget(spec)
    assert (budget.spec, repr(budget), budget.unlimited) == (None, "MemoryBudget(None)", True)


@pytest.mark.parametrize(("total", "available", "name", "bad"),
                         [(-1, 0, "total", "-1"), (True, 0, "total", "True"), (1.5, 0, "total", "1.5"),
                          (10, False, "available", "False")])
def test_machine_sizes_must_be_integer_bytes(total, available, name, bad):
    with pytest.raises(BudgetError, match=rf"^{name} memory must be an integer >= 0 bytes, got {bad}$"):
        MemoryBudget("50%").resolve(total=total, available=available)


def test_no_memory_available_is_a_zero_budget_not_an_error():
    assert MemoryBudget("50% available").resolve(total=1000, available=0) == 0
    assert MemoryBudget("50%").resolve(total=0, available=0) == 0
