"""A binned analysis reads each source partition once for all its bins
(laddu_dask.data.shared_loads), and prepares bitwise the same numbers."""

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.analysis.binned import binned_likelihoods
from laddu_dask.data.parquet import ParquetPartition
from laddu_dask.data.shared_loads import shared_parent_loads


@pytest.fixture
def sample(tmp_path):
    rng = np.random.default_rng(11)
    n = 3000
    m = rng.uniform(0.0, 3.0, n)
    x = rng.uniform(-1.0, 1.0, n)
    data = ld.Dataset.from_arrays(scalars={"m": m, "x": x})
    data.write_parquet(tmp_path / "data.parquet")
    mc = ld.Dataset.from_arrays(scalars={"m": rng.uniform(0.0, 3.0, 4 * n), "x": rng.uniform(-1, 1, 4 * n)})
    mc.write_parquet(tmp_path / "mc.parquet")
    return (ld.read_parquet(tmp_path / "data.parquet", chunk_size=1000),
            ld.read_parquet(tmp_path / "mc.parquet", chunk_size=5000))


def _model():
    x = ld.scalar("x")
    return ld.Model(ld.parameter("sl_a", initial=(0.1, 1.0), bounds=(0.0, 3.0)) * x * x + 1.0)


def _counting(monkeypatch):
    loads = []
    real = ParquetPartition.load

    def load(self, columns=None, dtype=np.float64):
        loads.append((id(self), tuple(columns or ())))
        return real(self, columns, dtype)

    monkeypatch.setattr(ParquetPartition, "load", load)
    return loads


def test_bins_prepared_together_read_each_partition_once_and_give_the_same_numbers(sample, monkeypatch):
    data, mc = sample
    bins = ld.Bin([0.0, 1.0, 2.0, 3.0])
    point = np.array([0.7])
    alone = [lik.value_and_gradient(point) for _, lik in
             binned_likelihoods(_model(), data=data, accepted_mc=mc, by=ld.scalar("m"), bins=bins)]
    loads = _counting(monkeypatch)
    built = binned_likelihoods(_model(), data=data, accepted_mc=mc, by=ld.scalar("m"), bins=bins)
    loads.clear()
    with shared_parent_loads(10**8) as kept:
        together = [lik.value_and_gradient(point) for _, lik in built]
        assert kept.batches == len(loads)
    # 3 data and 3 MC partitions, each read once for the 3 bins (not 3 times)
    assert len(loads) == 6 and len(set(loads)) == 6
    assert [(v, g.tolist()) for v, g in together] == [(v, g.tolist()) for v, g in alone]
    assert kept.batches == 0 and kept.nbytes == 0  # freed when the block ended


def test_past_the_limit_loads_are_read_as_before(sample, monkeypatch):
    data, mc = sample
    built = binned_likelihoods(_model(), data=data, accepted_mc=mc, by=ld.scalar("m"),
                               bins=ld.Bin([0.0, 1.5, 3.0]))
    loads = _counting(monkeypatch)
    with shared_parent_loads(1) as kept:  # nothing fits
        for _, lik in built:
            lik.value(np.array([0.5]))
        assert kept.batches == 0
    assert len(loads) == 2 * 6  # every bin reads every partition


def test_fit_bins_reads_the_sources_once(sample, monkeypatch):
    data, mc = sample
    loads = _counting(monkeypatch)
    fits = ld.fit_bins(_model(), data=data, accepted_mc=mc, by=ld.scalar("m"),
                       bins=ld.Bin([0.0, 1.0, 2.0, 3.0]), restarts=2, seed=3)
    model_loads = [k for k in loads if "x" in k[1]]
    assert len(model_loads) == len(set(model_loads)) == 6
    assert all(f.best is not None and f.best.method == "lbfgsb" for f in fits)


def test_the_compared_expression_is_evaluated_once_per_partition_for_all_bins(sample, monkeypatch):
    import laddu_dask.compile.selection as selection

    data, mc = sample
    calls = []
    real = selection.expression_values
    monkeypatch.setattr(selection, "expression_values",
                        lambda expr, *a, **k: calls.append(repr(expr)) or real(expr, *a, **k))
    built = binned_likelihoods(_model(), data=data, accepted_mc=mc, by=ld.scalar("m"),
                               bins=ld.Bin([0.0, 1.0, 2.0, 3.0]))
    calls.clear()
    with shared_parent_loads(10**8):
        for _, lik in built:
            lik.value(np.array([0.4]))
    assert calls.count("Expr(column 'm')") == 6  # 3 data and 3 MC partitions, not 3 bins x 6
