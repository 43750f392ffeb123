"""laddu names a script uses beside the model: penalties, file sinks, the error base class.

Each against laddu 0.28.1 itself: the same penalized -2 ln L and gradient, files laddu
reads back, and ``except ld.LadduError`` catching what laddu-dask raises.
"""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
from laddu_reference import laddu, needs_laddu

import laddu_dask as ld
from laddu_dask import ksks
from laddu_dask.errors import ParameterError


def _nll(lib, columns):
    x = lib.scalar("x")
    model = lib.Model((lib.parameter("c0", fixed=1.0) + lib.parameter("c1", initial=0.2) * x
                       + lib.parameter("c2", initial=-0.1) * x * x).norm_sqr() + 0.05)
    beam = np.tile([8.5, 0.0, 0.0, 8.5], (len(columns["x"]), 1))
    data = lib.Dataset.from_arrays(p4s={"beam": beam}, scalars=columns)
    return lib.NLL(model, data=data, accepted_mc=data, name="nll")


@needs_laddu
@pytest.mark.parametrize("kind", ["RidgePenalty", "LassoPenalty"])
def test_penalties_are_laddus(kind):
    columns = {"x": np.random.default_rng(3).uniform(-1, 1, 500)}
    point = [-0.3, 0.25]

    def likelihood(lib):
        penalty = getattr(lib, kind)(["c1", "c2"], lambda_=1.7, name="reg")
        return lib.Likelihood([_nll(lib, columns), penalty])

    ours, theirs = likelihood(ld), likelihood(laddu)
    (v, g), (w, h) = ours.value_and_gradient(point), theirs.value_and_gradient(point)
    assert abs(v - w) <= 1e-12 * abs(w)
    assert np.max(np.abs(np.asarray(g) - np.asarray(h))) <= 1e-12 * np.max(np.abs(h))
    plain = ld.Likelihood([_nll(ld, columns)]).value(point)
    want = 2 * 1.7 * (0.3**2 + 0.25**2) if kind == "RidgePenalty" else 2 * 1.7 * (0.3 + 0.25)
    assert v - plain == pytest.approx(want, rel=1e-12)
    fit = ours.fit()  # a penalized likelihood fits like any other
    assert fit.valid


def test_bad_penalties_are_errors_naming_the_parameter():
    columns = {"x": np.linspace(-1, 1, 50)}
    with pytest.raises(ParameterError, match="penalty 'reg' names 'c9', which is not a free parameter"):
        ld.Likelihood([_nll(ld, columns), ld.RidgePenalty(["c9"], lambda_=1.0, name="reg")])
    with pytest.raises(ValueError, match="lambda_ must be a finite number >= 0, got -1"):
        ld.LassoPenalty(["c1"], lambda_=-1)
    with pytest.raises(ValueError, match="a Likelihood needs at least one NLL or ExtendedNLL term"):
        ld.Likelihood([ld.RidgePenalty(["c1"], lambda_=1.0)])


@needs_laddu
@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_write_to_sinks_laddu_reads(tmp_path, precision):
    paths = ksks.write_sample(tmp_path, n_data=300, n_mc=10, seed=2)
    ds = ld.read_parquet(paths["data"])
    ds.write_to(ld.ParquetSink(tmp_path / "out.parquet", precision=precision))
    ds.write_to(ld.RootSink(tmp_path / "out.root", tree="kin", precision=precision))
    cast = np.float32 if precision == "f32" else np.float64
    for theirs in (laddu.read_parquet(str(tmp_path / "out.parquet")),
                   laddu.read_root(str(tmp_path / "out.root"), tree="kin")):
        assert np.array_equal(np.asarray(theirs.weights()), ds.weights().astype(cast).astype(np.float64))
        beam = laddu.Vec4.event("beam").e()
        assert np.array_equal(np.asarray(theirs.evaluate(beam, real=True)),
                              ds.column("beam_e").astype(cast).astype(np.float64))
    with pytest.raises(TypeError, match="write_to needs a ParquetSink, RootSink or FormatSink, got str"):
        ds.write_to(str(tmp_path / "x.parquet"))
    with pytest.raises(ValueError, match="precision must be one of 'f64', 'f32', got 'f16'"):
        ld.ParquetSink(tmp_path / "y.parquet", precision="f16")


@needs_laddu
@pytest.mark.parametrize("kind", ["ParquetSink", "RootSink"])
@pytest.mark.parametrize(("output", "where"), [(None, "one.ext"), ("single", "one.ext"), ("auto", "one.ext"),
                                               ("sharded", "shard.ext"), ("sharded", "folder")])
def test_write_to_returns_laddus_write_result(tmp_path, kind, output, where):
    """The same WriteResult (paths, counts, events) and file names as laddu's, for every
    ``output``; the files read back the same in laddu."""
    ext = ".parquet" if kind == "ParquetSink" else ".root"
    rng = np.random.default_rng(5)
    beam = np.column_stack([rng.uniform(5, 9, 7), np.zeros((7, 2)), rng.uniform(5, 9, 7)])
    columns = {"p4s": {"beam": beam}, "scalars": {"s": rng.normal(size=7)}, "weights": rng.uniform(-1, 2, 7)}
    results = {}
    for name, lib in (("ours", ld), ("laddu", laddu)):
        target = tmp_path / name / "sub" / where.replace(".ext", ext)  # "sub" does not exist yet
        ds = lib.Dataset.from_arrays(**columns)
        results[name] = ds.write_to(getattr(lib, kind)(str(target)), output=output, chunk_size=3)
    ours, theirs = results["ours"], results["laddu"]
    assert isinstance(ours, ld.io.WriteResult)
    assert [p.relative_to(tmp_path / "ours") for p in ours.paths] == [
        p.relative_to(tmp_path / "laddu") for p in theirs.paths]
    assert (ours.counts, ours.events) == (theirs.counts, theirs.events) == ([7], 7)
    read = laddu.read_parquet if kind == "ParquetSink" else laddu.read_root
    back = read(str(ours.paths[0]))
    assert np.array_equal(np.asarray(back.weights()), columns["weights"])
    assert np.array_equal(np.asarray(back.column("s")), columns["scalars"]["s"])


def test_write_to_keywords_are_checked_before_writing(tmp_path):
    ds = ld.Dataset.from_arrays(scalars={"s": np.arange(4.0)})
    sink = ld.ParquetSink(tmp_path / "out.parquet")
    with pytest.raises(ValueError, match="output must be 'auto', 'single' or 'sharded', got 'per_rank'"):
        ds.write_to(sink, output="per_rank")
    with pytest.raises(TypeError, match=r"output must be a str \('auto', 'single' or 'sharded'\), got int"):
        ds.write_to(sink, output=1)
    with pytest.raises(ValueError, match="chunk_size must be at least 1 event, got 0"):
        ds.write_to(sink, chunk_size=0)
    with pytest.raises(TypeError, match=r"write_to\(execution=\) must be an ld.Execution or None, got str"):
        ds.write_to(sink, execution="cpu")
    assert not (tmp_path / "out.parquet").exists()
    result = ds.write_to(sink, chunk_size=3, execution=ld.Execution())
    assert (result.paths, result.counts, result.events) == ([tmp_path / "out.parquet"], [4], 4)
    assert ld.read_parquet(result.paths[0]).column("s").tolist() == [0.0, 1.0, 2.0, 3.0]
    # a difference (README table): each batch of chunk_size events is a row group (laddu: one)
    assert pq.ParquetFile(result.paths[0]).metadata.num_row_groups == 2


def test_laddu_error_catches_what_laddu_dask_raises():
    with pytest.raises(ld.LadduError, match=r"^parameter 'a': initial range \[2.0, 1.0\] is empty") as caught:
        ld.parameter("a", initial=(2.0, 1.0))
    assert isinstance(caught.value, ld.errors.ParameterError)  # the typed error, caught as laddu's


_JSON_OBJECTS = {
    "WignerD": lambda lib: lib.WignerD(2, 1, 0),
    "Sheet": lambda lib: lib.Sheet.UNPHYSICAL,
    "BarrierKind": lambda lib: lib.BarrierKind.TENSOR,
    "ScalarSource": lambda lib: lib.ScalarSource.uniform(0.0, 2.0),
    "Histogram": lambda lib: lib.Histogram([1.0, 0.0, 3.0], bin_edges=[0.0, 1.0, 1.5, 2.0]),
}


@needs_laddu
@pytest.mark.parametrize("name", sorted(_JSON_OBJECTS))
def test_from_json_takes_laddus_json_by_laddus_keyword(name):
    """``Cls.from_json(json=...)`` (laddu's keyword) reads laddu's text back to the same object."""
    import json

    text = _JSON_OBJECTS[name](laddu).to_json()
    ours = getattr(ld, name).from_json(json=text)
    if name == "Histogram":  # laddu's text has more fields (fill kind, sums of squared weights)
        theirs, back = json.loads(text), json.loads(ours.to_json())
        assert {k: back[k] for k in ("bin_edges", "counts", "errors", "underflow", "overflow")} == \
            {k: theirs[k] for k in ("bin_edges", "counts", "errors", "underflow", "overflow")}
    else:
        assert ours.to_json() == text


@needs_laddu
def test_capabilities_has_laddus_flags_and_says_the_backend_is_dask():
    ours, theirs = ld.capabilities(), laddu.capabilities()
    assert set(theirs) <= set(ours)
    assert {k: type(v) for k, v in ours.items() if k in theirs} == {k: type(v) for k, v in theirs.items()}
    assert (ld.backend(), ours["backend"], ours["mpi"], ours["fit"]) == ("dask", "dask", False, True)
    import importlib.util

    assert ours["jit"] is (importlib.util.find_spec("numba") is not None)
