"""The normalization and the fused backprop as point programs: Numba once compiled, the tier-0
twin before, the same bits from both, whatever the number of points.

References: the decomposition's NumPy code (``Decomposition.values_and_gradients``), itself
checked against ``math.fsum`` of the event loop in ``test_normalization.py``, and the fused
kernels' NumPy backprop (``FusedKernels.backprop``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_normalization import FOUND, TOY_COLUMNS, TOY_PARAMS, TOY_WEIGHTS, _ksks_columns

import laddu_dask as ld
from laddu_dask import ksks
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.compile.graph import boundary
from laddu_dask.compile.normalization import decompose
from laddu_dask.compile.point_code import backprop_sources, pack, point_sources
from laddu_dask.runtime import point_programs
from laddu_dask.runtime.normalization import NormalizationStatistics
from laddu_dask.runtime.point_programs import PointProgram
from laddu_dask.runtime.reducer import PartitionReducer

pytest.importorskip("numba")

MODELS = {**{name: model for name, (model, _) in FOUND.items()},
          "ksks": ksks.model(fixed_lineshapes=True).expr}


def _statistics(model) -> tuple[NormalizationStatistics, CompiledModel]:
    cm = CompiledModel.from_expr(model)
    d = decompose(cm.split)
    if "x" not in cm.columns:  # the KsKs model
        columns = _ksks_columns(200, 3)
        weights = np.random.default_rng(4).uniform(0.1, 2.0, 200)
    else:
        columns, weights = TOY_COLUMNS, TOY_WEIGHTS
    totals = np.array([math.fsum(r) for r in d.matrix_terms({c: columns[c] for c in d.columns},
                                                              weights).tolist()])
    return NormalizationStatistics(d, d.matrices(totals), float(weights.sum())), cm


def _points(n: int, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = np.resize(np.array(TOY_PARAMS), n)
    return base + rng.uniform(-0.3, 0.3, (k, n))


def _run(program: PointProgram, name: str, *arrays: np.ndarray, numba: bool) -> None:
    if numba:
        program.compile()
        program._function(name)(*arrays)
    else:
        program.tier0[name](*arrays)


@pytest.mark.parametrize("name", list(MODELS))
def test_normalization_program_equals_numpy_code_and_twin_equals_numba(name):
    stats, cm = _statistics(MODELS[name])
    program = point_programs.point_program(point_sources(stats.decomposition))
    assert program is not None
    n = len(cm.parameter_names)
    pts = _points(n, 5, 11)
    params = np.ascontiguousarray(pts.T)
    out = {}
    for numba in (False, True):
        values, grads = np.empty(5), np.empty((n, 5))
        _run(program, "gradient_points", params, stats._packed, values, grads, numba=numba)
        only = np.empty(5)
        _run(program, "value_points", params, stats._packed, only, numba=numba)
        assert only.tobytes() == values.tobytes()
        out[numba] = values, grads
    # the tier-0 twin and Numba: the same bits
    assert out[False][0].tobytes() == out[True][0].tobytes()
    assert out[False][1].tobytes() == out[True][1].tobytes()
    # each point alone: the same bits as in the round of five
    for k in range(5):
        v1, g1 = np.empty(1), np.empty((n, 1))
        program._function("gradient_points")(np.ascontiguousarray(params[:, k:k + 1]), stats._packed, v1, g1)
        assert v1[0] == out[True][0][k]
        assert g1[:, 0].tobytes() == out[True][1][:, k].tobytes()
    # the same numbers as the decomposition's NumPy code
    ref_v, ref_g = stats.decomposition.values_and_gradients(pts, stats.matrices, True)
    np.testing.assert_allclose(out[True][0], ref_v, rtol=1e-13, atol=0)
    np.testing.assert_allclose(out[True][1].T, ref_g, rtol=1e-12, atol=1e-13 * np.abs(ref_g).max())


def test_statistics_use_the_program_and_keep_their_numbers_through_the_compilation(monkeypatch):
    """Before and after the background compilation, one point gives the same bits; the
    statistics read the matrices as they are now (a changed matrix is not stale)."""
    stats, cm = _statistics(MODELS["ksks"])
    fresh = PointProgram(point_sources(stats.decomposition))  # not compiled in this process yet
    monkeypatch.setattr(stats, "program", fresh)
    monkeypatch.setattr(point_programs, "COMPILE_AFTER", 3)
    x = _points(len(cm.parameter_names), 1, 5)
    first = stats.values_and_gradients(x, True)
    assert not fresh._ready["gradient_points"]
    for _ in range(3):
        stats.values_and_gradients(x, True)
    fresh._thread.join(120)
    assert fresh._ready["gradient_points"]
    again = stats.values_and_gradients(x, True)
    assert first[0].tobytes() == again[0].tobytes() and first[1].tobytes() == again[1].tobytes()
    stats.matrices = [2.0 * m for m in stats.matrices]
    assert stats.values_and_gradients(x, False)[0][0] == 2.0 * first[0][0]


@pytest.mark.parametrize("name", ["ksks free masses", "polar", "quotient"])
def test_backprop_program_equals_the_numpy_backprop(name):
    a, b = ld.parameter("a", initial=0.4), ld.parameter("b", initial=-0.2)
    x, y = ld.scalar("x"), ld.scalar("y")
    model = {
        "ksks free masses": ksks.model().expr,
        "polar": (ld.polar_complex(a, b) * x + ld.cis(a * b) * y).norm_sqr() + a * a,
        "quotient": ((ld.complex(a, b) * x) / (1.0 + b * b)
                     + ld.complex(x, a) / ld.complex(b, 2.0)).norm_sqr(),
    }[name]
    cm = CompiledModel.from_expr(model)
    reducer = PartitionReducer(cm, "f64", "fused")
    split = cm.split
    sources = backprop_sources(split, boundary(split))
    assert sources is not None
    program = point_programs.point_program(sources)
    n = len(split.free)
    rows = reducer.fused.boundary_size
    rng = np.random.default_rng(8)
    params = np.ascontiguousarray(_points(n, 4, 9).T)
    totals = np.ascontiguousarray(rng.normal(0.0, 10.0, (rows, 4)))
    out = {}
    for numba in (False, True):
        grads = np.empty((n, 4))
        _run(program, "backprop_points", params, totals, grads, numba=numba)
        out[numba] = grads
    assert out[False].tobytes() == out[True].tobytes()
    ref = np.asarray(reducer.fused.backprop(params, totals))
    np.testing.assert_allclose(out[True], ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())


def test_pack_lays_out_real_and_imaginary_parts():
    m = [np.array([[1.0, 2 + 3j], [2 - 3j, 4.0]]), np.array([[5.0]])]
    assert pack(m).tolist() == [1.0, 0.0, 2.0, 3.0, 2.0, -3.0, 4.0, 0.0, 5.0, 0.0]


def test_a_division_by_zero_in_the_coefficients_is_a_non_finite_error_not_numbas_exception():
    """sqrt(a) at a = 0: a finite normalization whose gradient divides by zero, which Numba's
    complex division raises on; the statistics fall back to the NumPy code there, whose
    infinity is reported as a NonFiniteError naming the gradient."""
    from laddu_dask.errors import NonFiniteError

    a, b = ld.parameter("a", initial=1.0), ld.parameter("b", initial=0.5)
    x = ld.scalar("x")
    stats, _ = _statistics((a.sqrt() * x + b).norm_sqr())
    assert stats.program is not None
    stats.program.compile()
    value = stats.values_and_gradients(np.array([[0.0, 1.0]]), False)[0][0]
    assert value == pytest.approx(math.fsum(TOY_WEIGHTS), rel=1e-13)
    with pytest.raises(NonFiniteError, match="gradient of the accepted-MC sum"):
        stats.values_and_gradients(np.array([[0.0, 1.0]]), True)
