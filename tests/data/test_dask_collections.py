"""Datasets as Dask collections: from_dask, persist/compute, fsspec URLs, the chunk-size config.

The K_S K_S sample of ``conftest.py`` read through Dask (``dd.read_parquet``,
``dd.from_pandas``, Dask arrays, ``uproot.dask``) must give the NLL value and gradient of
``read_parquet`` of the same file to the last bit, keep the collection's partitioning and
compute nothing when built; wrong inputs get the typed, naming errors files get.
"""

from __future__ import annotations

import os
import pickle
import threading
import uuid

import dask
import dask.array as da
import dask.dataframe as dd
import fsspec
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from dask.callbacks import Callback

import laddu_dask as ld
from laddu_dask import ksks
from laddu_dask.data.checks import DEFAULT_CHUNK_SIZE
from laddu_dask.errors import DataChangedError, DataError, NonFiniteError, SchemaError

P4S = ksks.P4_NAMES
POINT = dict(ksks.TRUTH)


# ----------------------------------------------------------------------------- helpers


class CountTasks(Callback):
    """Counts the tasks Dask's local schedulers run while it is active."""

    def __init__(self) -> None:
        super().__init__()
        self.n = 0
        self._lock = threading.Lock()

    def _pretask(self, key, dsk, state) -> None:
        with self._lock:
            self.n += 1


CALLS: list[int] = []  # rows of every partition _counted saw
BLOCKS: list[int] = []  # rows of every block _counted_block saw


def _counted(frame: pd.DataFrame) -> pd.DataFrame:
    """A partition passed through unchanged, counting the call (a task of the user's graph)."""
    CALLS.append(len(frame))
    return frame


def _counted_block(block: np.ndarray) -> np.ndarray:
    BLOCKS.append(len(block))
    return block


def _load_rows(partition) -> int:
    return partition.load().n_events


def _nll(data: ld.Dataset, mc: ld.Dataset, **kw) -> tuple[float, np.ndarray]:
    lik = ld.Likelihood([ld.NLL(ksks.model(), data=data, accepted_mc=mc)], **kw)
    return lik.value_and_gradient(POINT)


@pytest.fixture(scope="module")
def reference(ksks_sample) -> tuple[float, np.ndarray]:
    """Value and gradient of read_parquet of the sample files."""
    return _nll(ld.read_parquet(ksks_sample["data"]), ld.read_parquet(ksks_sample["accmc"]))


@pytest.fixture(scope="module")
def row_groups(ksks_sample, tmp_path_factory) -> dict[str, str]:
    """The sample rewritten with row groups of 1000 rows (dd.read_parquet splits on them)."""
    out = tmp_path_factory.mktemp("rowgroups")
    paths = {}
    for key in ("data", "accmc"):
        paths[key] = str(out / f"{key}.parquet")
        pq.write_table(pq.read_table(ksks_sample[key]), paths[key], row_group_size=1000)
    return paths


def _assert_same(got: tuple[float, np.ndarray], ref: tuple[float, np.ndarray]) -> None:
    assert got[0] == ref[0]
    np.testing.assert_array_equal(got[1], ref[1])


def _batches(ds: ld.Dataset) -> tuple[dict[str, np.ndarray], np.ndarray]:
    parts = [ds.load_partition(i) for i in range(ds.n_partitions)]
    cols = {c: np.concatenate([b.columns[c] for b in parts]) for c in parts[0].columns}
    return cols, np.concatenate([b.weights for b in parts])


def _assert_same_events(a: ld.Dataset, b: ld.Dataset) -> None:
    (ca, wa), (cb, wb) = _batches(a), _batches(b)
    assert ca.keys() == cb.keys()
    for c in ca:
        np.testing.assert_array_equal(ca[c], cb[c])
    np.testing.assert_array_equal(wa, wb)


# ----------------------------------------------------------------------------- from_dask


def test_from_dask_dataframes_keep_partitions_compute_nothing_and_match(ksks_sample, row_groups,
                                                                        reference):
    frames = {
        "data": dd.read_parquet(row_groups["data"], split_row_groups=True),
        "accmc": dd.from_pandas(pd.read_parquet(ksks_sample["accmc"]), npartitions=3),
    }
    with CountTasks() as counter:
        data, mc = (ld.Dataset.from_dask(frames[k]) for k in ("data", "accmc"))
        assert (data.n_events, mc.n_events) == (3000, 4000)
        repr(data), data._repr_html_()
    assert counter.n == 0  # nothing computed, nothing read
    assert data.n_partitions == frames["data"].npartitions == 3
    assert mc.n_partitions == frames["accmc"].npartitions == 3
    assert data.chunk_size_given and mc.chunk_size_given  # the runtime keeps the user's partitions
    assert data.schema == ld.read_parquet(ksks_sample["data"]).schema
    _assert_same(_nll(data, mc), reference)
    assert ld.Dataset(frames["data"]).n_partitions == 3  # Dataset(ddf) is from_dask(ddf)


def test_from_dask_counts_its_tasks_only_when_evaluated(ksks_sample, row_groups, reference):
    """A counting task in the user's graph runs at the first evaluation, never at construction."""
    base = dd.read_parquet(row_groups["data"], split_row_groups=True)
    frame = base.map_partitions(_counted, meta=base._meta)
    CALLS.clear()
    BLOCKS.clear()
    data = ld.Dataset.from_dask(frame, lengths=[1000, 1000, 1000])
    table = pq.read_table(ksks_sample["accmc"])
    p4s = {n: da.from_array(np.column_stack([table.column(f"{n}_{c}").to_numpy()
                                             for c in ("e", "px", "py", "pz")]), chunks=(1500, 4))
           for n in P4S}
    counted = {n: a.map_blocks(_counted_block, meta=np.empty((0, 4))) for n, a in p4s.items()}
    mc = ld.Dataset.from_dask(p4s=counted,
                              weights=da.from_array(table.column("weight").to_numpy(), chunks=1500))
    assert (CALLS, BLOCKS) == ([], [])  # built, nothing computed
    assert (data.n_partitions, mc.n_partitions) == (3, 3)
    _assert_same(_nll(data, mc), reference)
    assert set(CALLS) == {1000} and len(CALLS) >= 3  # every partition computed by its own graph
    assert set(BLOCKS) == {1500, 1000} and len(BLOCKS) >= 4 * 3
    CALLS.clear()
    counted = ld.Dataset.from_dask(frame, lengths=True)  # counting the rows runs the graph once
    assert counted.n_events == 3000 and CALLS == [1000] * 3


def _zero_frame() -> dd.DataFrame:
    """Nine events in three partitions, the last with a zero ``m``."""
    return dd.from_pandas(pd.DataFrame({"x": np.arange(9.0), "m": np.r_[np.ones(8), 0.0]}), npartitions=3)


def _zero_at_event_7(memory_policy: str = "fastest") -> ld.Dataset:
    """A filtered frame whose event 7 (in its last partition) has a zero intensity: its NLL's
    first evaluation raises, naming that event by the offsets learned while preparing it."""
    zero = _zero_frame()
    kept = ld.Dataset.from_dask(zero[zero.x != 1.0], memory_policy=memory_policy)
    nll = ld.NLL(ld.Model(ld.scalar("m") * ld.parameter("a")), data=kept,
                 accepted_mc=ld.Dataset.from_arrays(scalars={"m": np.ones(4)}))
    with pytest.raises(ld.NonPositiveIntensityError,
                       match=r"0\.0 at event 7 \(dask DataFrame .* partition 2\)"):
        ld.Likelihood([nll]).value_and_gradient([1.0])
    return kept


def test_a_filtered_frame_builds_lazily_and_equals_the_eager_result(ksks_sample, row_groups):
    """A filter leaves Dask without partition lengths: from_dask computes nothing, counts the
    rows at the first use, and gives bitwise the likelihood of the same events counted
    eagerly (lengths=True) and of the filtered pandas frame; a bad value that survives the
    filter is named by its event, counted across partitions."""
    base = dd.read_parquet(row_groups["data"], split_row_groups=True)
    frame = base.map_partitions(_counted, meta=base._meta)
    cut = frame[frame.kshort1_e > frame.kshort1_e.mean().compute()]  # (the mean computed here, by us)
    mc = ld.read_parquet(ksks_sample["accmc"])
    CALLS.clear()
    with CountTasks() as counter:
        lazy = ld.Dataset.from_dask(cut)
        text = repr(lazy) + lazy._repr_html_()
    assert counter.n == 0 and CALLS == []  # built and shown: nothing computed
    assert not lazy.lengths_known and lazy.n_partitions == 3 and "learned at the first use" in text
    got = _nll(lazy, mc)
    # learned while the first evaluation prepared it: each block computed once, no counting pass
    assert lazy.lengths_known and sorted(CALLS) == [1000] * 3
    assert "learned while each block was read once and prepared" in lazy.memory_decision()["reason"]
    eager = ld.Dataset.from_dask(cut, lengths=True)
    filtered = pq.read_table(ksks_sample["data"]).to_pandas()
    filtered = filtered[filtered.kshort1_e > filtered.kshort1_e.mean()]
    assert lazy.n_events == eager.n_events == len(filtered) and 0 < len(filtered) < 3000
    assert [p.n_events for p in lazy.partitions] == [p.n_events for p in eager.partitions]
    _assert_same(got, _nll(eager, mc))
    _assert_same(got, _nll(ld.Dataset.from_dask(dd.from_pandas(filtered, npartitions=2)), mc))
    _assert_same_events(lazy, eager)
    # a lazy accepted MC summed into sufficient statistics: learned in that one pass too
    rng = np.random.default_rng(5)
    frame = dd.from_pandas(pd.DataFrame({"x": rng.uniform(0, 1, 900), "m": rng.uniform(0.5, 1.5, 900)}),
                           npartitions=3)
    counted = frame.map_partitions(_counted, meta=frame._meta)
    model = ld.Model((ld.complex(ld.parameter("a"), ld.parameter("b")) / ld.scalar("m")).norm_sqr())
    data = ld.Dataset.from_arrays(scalars={"m": rng.uniform(0.5, 1.5, 50)})

    def simple(mc: ld.Dataset) -> tuple[float, np.ndarray]:
        return ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)]).value_and_gradient([1.0, 0.5])

    lazy_mc = ld.Dataset.from_dask(counted[counted.x > 0.3])
    CALLS.clear()
    got = simple(lazy_mc)
    assert lazy_mc.lengths_known and CALLS == [300] * 3  # each block read once
    assert lazy_mc.memory_decision()["strategy"] == "statistics"
    _assert_same(got, simple(ld.Dataset.from_dask(counted[counted.x > 0.3], lengths=True)))
    # a NaN in the last partition, kept by the filter: named by its event in the whole dataset
    bad = pd.DataFrame({"x": np.arange(9.0), "m": np.r_[np.ones(8), np.nan]})
    ddf = dd.from_pandas(bad, npartitions=3)
    kept = ld.Dataset.from_dask(ddf[ddf.x != 1.0])  # 8 events: the NaN is event 7
    with pytest.raises(DataError, match=r"column 'm' .*event 7"):
        kept.load_partition(2)
    kept = ld.Dataset.from_dask(ddf[ddf.x != 1.0])  # the same through an evaluation's preparation
    nll = ld.NLL(ld.Model(ld.scalar("m") * ld.parameter("a")), data=kept, accepted_mc=kept)
    with pytest.raises(DataError, match=r"column 'm' .*event 7 "):
        ld.Likelihood([nll]).value_and_gradient([1.0])
    # a zero intensity at the last event, found by the kernels: the learned offsets name it
    assert "learned while each block" in _zero_at_event_7().memory_decision()["reason"]
    zero = _zero_frame()
    # an infinite amplitude product in a lazy accepted MC's statistics: named the same way
    nll = ld.NLL(model, data=ld.Dataset.from_arrays(scalars={"m": np.ones(4)}),
                 accepted_mc=ld.Dataset.from_dask(zero[zero.x != 1.0]))
    with pytest.raises(NonFiniteError, match=r"non-finite amplitude product at event 7 \(dask DataFrame"):
        ld.Likelihood([nll]).value_and_gradient([1.0, 0.5])
    # a filter that keeps nothing: building the term computes nothing; its first evaluation says so
    CALLS.clear()
    with CountTasks() as counter:
        nll = ld.NLL(ld.Model(ld.scalar("m") * ld.parameter("a")),
                     data=ld.Dataset.from_dask(zero[zero.x > 99]),
                     accepted_mc=ld.Dataset.from_arrays(scalars={"m": np.ones(4)}))
    assert counter.n == 0
    with pytest.raises(DataError, match=r"term 'nll': its data has no events \(dask DataFrame"):
        ld.Likelihood([nll]).value_and_gradient([1.0])


def test_a_lazy_frame_that_outgrows_the_budget_learns_its_lengths_onto_the_disk():
    """Learning the lengths while preparing goes on past the host budget onto this machine's
    disk tier (memory_policy "fastest", or "disk" from the first block): every block is
    computed once, no pass only counts, and the evaluations give the bits of the same events
    counted eagerly, kept resident; offsets learned after the blocks were written still name
    the event at fault, and a lost file is prepared again from the source."""
    rng = np.random.default_rng(1)
    frame = dd.from_pandas(pd.DataFrame({"x": rng.uniform(0, 1, 200_000),
                                         "m": rng.uniform(0.5, 1.5, 200_000)}), npartitions=100)
    counted = frame.map_partitions(_counted, meta=frame._meta)
    cut = counted[counted.x > 0.1]  # about 180,000 events, 2.75 MiB prepared; lengths unknown to Dask
    model = ld.Model(ld.scalar("m") * ld.parameter("a"))
    mc = ld.Dataset.from_arrays(scalars={"m": rng.uniform(0.5, 1.5, 1000)})

    def likelihood(data: ld.Dataset, **kw) -> ld.Likelihood:
        return ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)], **kw)

    reference = [likelihood(ld.Dataset.from_dask(cut, lengths=True)).value_and_gradient([a])
                 for a in (1.3, 0.7)]
    for policy, memory in (("fastest", "1 MiB"), ("disk", None)):
        lazy = ld.Dataset.from_dask(cut, memory_policy=policy)
        CALLS.clear()
        lik = likelihood(lazy, execution=ld.Execution(memory=memory))
        _assert_same(lik.value_and_gradient([1.3]), reference[0])
        assert sorted(CALLS) == [2000] * 100, policy  # each block computed once: read and prepared
        decision = lazy.memory_decision()
        assert decision["strategy"] == "disk", policy
        assert "learned while each block was read once and prepared onto the disk" in decision["reason"]
        assert lazy.lengths_known and lazy.n_events == int((frame.x > 0.1).sum().compute())
        handles = lik.terms[0].prepare(lik.execution).data.partitions
        os.remove(handles[-1].path)  # lost: prepared again from the source, at its learned offset
        _assert_same(lik.value_and_gradient([0.7]), reference[1])
        assert handles[-1].load().offset == sum(h.n for h in handles[:-1])  # written again
    roomy = ld.Dataset.from_dask(cut)
    _assert_same(likelihood(roomy, execution=ld.Execution(memory="4 MiB")).value_and_gradient([1.3]),
                 reference[0])
    assert roomy.memory_decision()["strategy"] == "resident"
    assert "learned while each block was read once and prepared;" in roomy.memory_decision()["reason"] + ";"
    # a zero intensity in the last block, found by the kernels reading the disk tier: named by
    # its event in the whole dataset (the offsets were learned after the blocks were written)
    assert "prepared onto the disk" in _zero_at_event_7("disk").memory_decision()["reason"]


def test_from_dask_arrays_and_from_arrays_of_dask_arrays(ksks_arrays, reference):
    (dp4, dw), (mp4, mw) = ksks_arrays["data"], ksks_arrays["accmc"]
    with CountTasks() as counter:
        data = ld.Dataset.from_dask(p4s={n: da.from_array(a, chunks=(700, 4)) for n, a in dp4.items()},
                                    weights=da.from_array(dw, chunks=700))
        mc = ld.Dataset.from_arrays(p4s={n: da.from_array(a, chunks=(1000, 4)) for n, a in mp4.items()},
                                    weights=mw)  # NumPy weights are chunked like the Dask arrays
        split = ld.Dataset.from_arrays(p4s={n: da.from_array(a, chunks=(1000, 4)) for n, a in mp4.items()},
                                       chunk_size=300)
    assert counter.n == 0
    assert [p.n_events for p in data.partitions] == [700] * 4 + [200]
    assert mc.n_partitions == 4 and mc.chunk_size_given
    assert [p.n_events for p in split.partitions][:5] == [300, 300, 300, 100, 300]  # chunks split
    _assert_same(_nll(data, mc), reference)
    assert ld.Dataset.from_dask({"p4s": {"k": da.ones((5, 4), chunks=(2, 4))}}).n_partitions == 3
    # arrays of unknown chunks (a boolean mask): their rows learned while preparing, same bits
    energy = dp4["kshort1"][:, 0]  # (the beam's is one number)
    mask = energy > np.median(energy)
    keep = da.from_array(energy, chunks=700) > np.median(energy)
    lazy = ld.Dataset.from_dask(p4s={n: da.from_array(a, chunks=(700, 4))[keep] for n, a in dp4.items()},
                                weights=da.from_array(dw, chunks=700)[keep])
    eager = ld.Dataset.from_arrays(p4s={n: a[mask] for n, a in dp4.items()}, weights=dw[mask])
    assert not lazy.lengths_known
    _assert_same(_nll(lazy, mc), _nll(eager, mc))
    assert "learned while each block" in lazy.memory_decision()["reason"]
    kept = [int(mask[i:i + 700].sum()) for i in range(0, len(dw), 700)]
    assert [p.n_events for p in lazy.partitions] == kept


def test_dask_partitions_pickle_with_only_their_block(ksks_sample):
    frame = dd.from_pandas(pd.read_parquet(ksks_sample["data"]), npartitions=3)
    ds = ld.Dataset.from_dask(frame)
    whole = len(pickle.dumps(pd.read_parquet(ksks_sample["data"])))
    for i, part in enumerate(ds.partitions):
        blob = pickle.dumps(part)
        assert len(blob) < whole / 2  # one block's graph, not the whole frame
        batch = pickle.loads(blob).load(["beam_e"], np.float32)
        expected = frame.partitions[i].compute()["beam_e"].to_numpy().astype(np.float32)
        np.testing.assert_array_equal(batch.columns["beam_e"], expected)
        assert batch.columns["beam_e"].dtype == np.float32 and batch.offset == 1000 * i
    x = np.random.default_rng(1).normal(size=(3000, 4))
    arrays = ld.Dataset.from_dask(p4s={"k": da.from_array(x, chunks=(1000, 4))})
    blob = pickle.dumps(arrays.partitions[2])
    assert len(blob) < x.nbytes / 2
    np.testing.assert_array_equal(pickle.loads(blob).load(["k_py"]).columns["k_py"], x[2000:, 2])


def test_with_chunk_size_splits_dask_blocks(ksks_sample):
    ds = ld.Dataset.from_dask(dd.from_pandas(pd.read_parquet(ksks_sample["data"]), npartitions=2))
    split = ds.with_chunk_size(600)
    assert [p.n_events for p in split.partitions] == [600, 600, 300, 600, 600, 300]
    # a piece computes its whole block: the runtime's memory plan counts it
    assert split.partitions[0].read_bytes == 1500 * 8 * (16 + 1)
    assert split.persist().partitions[0].read_bytes == 0
    assert split.sum_weights() == ds.sum_weights() == 3000.0
    _assert_same_events(split, ds)
    assert ds.with_chunk_size(None).n_partitions == 2 and ds.with_memory_policy("streaming").n_partitions == 2


# ----------------------------------------------------------------------------- errors


def _frame(**columns) -> dd.DataFrame:
    return dd.from_pandas(pd.DataFrame(columns), npartitions=2)


def test_from_dask_wrong_frames_get_typed_naming_errors():
    n = 6
    ones = np.ones(n)
    with pytest.raises(SchemaError, match=r"four-vector 'beam' in dask DataFrame 'frompandas-\w+' is "
                                          r"incomplete: it lacks column\(s\) 'beam_pz'"):
        ld.Dataset.from_dask(_frame(beam_e=ones, beam_px=ones, beam_py=ones))
    with pytest.raises(SchemaError, match=r"column 'weight' in dask DataFrame '.*' has type (string|object)"
                                          r"; expected a number"):
        ld.Dataset.from_dask(_frame(x=ones, weight=["a"] * n))
    with pytest.raises(SchemaError, match=r"column 'k_px' in dask DataFrame '.*' has type (string|object)"):
        ld.Dataset.from_dask(_frame(k_e=ones, k_px=np.array([object()] * n), k_py=ones, k_pz=ones))
    kept = ld.Dataset.from_dask(_frame(x=ones, run=["r1"] * n))  # a string scalar is kept aside
    assert kept.schema.scalars == ("x",)
    with pytest.raises(SchemaError, match=r"load needs column 'run', which in dask DataFrame .* has "
                                          r"type (string|object): not a number"):
        kept.load_partition(0, ["run"])
    with pytest.raises(SchemaError, match="column names must be strings"):
        ld.Dataset.from_dask(dd.from_pandas(pd.DataFrame({0: ones}), npartitions=1))
    filtered = _frame(x=np.arange(6.0))
    assert not ld.Dataset.from_dask(filtered[filtered.x > 2]).lengths_known  # counted at first use
    with pytest.raises(DataError, match=r"lengths must hold one non-negative integer per partition .*\(2\)"):
        ld.Dataset.from_dask(filtered[filtered.x > 2], lengths=[3])
    with pytest.raises(DataError, match=r"lengths=\(2, 2\) contradict the lengths Dask knows .*: \(3, 3\)"):
        ld.Dataset.from_dask(filtered, lengths=[2, 2])
    wrong = ld.Dataset.from_dask(filtered[filtered.x > 2], lengths=[3, 3])  # really [0, 3]
    with pytest.raises(DataError, match=r"dask DataFrame '.*' partition 0 has 0 rows, but the dataset "
                                        r"was built for 3"):
        wrong.load_partition(0)
    assert ld.Dataset.from_dask(filtered[filtered.x > 2], lengths=True).n_events == 3


def test_from_dask_bad_values_name_column_and_event():
    x = np.arange(6.0)
    x[4] = np.inf
    with pytest.raises(DataError, match=r"column 'x' has a non-finite value \(inf\) at event 4 "
                                        r"\(dask DataFrame '.*' partition 1\)"):
        ld.Dataset.from_dask(_frame(x=x)).load_partition(1)
    nullable = pd.array([1.0, 2.0, None, 4.0], dtype="Float64")
    ds = ld.Dataset.from_dask(dd.from_pandas(pd.DataFrame({"x": nullable}), npartitions=2))
    with pytest.raises(DataError, match=r"column 'x' has a missing \(null\) value at event 2 "):
        ds.load_partition(1)
    big = ld.Dataset.from_dask(scalars={"s": da.from_array(np.array([1.0, 1e300]), chunks=1)})
    with pytest.raises(DataError, match=r"column 's' has a value \(1e\+300\) that overflows float32 at "
                                        r"event 1 \(dask arrays chunk 1\)"):
        big.load_partition(1, dtype=np.float32)


def test_from_dask_wrong_arrays_get_typed_naming_errors():
    p4 = da.ones((10, 4), chunks=(5, 4))
    with pytest.raises(DataError, match=r"the chunks of dask arrays along the events do not line up: "
                                        r"four-vector 'k' has \(5, 5\), scalar 's' has \(4, 6\)"):
        ld.Dataset.from_dask(p4s={"k": p4}, scalars={"s": da.ones(10, chunks=((4, 6),))})
    with pytest.raises(DataError, match=r"four-vector 'k' is chunked along its components"):
        ld.Dataset.from_dask(p4s={"k": da.ones((10, 4), chunks=(5, 2))})
    with pytest.raises(DataError, match=r"scalar 's' must hold real numbers, got dtype <U1"):
        ld.Dataset.from_dask(p4s={"k": p4}, scalars={"s": da.from_array(np.array(["a"] * 10), chunks=5)})
    with pytest.raises(DataError, match=r"four-vector 'k' must have shape \(n_events, 4\)"):
        ld.Dataset.from_dask(p4s={"k": da.ones((10, 3), chunks=5)})
    with pytest.raises(DataError, match=r"arrays have different numbers of events \(four-vector 'k': 10, "
                                        r"weights: 9\)"):
        ld.Dataset.from_dask(p4s={"k": p4}, weights=da.ones(9, chunks=5))
    s = da.arange(10.0, chunks=5)
    lazy = ld.Dataset.from_dask(scalars={"s": s[s > 2]})
    assert not lazy.lengths_known and lazy.n_events == 7 and lazy.lengths_known
    assert ld.Dataset.from_dask(scalars={"s": s[s > 2]}, lengths=True).n_events == 7
    with pytest.raises(TypeError, match=r"pass Dask arrays as from_dask\(p4s=..."):
        ld.Dataset.from_dask(p4)
    with pytest.raises(TypeError, match="use from_arrays for NumPy arrays"):
        ld.Dataset.from_dask(scalars={"s": np.ones(3)})
    with pytest.raises(TypeError, match="read_parquet reads files; for a Dask collection .*from_dask"):
        ld.read_parquet(_frame(x=np.ones(4)))
    with pytest.raises(TypeError, match=r"got str \(for Parquet files use read_parquet\)"):
        ld.Dataset("data.parquet")


# ----------------------------------------------------------------------------- the collection


def test_dataset_is_a_dask_collection_that_computes_and_persists(ksks_sample):
    CALLS.clear()
    base = dd.from_pandas(pd.read_parquet(ksks_sample["data"]), npartitions=3)
    frame = base.map_partitions(_counted, meta=base._meta)  # with meta, Dask does not call it
    ds = ld.Dataset.from_dask(frame, lengths=[1000] * 3)
    files = ld.read_parquet(ksks_sample["data"], chunk_size=1200)
    assert dask.is_dask_collection(ds) and dask.is_dask_collection(files)
    assert dask.base.tokenize(files) == dask.base.tokenize(files)
    assert len(ds.__dask_keys__()) == 3 and CALLS == []
    assert ds.load_partition(1).offset == 1000 and CALLS == [1000]  # that partition's graph alone
    CALLS.clear()
    (computed,) = dask.compute(ds)
    assert len(CALLS) == 3
    assert isinstance(computed, ld.Dataset) and [p.n_events for p in computed.partitions] == [1000] * 3
    assert computed.schema == ds.schema and computed.sources == ds.sources
    persisted = files.persist()
    assert [p.n_events for p in persisted.partitions] == [1200, 1200, 600]
    assert persisted.chunk_size_given and not ld.read_parquet(ksks_sample["data"]).persist().chunk_size_given
    _assert_same_events(persisted, files)
    _assert_same_events(computed, files)
    assert persisted.sum_weights() == files.sum_weights() == 3000.0
    # graphs built on the persisted dataset depend on its persisted keys, holding the batches
    graph, keys = persisted.partition_graph(["beam_e"], name="prep")
    held = graph.layers[files.__dask_layers__()[0]]
    assert set(held) == set(files.__dask_keys__())
    assert graph.dependencies[keys[0][0]] == {files.__dask_layers__()[0]}
    assert all(isinstance(v, ld.EventBatch) for v in dict(held).values())
    CALLS.clear()
    (again,) = dask.persist(ds)
    assert len(CALLS) == 3
    again.sum_weights(), [again.load_partition(i) for i in range(3)]
    assert len(CALLS) == 3  # reading a persisted dataset computes nothing again


def test_persist_on_a_cluster_holds_futures_and_gives_the_same_nll(ksks_sample, row_groups, reference):
    distributed = pytest.importorskip("distributed")
    data = ld.Dataset.from_dask(dd.read_parquet(row_groups["data"], split_row_groups=True))
    mc = ld.read_parquet(ksks_sample["accmc"], chunk_size=1500)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        # a partition computes its block with the synchronous scheduler inside a worker's task
        assert client.submit(_load_rows, data.partitions[1]).result(timeout=30) == 1000
        pdata, pmc = dask.persist(data, mc)
        distributed.wait([pdata, pmc], timeout=30)
        for ds in (pdata, pmc):
            held = [p.graph[p.inputs] for p in ds.partitions]
            assert all(isinstance(f, distributed.Future) and f.status == "finished" for f in held)
            # a graph built on the persisted dataset depends on the futures' keys
            graph, keys = ds.partition_graph([], name="prep")
            layer = held[0].key[0]
            assert set(graph.layers[layer]) == {f.key for f in held}
            assert graph.dependencies[keys[0][0]] == {layer}
            assert all(client.who_has(held).values())  # held by the workers
        assert pdata.n_partitions == 3 and pmc.n_partitions == 3
        assert pmc.sum_weights() == 4000.0
        _assert_same(_nll(pdata, pmc), reference)  # the local pool, fetching the futures
        _assert_same(_nll(pdata, pmc, execution=ld.Execution(client=client)), reference)
        local = pmc.compute()
    _assert_same_events(local, mc)  # in this process: readable with the cluster gone


def test_a_filtered_frame_learns_its_lengths_on_a_cluster(ksks_sample, row_groups):
    """On a cluster too, a filtered frame's rows are learned while the workers prepare it (one
    read of each block, no counting pass), with the bits of the eager dataset, offsets that
    name an event in the whole dataset, and its empty filter reported at the first evaluation."""
    distributed = pytest.importorskip("distributed")
    base = dd.read_parquet(row_groups["data"], split_row_groups=True)
    frame = base.map_partitions(_counted, meta=base._meta)
    cut = frame[frame.kshort1_e > frame.kshort1_e.mean().compute()]
    mc = ld.read_parquet(ksks_sample["accmc"], chunk_size=1500)
    reference = _nll(ld.Dataset.from_dask(cut, lengths=True), mc)
    zero = _zero_frame()
    ones = ld.Dataset.from_arrays(scalars={"m": np.ones(4)})
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        execution = ld.Execution(client=client)
        lazy = ld.Dataset.from_dask(cut)
        CALLS.clear()
        got = _nll(lazy, mc, execution=execution)
        assert lazy.lengths_known and sorted(CALLS) == [1000] * 3  # each block read once, on the workers
        assert "learned while each block was read once" in lazy.memory_decision()["reason"]
        _assert_same(got, reference)
        # the disk tier on a cluster is the workers' spill of resident partitions: learned alike
        on_disk = ld.Dataset.from_dask(cut, memory_policy="disk")
        CALLS.clear()
        _assert_same(_nll(on_disk, mc, execution=execution), reference)
        assert on_disk.lengths_known and sorted(CALLS) == [1000] * 3  # no counting pass first
        reason = on_disk.memory_decision()["reason"]
        assert "spills to its local disk" in reason and "learned while each block was read once" in reason
        kept = ld.Dataset.from_dask(zero[zero.x != 1.0])
        nll = ld.NLL(ld.Model(ld.scalar("m") * ld.parameter("a")), data=kept, accepted_mc=ones)
        with pytest.raises(ld.NonPositiveIntensityError,
                           match=r"0\.0 at event 7 \(dask DataFrame .* partition 2\)"):
            ld.Likelihood([nll], execution=execution).value_and_gradient([1.0])
        nan = dd.from_pandas(pd.DataFrame({"x": np.arange(9.0), "m": np.r_[np.ones(8), np.nan]}),
                             npartitions=3)
        nll = ld.NLL(ld.Model(ld.scalar("m") * ld.parameter("a")),
                     data=ld.Dataset.from_dask(nan[nan.x != 1.0]), accepted_mc=ones)
        with pytest.raises(DataError, match=r"column 'm' .*event 7 "):
            ld.Likelihood([nll], execution=execution).value_and_gradient([1.0])
        # a lazy accepted MC summed into sufficient statistics by the workers
        model = ld.Model((ld.complex(ld.parameter("a"), ld.parameter("b")) / ld.scalar("m")).norm_sqr())
        lazy_mc = ld.Dataset.from_dask(zero[zero.x != 1.0])
        nll = ld.NLL(model, data=ones, accepted_mc=lazy_mc)
        with pytest.raises(NonFiniteError, match=r"non-finite amplitude product at event 7 \(dask DataFrame"):
            ld.Likelihood([nll], execution=execution).value_and_gradient([1.0, 0.5])
        lazy_mc = ld.Dataset.from_dask(zero[zero.m > 0.5])
        got = ld.Likelihood([ld.NLL(model, data=ones, accepted_mc=lazy_mc)],
                            execution=execution).value_and_gradient([1.0, 0.5])
        assert lazy_mc.lengths_known and [p.n_events for p in lazy_mc.partitions] == [3, 3, 2]
        assert lazy_mc.memory_decision()["strategy"] == "statistics"
        eager = ld.Dataset.from_dask(zero[zero.m > 0.5], lengths=True)
        reference = ld.Likelihood([ld.NLL(model, data=ones, accepted_mc=eager)]).value_and_gradient(
            [1.0, 0.5])
        _assert_same(got, reference)


# ----------------------------------------------------------------------------- uproot, dask-awkward


def test_uproot_dask_arrays_go_through_from_dask(ksks_sample, tmp_path, reference):
    uproot = pytest.importorskip("uproot", reason="uproot is not installed (optional input)")
    # not in the test extra: dask-awkward (2026.2) requires dask < 2025.4, older than the rest of the suite's
    pytest.importorskip("dask_awkward", reason="dask-awkward is not installed (optional input; not in the "
                        "test extra: it requires dask < 2025.4)")
    root = {}
    for key in ("data", "accmc"):
        table = pq.read_table(ksks_sample[key])
        root[key] = str(tmp_path / f"{key}.root")
        with uproot.recreate(root[key]) as f:
            f["events"] = {n: table.column(n).to_numpy() for n in table.column_names}
    arrays = {k: uproot.dask(f"{path}:events", step_size=1000) for k, path in root.items()}
    with CountTasks() as counter:
        data, mc = (ld.Dataset.from_dask(arrays[k]) for k in ("data", "accmc"))
    assert counter.n == 0
    assert (data.n_partitions, mc.n_partitions) == (3, 4) == (arrays["data"].npartitions, 4)
    _assert_same(_nll(data, mc), reference)
    flat = ld.Dataset.from_dask(scalars={"w": arrays["data"]["weight"]})  # a flat dask-awkward array
    assert flat.n_partitions == 3 and flat.load_partition(2).columns["w"].sum() == 1000.0
    unknown = uproot.dask({root["data"]: "events"}, open_files=False)
    assert not ld.Dataset.from_dask(unknown).lengths_known
    assert ld.Dataset.from_dask(unknown, lengths=True).n_events == 3000


# ----------------------------------------------------------------------------- fsspec URLs


def test_read_parquet_reads_fsspec_urls(ksks_sample, tmp_path):
    fs = fsspec.filesystem("memory")
    root = f"/laddu-{uuid.uuid4().hex}"
    fs.put(ksks_sample["data"], f"{root}/run/a.parquet")
    fs.put(ksks_sample["accmc"], f"{root}/run/b.parquet")
    local = ld.read_parquet([ksks_sample["data"], ksks_sample["accmc"]], chunk_size=1000)
    for url in (f"memory://{root}/run", f"memory://{root}/run/*.parquet",
                [f"memory://{root}/run/a.parquet", f"memory://{root}/run/b.parquet"]):
        ds = ld.read_parquet(url, chunk_size=1000)
        assert ds.sources == (f"memory://{root}/run/a.parquet", f"memory://{root}/run/b.parquet")
        _assert_same_events(ds, local)
    (tmp_path / "run").mkdir()
    fsspec.filesystem("file").put(ksks_sample["data"], str(tmp_path / "run" / "a.parquet"))
    on_disk = ld.read_parquet(f"file://{tmp_path}/run", chunk_size=1000)
    assert on_disk.sources == (f"file://{tmp_path}/run/a.parquet",)
    assert on_disk.partitions[0].identity.mtime_ns > 0
    _assert_same_events(on_disk, ld.read_parquet(ksks_sample["data"], chunk_size=1000))
    part = pickle.loads(pickle.dumps(ld.read_parquet(f"memory://{root}/run/a.parquet").partitions[0]))
    assert part.load().n_events == 3000  # the filesystem travels with the partition

    ds = ld.read_parquet(f"memory://{root}/run/a.parquet")
    fs.put(ksks_sample["accmc"], f"{root}/run/a.parquet")  # rewritten under the dataset
    with pytest.raises(DataChangedError, match=rf"memory://{root}/run/a.parquet changed on disk since "
                                               r"it was opened \(size 3\d+ -> 4\d+ bytes; modified"):
        ds.load_partition(0)
    fs.rm(f"{root}/run/a.parquet")
    with pytest.raises(DataChangedError, match=rf"memory://{root}/run/a.parquet was deleted or moved"):
        ds.load_partition(0)
    with pytest.raises(DataError, match=rf"file memory://{root}/run/b.parquet is given twice"):
        ld.read_parquet([f"memory://{root}/run", f"memory://{root}/run/b.parquet"])
    with pytest.raises(FileNotFoundError, match=rf"no files match 'memory://{root}/none/\*.parquet'"):
        ld.read_parquet(f"memory://{root}/none/*.parquet")


# ----------------------------------------------------------------------------- chunk-size config


def test_chunk_size_comes_from_the_dask_config(ksks_sample):
    frame = dd.from_pandas(pd.read_parquet(ksks_sample["data"]), npartitions=2)
    default = ld.read_parquet(ksks_sample["data"])
    assert (default.chunk_size, default.chunk_size_given) == (DEFAULT_CHUNK_SIZE, False)
    with dask.config.set({"laddu-dask.chunk-size": 700}):
        files = ld.read_parquet(ksks_sample["data"])
        arrays = ld.Dataset.from_arrays(scalars={"x": np.zeros(1500)})
        explicit = ld.read_parquet(ksks_sample["data"], chunk_size=1000)
        kept = ld.Dataset.from_dask(frame)  # a Dask collection keeps its own partitions
        assert default.with_chunk_size(None).chunk_size == 700
    assert [p.n_events for p in files.partitions] == [700] * 4 + [200] and files.chunk_size_given
    assert [p.n_events for p in arrays.partitions] == [700, 700, 100] and arrays.chunk_size_given
    assert explicit.n_partitions == 3 and kept.n_partitions == 2
    assert files.with_memory_policy("streaming").chunk_size == 700  # the choice sticks
    with dask.config.set({"laddu-dask.chunk-size": "lots"}):
        with pytest.raises(ValueError, match="Dask config 'laddu-dask.chunk-size': chunk_size must be a "
                                             "positive integer or None, got 'lots'"):
            ld.read_parquet(ksks_sample["data"])


@pytest.mark.parametrize("policy", ["fastest", "disk"])
def test_a_chunk_size_that_splits_unknown_blocks_prepares_its_own_partitions(policy):
    """Arrays of unknown chunks with a chunk size that splits their blocks: the partitions are
    pieces of blocks, so what a preparation learned block by block is not kept as them; the
    evaluation gives the bits of the same events in memory."""
    rng = np.random.default_rng(2)
    x = rng.uniform(0.5, 1.5, 3000)
    keep = da.from_array(x, chunks=1000) > 0.7
    lazy = ld.Dataset.from_arrays(scalars={"m": da.from_array(x, chunks=1000)[keep]}, chunk_size=300,
                                  memory_policy=policy)
    eager = ld.Dataset.from_arrays(scalars={"m": x[x > 0.7]}, chunk_size=300)
    mc = ld.Dataset.from_arrays(scalars={"m": rng.uniform(0.5, 1.5, 500)})
    model = ld.Model(ld.scalar("m") * ld.parameter("a"))

    def nll(data: ld.Dataset) -> tuple[float, np.ndarray]:
        return ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)]).value_and_gradient([1.3])

    _assert_same(nll(lazy), nll(eager))
    assert lazy.n_partitions > 3  # pieces of the three blocks
    assert lazy.memory_decision()["strategy"] == ("disk" if policy == "disk" else "resident")
    assert "learned" not in lazy.memory_decision()["reason"]
