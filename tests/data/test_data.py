"""Tests of the data layer: schema, batches, datasets, Parquet reading and writing."""

from __future__ import annotations

import math
import os
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laddu_dask.data.batch import EventBatch
from laddu_dask.data.dataset import DEFAULT_CHUNK_SIZE, Dataset, Partition
from laddu_dask.data.parquet import read_parquet
from laddu_dask.data.schema import Schema
from laddu_dask.datasets.ksks import write_sample
from laddu_dask.errors import DataError, SchemaError, UnsafeOutputError

P4_NAMES = ("beam", "proton", "kshort1", "kshort2")


def _arrays(n: int, seed: int = 0) -> tuple[dict, dict, np.ndarray]:
    rng = np.random.default_rng(seed)
    p4s = {"beam": rng.normal(size=(n, 4)), "kshort1": rng.normal(size=(n, 4)) * 1e3}
    scalars = {"pol": rng.uniform(-1, 1, n)}
    weights = rng.normal(1.0, 0.5, n)
    return p4s, scalars, weights


def _table_columns(paths: list[str]) -> dict[str, np.ndarray]:
    table = pa.concat_tables([pq.read_table(p) for p in paths])
    return {n: table.column(n).to_numpy() for n in table.column_names}


def _concat(ds: Dataset, columns=None, dtype=np.float64) -> tuple[dict, np.ndarray]:
    batches = [ds.load_partition(i, columns, dtype) for i in range(ds.n_partitions)]
    cols = {c: np.concatenate([b.columns[c] for b in batches]) for c in batches[0].columns}
    return cols, np.concatenate([b.weights for b in batches])


def _write(path: Path, cols: dict, **kw) -> str:
    pq.write_table(pa.table(cols), path, **kw)
    return str(path)


def _p4_table(n: int, seed: int = 1, weight: bool = True) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    cols = {f"k_{c}": rng.normal(size=n) for c in ("e", "px", "py", "pz")}
    if weight:
        cols["weight"] = rng.uniform(0.5, 1.5, n)
    return cols


@pytest.fixture(scope="module")
def ksks(tmp_path_factory) -> Path:
    """The KsKs toy (the project's own writer of the benchmark sample): one file per sample
    under ``one/``, folders of three files under ``parts/``."""
    out = tmp_path_factory.mktemp("ksks")
    for name, parts in (("one", 1), ("parts", 3)):
        write_sample(out / name, n_data=300, n_mc=400, seed=7, parts=parts)
    return out


# ----------------------------------------------------------------------------- schema


def test_schema_groups_four_vectors_in_file_order():
    names = ["pol", "b_px", "a_e", "a_px", "a_py", "a_pz", "b_e", "b_py", "b_pz", "weight", "t_e"]
    s = Schema.from_column_names(names, "f.parquet")
    assert s.p4s == ("b", "a")
    assert s.scalars == ("pol", "t_e")  # a lone NAME_e is a scalar
    assert s.has_weight
    assert s.flat_columns()[:4] == ["b_e", "b_px", "b_py", "b_pz"]
    assert "weight" not in s.flat_columns()


def test_schema_partial_four_vector_names_vector_columns_and_file():
    with pytest.raises(SchemaError, match=r"four-vector 'k' in data\.parquet is incomplete.*"
                                          r"'k_py', 'k_pz'"):
        Schema.from_column_names(["k_e", "k_px", "x"], "data.parquet")


def test_schema_require_names_every_missing_column_and_source():
    s = Schema(p4s=("beam",), scalars=("pol",), has_weight=False)
    s.require(["beam_e", "pol", "weight"], "data.parquet")
    with pytest.raises(SchemaError,
                       match=r"model needs column 'kshort1_px' which data\.parquet lacks"):
        s.require(["beam_px", "kshort1_px"], "data.parquet")
    with pytest.raises(SchemaError, match=r"columns 'a', 'b' which acc\.parquet lacks"):
        s.require(["a", "b", "a"], "acc.parquet")


def test_schema_rejects_weight_scalar_and_duplicates():
    with pytest.raises(SchemaError, match="'weight' is reserved"):
        Schema(p4s=(), scalars=("weight",), has_weight=False)
    with pytest.raises(SchemaError, match="'x' appears more than once in f"):
        Schema.from_column_names(["x", "x"], "f")


# ----------------------------------------------------------------------------- batches


def test_event_batch_p4_slice_and_module():
    cols = {f"k_{c}": np.arange(5.0) + j for j, c in enumerate(("e", "px", "py", "pz"))}
    b = EventBatch(cols, np.ones(5), offset=7, source="x")
    assert b.n_events == 5 and b.xp is np
    e, px, py, pz = b.p4("k")
    np.testing.assert_array_equal(pz, np.arange(5.0) + 3)
    s = b.slice(1, 3)
    assert (s.offset, s.n_events, float(s.columns["k_e"][0])) == (8, 2, 1.0)
    with pytest.raises(SchemaError, match="column 'q_e' is not in this batch of x"):
        b.p4("q")
    with pytest.raises(DataError, match="column 'a' has 2 events but the weights have 3"):
        EventBatch({"a": np.ones(2)}, np.ones(3))


# ----------------------------------------------------------------------------- from_arrays


def test_from_arrays_partitions_and_values():
    p4s, scalars, w = _arrays(10)
    ds = Dataset.from_arrays(p4s, scalars, w, chunk_size=4)
    assert ds.sources == ("arrays",)
    assert ds.schema == Schema(("beam", "kshort1"), ("pol",), True)
    assert [(p.n_events, p.offset) for p in ds.partitions] == [(4, 0), (4, 4), (2, 8)]
    assert all(isinstance(p, Partition) for p in ds.partitions)
    cols, weights = _concat(ds)
    np.testing.assert_array_equal(cols["kshort1_py"], p4s["kshort1"][:, 2])
    np.testing.assert_array_equal(cols["pol"], scalars["pol"])
    np.testing.assert_array_equal(weights, w)
    b = ds.load_partition(2, ["beam_e"])
    assert list(b.columns) == ["beam_e"] and b.offset == 8
    assert b.columns["beam_e"].flags.c_contiguous and b.columns["beam_e"].flags.writeable
    assert ds.load_partition(0, dtype=np.float32).columns["pol"].dtype == np.float32


def test_from_arrays_copies_input_and_defaults():
    x = np.arange(3.0)
    ds = Dataset.from_arrays(scalars={"x": x})
    x[0] = 99.0
    b = ds.load_partition(0)
    assert b.columns["x"][0] == 0.0
    np.testing.assert_array_equal(b.weights, np.ones(3))
    assert ds.chunk_size == DEFAULT_CHUNK_SIZE and ds.memory_policy == "fastest"
    assert not ds.schema.has_weight and ds.sum_weights() == 3.0


def test_from_arrays_unequal_lengths_names_arrays():
    with pytest.raises(DataError, match=r"four-vector 'beam': 5, scalar 'pol': 4, weights: 5"):
        Dataset.from_arrays({"beam": np.ones((5, 4))}, {"pol": np.ones(4)}, np.ones(5))


@pytest.mark.parametrize("bad", [np.ones((5, 3)), np.ones(5), np.ones((5, 4, 1))])
def test_from_arrays_p4_shape(bad):
    with pytest.raises(DataError, match=r"four-vector 'beam' must have shape \(n_events, 4\)"):
        Dataset.from_arrays({"beam": bad})


def test_from_arrays_non_numeric():
    with pytest.raises(DataError, match="scalar 'tag' must hold real numbers, got dtype <U1"):
        Dataset.from_arrays(scalars={"tag": np.array(["a", "b"])})
    with pytest.raises(DataError, match="four-vector 'k' must hold real numbers.*complex"):
        Dataset.from_arrays({"k": np.ones((2, 4), dtype=complex)})
    with pytest.raises(DataError, match="at least one four-vector"):
        Dataset.from_arrays()


@pytest.mark.parametrize(
    ("where", "column", "value"),
    [("p4", "beam_py", np.nan), ("scalar", "pol", -np.inf), ("weights", "weight", np.inf)],
)
def test_from_arrays_non_finite_names_column_and_event(where, column, value):
    p4s, scalars, w = _arrays(6)
    if where == "p4":
        p4s["beam"][4, 2] = value
    elif where == "scalar":
        scalars["pol"][3] = value
    else:
        w[5] = value
    event = {"p4": 4, "scalar": 3, "weights": 5}[where]
    with pytest.raises(DataError, match=rf"column '{column}' has a non-finite value "
                                        rf"\({value!r}\) at event {event} "):
        Dataset.from_arrays(p4s, scalars, w)


def test_from_arrays_name_clashes():
    with pytest.raises(SchemaError, match="'weight' is reserved"):
        Dataset.from_arrays(scalars={"weight": np.ones(2)})
    with pytest.raises(SchemaError, match="scalar 'k_e' clashes with a four-vector column"):
        Dataset.from_arrays({"k": np.ones((2, 4))}, {"k_e": np.ones(2)})
    with pytest.raises(SchemaError, match="four-vector 'k' in arrays is incomplete"):
        Dataset.from_arrays(scalars={"k_px": np.ones(2), "k_py": np.ones(2)})


@pytest.mark.parametrize("policy", ["fast", "RESIDENT", None])
def test_bad_memory_policy(policy, tmp_path):
    msg = r"memory_policy must be one of 'resident', 'disk', 'streaming', 'fastest'"
    with pytest.raises(ValueError, match=msg):
        Dataset.from_arrays(scalars={"x": np.ones(2)}, memory_policy=policy)
    path = _write(tmp_path / "a.parquet", {"x": np.ones(2)})
    if policy is None:  # a reader's memory_policy=None is "not given": laddu's cache= decides
        assert read_parquet(path, memory_policy=policy).memory_policy == "fastest"
        return
    with pytest.raises(ValueError, match=msg):
        read_parquet(path, memory_policy=policy)


@pytest.mark.parametrize("chunk", [0, -3, 2.5, True])
def test_bad_chunk_size(chunk, tmp_path):
    with pytest.raises(ValueError, match="chunk_size must be"):
        Dataset.from_arrays(scalars={"x": np.ones(2)}, chunk_size=chunk)
    path = _write(tmp_path / "a.parquet", {"x": np.ones(2)})
    with pytest.raises(ValueError, match="chunk_size must be"):
        read_parquet(path, chunk_size=chunk)
    with pytest.raises(ValueError, match="chunk_size must be"):
        read_parquet(path).with_chunk_size(chunk)


def test_bad_dtype_and_partition_index():
    ds = Dataset.from_arrays(scalars={"x": np.ones(2)})
    with pytest.raises(ValueError, match="dtype must be numpy.float64 or numpy.float32"):
        ds.load_partition(0, dtype=np.int32)
    with pytest.raises(IndexError, match="partition index 1 out of range for 1 partitions"):
        ds.load_partition(1)


def test_load_unknown_column_names_source(tmp_path):
    with pytest.raises(SchemaError, match="load needs column 'kshort1_px' which arrays lacks"):
        Dataset.from_arrays(scalars={"x": np.ones(2)}).load_partition(0, ["kshort1_px"])
    path = _write(tmp_path / "data.parquet", _p4_table(5))
    with pytest.raises(SchemaError, match=r"'kshort1_px' which .*data\.parquet lacks"):
        read_parquet(path).load_partition(0, ["k_e", "kshort1_px"])


# ----------------------------------------------------------------------------- round trips


def test_round_trip_f64_is_bitwise(tmp_path):
    p4s, scalars, w = _arrays(1000)
    ds = Dataset.from_arrays(p4s, scalars, w, chunk_size=300)
    path = tmp_path / "rt.parquet"
    ds.write_parquet(path)
    back = read_parquet(path)
    assert back.schema == ds.schema and back.n_events == 1000
    assert pq.ParquetFile(path).schema_arrow.field("beam_e").type == pa.float64()
    a_cols, a_w = _concat(ds)
    b_cols, b_w = _concat(back)
    for c in ds.schema.flat_columns():
        assert a_cols[c].tobytes() == b_cols[c].tobytes(), c
    assert a_w.tobytes() == b_w.tobytes()
    assert [f for f in os.listdir(tmp_path)] == ["rt.parquet"]  # no temp file left


def test_round_trip_f32_equals_float32_cast(tmp_path):
    p4s, scalars, w = _arrays(500)
    ds = Dataset.from_arrays(p4s, scalars, w)
    path = tmp_path / "rt32.parquet"
    ds.write_parquet(path, precision="f32")
    assert pq.ParquetFile(path).schema_arrow.field("pol").type == pa.float32()
    back = read_parquet(path)
    cols64, w64 = _concat(back)
    cols32, w32 = _concat(back, dtype=np.float32)
    assert cols64["beam_px"].dtype == np.float64
    np.testing.assert_array_equal(cols64["beam_px"], p4s["beam"][:, 1].astype(np.float32))
    np.testing.assert_array_equal(cols32["kshort1_pz"], p4s["kshort1"][:, 3].astype(np.float32))
    np.testing.assert_array_equal(cols64["pol"], scalars["pol"].astype(np.float32))
    np.testing.assert_array_equal(w64, w.astype(np.float32).astype(np.float64))
    np.testing.assert_array_equal(w32, w.astype(np.float32))


def test_write_unweighted_stores_unit_weights(tmp_path):
    ds = Dataset.from_arrays(scalars={"x": np.arange(4.0)})
    ds.write_parquet(tmp_path / "u.parquet")
    table = pq.read_table(tmp_path / "u.parquet")
    assert table.column_names == ["x", "weight"]
    np.testing.assert_array_equal(table.column("weight").to_numpy(), np.ones(4))


def test_bad_precision_writes_nothing(tmp_path):
    ds = Dataset.from_arrays(scalars={"x": np.ones(2)})
    with pytest.raises(ValueError, match=r"precision must be one of 'f64', 'f32', got 'f16'"):
        ds.write_parquet(tmp_path / "x.parquet", precision="f16")
    assert os.listdir(tmp_path) == []


def test_write_f32_overflow_names_column_and_event(tmp_path):
    ds = Dataset.from_arrays(scalars={"x": np.array([1.0, 1e300])})
    with pytest.raises(DataError, match=r"column 'x' has a value \(1e\+300\) that overflows "
                                        r"float32 at event 1"):
        ds.write_parquet(tmp_path / "x.parquet", precision="f32")
    assert os.listdir(tmp_path) == []


def test_write_is_atomic_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "keep.parquet"
    Dataset.from_arrays(scalars={"x": np.arange(3.0)}).write_parquet(target)
    before = target.read_bytes()

    def boom(self, table, *a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", boom)
    with pytest.raises(OSError, match="disk full"):
        Dataset.from_arrays(scalars={"x": np.zeros(5)}).write_parquet(target)
    assert target.read_bytes() == before
    assert os.listdir(tmp_path) == ["keep.parquet"]


def test_write_over_own_source_is_refused(tmp_path):
    # the user's file is an input: writing over it (here as f32) would lose it (issue 23)
    path = tmp_path / "self.parquet"
    Dataset.from_arrays(scalars={"x": np.arange(5.0) + 0.1}).write_parquet(path)
    original = path.read_bytes()
    ds = read_parquet(path, chunk_size=2)
    with pytest.raises(UnsafeOutputError, match=f"refusing to write the file {path}: it is or holds"):
        ds.write_parquet(path, precision="f32")
    assert path.read_bytes() == original and os.listdir(tmp_path) == ["self.parquet"]


def test_empty_dataset_round_trip(tmp_path):
    ds = Dataset.from_arrays(scalars={"x": np.zeros(0)}, weights=np.zeros(0))
    assert ds.n_events == 0 and ds.n_partitions == 1 and ds.sum_weights() == 0.0
    cols, w = ds.to_dask()
    assert cols["x"].compute().shape == (0,)
    ds.write_parquet(tmp_path / "e.parquet")
    back = read_parquet(tmp_path / "e.parquet")
    assert back.n_events == 0 and back.load_partition(0).columns["x"].shape == (0,)


# ----------------------------------------------------------------------------- files


def test_ksks_files_load_unchanged(ksks):
    for name in ("data", "accmc"):
        path = ksks / "one" / f"{name}.parquet"
        ds = read_parquet(path, chunk_size=64)
        assert ds.schema == Schema(P4_NAMES, (), True)
        ref = _table_columns([str(path)])
        cols, w = _concat(ds)
        for c in ds.schema.flat_columns():
            assert cols[c].tobytes() == ref[c].tobytes()
        assert w.tobytes() == ref["weight"].tobytes()


@pytest.mark.parametrize("form", ["folder", "glob", "list"])
def test_folder_glob_and_list(ksks, form):
    folder = ksks / "parts" / "accmc"
    files = sorted(str(p) for p in folder.glob("*.parquet"))
    assert len(files) == 3
    arg = {"folder": folder, "glob": str(folder / "part-*.parquet"),
           "list": [files[0], Path(files[1]), str(folder / "part-0002*")]}[form]
    ds = read_parquet(arg, chunk_size=50)
    assert ds.sources == tuple(files)
    ref = _table_columns(files)
    cols, w = _concat(ds)
    for c in ds.schema.flat_columns():
        np.testing.assert_array_equal(cols[c], ref[c])
    np.testing.assert_array_equal(w, ref["weight"])


def test_partitions_never_span_files(ksks):
    files = sorted((ksks / "parts" / "data").glob("*.parquet"))
    rows = [pq.ParquetFile(f).metadata.num_rows for f in files]
    ds = read_parquet(files, chunk_size=40)
    expected, offset = [], 0
    for f, n in zip(files, rows, strict=True):
        for a in range(0, n, 40):
            expected.append((min(40, n - a), offset + a, str(f)))
        offset += n
    assert [(p.n_events, p.offset, p.path) for p in ds.partitions] == expected
    assert ds.n_events == sum(rows) == 300


def test_partition_reads_only_covering_row_groups(tmp_path, monkeypatch):
    cols = _p4_table(100)
    path = _write(tmp_path / "rg.parquet", cols, row_group_size=10)
    ds = read_parquet(path, chunk_size=15)
    calls = []
    orig = pq.ParquetFile.read_row_group

    def spy(self, row_group, *a, **k):
        calls.append((row_group, tuple(k.get("columns") or ())))
        return orig(self, row_group, *a, **k)

    def no_full_read(self, *a, **k):
        raise AssertionError("whole file read")

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", spy)
    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", no_full_read)
    monkeypatch.setattr(pq.ParquetFile, "read", no_full_read)
    b = ds.load_partition(1, ["k_px"])  # rows 15:30 -> row groups 1, 2, one column at a time
    assert calls == [(1, ("k_px",)), (1, ("weight",)), (2, ("k_px",)), (2, ("weight",))]
    np.testing.assert_array_equal(b.columns["k_px"], cols["k_px"][15:30])
    np.testing.assert_array_equal(b.weights, cols["weight"][15:30])
    assert b.offset == 15 and "rg.parquet [rows 15:30]" in b.source
    assert list(b.columns) == ["k_px"]


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 60), chunk=st.integers(1, 70))
def test_chunking_concatenation_equals_data(n, chunk):
    p4s, scalars, w = _arrays(n, seed=n)
    ds = Dataset.from_arrays(p4s, scalars, w, chunk_size=chunk)
    sizes = [p.n_events for p in ds.partitions]
    assert all(0 < s <= chunk for s in sizes) or n == 0
    assert [p.offset for p in ds.partitions] == [sum(sizes[:i]) for i in range(len(sizes))]
    cols, weights = _concat(ds)
    np.testing.assert_array_equal(cols["beam_pz"], p4s["beam"][:, 3])
    np.testing.assert_array_equal(weights, w)
    assert ds.with_chunk_size(chunk + 1).n_events == n


def test_partitions_pickle_for_distributed_workers(tmp_path):
    import pickle

    p4s, scalars, w = _arrays(30)
    arr_ds = Dataset.from_arrays(p4s, scalars, w, chunk_size=10)
    arr_ds.write_parquet(tmp_path / "p.parquet")
    file_ds = read_parquet(tmp_path / "p.parquet", chunk_size=10)
    for ds in (arr_ds, file_ds):
        part = pickle.loads(pickle.dumps(ds.partitions[1]))
        b = part.load(["pol"])
        np.testing.assert_array_equal(b.columns["pol"], scalars["pol"][10:20])
        np.testing.assert_array_equal(b.weights, w[10:20])
    assert len(pickle.dumps(arr_ds.partitions[1])) < 8 * 30 * 9  # a slice, not all arrays


def test_with_chunk_size_keeps_data_and_policy(ksks):
    ds = read_parquet(ksks / "one" / "data.parquet", memory_policy="streaming")
    assert ds.n_partitions == 1 and ds.chunk_size == DEFAULT_CHUNK_SIZE
    small = ds.with_chunk_size(70)
    assert small.n_partitions == 5 and small.memory_policy == "streaming"
    assert small.sources == ds.sources
    np.testing.assert_array_equal(_concat(small)[0]["kshort2_e"], _concat(ds)[0]["kshort2_e"])


def test_int_and_string_columns(tmp_path):
    cols = _p4_table(4)
    cols["run"] = np.arange(4, dtype=np.int32)
    cols["tag"] = ["a", "b", "c", "d"]
    ds = read_parquet(_write(tmp_path / "mixed.parquet", cols))
    assert ds.schema.scalars == ("run",)  # non-numeric 'tag' is ignored
    np.testing.assert_array_equal(ds.load_partition(0).columns["run"], np.arange(4.0))
    bad = _p4_table(2, weight=False)
    bad["weight"] = ["x", "y"]
    with pytest.raises(SchemaError, match=r"column 'weight' in .*bw\.parquet has type string"):
        read_parquet(_write(tmp_path / "bw.parquet", bad))


# ----------------------------------------------------------------------------- file errors


def test_not_parquet_names_file(tmp_path):
    (tmp_path / "notes.parquet").write_text("hello, not parquet")
    with pytest.raises(DataError, match=r"notes\.parquet is not a readable Parquet file"):
        read_parquet(tmp_path / "notes.parquet")


def test_no_match_names_pattern(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no files match '.*accmc/\*\.parquet'"):
        read_parquet(str(tmp_path / "accmc" / "*.parquet"))
    with pytest.raises(FileNotFoundError, match="holds no"):
        read_parquet(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"no such Parquet file or folder: .*nope\.parq"):
        read_parquet(tmp_path / "nope.parq")
    with pytest.raises(FileNotFoundError, match="empty list"):
        read_parquet([])


def test_different_schemas_name_both_files(tmp_path):
    a = _write(tmp_path / "a.parquet", _p4_table(3))
    cols = _p4_table(3)
    cols["extra"] = np.ones(3)
    b = _write(tmp_path / "b.parquet", cols)
    with pytest.raises(SchemaError, match=r"a\.parquet and .*b\.parquet have different columns"
                                          r".*only the second has \['extra'\]"):
        read_parquet([a, b])


def test_partial_four_vector_in_file(tmp_path):
    cols = _p4_table(3)
    del cols["k_pz"]
    path = _write(tmp_path / "part.parquet", cols)
    with pytest.raises(SchemaError, match=r"four-vector 'k' in .*part\.parquet is incomplete: "
                                          r"it lacks column\(s\) 'k_pz'"):
        read_parquet(path)


@pytest.mark.parametrize(("column", "value"), [("k_py", np.nan), ("weight", np.inf)])
def test_non_finite_in_file_names_column_file_and_global_event(tmp_path, column, value):
    first = _write(tmp_path / "a.parquet", _p4_table(10, seed=1))
    cols = _p4_table(10, seed=2)
    cols[column][7] = value
    second = _write(tmp_path / "b.parquet", cols)
    ds = read_parquet([first, second], chunk_size=5)
    ds.load_partition(2, ["k_e"]) if column != "weight" else None
    with pytest.raises(DataError, match=rf"column '{column}' has a non-finite value "
                                        rf"\({value!r}\) at event 17 \(.*b\.parquet "
                                        rf"\[rows 5:10\]\)"):
        ds.load_partition(3)


def test_null_in_file_names_event(tmp_path):
    cols = _p4_table(6)
    table = pa.table(cols).set_column(4, "weight", pa.array([1.0, 1.0, None, 1.0, 1, 1]))
    pq.write_table(table, tmp_path / "n.parquet")
    with pytest.raises(DataError, match=r"column 'weight' has a missing \(null\) value at "
                                        r"event 2 \(.*n\.parquet"):
        read_parquet(tmp_path / "n.parquet").load_partition(0)


# ----------------------------------------------------------------------------- dask, sums


def test_to_dask_is_lazy_and_equals_data(tmp_path, monkeypatch):
    import dask

    cols = _p4_table(50)
    path = _write(tmp_path / "d.parquet", cols, row_group_size=8)
    ds = read_parquet(path, chunk_size=16)
    calls = []
    orig = pq.ParquetFile.__init__

    def spy(self, *a, **k):  # a partition load opens the file once
        calls.append(1)
        return orig(self, *a, **k)

    monkeypatch.setattr(pq.ParquetFile, "__init__", spy)
    arrays, w = ds.to_dask(["k_e", "k_pz"])
    assert calls == []
    assert set(arrays) == {"k_e", "k_pz"}
    assert arrays["k_e"].chunks == ((16, 16, 16, 2),)
    e, pz, weights = dask.compute(arrays["k_e"], arrays["k_pz"], w, scheduler="sync")
    assert len(calls) == ds.n_partitions  # each partition loaded once
    np.testing.assert_array_equal(e, cols["k_e"])
    np.testing.assert_array_equal(pz, cols["k_pz"])
    np.testing.assert_array_equal(weights, cols["weight"])


def test_to_dask_all_columns_from_arrays():
    p4s, scalars, w = _arrays(33)
    arrays, weights = Dataset.from_arrays(p4s, scalars, w, chunk_size=10).to_dask()
    assert list(arrays) == ["beam_e", "beam_px", "beam_py", "beam_pz", "kshort1_e",
                            "kshort1_px", "kshort1_py", "kshort1_pz", "pol"]
    np.testing.assert_array_equal(arrays["kshort1_px"].compute(), p4s["kshort1"][:, 1])
    np.testing.assert_array_equal(weights.compute(), w)


def test_sum_weights_is_exact_fsum(tmp_path):
    rng = np.random.default_rng(3)
    w = rng.normal(size=2000) * 10.0 ** rng.integers(-20, 20, size=2000)
    w[::7] = -w[::7]
    w[100], w[1500] = 1e300, -1e300
    ds = Dataset.from_arrays(scalars={"x": np.zeros(2000)}, weights=w, chunk_size=97)
    exact = float(sum(Fraction(x) for x in w.tolist()))
    assert ds.sum_weights() == math.fsum(w.tolist()) == exact
    path = tmp_path / "w.parquet"
    ds.write_parquet(path)
    assert read_parquet(path, chunk_size=300).sum_weights() == exact


def test_repr_and_html(ksks):
    ds = read_parquet(ksks / "parts" / "data", chunk_size=60)
    text = repr(ds)
    assert "300 events in 6 partitions" in text and "kshort1" in text
    assert "'fastest'" in text and "and 2 more files" in text
    page = ds._repr_html_()
    assert page.startswith("<table>") and "<td style='text-align:left'>300</td>" in page
    assert "part-0002.parquet" in page and "chunk size 60" in page


# ----------------------------------------------------------------------------- laddu


def test_laddu_written_file_loads_same_values(tmp_path):
    laddu = pytest.importorskip("laddu")
    p4s, scalars, w = _arrays(40, seed=9)
    src = laddu.Dataset.from_arrays(p4s=p4s, scalars=scalars, weights=w)
    for precision, cast in (("f64", np.float64), ("f32", np.float32)):
        path = tmp_path / f"laddu_{precision}.parquet"
        src.write_to(laddu.ParquetSink(str(path), precision=precision))
        ds = read_parquet(path, chunk_size=15)
        assert ds.schema == Schema(("beam", "kshort1"), ("pol",), True)
        cols, weights = _concat(ds)
        for name, arr in p4s.items():
            for j, c in enumerate(("e", "px", "py", "pz")):
                np.testing.assert_array_equal(cols[f"{name}_{c}"], arr[:, j].astype(cast))
        np.testing.assert_array_equal(cols["pol"], scalars["pol"].astype(cast))
        np.testing.assert_array_equal(weights, w.astype(cast))


def test_laddu_reads_our_file(tmp_path):
    laddu = pytest.importorskip("laddu")
    p4s, scalars, w = _arrays(25, seed=4)
    path = tmp_path / "ours.parquet"
    Dataset.from_arrays(p4s, scalars, w, chunk_size=10).write_parquet(path)
    theirs = laddu.read_parquet(str(path))
    assert len(theirs) == 25
    assert list(theirs.p4_names()) == ["beam", "kshort1"]
    assert list(theirs.scalar_names()) == ["pol"]
    np.testing.assert_array_equal(np.asarray(theirs.weights()), w)
