"""laddu's dataset operations (issue 12, item 1): select, bin_by, subsample, bootstrap, columns.

Every derived dataset is checked bit for bit against NumPy masks (or NumPy reweighting) of
the same events: from arrays, from Parquet files read in small partitions and streamed,
under other partitionings, and in likelihoods (local, and on a 2-process LocalCluster);
against laddu 0.28.1's own ``select``, ``bin_by``, ``stats`` and ``evaluate``; and bad
arguments are typed errors naming what is wrong.
"""

from __future__ import annotations

import math

import dask
import numpy as np
import pytest
from laddu_reference import laddu, needs_laddu

import laddu_dask as ld
from laddu_dask import ksks
from laddu_dask.data.derived import event_uniforms, poisson_one
from laddu_dask.errors import ModelError, SchemaError

N = 5000


@pytest.fixture(scope="module")
def events():
    """KsKs-like events as NumPy arrays: four-vectors, a scalar and weights (some negative)."""
    rng = np.random.default_rng(2026)
    p4s = {name: np.column_stack([rng.uniform(1.0, 2.0, N), *rng.normal(0.0, 0.4, (3, N))])
           for name in ("beam", "kshort1", "kshort2")}
    scalars = {"t": rng.uniform(-1.5, 0.0, N)}
    weights = rng.normal(1.0, 0.5, N)
    return p4s, scalars, weights


def _arrays(events, chunk_size=None):
    p4s, scalars, weights = events
    return ld.Dataset.from_arrays(p4s=p4s, scalars=scalars, weights=weights, chunk_size=chunk_size)


@pytest.fixture(scope="module")
def parquet(tmp_path_factory, events):
    path = tmp_path_factory.mktemp("ops") / "events.parquet"
    _arrays(events).write_parquet(path)
    return path


def _sources(events, parquet):
    return {
        "arrays": _arrays(events),
        "arrays, 7 partitions": _arrays(events, chunk_size=713),
        "parquet, streamed": ld.read_parquet(parquet, chunk_size=600, memory_policy="streaming"),
    }


def _mass(p4s):
    e = p4s["kshort1"][:, 0] + p4s["kshort2"][:, 0]
    p = p4s["kshort1"][:, 1:] + p4s["kshort2"][:, 1:]
    return e * e - (p * p).sum(axis=1)


M2 = (ld.Vec4.event("kshort1") + ld.Vec4.event("kshort2")).m2()


def _same(ds, keep, w, events):
    """``ds`` holds exactly the kept events of ``events`` (every column bit for bit), weights ``w``."""
    p4s, scalars, _ = events
    assert ds.n_events == int(np.count_nonzero(keep))
    assert np.array_equal(ds.weights(), w[keep])
    for name, arr in p4s.items():
        for j, comp in enumerate(("e", "px", "py", "pz")):
            assert np.array_equal(ds.column(f"{name}_{comp}"), arr[keep, j])
    assert np.array_equal(ds.column("t"), scalars["t"][keep])


def test_select_is_a_numpy_mask_for_every_source(events, parquet):
    p4s, scalars, weights = events
    predicate = (ld.scalar("t") > -0.7) & ~(M2 < 1.0)
    keep = (scalars["t"] > -0.7) & ~(_mass(p4s) < 1.0)
    assert 0 < keep.sum() < N
    for label, ds in _sources(events, parquet).items():
        kept = ds.select(predicate)
        _same(kept, keep, weights, events)
        assert kept.n_partitions == ds.n_partitions, label  # one block per parent partition
        assert kept.memory_policy == ds.memory_policy
        # a selection of a selection
        both = kept.select(ld.scalar("t") < -0.2)
        _same(both, keep & (scalars["t"] < -0.2), weights, events)


def test_bin_by_is_numpy_binning_with_laddus_edges(events, parquet):
    p4s, _, weights = events
    m2 = _mass(p4s)
    edges = np.quantile(m2, [0.05, 0.3, 0.6, 0.9])
    edges[-1] = m2[np.argsort(m2)[int(0.9 * N)]]  # an event exactly on the last edge
    for ds in _sources(events, parquet).values():
        bins = ds.bin_by(M2, bins=ld.Bin(edges))
        assert [(b.index, b.low, b.high) for b in bins] == [
            (i, edges[i], edges[i + 1]) for i in range(3)]
        for b in bins:
            last = b.index == 2
            keep = (m2 >= b.low) & ((m2 <= b.high) if last else (m2 < b.high))
            _same(b.dataset, keep, weights, events)
        assert sum(b.dataset.n_events for b in bins) == int(((m2 >= edges[0]) & (m2 <= edges[-1])).sum())


def test_subsample_and_bootstrap_do_not_depend_on_the_partitioning(events, parquet):
    _, _, weights = events
    u = event_uniforms(5, "subsample", 0, N)
    counts = poisson_one(event_uniforms(5, "bootstrap", 0, N))
    for ds in _sources(events, parquet).values():
        _same(ds.subsample(0.3, seed=5), u < 0.3, weights, events)
        replica = ds.bootstrap(seed=5)
        assert replica.n_events == N
        assert np.array_equal(replica.weights(), weights * counts)
    # the draws are those of the index alone, and two seeds differ
    assert np.array_equal(event_uniforms(5, "subsample", 1234, 10), u[1234:1244])
    assert not np.array_equal(event_uniforms(6, "subsample", 0, N), u)


def test_the_random_draws_have_their_distributions():
    """Deterministic (fixed seeds), so these bounds (5 standard errors) cannot flake."""
    u = event_uniforms(0, "subsample", 0, 200_000)
    assert abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / u.size)
    k = poisson_one(event_uniforms(0, "bootstrap", 0, 200_000))
    assert abs(k.mean() - 1.0) < 5 * math.sqrt(1 / k.size) and abs(k.var() - 1.0) < 0.02
    assert abs(np.mean(k == 0) - math.exp(-1)) < 5 * math.sqrt(math.exp(-1) * (1 - math.exp(-1)) / k.size)


def test_a_bin_of_a_streamed_dataset_gives_the_masked_likelihood_to_the_last_bit(tmp_path):
    """An NLL over one mass bin of streamed Parquet files equals the NLL of the NumPy-masked
    arrays, value and gradient, bit for bit."""
    paths = ksks.write_sample(tmp_path, n_data=3000, n_mc=12000, seed=9)
    edges = ld.Bin([1.0, 1.5, 2.0])
    mass = (ld.Vec4.event("kshort1") + ld.Vec4.event("kshort2")).m().real()
    datasets = [ld.read_parquet(paths[k], chunk_size=700, memory_policy="streaming")
                for k in ("data", "accmc")]
    binned = [ds.bin_by(mass, bins=edges)[1].dataset for ds in datasets]
    masked = []
    for ds in datasets:
        cols = {c: ds.column(c) for c in ds.schema.flat_columns()}
        m = ds.evaluate(mass, real=True)
        keep = (m >= 1.5) & (m <= 2.0)
        masked.append(ld.Dataset.from_arrays(
            p4s={p: np.column_stack([cols[f"{p}_{c}"][keep] for c in ("e", "px", "py", "pz")])
                 for p in ds.p4_names()},
            scalars={s: cols[s][keep] for s in ds.scalar_names()},
            weights=ds.weights()[keep] if ds.schema.has_weight else None))
    x = [ksks.TRUTH[n] * 1.02 for n in ksks.TRUTH]
    got = ld.Likelihood([ld.NLL(ksks.model(), data=binned[0], accepted_mc=binned[1])]).value_and_gradient(x)
    want = ld.Likelihood([ld.NLL(ksks.model(), data=masked[0], accepted_mc=masked[1])]).value_and_gradient(x)
    assert got[0] == want[0] and np.array_equal(got[1], want[1])


@needs_laddu
def test_select_bin_by_stats_and_evaluate_are_laddus(events):
    p4s, scalars, weights = events
    ours = _arrays(events)
    theirs = laddu.Dataset.from_arrays(p4s=p4s, scalars=scalars, weights=weights)
    predicate = lambda lib: (lib.scalar("t") > -0.7) & ((lib.Vec4.event("kshort1") + lib.Vec4.event("kshort2")).m2() > 1.0)  # noqa: E731, E501
    assert np.array_equal(ours.select(predicate(ld)).column("t"), theirs.select(predicate(laddu)).column("t"))
    edges = [-1.5, -1.0, -0.4, 0.0]
    for mine, ref in zip(ours.bin_by(ld.scalar("t"), bins=ld.Bin(edges)),
                         theirs.bin_by(laddu.scalar("t"), bins=laddu.Bin(edges)), strict=True):
        assert (mine.index, mine.low, mine.high) == (ref.index, ref.low, ref.high)
        assert np.array_equal(mine.dataset.weights(), ref.dataset.weights())
    s, r = ours.stats(), theirs.stats()
    assert (s.events, s.sum_weights, s.sum_squared_weights, s.positive_weights, s.negative_weights) == (
        r.events, r.sum_weights, r.sum_squared_weights, r.positive_weights, r.negative_weights)
    assert s.effective_entries == pytest.approx(r.effective_entries, rel=1e-15)
    expr = lambda lib: (lib.Vec4.event("kshort1") + lib.Vec4.event("kshort2")).m() * lib.scalar("t")  # noqa: E731
    got, want = ours.evaluate(expr(ld)), np.asarray(theirs.evaluate(expr(laddu)))
    assert got.dtype == np.complex128 and np.max(np.abs(got - want) / np.abs(want)) < 1e-15
    assert (ours.p4_names(), ours.scalar_names()) == (list(theirs.p4_names()), list(theirs.scalar_names()))
    thirds = ld.Bin.uniform(3, low=-1.5, high=0.0)
    uniform = [b.dataset.n_events for b in ours.bin_by(ld.scalar("t"), bins=thirds)]
    assert uniform == [len(b.dataset) for b in theirs.bin_by(laddu.scalar("t"),
                                                              bins=laddu.Bin.uniform(3, low=-1.5, high=0.0))]


def test_bad_arguments_are_typed_errors_naming_what_is_wrong(events, parquet):
    ds = ld.read_parquet(parquet)
    with pytest.raises(ModelError, match="select needs a Predicate .* got Expr"):
        ds.select(ld.scalar("t"))
    with pytest.raises(SchemaError, match=r"'pol'.*events.parquet"):
        ds.select(ld.scalar("pol") > 0.1)
    with pytest.raises(ValueError, match=r"fraction must be a number in \[0, 1\], got 1.5"):
        ds.subsample(1.5)
    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*64\), got -1"):
        ds.bootstrap(seed=-1)
    with pytest.raises(ModelError, match="bin_by needs an expression, got str"):
        ds.bin_by("t", bins=ld.Bin([0.0, 1.0]))
    with pytest.raises(ModelError, match="bin edges must be finite and strictly increasing"):
        ld.Bin([0.0, 0.0, 1.0])
    with pytest.raises(ModelError, match="bins need at least two edges, got 1"):
        ld.Bin([0.0])
    with pytest.raises(ModelError, match=r"evaluate\(real=True\) needs a real-valued expression; this one is "
                                         "complex-valued"):
        ds.evaluate(ld.cis(ld.scalar("t")), real=True)  # laddu's sqrt of a real is real-typed
    empty = ds.select(ld.scalar("t") > 5.0)
    assert empty.n_events == 0 and empty.weights().shape == (0,)


@pytest.mark.slow
def test_a_selection_on_a_cluster_equals_the_local_one(tmp_path):
    distributed = pytest.importorskip("distributed")
    from cluster_helpers import local_cluster

    paths = ksks.write_sample(tmp_path, n_data=2000, n_mc=8000, seed=4)
    cut = ld.Vec4.event("kshort1").e() > 1.0

    def likelihood(execution):
        data, mc = (ld.read_parquet(paths[k], chunk_size=500).select(cut) for k in ("data", "accmc"))
        return ld.Likelihood([ld.NLL(ksks.model(), data=data, accepted_mc=mc)], execution=execution)

    x = [ksks.TRUTH[n] for n in ksks.TRUTH]
    local = likelihood(ld.Execution()).value_and_gradient(x)
    mass = (ld.Vec4.event("kshort1") + ld.Vec4.event("kshort2")).m().real()

    def binned(execution):  # a bootstrap replica of one mass bin, and the bin of the MC
        data, mc = (ld.read_parquet(paths[k], chunk_size=500).bin_by(mass, bins=ld.Bin([1.0, 1.4, 2.0]))[1]
                    .dataset for k in ("data", "accmc"))
        return ld.Likelihood([ld.NLL(ksks.model(), data=data.bootstrap(seed=3), accepted_mc=mc)],
                             execution=execution).value_and_gradient(x)

    binned_local = binned(ld.Execution())
    for client in local_cluster():
        assert isinstance(client, distributed.Client)
        remote = likelihood(ld.Execution(client=client)).value_and_gradient(x)
        # a selection of a dataset persisted on the cluster: its tasks depend on the futures
        # holding the parent's blocks, so Dask runs them on those blocks' workers
        held = dask.persist(ld.read_parquet(paths["data"], chunk_size=500))[0]
        distributed.wait(held, timeout=60)
        kept = held.select(cut)
        graph, keys = kept.partition_graph([], name="prep")
        futures = [p.graph[p.inputs] for p in held.partitions]
        assert graph.dependencies[keys[0][0]] == {futures[0].key[0]}
        mc = ld.read_parquet(paths["accmc"], chunk_size=500).select(cut)
        on_workers = ld.Likelihood([ld.NLL(ksks.model(), data=kept, accepted_mc=mc)],
                                   execution=ld.Execution(client=client)).value_and_gradient(x)
        binned_remote = binned(ld.Execution(client=client))
    assert remote[0] == local[0] and np.array_equal(remote[1], local[1])
    assert on_workers[0] == local[0] and np.array_equal(on_workers[1], local[1])
    assert binned_remote[0] == binned_local[0] and np.array_equal(binned_remote[1], binned_local[1])


def test_histograms_are_exact_laddus_and_do_not_depend_on_the_partitioning(events, parquet):
    p4s, scalars, weights = events
    t = scalars["t"]
    edges = [-1.5, -1.0, -0.5, -0.2]
    inside = [(t >= a) & (t < b) for a, b in zip(edges, edges[1:])]
    want = [math.fsum(weights[m]) for m in inside]
    errors = [math.sqrt(math.fsum(weights[m] ** 2)) for m in inside]
    for ds in _sources(events, parquet).values():
        h = ds.histogram(ld.scalar("t"), bin_edges=edges)
        assert h.counts == want and h.errors == errors
        assert h.underflow == math.fsum(weights[t < -1.5]) and h.overflow == math.fsum(weights[t >= -0.2])
        unit = ds.histogram(ld.scalar("t"), bin_edges=edges, event_weights=False,
                            weight=ld.scalar("t") * ld.scalar("t"))
        assert unit.counts == [math.fsum(t[m] ** 2) for m in inside]
    if laddu is not None:
        theirs = laddu.Dataset.from_arrays(p4s=p4s, scalars=scalars, weights=weights).histogram(
            laddu.scalar("t"), bin_edges=edges)
        assert np.allclose(h.counts, theirs.counts, rtol=1e-12, atol=0)
        assert np.allclose(h.errors, theirs.errors, rtol=1e-12, atol=0)
        assert h.overflow == pytest.approx(theirs.overflow, rel=1e-12) and h.bin_edges == theirs.bin_edges
        assert h.density().counts == pytest.approx(theirs.density().counts, rel=1e-12)
    with pytest.raises(ModelError, match="histogram needs an expression, got float"):
        ds.histogram(1.0, bin_edges=edges)
    with pytest.raises(ModelError, match="bin edges must be finite and strictly increasing"):
        ds.histogram(ld.scalar("t"), bin_edges=[0.0, -1.0])


@needs_laddu
def test_complex_expressions_are_binned_by_their_real_part_as_laddu_does():
    """``bin_by`` and ``histogram`` of a complex expression (``sqrt`` of a negative scalar is
    imaginary, ``Vec4.m()`` complex) use its real part, as laddu's do."""
    x = np.array([-4.0, 1.0, 4.0, 9.0, 0.3, -0.2])
    p4 = np.tile([2.0, 0.1, 0.2, 0.3], (x.size, 1))
    ours = ld.Dataset.from_arrays(p4s={"a": p4}, scalars={"x": x})
    theirs = laddu.Dataset.from_arrays(p4s={"a": p4}, scalars={"x": x})
    edges = [0.0, 1.0, 2.5, 5.0]
    for expr in (lambda lib: lib.scalar("x").sqrt(), lambda lib: lib.Vec4.event("a").m()):
        mine = ours.bin_by(expr(ld), bins=ld.Bin(edges))
        ref = theirs.bin_by(expr(laddu), bins=laddu.Bin(edges))
        assert [b.dataset.column("x").tolist() for b in mine] == [list(b.dataset.column("x")) for b in ref]
        h, r = ours.histogram(expr(ld), bin_edges=edges), theirs.histogram(expr(laddu), bin_edges=edges)
        assert (h.counts, h.underflow, h.overflow) == (list(r.counts), r.underflow, r.overflow)
