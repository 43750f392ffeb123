"""A Dask collection's blocks are checked against the schema when they compute (issue 23, item 9).

A collection's metadata (dtypes, chunk shapes) builds the schema without computing
anything; a block may compute to something else. Each such block is a DataError naming
the column and the partition (or chunk) at fault, raised by the load, before any value,
NLL or batch is returned: never a silently dropped imaginary part, a parsed string, or a
bare ValueError, IndexError or TypeError. Nulls follow the Parquet reader's rule.
"""

from __future__ import annotations

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import laddu_dask as ld
from laddu_dask.errors import DataError

X = ld.scalar("x")
MODEL = ld.Model(ld.parameter("a", initial=1.0) * X * X + 1.0)


def _lying(column: pd.Series | np.ndarray) -> dd.DataFrame:
    """A 2-partition frame of x = 1..4 declared float64 whose partition 1 computes ``column``."""
    frame = pd.DataFrame({"x": np.arange(1.0, 5.0)})

    def swap(part: pd.DataFrame, partition_info=None) -> pd.DataFrame:
        if partition_info["number"] != 1:
            return part
        return pd.DataFrame({"x": pd.Series(column, index=part.index)})

    return dd.from_pandas(frame, npartitions=2).map_partitions(swap, meta=frame.iloc[:0])


def _nll(data: ld.Dataset) -> ld.Likelihood:
    mc = ld.Dataset.from_arrays(scalars={"x": np.linspace(0.5, 2.0, 8)})
    return ld.Likelihood([ld.NLL(MODEL, data=data, accepted_mc=mc)])


@pytest.mark.parametrize(("column", "message"), [
    (np.array([1 + 2j, 3 + 0j]), r"column 'x' holds complex128 values in dask DataFrame '.*' partition 1, "
                                 r"not real numbers"),
    (np.array(["3.0", "4.0"], dtype=object), r"column 'x' holds str '3\.0' at event 2 "
                                             r"\(dask DataFrame '.*' partition 1\), not a real number"),
    (np.array(["a", "b"]), r"column 'x' holds str 'a' at event 2 \(dask DataFrame '.*' partition 1\)"),
    (pd.array(["3", "4"], dtype="string"), r"column 'x' holds str '3' at event 2 "
                                           r"\(dask DataFrame '.*' partition 1\)"),
    (np.array([3.0, None], dtype=object), r"column 'x' has a missing \(null\) value at event 3 "
                                          r"\(dask DataFrame '.*' partition 1\)"),
    (np.array([None, None], dtype=object), r"column 'x' has a missing \(null\) value at event 2 "
                                           r"\(dask DataFrame '.*' partition 1\)"),
], ids=["complex", "numeric-strings", "strings", "string-dtype", "object-none", "all-none"])
def test_a_frame_block_that_computes_another_dtype_is_a_data_error(column, message):
    data = ld.Dataset.from_dask(_lying(column), lengths=[2, 2])
    assert data.load_partition(0).n_events == 2  # partition 0 computes what it declares
    with pytest.raises(DataError, match=message):
        data.load_partition(1)
    lik = _nll(data)
    for call in (lik.value, lik.value_and_gradient):
        with pytest.raises(DataError, match=message):
            call([1.0])


def test_object_blocks_of_real_numbers_load_as_their_float64_values():
    """Python ints and floats in an object column are numbers: the same NLL, bit for bit,
    as the float64 column (the Parquet reader's rule for integers and decimals)."""
    exact = ld.Dataset.from_arrays(scalars={"x": np.arange(1.0, 5.0)})
    objects = ld.Dataset.from_dask(_lying(np.array([3, 4.0], dtype=object)), lengths=[2, 2])
    np.testing.assert_array_equal(objects.load_partition(1).columns["x"], [3.0, 4.0])
    import decimal

    mixed = np.array([np.bool_(True), decimal.Decimal("0.1")], dtype=object)
    loaded = ld.Dataset.from_dask(_lying(mixed), lengths=[2, 2]).load_partition(1).columns["x"]
    assert loaded.tolist() == [1.0, 0.1]  # Decimal('0.1') as the nearest float, as Parquet reads it
    assert _nll(objects).value_and_gradient([1.3])[0] == _nll(exact).value_and_gradient([1.3])[0]


def test_a_nan_in_an_object_block_is_a_non_finite_value_like_everywhere():
    data = ld.Dataset.from_dask(_lying(np.array([3.0, float("nan")], dtype=object)), lengths=[2, 2])
    with pytest.raises(DataError, match=r"column 'x' has a non-finite value \(nan\) at event 3 "
                                        r"\(dask DataFrame '.*' partition 1\)"):
        data.load_partition(1)


def test_a_four_vector_block_of_three_columns_is_a_data_error():
    k = da.ones((4, 4), chunks=(2, 4)).map_blocks(
        lambda b, block_info=None: b[:, :3] if block_info[0]["chunk-location"][0] == 1 else b,
        dtype=float)
    data = ld.Dataset.from_dask(p4s={"k": k})
    assert data.load_partition(0).n_events == 2
    with pytest.raises(DataError, match=r"four-vector 'k' \(column 'k_e'\) computed a block of shape "
                                        r"\(2, 3\) in dask arrays chunk 1, where \(2, 4\) was declared"):
        data.load_partition(1)


def test_a_scalar_chunk_of_another_dtype_or_length_is_a_data_error():
    s = da.arange(1.0, 5.0, chunks=2)
    weights = da.ones(4, chunks=2)
    complex_chunks = s.map_blocks(lambda b: b + 1j, dtype=float)
    with pytest.raises(DataError, match=r"column 's' holds complex128 values in dask arrays chunk 0"):
        ld.Dataset.from_dask(scalars={"s": complex_chunks}).load_partition(0)
    short = weights.map_blocks(lambda b: b[:1], dtype=float)
    with pytest.raises(DataError, match=r"column 'weight' has shape \(1,\) in dask arrays chunk 1, "
                                        r"where \(2,\) was declared"):
        ld.Dataset.from_dask(scalars={"s": s}, weights=short).load_partition(1)


def test_a_block_without_a_declared_column_is_a_data_error():
    import dask

    frame = pd.DataFrame({"x": np.arange(2.0)})
    parts = [dask.delayed(frame), dask.delayed(frame.rename(columns={"x": "y"}))]
    lost = dd.from_delayed(parts, meta=frame.iloc[:0], verify_meta=False)
    with pytest.raises(DataError, match=r"dask DataFrame '.*' partition 1 computed no column\(s\) \['x'\]"):
        ld.Dataset.from_dask(lost, lengths=[2, 2]).load_partition(1)
    parts = [dask.delayed(frame), dask.delayed(frame["x"])]
    series = dd.from_delayed(parts, meta=frame.iloc[:0], verify_meta=False)
    with pytest.raises(DataError, match=r"dask DataFrame '.*' partition 1 computed a Series, not the table"):
        ld.Dataset.from_dask(series, lengths=[2, 2]).load_partition(1)
