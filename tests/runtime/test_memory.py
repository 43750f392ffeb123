"""Memory budgets: parsing, resolution, and the resident-or-streaming decision."""

from __future__ import annotations

import dataclasses

import psutil
import pytest

from laddu_dask.errors import BudgetError
from laddu_dask.runtime.memory import (
    MemoryBudget,
    MemoryDecision,
    MemoryPlan,
    decide_storage,
    format_bytes,
    parse_bytes,
)

GiB = 2**30
MiB = 2**20


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (1024, 1024),
        (0, 0),
        ("0", 0),
        (1.9, 1),
        ("2 GiB", 2 * GiB),
        ("500 MB", 500_000_000),
        ("1.5GB", 1_500_000_000),
        ("64 KiB", 65_536),
        ("64kib", 65_536),
        ("1.5 GiB", 1_610_612_736),
        ("  3 mib ", 3 * MiB),
        ("2Gi", 2 * GiB),
        ("10 k", 10_000),
        ("1e3 MB", 10**9),
        (".5 KiB", 512),
        ("1 TB", 10**12),
        ("1 TiB", 2**40),
        ("1 PiB", 2**50),
        ("123 B", 123),
        ("123", 123),
        ("0.3 B", 0),
    ],
)
def test_parse_bytes(spec, expected):
    assert parse_bytes(spec) == expected


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("lots", "cannot parse memory size 'lots'"),
        ("12 parsecs", "cannot parse memory size '12 parsecs'"),
        ("", "cannot parse memory size ''"),
        ("-5 MB", "cannot parse memory size '-5 MB'"),
        ("1.2.3 GB", r"cannot parse memory size '1\.2\.3 GB'"),
        ("nan", "cannot parse memory size 'nan'"),
        ("70%", "cannot parse memory size '70%'"),  # percentages are for MemoryBudget
        (-1, "must be >= 0 bytes, got -1"),
        (float("inf"), "finite number >= 0, got inf"),
        (float("nan"), "finite number >= 0, got nan"),
        (True, "cannot parse memory size True"),
        ([1], r"cannot parse memory size \[1\] \(list\)"),
    ],
)
def test_parse_bytes_rejects_bad_specs(spec, match):
    with pytest.raises(BudgetError, match=match):
        parse_bytes(spec)
    assert issubclass(BudgetError, MemoryError)


def test_format_bytes():
    assert format_bytes(1610612736) == "1.50 GiB (1610612736 bytes)"
    assert format_bytes(1000) == "1000 bytes"
    assert format_bytes(3 * MiB) == "3.00 MiB (3145728 bytes)"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, None),
        ("unlimited", None),
        (4096, 4096),
        ("1 KiB", 1024),
        ("70%", 7000),
        ("70 % total", 7000),
        ("100%", 10_000),
        ("70% available", 2100),
        ("50% of available", 1500),
        ("0.5%", 50),
    ],
)
def test_budget_resolve(spec, expected):
    assert MemoryBudget(spec).resolve(total=10_000, available=3000) == expected


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("0%", r"percentage must be in \(0, 100\], got '0%'"),
        ("101%", r"percentage must be in \(0, 100\], got '101%'"),
        ("70% of nothing", "cannot parse memory size '70% of nothing'"),
        ("huge", "cannot parse memory size 'huge'"),
    ],
)
def test_budget_rejects_bad_specs(spec, match):
    with pytest.raises(BudgetError, match=match):
        MemoryBudget(spec)


def test_budget_resolve_checks_machine_sizes():
    with pytest.raises(BudgetError, match="available memory must be an integer >= 0"):
        MemoryBudget("10% available").resolve(total=100, available=-1)


def test_budget_repr_spec_and_equality():
    budget = MemoryBudget("2 GiB")
    assert budget.spec == "2 GiB"
    assert repr(budget) == "MemoryBudget('2 GiB')"
    assert budget == MemoryBudget(2 * GiB)
    assert MemoryBudget(budget) == budget
    assert MemoryBudget(None).unlimited
    assert not budget.unlimited


def test_plan_resolves_against_this_machine():
    plan = MemoryPlan(host="50%", device="1 GiB")
    total = psutil.virtual_memory().total
    assert plan.host_bytes() == total // 2
    assert plan.device_bytes() == GiB  # bytes need no device query
    assert MemoryPlan().host_bytes() is None
    assert MemoryPlan(host=MemoryBudget("3 MiB")).host_bytes() == 3 * MiB
    assert MemoryPlan(device="25% available").device_bytes(total=800, available=400) == 100
    available = MemoryPlan(host="100% available").host_bytes()
    assert 0 < available <= total
    assert repr(plan) == "MemoryPlan(host='50%', device='1 GiB')"
    assert plan == MemoryPlan(host="50%", device=GiB)


def test_plan_rejects_bad_budget_by_text():
    with pytest.raises(BudgetError, match="'two gigs'"):
        MemoryPlan(host="two gigs")


def _decide(policy, budget, **kwargs):
    args = dict(
        dataset="signal/data",
        policy=policy,
        resident_bytes=3 * GiB,
        partition_bytes=64 * MiB,
        chunk_size=100_000,
        partitions=48,
        budget_bytes=budget,
        workers=4,
    )
    args.update(kwargs)
    return decide_storage(**args)


def test_resident_fits():
    d = _decide("resident", 4 * GiB)
    assert isinstance(d, MemoryDecision)
    assert (d.strategy, d.requested_policy, d.resource) == ("resident", "resident", "host")
    assert (d.estimated_bytes, d.peak_bytes, d.budget_bytes) == (3 * GiB, 3 * GiB, 4 * GiB)
    assert (d.chunk_size, d.partitions, d.dataset) == (100_000, 48, "signal/data")
    assert "3.00 GiB" in d.reason and "4.00 GiB" in d.reason


def test_resident_does_not_fit():
    with pytest.raises(
        BudgetError, match=r"'signal/data' needs 3\.00 GiB \(3221225472 bytes\) of host"
    ) as err:
        _decide("resident", 2 * GiB)
    assert "budget of 2.00 GiB (2147483648 bytes)" in str(err.value)
    assert "memory_policy='streaming'" in str(err.value)


def test_streaming_fits():
    d = _decide("streaming", GiB)
    assert (d.strategy, d.requested_policy) == ("streaming", "streaming")
    assert d.peak_bytes == 4 * 64 * MiB  # four workers, one chunk each
    assert d.estimated_bytes == 3 * GiB
    assert "streaming as requested" in d.reason and "256.00 MiB" in d.reason


def test_streaming_too_small_for_one_chunk():
    with pytest.raises(BudgetError, match="budget too small for one chunk") as err:
        _decide("streaming", 100 * MiB, resource="device")
    message = str(err.value)
    assert message.startswith("device memory budget")
    assert "64.00 MiB (67108864 bytes) each" in message
    assert "budget of 100.00 MiB (104857600 bytes)" in message
    assert "smaller chunk_size (about 39062 events would fit)" in message  # 100/256 * 1e5


def test_streaming_not_even_one_event():
    with pytest.raises(BudgetError, match="not even one event per chunk fits"):
        _decide("streaming", 10, partition_bytes=1000, chunk_size=10, workers=1)


def test_streaming_uses_at_most_one_chunk_per_partition():
    d = _decide("streaming", GiB, partitions=2, workers=16)
    assert d.peak_bytes == 2 * 64 * MiB


def test_fastest_prefers_resident():
    d = _decide("fastest", 8 * GiB)
    assert (d.strategy, d.requested_policy) == ("resident", "fastest")


def test_fastest_falls_back_to_streaming_with_numbers():
    d = _decide("fastest", GiB)
    assert (d.strategy, d.peak_bytes) == ("streaming", 256 * MiB)
    assert "resident storage would need 3.00 GiB (3221225472 bytes)" in d.reason
    assert "host budget of 1.00 GiB (1073741824 bytes)" in d.reason
    assert "256.00 MiB" in d.reason


def test_fastest_nothing_fits():
    with pytest.raises(BudgetError, match="does not fit resident .*budget too small for one chunk"):
        _decide("fastest", 100 * MiB)


@pytest.mark.parametrize(
    ("policy", "strategy"),
    [("fastest", "resident"), ("resident", "resident"), ("streaming", "streaming")],
)
def test_no_budget(policy, strategy):
    d = _decide(policy, None)
    assert d.strategy == strategy
    assert d.budget_bytes is None
    assert "no host memory budget is set" in d.reason


def test_bad_arguments():
    with pytest.raises(ValueError, match="'resident', 'disk', 'streaming', 'fastest', got 'fast'"):
        _decide("fast", GiB)
    with pytest.raises(ValueError, match="'host', 'device', got 'disk'"):
        _decide("fastest", GiB, resource="disk")
    with pytest.raises(ValueError, match="workers must be an integer >= 1, got 0"):
        _decide("fastest", GiB, workers=0)
    with pytest.raises(ValueError, match="resident_bytes must be an integer >= 0, got -1"):
        _decide("fastest", GiB, resident_bytes=-1)


def test_decision_is_frozen():
    d = _decide("fastest", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.strategy = "streaming"
    assert str(d).startswith("signal/data: resident")
