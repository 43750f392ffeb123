"""laddu names a script uses beside the model: penalties, file sinks, the error base class.

Each against laddu 0.28.1 itself: the same penalized -2 ln L and gradient, files laddu
reads back, and ``except ld.LadduError`` catching what laddu-dask raises.
"""

from __future__ import annotations

import numpy as np
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
    with pytest.raises(TypeError, match="write_to needs a ParquetSink or a RootSink, got str"):
        ds.write_to(str(tmp_path / "x.parquet"))
    with pytest.raises(ValueError, match="precision must be one of 'f64', 'f32', got 'f16'"):
        ld.ParquetSink(tmp_path / "y.parquet", precision="f16")


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
