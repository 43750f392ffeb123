"""Hostile and unusual inputs to the data layer: files changed or corrupted on disk,
glob characters in file names, one file named twice, non-numeric and decimal columns,
zero-row samples."""

from __future__ import annotations

import datetime
import decimal
import os
import random
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import laddu_dask as ld
from laddu_dask.data.dataset import Dataset
from laddu_dask.data.parquet import read_parquet
from laddu_dask.errors import DataChangedError, DataError, SchemaError

COMPONENTS = ("e", "px", "py", "pz")


def _k_columns(n: int, seed: int, weight: bool = True) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    cols = {f"k_{c}": rng.normal(size=n) for c in COMPONENTS}
    cols["k_e"] = 5.0 + rng.uniform(size=n)
    if weight:
        cols["weight"] = rng.uniform(0.5, 1.5, n)
    return cols


def _write(path: Path, cols: dict, **kw) -> str:
    pq.write_table(pa.table(cols), path, **kw)
    return str(path)


MASS = ld.Model(ld.Vec4.event("k").m2() * ld.parameter("a", initial=1.0) + 1.0)


# ----------------------------------------------------------------------------- changed files


def test_rewritten_file_same_rows_is_detected_at_next_load(tmp_path):
    path = _write(tmp_path / "run1.parquet", _k_columns(40, seed=1), row_group_size=10)
    ds = read_parquet(path, chunk_size=20)
    first = ds.load_partition(1, ["k_px"])
    np.testing.assert_array_equal(first.columns["k_px"], _k_columns(40, seed=1)["k_px"][20:40])
    _write(tmp_path / "run1.parquet", _k_columns(40, seed=2), row_group_size=10)
    with pytest.raises(DataChangedError, match=r"run1\.parquet changed on disk since it was opened"):
        ds.load_partition(1, ["k_px"])
    with pytest.raises(DataChangedError, match=r"run1\.parquet changed"):
        ds.load_partition(0, [])  # even a weights-only read (the weight-sum pass) checks


def test_same_size_and_restored_mtime_is_caught_by_the_footer(tmp_path):
    path = tmp_path / "same.parquet"
    plain = {"compression": "none", "use_dictionary": False}
    cols = _k_columns(30, seed=3)
    _write(path, cols, **plain)
    ds = read_parquet(path)
    before = os.stat(path)
    cols = {k: v.copy() for k, v in cols.items()}
    cols["k_px"][5] = cols["k_px"].max() + 1.0  # same length, new maximum in the statistics
    _write(path, cols, **plain)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    with pytest.raises(DataChangedError, match=r"same\.parquet changed on disk .*Parquet footer") as err:
        ds.load_partition(0, ["k_px"])
    assert "bytes" not in str(err.value) and "modified" not in str(err.value)


def test_touched_or_deleted_file_is_named(tmp_path):
    path = _write(tmp_path / "t.parquet", _k_columns(10, seed=4))
    ds = read_parquet(path)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    with pytest.raises(DataChangedError, match=r"t\.parquet changed on disk .*modified .* -> "):
        ds.load_partition(0)
    os.remove(path)
    with pytest.raises(DataChangedError, match=r"t\.parquet was deleted or moved"):
        ds.load_partition(0)


@pytest.mark.parametrize("change", ["values", "weights"])
def test_streamed_likelihood_refuses_a_rewritten_file(tmp_path, change):
    data_path = _write(tmp_path / "data.parquet", _k_columns(60, seed=5), row_group_size=20)
    mc_path = _write(tmp_path / "mc.parquet", _k_columns(90, seed=6), row_group_size=30)
    data = read_parquet(data_path, chunk_size=20, memory_policy="streaming")
    mc = read_parquet(mc_path, chunk_size=30, memory_policy="streaming")
    lik = ld.Likelihood([ld.NLL(MASS, data=data, accepted_mc=mc)])
    value = lik.value([1.0])
    assert value == lik.value([1.0])  # streaming: every evaluation reads the files again
    cols = _k_columns(60, seed=5)
    if change == "weights":
        cols["weight"] = cols["weight"] * 2.0  # new terms would meet the cached old weight sum
    else:
        cols["k_px"] = cols["k_px"][::-1].copy()
    _write(tmp_path / "data.parquet", cols, row_group_size=20)
    message = rf"{re.escape(data_path)} changed on disk since it was opened"
    with pytest.raises(DataChangedError, match=message):
        lik.value([1.0])


# ----------------------------------------------------------------------------- corrupt files


def _chunk_start(path: str, row_group: int, column: int) -> tuple[int, int]:
    col = pq.ParquetFile(path).metadata.row_group(row_group).column(column)
    start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
    return start, col.total_compressed_size


def _overwrite(path: str, offset: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def test_corrupt_page_names_file_and_row_group(tmp_path):
    # our writer stores page checksums: a damaged value in mid page is an error, not a number
    rng = np.random.default_rng(7)
    ds = Dataset.from_arrays(p4s={"k": rng.normal(size=(300, 4))}, weights=rng.uniform(size=300),
                             chunk_size=100)
    path = str(tmp_path / "run7.parquet")
    ds.write_parquet(path)
    start, size = _chunk_start(path, 1, 2)  # row group 1, column k_py
    _overwrite(path, start + size // 2, bytes(range(7, 39)))
    back = read_parquet(path, chunk_size=100, memory_policy="streaming")  # the footer is intact
    np.testing.assert_array_equal(back.load_partition(0, ["k_py"]).columns["k_py"],
                                  ds.load_partition(0, ["k_py"]).columns["k_py"])
    with pytest.raises(DataError, match=r"cannot read row group 1 of .*run7\.parquet \[rows 100:200\]"
                                        r".*checksum"):
        back.load_partition(1, ["k_py"])


def test_corrupt_page_header_without_checksums_names_file(tmp_path):
    path = _write(tmp_path / "run8.parquet", _k_columns(40, seed=8), row_group_size=20)
    start, _ = _chunk_start(path, 1, 4)  # row group 1, the weight column
    _overwrite(path, start + 2, b"\x99" * 12)
    ds = read_parquet(path, chunk_size=20)
    ds.load_partition(0, ["k_px"])  # the other row group still reads
    with pytest.raises(DataError, match=r"cannot read row group 1 of .*run8\.parquet \[rows 20:40\]"):
        ds.sum_weights()


def test_corrupt_footer_names_file(tmp_path):
    path = _write(tmp_path / "run9.parquet", _k_columns(10, seed=9))
    size = os.path.getsize(path)
    footer = int.from_bytes(Path(path).read_bytes()[-8:-4], "little")
    _overwrite(path, size - 8 - footer + 5, b"\x99" * 20)
    with pytest.raises(DataError, match=r"run9\.parquet is not a readable Parquet file"):
        read_parquet(path)


# ----------------------------------------------------------------------------- paths


def test_existing_path_with_glob_characters_is_that_file(tmp_path):
    _write(tmp_path / "run1.parquet", _k_columns(5, seed=10))
    _write(tmp_path / "run[1].parquet", _k_columns(7, seed=11))
    ds = read_parquet(tmp_path / "run[1].parquet")
    assert ds.n_events == 7 and ds.sources == (str(tmp_path / "run[1].parquet"),)
    # a pattern that is no file is still a pattern
    assert read_parquet(str(tmp_path / "run[12].parquet")).n_events == 5


@pytest.mark.parametrize("spelling", ["glob", "symlink", "dotdot", "hardlink"])
def test_one_file_named_twice_is_an_error(tmp_path, spelling):
    (tmp_path / "sub").mkdir()
    real = _write(tmp_path / "run2.parquet", _k_columns(5, seed=12))
    _write(tmp_path / "run3.parquet", _k_columns(5, seed=13))
    other = {
        "glob": str(tmp_path / "run*.parquet"),
        "symlink": str(tmp_path / "sub" / "link.parquet"),
        "dotdot": str(tmp_path / "sub" / ".." / "run2.parquet"),
        "hardlink": str(tmp_path / "sub" / "hard.parquet"),
    }[spelling]
    if spelling == "symlink":
        os.symlink(real, other)
    elif spelling == "hardlink":
        os.link(real, other)
    message = f"file {os.path.realpath(real)} is given twice: as '{real}' and as '{other}'"
    if spelling == "glob":
        message = f"file {os.path.realpath(real)} is given twice: as '{real}' and as '{other}' (as '{real}')"
    with pytest.raises(DataError, match=re.escape(message)):
        read_parquet([real, other])


# ----------------------------------------------------------------------------- column types


@pytest.mark.parametrize(("values", "kind"), [
    (["a", "b", "c"], "string"),
    ([datetime.datetime(2024, 1, d) for d in (1, 2, 3)], "timestamp[us]"),
    ([datetime.date(2024, 1, d) for d in (1, 2, 3)], "date32[day]"),
])
def test_non_numeric_column_a_model_needs_is_named_with_type(tmp_path, values, kind):
    cols = _k_columns(3, seed=14)
    cols["pol"] = pa.array(values)
    path = _write(tmp_path / "typed.parquet", cols)
    ds = read_parquet(path)
    assert ds.schema.scalars == ()  # not a number, so not a scalar
    model = ld.Model(ld.scalar("pol") * ld.parameter("a", initial=1.0) + 2.0)
    message = re.escape(f"needs column 'pol', which in {path} has type {kind}: not a number")
    with pytest.raises(SchemaError, match=message):
        ld.NLL(model, data=ds, accepted_mc=ds)
    with pytest.raises(SchemaError, match=message):
        ds.load_partition(0, ["pol"])


@pytest.mark.parametrize("dtype", [pa.decimal128(12, 4), pa.decimal128(38, 21), pa.decimal256(40, 6)])
def test_decimal_column_reads_as_nearest_float(tmp_path, dtype):
    rnd = random.Random(15)
    digits = dtype.precision
    values = [decimal.Decimal(rnd.randrange(-10**digits + 1, 10**digits)).scaleb(-dtype.scale)
              for _ in range(2000)]
    cols = _k_columns(2000, seed=15)
    cols["dec"] = pa.array(values, dtype)
    ds = read_parquet(_write(tmp_path / "dec.parquet", cols), chunk_size=700)
    assert ds.schema.scalars == ("dec",)
    got = np.concatenate([ds.load_partition(i, ["dec"]).columns["dec"] for i in range(3)])
    np.testing.assert_array_equal(got, [float(v) for v in values])  # Python rounds correctly
    f32 = np.concatenate([ds.load_partition(i, ["dec"], np.float32).columns["dec"]
                          for i in range(3)])
    np.testing.assert_array_equal(f32, np.array([float(v) for v in values]).astype(np.float32))


# ----------------------------------------------------------------------------- empty samples


@pytest.mark.parametrize("term", [ld.NLL, ld.ExtendedNLL])
@pytest.mark.parametrize("role", ["data", "accepted_mc"])
def test_zero_row_sample_is_an_error_at_construction(tmp_path, term, role):
    full = read_parquet(_write(tmp_path / "full.parquet", _k_columns(10, seed=16)))
    empty_path = _write(tmp_path / "empty.parquet", _k_columns(0, seed=16))
    empty = read_parquet(empty_path)
    assert empty.n_events == 0
    kwargs = {"data": full, "accepted_mc": full, role: empty}
    label = "data" if role == "data" else r"accepted Monte Carlo \(accepted_mc\)"
    message = rf"term 'sig': its {label} has no events \({re.escape(empty_path)}\)"
    with pytest.raises(DataError, match=message):
        term(MASS, name="sig", **kwargs)
    arrays = Dataset.from_arrays(p4s={"k": np.ones((0, 4))})
    with pytest.raises(DataError, match=rf"its {label} has no events \(arrays\)"):
        term(MASS, **{**kwargs, role: arrays})
