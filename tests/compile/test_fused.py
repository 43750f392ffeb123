"""Tests of the fused (Numba) kernels: agreement with the NumPy array path, bitwise
independence of chunking and tree shape, certified sums and their exact fallback, the
error naming a non-positive event, and the on-disk kernel cache.

References: the NumPy array path (``Execution(kernel="numpy")``, generated independently
of the fused source), ``math.fsum`` and exact rational sums (``fractions.Fraction``) of
per-event terms computed with NumPy, and the per-event values of ``evaluate_batch``.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import laddu_dask as ld
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.compile.plan import ReductionPlan
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.dataset import Dataset
from laddu_dask.errors import NonFiniteError, NonPositiveIntensityError
from laddu_dask.runtime.compilations import numba_available
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.partition import Params
from laddu_dask.runtime.prepared import PreparedModel, ReductionEvaluation, prepare_batch
from laddu_dask.runtime.reducer import PartitionReducer

pytestmark = pytest.mark.skipif(not numba_available(), reason="the fused kernels need Numba")

REAL = ReductionPlan.weighted_real()
POSITIVE = ReductionPlan.weighted_positive_real()
LOG = ReductionPlan.weighted_log_positive_real()
PLANS = (REAL, POSITIVE, LOG)

#: Events per block of the fused sums (kept literal: the tests straddle it on purpose).
BLOCK = 512


def _prepare(model, ds: Dataset, **execution) -> tuple[Execution, PreparedModel, object]:
    ex = Execution(**execution)
    pm = PreparedModel.prepare(CompiledModel.from_expr(model), ex)
    return ex, pm, pm.prepare_dataset(ex, ds)


def _identical(a: ReductionEvaluation, b: ReductionEvaluation, what: str) -> None:
    assert a.value == b.value or (math.isnan(a.value) and math.isnan(b.value)), (
        f"{what}: value {a.value!r} != {b.value!r}"
    )
    assert a.gradient.shape == b.gradient.shape
    for i, (ga, gb) in enumerate(zip(a.gradient, b.gradient)):
        assert ga == gb, f"{what}: gradient component {i}: {ga!r} != {gb!r}"


def _exact_sum(terms) -> float:
    """Correctly rounded sum of finite floats from exact rationals (+-inf past the range)."""
    total = sum((Fraction(float(t)) for t in terms), Fraction(0))
    try:
        return float(total)
    except OverflowError:
        return math.inf if total > 0 else -math.inf


# ---------------------------------------------------------------------------------------
# fused kernels against the NumPy array path, on random models
# ---------------------------------------------------------------------------------------
try:  # the expression strategy of the gradient tests (every operation of the graph)
    from test_gradients import LEAVES, PARAM_NAMES, _extend
except ImportError:  # pragma: no cover - tests/ is put on sys.path by conftest.py
    LEAVES = None

N_RANDOM = 2 * BLOCK + 77  # three blocks in one partition, and partitions of 600 + 501
_RNG = np.random.default_rng(20240611)
_P = _RNG.normal(0.0, 1.0, (N_RANDOM, 3))
RANDOM_COLUMNS = {
    "g1": _RNG.uniform(-1.5, 1.5, N_RANDOM), "g2": _RNG.uniform(-1.5, 1.5, N_RANDOM),
    "g3": _RNG.uniform(0.5, 2.0, N_RANDOM), "gk_e": np.sqrt(0.25 + (_P**2).sum(1)),
    "gk_px": _P[:, 0], "gk_py": _P[:, 1], "gk_pz": _P[:, 2],
}
RANDOM_WEIGHTS = _RNG.uniform(-0.5, 2.0, N_RANDOM)
RANDOM_EVENTS = Dataset.from_arrays(
    p4s={"gk": np.column_stack([RANDOM_COLUMNS[f"gk_{c}"] for c in ("e", "px", "py", "pz")])},
    scalars={c: RANDOM_COLUMNS[c] for c in ("g1", "g2", "g3")},
    # weights of both signs (background-subtracted samples have negative weights)
    weights=RANDOM_WEIGHTS,
    chunk_size=600,
)


def _random_model(expr: ld.Expr) -> ld.Expr:
    """A complex model with a positive real part whose root depends on events and parameters.

    ``f = expr + gp0 g1`` makes the root per-event and parameter-dependent whatever
    ``expr`` is; the imaginary part keeps complex roots (whose real part is reduced) in play.
    """
    f = expr + ld.parameter("gp0") * ld.scalar("g1")
    return ld.complex(f.norm_sqr() + 0.1, f.imag())


def _reductions(model, params, precision: str, kernel: str):
    ex, pm, pd = _prepare(model, RANDOM_EVENTS, precision=precision, kernel=kernel)
    assert pm.kernel == kernel
    with_gradient = [pm.reduce_with_gradient(ex, params, pd, plan) for plan in PLANS]
    values = [pm.reduce(ex, params, pd, plan) for plan in PLANS]
    return with_gradient, values


def _assert_agree(fused, numpy_, rtol: float, what: str, magnitudes) -> None:
    """Values within ``rtol`` of the sum of |terms| (the sum itself unless weights of both
    signs cancel), gradients within ``rtol`` of their largest component."""
    (fg, fv), (ng, nv) = fused, numpy_
    for plan, f, n, f_value, n_value, size in zip(PLANS, fg, ng, fv, nv, magnitudes):
        where = f"{what}, {plan.transform}"
        # value-only and value-with-gradient reductions add the same terms
        assert f_value == f.value and n_value == n.value, where
        assert abs(f.value - n.value) <= rtol * max(abs(n.value), size), (
            f"{where}: fused {f.value!r}, numpy {n.value!r}"
        )
        scale = np.max(np.abs(n.gradient))
        assert np.all(np.abs(f.gradient - n.gradient) <= rtol * scale), (
            f"{where}: fused gradient {f.gradient}, numpy {n.gradient}"
        )


def _f32_bounds(cm: CompiledModel, params) -> tuple[list[float], list[np.ndarray]]:
    """Per plan, the float32 bounds of tests/tolerances.py of the value and the gradient of
    the random events' sums: sensitivities w |I| (a real part moves by at most |dI|), and
    under the log w, with the array code's f32 log adding u |w ln Re I|; gradients with the
    derivative's own condition (plus the value's for the quotient under the log)."""
    from tolerances import U32, condition, f32_bound

    kappa = condition(cm, RANDOM_COLUMNS, params)
    gkappa = condition(cm, RANDOM_COLUMNS, params, gradient=True)
    value, jac = cm.values_and_jacobian(cm.event_cache({c: RANDOM_COLUMNS[c] for c in cm.columns}), params)
    w = RANDOM_WEIGHTS
    values, grads = [], []
    for plan in PLANS:
        if plan is LOG:
            logs = np.log(value.real)
            values.append(f32_bound(w, kappa) + U32 * math.fsum(np.abs(w * logs).tolist()))
            grads.append(f32_bound(w[:, None] * jac.real / value.real[:, None], gkappa + kappa[:, None]))
        else:
            values.append(f32_bound(w * np.abs(value), kappa))
            grads.append(f32_bound(w[:, None] * np.abs(jac), gkappa))
    return values, grads


def _assert_within(a, b, bounds, what: str) -> None:
    """Values and gradients of two reductions within ``bounds`` (from :func:`_f32_bounds`)."""
    (ag, av), (bg, bv) = a, b
    for plan, x, y, x_value, y_value, vb, gb in zip(PLANS, ag, bg, av, bv, *bounds):
        where = f"{what}, {plan.transform}"
        assert x_value == x.value and y_value == y.value, where
        assert abs(x.value - y.value) <= vb, f"{where}: {x.value!r}, {y.value!r}, bound {vb!r}"
        # normwise: a derivative that vanishes identically (in a parameter at 0) is computed as
        # a cancellation of the chain's terms, which the leaves' conditions do not see
        assert np.all(np.abs(x.gradient - y.gradient) <= np.max(gb)), (
            f"{where}: {x.gradient}, {y.gradient}, {gb}")


if LEAVES is not None:
    #: Smaller random expressions than the gradient tests' (each model compiles kernels).
    SMALL_EXPRESSIONS = _extend(st.recursive(st.sampled_from(LEAVES), _extend, max_leaves=6))
else:  # pragma: no cover
    SMALL_EXPRESSIONS = st.nothing()


@pytest.mark.slow
@pytest.mark.skipif(LEAVES is None, reason="tests/compile/test_gradients.py is not importable")
@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(expr=SMALL_EXPRESSIONS,
       # no parameter below 1e-3 in magnitude but zero: a gradient proportional to 1e-220
       # underflows in f32, and comparing it is comparing rounding
       values=st.lists(st.floats(-1.2, 1.2, allow_nan=False).map(lambda v: 0.0 if abs(v) < 1e-3 else v),
                       min_size=4, max_size=4))
def test_fused_agrees_with_numpy_on_random_models(expr, values):
    """Every plan, value and gradient, f64 to 1e-12 relative and f32 within the float32 bound.

    Slow: each example compiles new Numba kernels (about 2 s a precision), hence few examples.
    """
    model = _random_model(expr)
    cm = CompiledModel.from_expr(model)
    by_name = dict(zip(PARAM_NAMES, values))
    params = [by_name[n] for n in cm.parameter_names]
    # well-conditioned examples only: the two paths may round differently per event, and
    # overflowing chains (exp(exp(...))) make every comparison a comparison of rounding
    cache = cm.event_cache({c: RANDOM_COLUMNS[c] for c in cm.columns})
    value, jac = cm.values_and_jacobian(cache, params)
    assume(np.all(np.isfinite(value)) and np.max(np.abs(value)) < 1e6)
    assume(np.all(np.isfinite(jac)) and np.max(np.abs(jac), initial=0.0) < 1e8)
    w = np.abs(RANDOM_WEIGHTS)
    magnitudes = [w @ np.abs(value.real), w @ np.abs(value.real), w @ np.abs(np.log(value.real))]

    numpy64 = _reductions(model, params, "f64", "numpy")
    _assert_agree(_reductions(model, params, "f64", "fused"), numpy64, 1e-12, "f64", magnitudes)
    # f32: the NumPy f32 path within the float32 bound of the f64 sums, and the fused f32
    # kernels within twice it of the NumPy f32 path (both within it of the f64 sums)
    bounds = _f32_bounds(cm, params)
    numpy32 = _reductions(model, params, "f32", "numpy")
    _assert_within(numpy32, numpy64, bounds, "f32 NumPy against f64")
    twice = ([2 * b for b in bounds[0]], [2 * b for b in bounds[1]])
    _assert_within(_reductions(model, params, "f32", "fused"), numpy32, twice, "f32")


# ---------------------------------------------------------------------------------------
# bitwise independence of chunking and tree shape
# ---------------------------------------------------------------------------------------
N_CHUNK = 4500
_RC = np.random.default_rng(7)
CHUNK_EVENTS = {
    "scalars": {"s": _RC.uniform(0.8, 3.5, N_CHUNK), "x": _RC.uniform(-1.0, 1.0, N_CHUNK),
                "y": _RC.uniform(-1.0, 1.0, N_CHUNK)},
    "weights": _RC.uniform(0.2, 1.8, N_CHUNK) * np.where(_RC.random(N_CHUNK) < 0.1, -1.0, 1.0),
}


def _chunk_model() -> ld.Expr:
    s, x, y = (ld.scalar(c) for c in ("s", "x", "y"))
    bw = ld.breit_wigner(s, mass=ld.parameter("m", initial=1.5), width=ld.parameter("w"))
    c = ld.complex(ld.parameter("c_re"), ld.parameter("c_im"))
    return (bw * (x + c * y) + ld.polar_complex(ld.parameter("c_re"), ld.parameter("phi"))
            * (s * y).cos()).norm_sqr() + 0.05


CHUNK_PARAMS = [1.45, 0.12, 0.8, -0.35, 0.7]


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_fused_results_identical_across_chunkings_and_trees(precision):
    """Chunks of 1 and 7 events (below BLOCK), 513 (one past it), 4096 and the whole sample
    (several blocks); tree fan-ins 2, 3, 8 and 64: the same bits."""
    model = _chunk_model()
    whole = Dataset.from_arrays(**CHUNK_EVENTS, chunk_size=N_CHUNK)
    ex, pm, pd = _prepare(model, whole, precision=precision, kernel="fused")
    assert pm.kernel == "fused" and pd.stats.batches == 1
    reference = {plan: (pm.reduce_with_gradient(ex, CHUNK_PARAMS, pd, plan),
                        pm.reduce(ex, CHUNK_PARAMS, pd, plan)) for plan in PLANS}
    for grad_eval, value in reference.values():
        assert value == grad_eval.value
        assert np.all(np.isfinite(grad_eval.gradient)) and np.all(grad_eval.gradient != 0.0)
    # and the sums are the numpy path's to rounding (the same terms, differently computed)
    ex_np, pm_np, pd_np = _prepare(model, whole, precision=precision, kernel="numpy")
    reference_np = pm_np.reduce_with_gradient(ex_np, CHUNK_PARAMS, pd_np, LOG)
    if precision == "f64":
        assert reference[LOG][0].value == pytest.approx(reference_np.value, rel=1e-12)
    else:  # each within the float32 bound of tests/tolerances.py (sensitivities w under the
        # log), the array code's log taken in f32 adding u |w ln I| per event
        from tolerances import U32, condition, f32_bound

        cm = CompiledModel.from_expr(model)
        kappa = condition(cm, CHUNK_EVENTS["scalars"], CHUNK_PARAMS)
        w = CHUNK_EVENTS["weights"]
        logs = np.log(cm.values(cm.event_cache(CHUNK_EVENTS["scalars"]), tuple(CHUNK_PARAMS)).real)
        bound = 2 * f32_bound(w, kappa) + U32 * math.fsum(np.abs(w * logs).tolist())
        assert abs(reference[LOG][0].value - reference_np.value) <= bound

    cases = [(1, (8,)), (7, (2, 64)), (513, (2, 3)), (4096, (2, 8)), (N_CHUNK, (2,))]
    for chunk, fan_ins in cases:
        ds = Dataset.from_arrays(**CHUNK_EVENTS, chunk_size=chunk)
        assert ds.n_partitions == math.ceil(N_CHUNK / chunk)
        for split_every in fan_ins:
            ex, pm, pd = _prepare(model, ds, precision=precision, kernel="fused",
                                  split_every=split_every)
            plans = (LOG,) if chunk == 1 else PLANS  # 4500 tasks an evaluation: one plan
            for plan in plans:
                what = f"chunk {chunk}, split_every {split_every}, {plan.transform}"
                _identical(pm.reduce_with_gradient(ex, CHUNK_PARAMS, pd, plan),
                           reference[plan][0], what)
                assert pm.reduce(ex, CHUNK_PARAMS, pd, plan) == reference[plan][1], what


# ---------------------------------------------------------------------------------------
# certified sums, the exact fallback, non-finite terms
# ---------------------------------------------------------------------------------------
LINEAR = ld.parameter("a") * ld.scalar("x")


@pytest.fixture
def exact_calls(monkeypatch):
    """Records, for every fused partition task, whether it ran the exact (term) kernels (the
    fused kernels themselves: no tier-0 kernel serves while they compile)."""
    import dask

    calls: list[bool] = []
    original = PartitionReducer._fused

    def spy(self, part, params, plan, with_gradient, exact):
        calls.append(exact)
        return original(self, part, params, plan, with_gradient, exact)

    monkeypatch.setattr(PartitionReducer, "_fused", spy)
    with dask.config.set({"laddu-dask.tier0": False}):
        yield calls


def _ill_conditioned(n: int, seed: int, weights=(1.0,)) -> tuple[np.ndarray, np.ndarray]:
    """``x`` spanning 1e-300..1e300 whose large values cancel exactly in pairs of equal
    weight (drawn from ``weights``), so that the sum is decided by the smallest terms."""
    rng = np.random.default_rng(seed)
    m = n // 2
    exponents = rng.integers(-300, 301, m).astype(float)
    half = rng.uniform(1.0, 10.0, m) * rng.choice([-1.0, 1.0], m) * 10.0**exponents
    w_half = rng.choice(np.array(weights), m)
    tail = rng.uniform(-1e-300, 1e-300, n - 2 * m)
    x = np.concatenate([half, -half, tail])
    w = np.concatenate([w_half, w_half, rng.choice(np.array(weights), n - 2 * m)])
    order = rng.permutation(n)
    return x[order], w[order]


@pytest.mark.parametrize("chunk", [7, 513, None])
def test_ill_conditioned_sum_and_gradient_equal_fsum(chunk, exact_calls):
    n = 3 * BLOCK + 11
    x, w = _ill_conditioned(n, seed=3)
    a = 0.75
    ds = Dataset.from_arrays(scalars={"x": x}, weights=w, chunk_size=chunk or n)
    ex, pm, pd = _prepare(LINEAR, ds, kernel="fused")
    assert pm.kernel == "fused"
    result = pm.reduce_with_gradient(ex, [a], pd, REAL)
    terms = w * (a * x)  # the kernels' arithmetic, per event
    assert result.value == math.fsum(terms) == _exact_sum(terms)
    assert result.gradient[0] == math.fsum(w * x)
    assert pm.reduce(ex, [a], pd, REAL) == result.value
    # the fast sums cannot be certified here (the result is ~1e-300, the bounds ~1e280):
    # the evaluation was redone exactly
    assert True in exact_calls


def test_ill_conditioned_weighted_terms_equal_fsum(exact_calls):
    """Weights of both signs and magnitudes, and terms spanning 1e-300..1e300."""
    n = 2 * BLOCK + 300
    x, w = _ill_conditioned(n, seed=5, weights=(-1.0, 1.0, 1e-3, -1e3, 2.5))
    ds = Dataset.from_arrays(scalars={"x": x}, weights=w, chunk_size=700)
    ex, pm, pd = _prepare(LINEAR, ds, kernel="fused")
    a = 1.3
    result = pm.reduce_with_gradient(ex, [a], pd, REAL)
    batch = EventBatch(columns={"x": x}, weights=w)
    values = pm.evaluate_batch([a], batch)  # the kernels' per-event values
    np.testing.assert_array_equal(values, a * x)
    assert result.value == math.fsum(w * values) == _exact_sum(w * values)
    assert result.gradient[0] == math.fsum(w * x)


def test_rounding_tie_is_decided_exactly(exact_calls):
    """1 + 2**-53 + 1e-300 lies just above a tie: only an exact sum rounds it up."""
    x = np.array([1.0, 2.0**-53, 1e-300])
    ds = Dataset.from_arrays(scalars={"x": x})
    ex, pm, pd = _prepare(LINEAR, ds, kernel="fused")
    result = pm.reduce_with_gradient(ex, [1.0], pd, REAL)
    assert result.value == math.fsum(x) == 1.0 + 2.0**-52
    assert result.gradient[0] == 1.0 + 2.0**-52
    assert True in exact_calls
    assert float(np.sum(x)) == 1.0  # what a naive sum gives


def test_well_conditioned_sums_are_certified_without_the_exact_path(exact_calls):
    rng = np.random.default_rng(2)
    x = rng.uniform(0.5, 2.0, 5 * BLOCK + 3)
    w = rng.uniform(0.1, 3.0, x.size)
    ds = Dataset.from_arrays(scalars={"x": x}, weights=w, chunk_size=1000)
    ex, pm, pd = _prepare(LINEAR, ds, kernel="fused")
    for plan in PLANS:
        result = pm.reduce_with_gradient(ex, [1.7], pd, plan)
        terms = w * (np.log(1.7 * x) if plan is LOG else 1.7 * x)
        if plan is not LOG:  # (the kernels' log is the C library's, not NumPy's)
            assert result.value == math.fsum(terms)
        else:
            assert result.value == pytest.approx(math.fsum(terms), rel=1e-14)
    assert exact_calls and not any(exact_calls)


def _real_model() -> ld.Expr:
    """A model with real arithmetic only (no complex intermediate)."""
    s, x = ld.scalar("s"), ld.scalar("x")
    # abs: real by construction (a real argument that is not gives laddu's complex root)
    return (ld.parameter("m") * s + ld.parameter("w") * x * x).abs().sqrt() + 0.05 * s


@pytest.mark.parametrize("precision", ["f64", "f32"])
@pytest.mark.parametrize("plan", PLANS, ids=[p.transform for p in PLANS])
@pytest.mark.parametrize("make_model", [_chunk_model, _real_model], ids=["complex", "real"])
def test_exact_fallback_adds_the_same_terms_as_the_fast_sums(make_model, plan, precision):
    """Where the fast sums certify, they equal the exact path's sums bit for bit (so which of
    the two runs can never change a result), value and boundary adjoints."""
    n = 2 * BLOCK + 99
    rng = np.random.default_rng(4)
    cols = {"s": rng.uniform(0.8, 3.5, n), "x": rng.uniform(-1, 1, n), "y": rng.uniform(-1, 1, n)}
    w = rng.uniform(-0.3, 1.7, n)
    ex = Execution(precision=precision, kernel="fused")
    pm = PreparedModel.prepare(CompiledModel.from_expr(make_model()), ex)
    part = prepare_batch(pm.compiled, EventBatch(columns=cols, weights=w), precision)
    point = dict(zip(["m", "w", "c_re", "c_im", "phi"], CHUNK_PARAMS))
    point = {k: v for k, v in point.items() if k in pm.parameter_names}
    params = Params(pm.compiled.parameter_vector(point, precision))
    for with_gradient in (False, True):
        fast = pm.reducer.partials(part, params, plan, with_gradient).certified_floats()
        exact = pm.reducer.partials(part, params, plan, with_gradient, exact=True)
        np.testing.assert_array_equal(fast, exact.certified_floats())
        assert fast.shape == (1 + (pm.reducer.fused.boundary_size if with_gradient else 0),)


@pytest.mark.parametrize(
    ("x", "a", "first"),
    [
        ([1.0, 1e300, 2.0], 1e10, "inf at event 1"),  # a value overflows: +inf
        ([-1e300, 1.0], 1e10, "-inf at event 0"),
        ([1.0, 2.0, 1e300, -1e300], 1e10, "inf at event 2"),  # inf - inf would be nan
    ],
    ids=["inf", "-inf", "nan"],
)
@pytest.mark.parametrize("chunk", [1, 2, None])
@pytest.mark.parametrize("kernel", ["fused", "numpy"])
def test_non_finite_values_are_an_error_naming_the_event(x, a, first, chunk, kernel):
    """Even the real plan, which accepts any sign, rejects an infinite value (the sums
    returned inf or nan before)."""
    ds = Dataset.from_arrays(scalars={"x": np.array(x)}, chunk_size=chunk or len(x))
    ex, pm, pd = _prepare(LINEAR, ds, kernel=kernel)
    assert pm.kernel == kernel
    message = rf"non-finite intensity {first} \(arrays \[rows .*\]\); a real reduction needs finite"
    with pytest.raises(NonFiniteError, match=message):
        pm.reduce_with_gradient(ex, [a], pd, REAL)
    with pytest.raises(NonFiniteError, match=message):
        pm.reduce(ex, [a], pd, REAL)


NEAR_OVERFLOW = np.array([1e308, 1e308, 1e308, -1e308, -1e308])
@pytest.mark.parametrize("chunk", [1, None, 2, 3])
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_near_overflow_terms_that_cancel_sum_exactly(chunk):
    """Terms near the float64 maximum whose exact sum is 1e308: no intermediate overflow,
    even where one partition's own sum (2e308, 3e308) lies beyond the float64 range."""
    ds = Dataset.from_arrays(scalars={"x": NEAR_OVERFLOW}, chunk_size=chunk or 5)
    ex, pm, pd = _prepare(LINEAR, ds, kernel="fused")
    result = pm.reduce_with_gradient(ex, [1.0], pd, REAL)
    assert result.value == result.gradient[0] == _exact_sum(NEAR_OVERFLOW) == 1e308


@pytest.mark.parametrize("kernel", ["fused", "numpy"])
@pytest.mark.parametrize("chunk", [1, None])
def test_finite_terms_whose_exact_sum_overflows_are_an_error(kernel, chunk):
    ds = Dataset.from_arrays(scalars={"x": np.array([1e308, 1e308])}, chunk_size=chunk or 2)
    ex, pm, pd = _prepare(LINEAR, ds, kernel=kernel)
    assert _exact_sum([1e308, 1e308]) == math.inf
    message = r"the sum of the per-event terms over dataset \(arrays\) is inf: it overflows"
    with pytest.raises(NonFiniteError, match=message):
        pm.reduce(ex, [1.0], pd, REAL)
    with pytest.raises(NonFiniteError, match=message):
        pm.reduce_with_gradient(ex, [1.0], pd, REAL)


# ---------------------------------------------------------------------------------------
# non-positive intensities name their global event index
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("with_gradient", [False, True])
@pytest.mark.parametrize("plan", [POSITIVE, LOG], ids=["positive", "log"])
@pytest.mark.parametrize(
    ("bad", "chunk"),
    [(3, None), (BLOCK + 188, None), (2 * BLOCK, None), (1300, 600), (1799, 600)],
    ids=["first-block", "later-block", "block-start", "later-partition", "last-event"],
)
def test_non_positive_intensity_names_the_event(bad, chunk, plan, with_gradient):
    n = 1800
    x = np.linspace(0.5, 2.0, n)
    x[bad] = -0.25 if bad % 2 else 0.0
    ds = Dataset.from_arrays(scalars={"x": x}, chunk_size=chunk or n)
    for kernel in ("fused", "numpy"):
        ex, pm, pd = _prepare(LINEAR, ds, kernel=kernel)
        assert pm.kernel == kernel
        run = pm.reduce_with_gradient if with_gradient else pm.reduce
        with pytest.raises(NonPositiveIntensityError,
                           match=rf"non-positive intensity .* at event {bad} \(.*\); "
                                 rf"a {plan.transform} reduction needs positive values"):
            run(ex, [2.0], pd, plan)
    # and not for the real plan, which accepts any sign
    ex, pm, pd = _prepare(LINEAR, ds, kernel="fused")
    assert pm.reduce(ex, [2.0], pd, REAL) == math.fsum(2.0 * x)


@pytest.mark.parametrize("kernel", ["fused", "numpy"])
@pytest.mark.parametrize("plan", PLANS, ids=lambda p: p.transform)
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_nan_intensity_is_a_non_finite_error(plan, kernel):
    x = np.linspace(1.0, 2.0, 700)
    x[600] = -1.0
    model = ld.scalar("x") ** 0.5 * ld.parameter("a")  # (-1) ** 0.5 = nan at event 600
    ds = Dataset.from_arrays(scalars={"x": x})
    ex, pm, pd = _prepare(model, ds, kernel=kernel)
    message = rf"non-finite intensity nan at event 600 \(arrays.*a {plan.transform} reduction"
    with pytest.raises(NonFiniteError, match=message):
        pm.reduce_with_gradient(ex, [1.0], pd, plan)


# ---------------------------------------------------------------------------------------
# evaluate_batch gives the very values the sums add
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_evaluate_batch_equals_the_summed_per_event_values(precision):
    n = 2 * BLOCK + 40
    rng = np.random.default_rng(9)
    cols = {"s": rng.uniform(0.8, 3.5, n), "x": rng.uniform(-1, 1, n), "y": rng.uniform(-1, 1, n)}
    model = _chunk_model()
    ex = Execution(precision=precision, kernel="fused")
    pm = PreparedModel.prepare(CompiledModel.from_expr(model), ex)
    assert pm.kernel == "fused"
    values = pm.evaluate_batch(CHUNK_PARAMS, EventBatch(columns=cols, weights=np.ones(n)))
    assert values.shape == (n,)
    reducer: PartitionReducer = pm.reducer
    params = Params(pm.compiled.parameter_vector(CHUNK_PARAMS, precision))
    for i in [0, 1, 5, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK - 1, 2 * BLOCK, n - 1,
              *rng.integers(0, n, 20).tolist()]:
        one_hot = np.zeros(n)
        one_hot[i] = 1.0
        part = prepare_batch(pm.compiled, EventBatch(columns=cols, weights=one_hot), precision)
        partials = reducer.partials(part, params, REAL, with_gradient=False)
        total = partials.certified_floats()[0]  # the sum of one term and zeros: that term
        assert total == np.float64(np.real(values[i])), f"event {i}"
    # and single-event partitions through the public reduction
    ds = Dataset.from_arrays(scalars=cols, chunk_size=1)
    pd = pm.prepare_dataset(ex, ds)
    assert pm.reduce(ex, CHUNK_PARAMS, pd, REAL) == math.fsum(values.astype(np.float64).tolist())


# ---------------------------------------------------------------------------------------
# the on-disk kernel cache
# ---------------------------------------------------------------------------------------
_CACHE_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import laddu_dask as ld
    from laddu_dask.compile.compiled import CompiledModel
    from laddu_dask.runtime.execution import Execution
    from laddu_dask.runtime.prepared import PreparedModel

    x, y = ld.scalar("x"), ld.scalar("y")
    c = ld.complex(ld.parameter("re"), ld.parameter("im"))
    model = (c * x + ld.parameter("k") * y * y).norm_sqr() + 0.125  # unique to this test
    ds = ld.Dataset.from_arrays(scalars={"x": np.linspace(0.1, 2, 900), "y": np.ones(900)})
    ex = Execution(kernel="fused")
    pm = PreparedModel.prepare(CompiledModel.from_expr(model), ex)
    pd = pm.prepare_dataset(ex, ds)
    plan = ld.ReductionPlan.weighted_log_positive_real()
    r0 = pm.reduce_with_gradient(ex, [0.3, -0.2, 0.7], pd, plan)  # tier-0 while compiling
    v0 = pm.reduce(ex, [0.3, -0.2, 0.7], pd, plan)
    assert pm.reducer.wait_compiled(600)
    r = pm.reduce_with_gradient(ex, [0.3, -0.2, 0.7], pd, plan)  # the fused kernels
    v = pm.reduce(ex, [0.3, -0.2, 0.7], pd, plan)
    assert (r0.value, list(r0.gradient), v0) == (r.value, list(r.gradient), v)
    fk = pm.reducer.fused
    stats = {name: getattr(fk, name).stats for name in ("value_sum", "gradient_sum")}
    print(json.dumps({
        "value": r.value.hex(), "v": v.hex(), "gradient": [g.hex() for g in r.gradient],
        "module": sys.modules[fk.value_sum.py_func.__module__].__file__,
        "hits": {k: sum(s.cache_hits.values()) for k, s in stats.items()},
        "misses": {k: sum(s.cache_misses.values()) for k, s in stats.items()},
    }))
    """
)


def _run_cache_script(cache: Path) -> dict:
    import json

    env = {**os.environ, "LADDU_DASK_CACHE": str(cache)}
    env.pop("NUMBA_CACHE_DIR", None)
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", _CACHE_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120, cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_kernel_cache_is_reused_by_a_second_process(tmp_path):
    cache = tmp_path / "kernels"
    first = _run_cache_script(cache)
    module = Path(first["module"])
    assert module.parent == cache and module.suffix == ".py" and module.exists()
    assert module.name.startswith("laddu_dask_kernel_")
    numba_files = sorted(p for p in cache.rglob("*") if p.suffix in (".nbi", ".nbc"))
    assert any(p.suffix == ".nbi" for p in numba_files), sorted(cache.rglob("*"))
    assert any(p.suffix == ".nbc" for p in numba_files)
    assert any(module.stem in p.name for p in numba_files)  # the kernels' own machine code
    # compiled (and saved) by this process: in a child compilation, whose machine code the
    # process then loaded from the disk cache
    assert all(first["misses"][k] + first["hits"][k] > 0 for k in first["misses"])
    stamps = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in [module, *numba_files]}

    second = _run_cache_script(cache)
    assert second["module"] == first["module"]
    assert second["misses"] == {"value_sum": 0, "gradient_sum": 0}  # nothing recompiled
    assert all(n > 0 for n in second["hits"].values())  # loaded from the disk cache
    assert {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in stamps} == stamps
    assert sorted(p for p in cache.rglob("*") if p.suffix in (".nbi", ".nbc")) == numba_files
    # and the loaded machine code computes the same bits
    for key in ("value", "v", "gradient"):
        assert second[key] == first[key]
