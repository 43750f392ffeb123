"""Exact gradients of compiled models against finite differences, and the f32 path.

References: central finite differences of the compiled values (random expressions drawn by
Hypothesis from every operation of the graph), f64 evaluation (for f32), and laddu's own
complex gradients when laddu is installed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from laddu_reference import HAVE_LADDU, laddu, needs_laddu  # noqa: F401

import laddu_dask as ld
from laddu_dask import ksks
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.data.batch import EventBatch
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.prepared import PreparedModel

# ---------------------------------------------------------------------------------------
# events and finite differences
# ---------------------------------------------------------------------------------------
N_EVENTS = 12
_RNG = np.random.default_rng(1234)
COLUMNS: dict[str, np.ndarray] = {
    "g1": _RNG.uniform(-1.5, 1.5, N_EVENTS),
    "g2": _RNG.uniform(-1.5, 1.5, N_EVENTS),
    "g3": _RNG.uniform(0.5, 2.0, N_EVENTS),
}
_P = _RNG.normal(0.0, 1.0, (N_EVENTS, 3))
COLUMNS.update({"gk_e": np.sqrt(0.25 + (_P**2).sum(1)), "gk_px": _P[:, 0], "gk_py": _P[:, 1],
                "gk_pz": _P[:, 2]})
PARAM_NAMES = ("gp0", "gp1", "gp2", "gp3")


def finite_differences(cm: CompiledModel, cache: list, params: np.ndarray, n: int,
                       rel_step: float = 1e-6) -> np.ndarray:
    """Central differences ``(n, k)`` of the compiled values (complex)."""
    out = np.zeros((n, len(params)), dtype=np.complex128)
    for j in range(len(params)):
        h = rel_step * max(1.0, abs(params[j]))
        up, down = params.copy(), params.copy()
        up[j] += h
        down[j] -= h
        out[:, j] = (cm.values(cache, list(up), n=n) - cm.values(cache, list(down), n=n)) / (2 * h)
    return out


def assert_close_to_fd(jac: np.ndarray, fd: np.ndarray, value: np.ndarray,
                       fd_coarse: np.ndarray | None = None) -> None:
    """``|J - FD| <= 1e-5 |J| + 1e-7 (1 + |v|) + 3 |FD - FD_coarse|`` per event and parameter.

    ``FD_coarse`` (a 4x larger step) estimates the finite-difference error itself: where a
    value is computed through steep intermediates, rounding noise of the differences can
    exceed any fixed tolerance, and it shows up as disagreement between the two steps.
    """
    tol = 1e-5 * np.abs(jac) + 1e-7 * (1.0 + np.abs(value))[:, None]
    if fd_coarse is not None:
        tol = tol + 3.0 * np.abs(fd - fd_coarse)
    bad = np.abs(jac - fd) > tol
    assert not bad.any(), (
        f"jacobian differs from finite differences at {np.argwhere(bad)[:5].tolist()}: "
        f"exact {jac[bad][:3]}, fd {fd[bad][:3]}"
    )


# ---------------------------------------------------------------------------------------
# random expressions
# ---------------------------------------------------------------------------------------
def pos(x: ld.Expr) -> ld.Expr:
    """A real expression >= 1 (safe argument of log, sqrt, denominators)."""
    return x.norm_sqr() + 1.0


def cpos(x: ld.Expr, y: ld.Expr) -> ld.Expr:
    """A complex expression with real part >= 1: away from 0 and from the branch cuts."""
    return ld.complex(pos(x), y.real())


def bounded(x: ld.Expr, k: float = 0.3) -> ld.Expr:
    return x.real().sin() * k


def beta_of(x: ld.Expr, y: ld.Expr) -> ld.Vec3:
    """A velocity with |beta| < 0.52 built from two expressions."""
    return ld.Vec3(bounded(x), y.real().cos() * 0.3, bounded(x.real() * y.real()))


def boost_event(x: ld.Expr, y: ld.Expr, pick: int) -> ld.Expr:
    k = ld.Vec4.event("gk").boost(beta_of(x, y))
    return (k.e(), k.pz(), k.vec3().costheta(), k.m2())[pick]


def boost_built(x: ld.Expr, y: ld.Expr, pick: int) -> ld.Expr:
    p = ld.Vec4(pos(x) + 2.0, bounded(x, 0.5), y.real().cos() * 0.5, ld.scalar("g1") * 0.2)
    q = p.boost(-beta_of(y, x))
    return (q.e(), q.px(), q.m(), q.vec3().unit().pz())[pick]


UNARY = [
    lambda x: -x,
    lambda x: x.sin(),
    lambda x: x.cos(),
    lambda x: bounded(x, 0.5).tan(),
    lambda x: ld.complex(bounded(x, 0.5), bounded(x.imag(), 0.5)).tan(),
    lambda x: x.exp(),
    lambda x: pos(x).log(),
    lambda x: cpos(x, x).log(),
    lambda x: pos(x).sqrt(),
    lambda x: cpos(x, x.imag()).sqrt(),
    lambda x: ld.acos(bounded(x, 0.9)),
    lambda x: ld.cis(x.real()),
    lambda x: x.conj(),
    lambda x: x.real(),
    lambda x: x.imag(),
    lambda x: x.norm_sqr(),
    lambda x: cpos(x.imag(), x).abs(),
    lambda x: (-pos(x)).abs(),
    lambda x: x.to_complex(),
    lambda x: x**2,
    lambda x: x**3,
    lambda x: pos(x) ** -1,
    lambda x: cpos(x, x) ** -2,
    lambda x: pos(x) ** 0.7,
    lambda x: cpos(x, x) ** 1.3,
]

BINARY = [
    lambda x, y: x + y,
    lambda x, y: x - y,
    lambda x, y: x * y,
    lambda x, y: x / pos(y),
    lambda x, y: x / cpos(y, x),
    lambda x, y: pos(x) ** bounded(y, 1.5),
    lambda x, y: cpos(x, y) ** bounded(y, 1.5),
    lambda x, y: ld.atan2(x.real(), pos(y)),
    lambda x, y: ld.atan2(pos(y), x.real()),
    lambda x, y: ld.complex(x.real(), y.real()),
    lambda x, y: ld.polar_complex(x.real(), y.real()),
    lambda x, y: boost_event(x, y, 0),
    lambda x, y: boost_event(x, y, 1),
    lambda x, y: boost_event(x, y, 2),
    lambda x, y: boost_event(x, y, 3),
    lambda x, y: boost_built(x, y, 0),
    lambda x, y: boost_built(x, y, 1),
    lambda x, y: boost_built(x, y, 2),
    lambda x, y: boost_built(x, y, 3),
]

_G = [ld.scalar(c) for c in ("g1", "g2", "g3")]
_GP = [ld.parameter(n) for n in PARAM_NAMES]
LEAVES = (
    _G
    + _GP * 2
    + [ld.constant(0.5), ld.constant(-1.25), ld.constant(2.0), ld.constant(0.75 - 0.5j),
       ld.constant(-0.3 + 1.1j)]
    # complex leaves, so that complex arithmetic is as common as real arithmetic
    + [ld.complex(_GP[0], _G[0]), ld.complex(_G[1], _GP[1]), ld.complex(_GP[2], _GP[3]),
       ld.polar_complex(_G[2], _GP[3])]
)


def squash(x: ld.Expr) -> ld.Expr:
    """``x / sqrt(1 + |x|^2)``: the same phase, a magnitude below 1, smooth everywhere."""
    return x / (x.norm_sqr() + 1.0).sqrt()


def _extend(children: st.SearchStrategy) -> st.SearchStrategy:
    # every operation's result is squashed before it feeds the next one, so that no
    # intermediate (nor derivative) grows past about 20: the comparisons below then test
    # the derivative rules, not the rounding of cancelling 1e7-sized terms (well-conditioned
    # by construction, whatever the nesting depth)
    unary = st.tuples(st.sampled_from(UNARY), children).map(lambda t: squash(t[0](t[1])))
    binary = st.tuples(st.sampled_from(BINARY), children, children).map(
        lambda t: squash(t[0](t[1], t[2]))
    )
    return st.one_of(unary, binary)


#: Random expressions: an operation applied to random subexpressions (so never a bare leaf).
expressions = _extend(st.recursive(st.sampled_from(LEAVES), _extend, max_leaves=10))
param_values = st.lists(
    st.floats(-1.2, 1.2, allow_nan=False, allow_infinity=False), min_size=4, max_size=4
)
GRADIENT_SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _prepare(expr: ld.Expr, values: list[float]):
    cm = CompiledModel.from_expr(expr)
    assume(cm.parameter_names)
    by_name = dict(zip(PARAM_NAMES, values))
    params = np.array([by_name[n] for n in cm.parameter_names])
    cache = cm.event_cache({c: COLUMNS[c] for c in cm.columns})
    value = cm.values(cache, list(params), n=N_EVENTS)
    assume(np.all(np.isfinite(value)) and np.max(np.abs(value)) < 1e6)
    return cm, cache, params, value


@GRADIENT_SETTINGS
@given(expr=expressions, values=param_values)
def test_jacobian_matches_finite_differences(expr, values):
    cm, cache, params, value = _prepare(expr, values)
    v, jac = cm.values_and_jacobian(cache, list(params), n=N_EVENTS)
    k = len(params)
    assert jac.shape == (N_EVENTS, k) and jac.dtype == np.complex128
    np.testing.assert_array_equal(v, value)
    if not np.iscomplexobj(value):
        assert np.all(jac.imag == 0)
    assume(np.all(np.isfinite(jac)) and np.max(np.abs(jac)) < 1e8)
    fd = finite_differences(cm, cache, params, N_EVENTS)
    fd_coarse = finite_differences(cm, cache, params, N_EVENTS, rel_step=4e-6)
    assert_close_to_fd(jac, fd, value, fd_coarse)


@GRADIENT_SETTINGS
@given(expr=expressions, values=param_values, seed_seed=st.integers(0, 2**32 - 1))
def test_vjp_equals_seeded_jacobian(expr, values, seed_seed):
    """``values_and_vjp`` gives ``Re(conj(seed) dv/dp)`` per event, for real and complex seeds."""
    cm, cache, params, value = _prepare(expr, values)
    _, jac = cm.values_and_jacobian(cache, list(params), n=N_EVENTS)
    assume(np.all(np.isfinite(jac)) and np.max(np.abs(jac)) < 1e8)
    # exp(exp(...)) chains make values (and the cancellations inside their gradients)
    # so large that rounding, not the derivative rules, decides the comparisons
    assume(np.max(np.abs(value)) < 1e6)
    rng = np.random.default_rng(seed_seed)
    seed = rng.normal(size=N_EVENTS)
    v, grads = cm.values_and_vjp(cache, list(params), seed, n=N_EVENTS)
    np.testing.assert_array_equal(v, value)
    assert len(grads) == len(params)
    tol = 1e-12 * (1.0 + np.abs(seed)[:, None] * np.abs(jac))
    g = np.column_stack(grads)
    assert g.dtype == np.float64 and g.shape == jac.shape
    expected = seed[:, None] * jac.real
    assert np.all(np.abs(g - expected) <= tol)
    # the reduced (summed) gradient of sum_i seed_i Re(v_i), against finite differences
    reduced = np.array([math.fsum(col) for col in g.T])
    np.testing.assert_allclose(reduced, (seed[:, None] * jac.real).sum(axis=0), rtol=1e-12,
                               atol=1e-12 * (1.0 + np.abs(seed) @ np.abs(jac)).max())
    fd, fd_coarse = (finite_differences(cm, cache, params, N_EVENTS, rel_step=h)
                     for h in (1e-6, 4e-6))
    fd_reduced = (seed[:, None] * fd.real).sum(axis=0)
    fd_noise = np.abs(fd_reduced - (seed[:, None] * fd_coarse.real).sum(axis=0))
    tol = 1e-5 * np.abs(seed) @ np.abs(jac) + 1e-7 * (1.0 + np.abs(seed) @ np.abs(value))
    assert np.all(np.abs(reduced - fd_reduced) <= tol + 3.0 * fd_noise)
    # a complex seed, and a seed given as a function of the values
    cseed = seed + 1j * rng.normal(size=N_EVENTS)
    _, cgrads = cm.values_and_vjp(cache, list(params), cseed, n=N_EVENTS)
    expected = (np.conj(cseed)[:, None] * jac).real
    assert np.all(np.abs(np.column_stack(cgrads) - expected) <= 2 * tol)
    _, fgrads = cm.values_and_vjp(cache, list(params), lambda val: 2.0 * np.ones_like(val.real),
                                  n=N_EVENTS)
    assert np.all(np.abs(np.column_stack(fgrads) - 2.0 * jac.real) <= 2 * tol + 1e-12)


def _block_arguments():
    """A real and a complex argument that depend on parameters and on events."""
    gp0, gp1, gp2 = _GP[:3]
    x = gp0 * _G[0] + gp1
    z = ld.complex(gp0 * _G[1], gp1 - _G[2]) * (0.75 - 0.5j) + gp2
    return x, z


def _check_block(expr: ld.Expr) -> None:
    cm = CompiledModel.from_expr(expr)
    params = np.array([0.7, -0.4, 0.3, 0.9])[: len(cm.parameter_names)]
    cache = cm.event_cache({c: COLUMNS[c] for c in cm.columns})
    value, jac = cm.values_and_jacobian(cache, list(params), n=N_EVENTS)
    assert np.all(np.isfinite(value)) and np.all(np.isfinite(jac))
    fd = finite_differences(cm, cache, params, N_EVENTS)
    fd_coarse = finite_differences(cm, cache, params, N_EVENTS, rel_step=4e-6)
    assert_close_to_fd(jac, fd, value, fd_coarse)


@pytest.mark.parametrize("complex_arg", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("index", range(len(UNARY)))
def test_every_unary_building_block(index, complex_arg):
    """Each derivative rule, on a real and on a complex argument (not left to chance)."""
    x, z = _block_arguments()
    _check_block(UNARY[index](z if complex_arg else x))


@pytest.mark.parametrize("kinds", ["rr", "rc", "cr", "cc"])
@pytest.mark.parametrize("index", range(len(BINARY)))
def test_every_binary_building_block(index, kinds):
    x, z = _block_arguments()
    args = [z if k == "c" else x for k in kinds]
    _check_block(BINARY[index](*args))


@pytest.mark.slow
def test_fused_kernels_agree_with_array_kernels():
    """The fused (Numba) kernels have their own derivative code: every building block, on
    real and complex arguments, in one model, against the whole-array kernels.

    Slow on a cold kernel cache (one Numba compilation of a large model, ~10 s); about 1 s
    when the compiled kernels are cached on disk.
    """
    pytest.importorskip("numba")
    x, z = _block_arguments()
    total = None
    k = 0
    for f in UNARY:
        for a in (x, z):
            k += 1
            term = f(a) * (1.0 + 0.01 * k)
            total = term if total is None else total + term
    for f in BINARY:
        for a, b in ((x, z), (z, x), (x, x), (z, z)):
            k += 1
            total = total + f(a, b) * (1.0 + 0.01 * k)
    cm = CompiledModel.from_expr(total)
    params = [0.7, -0.4, 0.3]
    assert cm.parameter_names == ["gp0", "gp1", "gp2"]
    scalars = {c: v for c, v in COLUMNS.items() if not c.startswith("gk_")}
    p4 = np.column_stack([COLUMNS[f"gk_{c}"] for c in ("e", "px", "py", "pz")])
    weights = np.linspace(0.5, 1.5, N_EVENTS)
    ds = ld.Dataset.from_arrays(p4s={"gk": p4}, scalars=scalars, weights=weights)
    results = {}
    for kernel in ("numpy", "fused"):
        ex = Execution(kernel=kernel)
        pm = PreparedModel.prepare(cm, ex)
        pd = pm.prepare_dataset(ex, ds)
        results[kernel] = (
            pm.reduce_with_gradient(ex, params, pd, ld.ReductionPlan.weighted_real()),
            pm.evaluate_batch(params, EventBatch(columns=dict(COLUMNS), weights=weights)),
        )
    (r_np, v_np), (r_fu, v_fu) = results["numpy"], results["fused"]
    np.testing.assert_allclose(v_fu, v_np, rtol=1e-12, atol=1e-12 * np.abs(v_np).max())
    assert r_fu.value == pytest.approx(r_np.value, rel=1e-13)
    np.testing.assert_allclose(r_fu.gradient, r_np.gradient, rtol=1e-11,
                               atol=1e-12 * np.abs(r_np.gradient).max())
    # and both equal sum_i w_i d Re(v_i)/dp from the jacobian
    _, jac = cm.values_and_jacobian(cm.event_cache({c: COLUMNS[c] for c in cm.columns}), params)
    np.testing.assert_allclose(r_np.gradient, weights @ jac.real, rtol=1e-11)


def test_generated_expressions_reach_every_operation():
    """The strategy's building blocks compile and cover every differentiable operation."""
    from laddu_dask.expr.graph import walk
    from laddu_dask.expr.ops import OPS

    x, y = ld.parameter("gp0") * ld.scalar("g1"), ld.parameter("gp1") + ld.scalar("g2")
    z = ld.complex(x, y)
    built = [f(x) for f in UNARY] + [f(z) for f in UNARY] + [f(x, z) for f in BINARY]
    seen = {n.op for e in built for n in walk(e)}
    missing = set(OPS) - seen
    assert not missing, f"operations never generated: {sorted(missing)}"


# ---------------------------------------------------------------------------------------
# hand-picked gradients with closed forms
# ---------------------------------------------------------------------------------------
def test_closed_form_gradients():
    s = ld.scalar("s")
    m, w = ld.parameter("cf_m", initial=1.3), ld.parameter("cf_w", initial=0.1)
    cm = CompiledModel.from_expr(ld.breit_wigner(s, mass=m, width=w))
    sv = np.array([0.5, 1.69, 2.5])
    value, jac = cm.values_and_jacobian(cm.event_cache({"s": sv}), [1.3, 0.1])
    den = 1.69 - sv - 1j * 0.13
    np.testing.assert_allclose(value, 1 / den, rtol=1e-14)
    # d/dM 1/D = -(2M - i G)/D^2, d/dG = (i M)/D^2
    np.testing.assert_allclose(jac[:, 0], -(2 * 1.3 - 0.1j) / den**2, rtol=1e-13)
    np.testing.assert_allclose(jac[:, 1], 1.3j / den**2, rtol=1e-13)
    # |c|^2 for c = re + i im: gradient (2 re, 2 im), real
    re, im = ld.parameter("cf_re"), ld.parameter("cf_im")
    c2 = CompiledModel.from_expr(ld.complex(re, im).norm_sqr() * s)
    value, jac = c2.values_and_jacobian(c2.event_cache({"s": sv}), [0.6, -0.8])
    np.testing.assert_allclose(value, sv, rtol=1e-15)
    np.testing.assert_allclose(jac, np.column_stack([1.2 * sv, -1.6 * sv]), rtol=1e-15)
    # a complex seed on a real model: d Re(conj(s) v)/dp = Re(s) dv/dp (regression: the
    # imaginary part of the seed used to leak into complex intermediates)
    r = CompiledModel.from_expr(ld.complex(1.0, re * s).abs())
    cs = np.array([1 + 1j, 2 - 1j, -1 + 3j])
    _, (g,) = r.values_and_vjp(r.event_cache({"s": sv}), [0.6], cs)
    np.testing.assert_allclose(g, cs.real * 0.6 * sv**2 / np.sqrt(1 + (0.6 * sv) ** 2), rtol=1e-14)
    # a parameter that does not reach the value (multiplied by a folded zero) has zero gradient
    z = CompiledModel.from_expr(re * s + im.imag())
    _, jac = z.values_and_jacobian(z.event_cache({"s": sv}), [0.6])
    np.testing.assert_array_equal(jac[:, 0], sv)


# ---------------------------------------------------------------------------------------
# a complex model through PreparedModel, and laddu's gradients
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ksks_events():
    data, _ = ksks.generate(n_data=500, n_mc=10, seed=1)
    cols = {}
    for name in ("beam", "proton", "kshort1", "kshort2"):
        arr = np.asarray(data[name], dtype=np.float64)
        for i, c in enumerate(("e", "px", "py", "pz")):
            cols[f"{name}_{c}"] = np.ascontiguousarray(arr[:, i])
    return data, cols


def complex_amplitude(lib):
    """An S + D wave amplitude (complex) in laddu's API, for ``lib`` = laddu_dask or laddu."""
    beam, k1, k2 = (lib.Vec4.event(n) for n in ("beam", "kshort1", "kshort2"))
    x = k1 + k2
    k = k1.boost(-x.beta()).vec3()
    z = x.vec3().unit()
    y = beam.vec3().cross(z).unit()
    costheta = k.dot(z) / k.mag()
    phi = lib.atan2(k.dot(y), k.dot(y.cross(z)))
    s = x.m2()
    bw_s = lib.relativistic_breit_wigner(s, mass=lib.parameter("cm_sm"),
                                         width=lib.parameter("cm_sw"),
                                         mass1=ksks.M_KS, mass2=ksks.M_KS, l=0)
    bw_d = lib.relativistic_breit_wigner(s, mass=lib.parameter("cm_dm"),
                                         width=lib.parameter("cm_dw"),
                                         mass1=ksks.M_KS, mass2=ksks.M_KS, l=2)
    bw_p = lib.breit_wigner(s, mass=lib.parameter("cm_dm"), width=0.2)
    coeff = lib.complex(lib.parameter("cm_re"), lib.parameter("cm_im"))
    return (bw_s * lib.spherical_harmonic(0, 0, costheta=costheta, phi=phi)
            + bw_d * coeff * lib.spherical_harmonic(2, 1, costheta=costheta, phi=phi)
            + bw_p * lib.polar_complex(lib.parameter("cm_im"), lib.parameter("cm_sw"))
            * lib.spherical_harmonic(1, -1, costheta=costheta, phi=phi))


COMPLEX_PARAMS = [1.5, 0.11, 1.52, 0.09, 0.8, -0.3]


def test_prepared_model_gradient_of_complex_model(ksks_events):
    _, cols = ksks_events
    amp = complex_amplitude(ld)
    cm = CompiledModel.from_expr(amp)
    assert cm.parameter_names == ["cm_sm", "cm_sw", "cm_dm", "cm_dw", "cm_re", "cm_im"]
    pm = PreparedModel.prepare(cm, Execution())
    n = len(cols["beam_e"])
    batch = EventBatch(columns=cols, weights=np.ones(n))
    params = np.array(COMPLEX_PARAMS)
    values, grad = pm.evaluate_batch_with_gradient(list(params), batch)
    assert values.shape == (n,) and values.dtype == np.complex128
    assert grad.shape == (n, 6) and grad.dtype == np.complex128
    # evaluate_batch may run other (fused) kernels: equal up to rounding
    np.testing.assert_allclose(pm.evaluate_batch(list(params), batch), values, rtol=1e-13,
                               atol=1e-14 * np.abs(values).max())
    fd = np.zeros_like(grad)
    for j in range(6):
        h = 1e-6 * max(1.0, abs(params[j]))
        up, down = params.copy(), params.copy()
        up[j] += h
        down[j] -= h
        diff = pm.evaluate_batch(list(up), batch) - pm.evaluate_batch(list(down), batch)
        fd[:, j] = diff / (2 * h)
    assert_close_to_fd(grad, fd, values)
    # the same against the compiled model's own differences, with their noise estimate
    cache = cm.event_cache(cols)
    fd_coarse = finite_differences(cm, cache, params, n, rel_step=4e-6)
    assert_close_to_fd(grad, finite_differences(cm, cache, params, n), values, fd_coarse)
    # by-name parameters
    named = dict(zip(cm.parameter_names, params))
    np.testing.assert_array_equal(pm.evaluate_batch_with_gradient(named, batch)[1], grad)


@needs_laddu
def test_complex_gradient_matches_laddu(ksks_events):
    data, cols = ksks_events
    ours = CompiledModel.from_expr(complex_amplitude(ld))
    theirs = laddu.Model(complex_amplitude(laddu))
    assert ours.parameter_names == list(theirs.parameter_names)
    p4s = {k: np.ascontiguousarray(data[k], dtype=np.float64)
           for k in ("beam", "proton", "kshort1", "kshort2")}
    ds = laddu.Dataset.from_arrays(p4s=p4s, scalars={})
    lv, lg = theirs.value_and_gradient(ds, parameters=COMPLEX_PARAMS)
    v, jac = ours.values_and_jacobian(ours.event_cache(cols), COMPLEX_PARAMS)
    # measured: per-event values within 4.3e-13 relative, each gradient column within 2.1e-13
    # of its largest entry (laddu and we round differently along the boosts and angles)
    np.testing.assert_allclose(v, lv, rtol=2e-12, atol=0)
    scale = np.abs(lg).max(axis=0)
    assert np.all(np.abs(jac - lg) <= 2e-12 * scale)


# ---------------------------------------------------------------------------------------
# single precision
# ---------------------------------------------------------------------------------------
def test_f32_values_agree_with_f64(ksks_events):
    """Per event, values and Jacobians within the float32 error bound of tests/tolerances.py
    (``u D (1 + cond)``, cond from the f64 Jacobian and differences in the columns); summed
    over events, within that bound summed."""
    from tolerances import condition, f32_bound

    _, cols = ksks_events
    model = ksks.model()
    cm = CompiledModel.from_expr(model)
    params = model.default_parameters
    cache64 = cm.event_cache(cols, precision="f64")
    cache32 = cm.event_cache(cols, precision="f32")
    assert all(c.dtype in (np.float32, np.complex64) for c in cache32)
    v64 = cm.values(cache64, params, precision="f64")
    v32 = cm.values(cache32, params, precision="f32")
    assert v64.dtype == np.float64 and v32.dtype == np.float32
    assert np.all(v64 > 0)
    # The model is ill-conditioned in its inputs (s = E^2 - |p|^2 of 8 GeV kaons, then
    # M^2 - s near the pole): cond reaches ~1e3 here, and the bound with it
    kappa = condition(cm, cols, cm.parameter_vector(params))
    bound = f32_bound(v64, kappa, axis=None)
    assert np.all(np.abs(v32 - v64) <= bound)
    total = math.fsum(v64)
    assert abs(math.fsum(v32.astype(np.float64)) - total) <= f32_bound(v64, kappa, total=total)
    # f32 gradients: each derivative within the bound of its own condition
    _, g64 = cm.values_and_jacobian(cache64, params, precision="f64")
    _, g32 = cm.values_and_jacobian(cache32, params, precision="f32")
    assert g32.dtype == np.complex64
    gkappa = condition(cm, cols, cm.parameter_vector(params), gradient=True)
    assert np.all(np.abs(g32.astype(np.complex128) - g64) <= f32_bound(g64, gkappa, axis=None))

    # PreparedModel honours the execution's precision
    n = len(cols["beam_e"])
    pm32 = PreparedModel.prepare(cm, Execution(precision="f32"))
    vb = pm32.evaluate_batch(params, EventBatch(columns=cols, weights=np.ones(n)))
    assert vb.dtype == np.float32
    assert np.all(np.abs(vb.astype(np.float64) - v64) <= bound)
