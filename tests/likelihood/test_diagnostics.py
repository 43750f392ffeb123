"""laddu 0.28.1's diagnostics and memory telemetry (issue 24): ``Likelihood.diagnostics``,
``Dataset.memory_decision``, ``Execution.memory_report``/``rank``/``world_size``,
``MemoryResource``, ``MemoryState`` and ``MemoryBudget(value)``.

References: the events and weights given (``len`` of the arrays, ``math.fsum`` of the weights),
the calls the test makes, Dask's ``sizeof`` of the prepared partitions, the operating system's
page counts, hand-computed matrix sizes, and laddu's own objects of the same likelihood (field
names, types and the figures that mean the same in both).
"""

from __future__ import annotations

import json
import math
import os
import sys
import types

import numpy as np
import pytest
from dask.sizeof import sizeof
from laddu_reference import laddu, needs_laddu

import laddu_dask as ld
from laddu_dask.memory_resources import MemoryResource, MemoryState

RNG = np.random.default_rng(24)
DATA_X = RNG.uniform(-1, 1, 800)
DATA_W = RNG.uniform(0.5, 1.5, 800)
MC_X = RNG.uniform(-1, 1, 3000)


def _likelihood(lib, execution=None, policy=None, chunk=None):
    """|c1 x + c2 x^2|^2 (two amplitudes in one coherent sum) on weighted data, flat MC."""
    x = lib.scalar("x")
    model = lib.Model((lib.parameter("c1", initial=0.2) * x + lib.parameter("c2", initial=-0.1) * x * x)
                      .norm_sqr())

    def dataset(xs, weights=None):
        beam = np.tile([8.5, 0.0, 0.0, 8.5], (len(xs), 1))
        extra = {} if lib is laddu else {k: v for k, v in (("memory_policy", policy), ("chunk_size", chunk))
                                           if v is not None}
        return lib.Dataset.from_arrays(p4s={"beam": beam}, scalars={"x": xs}, weights=weights, **extra)

    terms = [lib.NLL(model, data=dataset(DATA_X, DATA_W), accepted_mc=dataset(MC_X), name="nll")]
    if lib is laddu:
        return lib.Likelihood(terms)
    return lib.Likelihood(terms, execution=execution)


def _fields(obj) -> dict:
    return {a: getattr(obj, a) for a in dir(obj) if not a.startswith("_") and not callable(getattr(obj, a))}


# ---------------------------------------------------------------------------------------------
# Likelihood.diagnostics
# ---------------------------------------------------------------------------------------------
@needs_laddu
def test_diagnostics_have_laddus_fields_types_and_figures():
    ours, theirs = _likelihood(ld), _likelihood(laddu)
    for lik in (ours, theirs):
        lik.value([0.1, 0.2])
        lik.value([0.3, 0.2])
        lik.value_and_gradient([0.1, 0.2])
    mine, want = ours.diagnostics(), theirs.diagnostics()
    assert isinstance(mine, ld.LikelihoodDiagnostics) and isinstance(mine.datasets[0], ld.DatasetDiagnostics)
    # the calls made above: two value-only points, one value-and-gradient point (laddu counts so too)
    assert (mine.objective_evaluations, mine.gradient_evaluations) == (2, 1)
    assert (want.objective_evaluations, want.gradient_evaluations) == (2, 1)
    assert len(mine.datasets) == len(want.datasets) == 2
    same = ("term", "role", "storage", "local_events", "global_events", "local_batches",
            "uses_quadratic_normalization", "uses_precomputed_normalization", "normalization_strategy",
            "normalization_coherent_group_count", "normalization_has_residual",
            "normalization_preparation_passes", "normalization_cache_reused",
            "normalization_tag_reused_parent", "normalization_fallback_reason", "source_traversals")
    for m, w in zip(mine.datasets, want.datasets, strict=True):
        got, ref = _fields(m), _fields(w)
        assert set(got) == set(ref)
        for name in ref:
            assert type(got[name]) is type(ref[name]), name
        assert {k: got[k] for k in same} == {k: ref[k] for k in same}
        assert got["sum_weights"] == pytest.approx(ref["sum_weights"], rel=1e-14)
    # laddu's keys of a memory decision, where laddu-dask has the figure
    keys = set(want.memory_decisions[0]) - {"fixed_bytes", "bytes_per_event"}
    assert all(keys <= set(d) for d in mine.memory_decisions)
    assert isinstance(mine.memory_decisions, list) and isinstance(mine.memory_decisions[0], dict)


def test_dataset_figures_are_the_events_and_exact_weight_sums_given():
    lik = _likelihood(ld, chunk=300)
    observed, accepted = lik.diagnostics().datasets
    assert (observed.term, observed.role, accepted.role) == ("nll", "observed", "accepted_mc")
    assert observed.global_events == observed.local_events == len(DATA_X)
    assert observed.local_batches == math.ceil(len(DATA_X) / 300)
    assert observed.sum_weights == math.fsum(DATA_W)  # exactly, not to a tolerance
    assert accepted.global_events == len(MC_X) and accepted.sum_weights == float(len(MC_X))
    # the data's prepared partitions as Dask's sizeof counts them; at least the weights' bytes
    prepared = lik.terms[0].prepare(lik.execution).data
    assert observed.resident_bytes == sum(sizeof(p) for p in prepared.partitions)
    assert observed.resident_bytes > DATA_W.nbytes
    # the statistics of two amplitudes in one sum: one 2x2 complex matrix (4 products, 64 bytes)
    assert (accepted.normalization_strategy, accepted.uses_quadratic_normalization) == ("hermitian", True)
    assert accepted.normalization_basis_count == 4 and accepted.normalization_coherent_group_count == 1
    assert accepted.normalization_retained_bytes == accepted.resident_bytes == 4 * 16
    assert (accepted.storage, accepted.source_traversals, accepted.normalization_preparation_passes) == \
        ("resident", 1, 1)
    assert observed.normalization_strategy is None and observed.uses_precomputed_normalization is False


def test_evaluation_counts_are_the_points_evaluated():
    lik = _likelihood(ld)
    lik.values([[0.1, 0.2], [0.2, 0.2], [0.3, 0.2]])
    lik.values_and_gradients([[0.1, 0.2], [0.2, 0.2]])
    lik.gradient([0.1, 0.3])
    lik.value({"c1": 0.5})
    d = lik.diagnostics()
    assert (d.objective_evaluations, d.gradient_evaluations) == (3 + 1, 2 + 1)


def test_streamed_data_count_a_traversal_per_round():
    """The preparation's pass over the weights, then one per evaluation round (K points: one)."""
    lik = _likelihood(ld, policy="streaming", chunk=250)
    assert lik.diagnostics().datasets[0].source_traversals == 1  # prepared, not evaluated
    lik.value([0.1, 0.2])
    lik.values([[0.1, 0.2], [0.2, 0.3], [0.3, 0.4]])
    lik.value_and_gradient([0.1, 0.2])
    observed = lik.diagnostics().datasets[0]
    assert (observed.storage, observed.resident_bytes, observed.source_traversals) == ("streaming", 0, 4)
    assert observed.sum_weights == math.fsum(DATA_W)


def test_general_normalization_says_why_and_loops_over_the_events():
    lik = _likelihood(ld, execution=ld.Execution(normalization="general"), policy="streaming", chunk=1000)
    lik.value([0.1, 0.2])
    accepted = lik.diagnostics().datasets[1]
    assert (accepted.normalization_strategy, accepted.uses_precomputed_normalization) == ("general", False)
    assert accepted.normalization_fallback_reason == "normalization='general' was asked for"
    assert (accepted.normalization_basis_count, accepted.normalization_retained_bytes) == (0, 0)
    # the accepted MC has no weights: the preparation reads nothing, the evaluation one pass
    assert (accepted.storage, accepted.source_traversals, accepted.normalization_preparation_passes) == \
        ("streaming", 1, 0)
    assert accepted.local_batches == 3 and accepted.global_events == len(MC_X)


def test_memory_decisions_are_the_executions_and_each_datasets_latest():
    ex = ld.Execution()
    lik = _likelihood(ld, execution=ex, chunk=200)
    data = lik.terms[0].data
    assert data.memory_decision() is None  # nothing prepared yet
    decisions = lik.diagnostics().memory_decisions
    assert [d["label"] for d in decisions] == ["nll/data", "nll/accepted_mc"]
    assert [d["strategy"] for d in decisions] == ["resident", "statistics"]
    assert decisions == [d.as_dict() for d in ex.memory_decisions()]
    mine = data.memory_decision()
    assert mine == decisions[0] and mine["chunk_events"] == 200 and mine["partitions"] == 4
    assert mine["actual_high_water_bytes"] is None  # not measured (nor in laddu)


# ---------------------------------------------------------------------------------------------
# MemoryResource, MemoryState
# ---------------------------------------------------------------------------------------------
def test_host_memory_is_the_machines():
    host = MemoryState().host
    page = os.sysconf("SC_PAGE_SIZE")
    assert host.total_bytes == os.sysconf("SC_PHYS_PAGES") * page  # what the kernel counts
    assert 0 < host.available_bytes <= host.total_bytes
    assert (host.id, host.name, host.capacity_source, host.adapter_index, host.pci_bus_id) == \
        ("host", "Host memory", "operating_system", None, None)


@needs_laddu
def test_resources_read_and_write_laddus_json():
    theirs = laddu.MemoryState.current().host
    ours = MemoryResource.from_json(theirs.to_json())
    assert (ours.id, ours.name, ours.kind, ours.capacity_source) == ("host", "Host memory", "host",
                                                                     "operating_system")
    assert ours.total_bytes == theirs.total_bytes
    assert json.loads(ours.to_json()) == json.loads(theirs.to_json())
    back = laddu.MemoryResource.from_json(MemoryState().host.to_json())
    assert (back.id, back.name, back.total_bytes) == ("host", "Host memory", theirs.total_bytes)
    host = MemoryState().host
    assert MemoryResource.from_json(host.to_json()) == host
    gpu = MemoryResource("cuda:1", "H200", "device", 10, 4, "cuda", 1, 0x10DE, None, "0000:3b:00.0")
    assert MemoryResource.from_json(gpu.to_json()) == gpu
    assert repr(gpu) == 'MemoryResource(name="H200", total_bytes=10, available_bytes=4, source=cuda)'
    with pytest.raises(ValueError, match="missing field 'id'"):
        MemoryResource.from_json('{"x": 1}')


@needs_laddu
def test_device_overrides_behave_as_laddus():
    ours, theirs = MemoryState(), laddu.MemoryState()
    for state in (ours, theirs):
        state.override_device_capacity("gpu0", 1000, available_bytes=500, name="Test GPU")
        state.override_device_capacity("gpu1", 2000)
        state.override_device_capacity("gpu0", 10, available_bytes=20)  # more than the total: clamped
        state.refresh()  # overrides survive
    got = [json.loads(d.to_json()) for d in ours.devices if d.id.startswith("gpu")]
    want = [json.loads(d.to_json()) for d in theirs.devices]
    assert got == want
    assert [d["total_bytes"] for d in got] == [10, 2000] and got[0]["available_bytes"] == 10
    with pytest.raises(ValueError, match="id must name a device"):
        ours.override_device_capacity("host", 10)
    with pytest.raises(ValueError, match="total_bytes"):
        ours.override_device_capacity("gpu2", -1)
    assert ours.devices[0].budget(100) == ld.MemoryBudget(100)


def test_devices_are_cupys(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert MemoryState().devices == []
    infos = {0: (3 * 2**30, 4 * 2**30), 1: (2**30, 8 * 2**30)}  # (free, total)
    current = [0]

    class Device:
        def __init__(self, i):
            self.i = i

        def __enter__(self):
            current.append(self.i)

        def __exit__(self, *exc):
            current.pop()

    runtime = types.SimpleNamespace(
        getDeviceCount=lambda: 2, memGetInfo=lambda: infos[current[-1]],
        getDeviceProperties=lambda i: {"name": f"GPU {i}".encode()},
        deviceGetPCIBusId=lambda i: f"0000:0{i}:00.0")
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(
        cuda=types.SimpleNamespace(runtime=runtime, Device=Device)))
    devices = MemoryState().devices
    assert [(d.id, d.name, d.total_bytes, d.available_bytes, d.adapter_index, d.pci_bus_id, d.vendor_id)
            for d in devices] == [("cuda:0", "GPU 0", 4 * 2**30, 3 * 2**30, 0, "0000:00:00.0", 0x10DE),
                                  ("cuda:1", "GPU 1", 8 * 2**30, 2**30, 1, "0000:01:00.0", 0x10DE)]
    assert {d.capacity_source for d in devices} == {"cuda"}


@needs_laddu
def test_reports_have_laddus_keys():
    ours, theirs = MemoryState().report(), laddu.MemoryState.current().report()
    assert set(ours) == set(theirs)
    assert set(ours["process"]) == set(theirs["process"])
    assert set(ours["resources"][-1]) == set(theirs["resources"][-1])
    mine = ld.Execution().memory_report()
    want = laddu.Execution().memory_report()
    assert set(mine) == set(want)
    assert set(mine["pools"][0]) == set(want["pools"][0])
    assert set(mine["resources"][-1]) == set(want["resources"][-1])
    assert (ld.Execution().rank, ld.Execution().world_size) == (laddu.Execution().rank,
                                                                laddu.Execution().world_size) == (0, 1)


def test_execution_report_sums_its_decisions():
    ex = ld.Execution(memory="1 GiB")
    lik = _likelihood(ld, execution=ex, policy="streaming", chunk=100)
    lik.value([0.1, 0.2])
    report = ex.memory_report()
    # the planned peaks (a streamed dataset's: its chunks in flight), not the resident estimates
    decisions = ex.memory_decisions()
    assert decisions[0].strategy == "streaming" and decisions[0].peak_bytes != decisions[0].estimated_bytes
    planned = sum(d.peak_bytes for d in decisions)
    [pool] = report["pools"]
    assert pool == {"resource_id": "host", "requested": {"bytes": 2**30}, "effective_bytes": 2**30,
                    "reserved_bytes": planned, "remaining_bytes": 2**30 - planned,
                    "high_water_bytes": planned}
    host = next(r for r in report["resources"] if r["id"] == "host")
    assert host["reserved_bytes"] == planned > 0
    process = report["process"]
    assert process["sampled_high_water_bytes"] >= process["resident_bytes"] > 0
    status = "/proc/self/status"
    if os.path.exists(status):  # Linux: the kernel's own peak resident size, in kB
        with open(status) as f:
            peak = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
        assert ex.memory_report()["process"]["sampled_high_water_bytes"] >= peak
    assert ld.Execution().memory_report()["pools"][0]["effective_bytes"] is None  # no budget


@needs_laddu
def test_memory_budget_takes_laddus_value_keyword():
    for value in ("2 GiB", 1000, "50% available", ld.MemoryBudget("70%")):
        theirs = laddu.MemoryBudget(value=value.spec if isinstance(value, ld.MemoryBudget) else value)
        assert json.loads(ld.MemoryBudget(value=value).to_json()) == json.loads(theirs.to_json())


# ---------------------------------------------------------------------------------------------
# on a cluster
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def client():
    pytest.importorskip("distributed")
    from cluster_helpers import local_cluster

    yield from local_cluster()


@pytest.mark.slow
def test_on_a_cluster_the_workers_hold_the_bytes_the_scheduler_counts(client):
    ex = ld.Execution(client=client)
    assert (ex.rank, ex.world_size) == (0, len(client.scheduler_info()["workers"])) == (0, 2)
    lik = _likelihood(ld, execution=ex, chunk=200)
    lik.value([0.1, 0.2])
    observed = lik.diagnostics().datasets[0]
    prepared = lik.terms[0].prepare(ex).data
    managed = client.run_on_scheduler(lambda dask_scheduler: {
        k: ts.nbytes for k, ts in dask_scheduler.tasks.items() if ts.state == "memory"})
    assert observed.resident_bytes == sum(managed[f.key] for f in prepared.partitions) > 0
    assert (observed.local_events, observed.local_batches, observed.global_events) == (0, 0, len(DATA_X))
    assert observed.sum_weights == math.fsum(DATA_W)
    report = ex.memory_report()
    assert sorted(w["address"] for w in report["workers"]) == sorted(client.scheduler_info()["workers"])
    assert all(w["memory_limit"] > 0 for w in report["workers"])
