"""Tests of the likelihood layer: NLL and ExtendedNLL against laddu and against closed
forms (NumPy per-event intensities summed with ``math.fsum``), Likelihood's parameter
sharing, fits, and every bad-input case by error type and message.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from laddu_reference import COEFFICIENT_NAMES, laddu_available, laddu_ksks_nll

from laddu_dask import ksks
from laddu_dask.data.dataset import Dataset
from laddu_dask.data.parquet import read_parquet
from laddu_dask.errors import (
    BudgetError,
    DataError,
    NonPositiveIntensityError,
    NormalizationError,
    ParameterError,
    SchemaError,
)
from laddu_dask.expr import Model, Vec4, parameter, scalar
from laddu_dask.likelihood import NLL, ExtendedNLL, FitResult, Likelihood
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.memory import MemoryPlan

needs_laddu = pytest.mark.skipif(not laddu_available(), reason="laddu (0.28 API) is not installed")

#: Two points away from the truth (all ten parameters moved).
PERTURBED = (
    {
        "s_mass": 1.49, "s_width": 0.125, "d_mass": 1.53, "d_width": 0.078,
        "d0_re": 0.70, "d0_im": 0.35, "d1_re": -0.30, "d1_im": 0.55, "d2_re": 0.20, "d2_im": -0.40,
    },
    {
        "s_mass": 1.62, "s_width": 0.20, "d_mass": 1.40, "d_width": 0.15,
        "d0_re": 1.10, "d0_im": -0.20, "d1_re": 0.10, "d1_im": 0.90, "d2_re": -0.60, "d2_im": 0.05,
    },
)
POINTS = (dict(ksks.TRUTH), *PERTURBED)


def _assert_matches_laddu(value, grad, ref_value, ref_grad) -> None:
    """What we deliver (measured: value within 8.1e-16 relative, every gradient component
    within 7.1e-14 of the gradient's largest); the bounds were 1e-10 and 1e-7 before."""
    assert value == pytest.approx(ref_value, rel=1e-13, abs=0)
    scale = float(np.max(np.abs(ref_grad)))
    assert np.all(np.abs(grad - ref_grad) <= 1e-11 * scale)


# ---------------------------------------------------------------------------
# the K_S K_S NLL against laddu
# ---------------------------------------------------------------------------
@needs_laddu
@pytest.mark.parametrize("fixed", [False, True], ids=["free", "fixed_lineshapes"])
@pytest.mark.parametrize("lineshape", ["bw", "rbw"])
def test_ksks_nll_matches_laddu(ksks_sample, lineshape, fixed):
    ref = laddu_ksks_nll(ksks_sample["data"], ksks_sample["accmc"], lineshape=lineshape,
                         fixed_lineshapes=fixed)
    model = ksks.model(lineshape, fixed_lineshapes=fixed)
    data = read_parquet(ksks_sample["data"], chunk_size=1000)
    mc = read_parquet(ksks_sample["accmc"], chunk_size=1500)
    lik = Likelihood([NLL(model, data=data, accepted_mc=mc, name="ksks")])
    assert lik.parameter_names == ref.parameter_names
    if fixed:
        assert lik.parameter_names == list(COEFFICIENT_NAMES)
    for point in POINTS:
        p = {n: point[n] for n in lik.parameter_names}
        ref_value, ref_grad = ref.value_and_gradient(p)
        value, grad = lik.value_and_gradient(p)
        _assert_matches_laddu(value, grad, ref_value, ref_grad)
        assert lik.value(p) == value
        np.testing.assert_array_equal(lik.gradient(p), grad)


@needs_laddu
def test_ksks_nll_with_weights_matches_laddu(ksks_arrays):
    rng = np.random.default_rng(3)
    (dp4, _), (mp4, _) = ksks_arrays["data"], ksks_arrays["accmc"]
    dw = rng.uniform(0.2, 2.5, len(dp4["beam"]))
    mw = rng.normal(1.0, 0.7, len(mp4["beam"]))  # some negative accepted-MC weights
    assert (mw < 0).any()
    ref = laddu_ksks_nll({**dp4, "weight": dw}, {**mp4, "weight": mw}, lineshape="rbw")
    lik = Likelihood([NLL(
        ksks.model("rbw"),
        data=Dataset.from_arrays(p4s=dp4, weights=dw, chunk_size=700),
        accepted_mc=Dataset.from_arrays(p4s=mp4, weights=mw, chunk_size=900),
    )])
    for point in POINTS[:2]:
        value, grad = lik.value_and_gradient(point)
        _assert_matches_laddu(value, grad, *ref.value_and_gradient(point))


def test_ksks_extended_nll_matches_numpy_intensity(ksks_arrays):
    """ExtendedNLL of the bw model against the generator's independent NumPy intensity."""
    rng = np.random.default_rng(8)
    (dp4, _), (mp4, _) = ksks_arrays["data"], ksks_arrays["accmc"]
    dw = rng.uniform(0.5, 1.5, len(dp4["beam"]))
    mw = rng.uniform(0.0, 2.0, len(mp4["beam"]))
    lik = Likelihood([ExtendedNLL(
        ksks.model("bw"),
        data=Dataset.from_arrays(p4s=dp4, weights=dw, chunk_size=333),
        accepted_mc=Dataset.from_arrays(p4s=mp4, weights=mw, chunk_size=1024),
    )])
    for point in POINTS:
        i_data = ksks.truth_intensity(*ksks.angles(dp4), point)
        i_mc = ksks.truth_intensity(*ksks.angles(mp4), point)
        expected = 2.0 * (math.fsum(mw * i_mc) - math.fsum(dw * np.log(i_data)))
        assert lik.value(point) == pytest.approx(expected, rel=1e-11)


# ---------------------------------------------------------------------------
# closed forms on a toy: I = a x^2 + b
# ---------------------------------------------------------------------------
A = parameter("a", initial=1.0, bounds=(0.0, 10.0))
B = parameter("b", initial=0.5, bounds=(0.01, 5.0))
TOY = Model(A * scalar("x") * scalar("x") + B)


def _toy_samples(weighted: bool, seed: int = 4):
    rng = np.random.default_rng(seed)
    xd = rng.uniform(0.0, 1.0, 777) ** 0.4
    xm = rng.uniform(0.0, 1.0, 2345)
    wd = rng.uniform(0.1, 3.0, xd.size) if weighted else np.ones(xd.size)
    wm = rng.normal(1.0, 1.0, xm.size) if weighted else np.ones(xm.size)
    data = Dataset.from_arrays(scalars={"x": xd}, weights=wd if weighted else None, chunk_size=100)
    mc = Dataset.from_arrays(scalars={"x": xm}, weights=wm if weighted else None, chunk_size=256)
    return (xd, wd, data), (xm, wm, mc)


def _toy_reference(kind: str, a: float, b: float, xd, wd, xm, wm) -> tuple[float, np.ndarray]:
    """Value and gradient of the toy likelihoods from NumPy terms and math.fsum."""
    i_d, i_m = a * xd**2 + b, a * xm**2 + b
    s_data = math.fsum(wd * np.log(i_d))
    g_data = np.array([math.fsum(wd * xd**2 / i_d), math.fsum(wd / i_d)])
    s_mc = math.fsum(wm * i_m)
    g_mc = np.array([math.fsum(wm * xm**2), math.fsum(wm)])
    if kind == "extended":
        return 2.0 * (s_mc - s_data), 2.0 * (g_mc - g_data)
    n_w = math.fsum(wd)
    return -2.0 * (s_data - n_w * math.log(s_mc)), -2.0 * (g_data - n_w * g_mc / s_mc)


@pytest.mark.parametrize("weighted", [False, True], ids=["unit", "weighted"])
@pytest.mark.parametrize("kind", ["nll", "extended"])
def test_toy_likelihoods_equal_fsum_formulas(kind, weighted):
    (xd, wd, data), (xm, wm, mc) = _toy_samples(weighted)
    term = (NLL if kind == "nll" else ExtendedNLL)(TOY, data=data, accepted_mc=mc, name=kind)
    lik = Likelihood([term])
    assert lik.parameter_names == ["a", "b"]
    for a, b in ((1.0, 0.5), (3.7, 0.02), (0.0, 2.0)):
        ref_value, ref_grad = _toy_reference(kind, a, b, xd, wd, xm, wm)
        value, grad = lik.value_and_gradient([a, b])
        assert value == pytest.approx(ref_value, rel=1e-13)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-12)
        assert lik.value({"a": a, "b": b}) == value


def test_nll_uses_the_weighted_data_count():
    """N_w = sum of data weights (not the number of events) multiplies ln(norm)."""
    (xd, wd, data), (xm, wm, mc) = _toy_samples(True)
    lik = Likelihood([NLL(TOY, data=data, accepted_mc=mc)])
    i_d, i_m = 2.0 * xd**2 + 1.0, 2.0 * xm**2 + 1.0
    expected = -2.0 * (math.fsum(wd * np.log(i_d)) - math.fsum(wd) * math.log(math.fsum(wm * i_m)))
    assert lik.value([2.0, 1.0]) == pytest.approx(expected, rel=1e-13)
    # the intensity's overall scale cancels in the NLL
    assert lik.value([4.0, 2.0]) == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------------------
# Likelihood: sums of terms sharing parameters
# ---------------------------------------------------------------------------
def _two_terms():
    (_, _, data), (_, _, mc) = _toy_samples(True, seed=9)
    c = parameter("c", initial=0.3, bounds=(-1.0, 1.0))
    other = Model(B + c * scalar("x") + 1.0)  # shares "b" (same definition) with TOY
    t1 = NLL(TOY, data=data, accepted_mc=mc, name="first")
    t2 = ExtendedNLL(other, data=data, accepted_mc=mc, name="second")
    return t1, t2


def test_likelihood_sums_terms_and_maps_gradients():
    t1, t2 = _two_terms()
    lik = Likelihood([t1, t2])
    assert lik.parameter_names == ["a", "b", "c"]
    assert lik.default_parameters == [1.0, 0.5, 0.3]
    assert lik.bounds() == [(0.0, 10.0), (0.01, 5.0), (-1.0, 1.0)]
    v1, g1 = Likelihood([t1]).value_and_gradient({"a": 1.7, "b": 0.4})
    v2, g2 = Likelihood([t2]).value_and_gradient({"b": 0.4, "c": -0.2})
    value, grad = lik.value_and_gradient([1.7, 0.4, -0.2])
    assert value == v1 + v2
    assert grad[0] == g1[0]
    assert grad[1] == g1[1] + g2[0]
    assert grad[2] == g2[1]
    # sequence, numpy array and mapping (any order) give the same
    for p in (np.array([1.7, 0.4, -0.2]), {"c": -0.2, "a": 1.7, "b": 0.4}, (1.7, 0.4, -0.2)):
        v, g = lik.value_and_gradient(p)
        assert v == value
        np.testing.assert_array_equal(g, grad)
    # a partial mapping takes the initial values of the others
    assert lik.value({"a": 1.7}) == lik.value([1.7, 0.5, 0.3])
    assert lik.value({}) == lik.value(lik.default_parameters)
    assert "2 term(s): first, second; 3 free parameters" in repr(lik)


def test_likelihood_term_names_must_be_unique():
    t1, _ = _two_terms()
    with pytest.raises(ValueError, match="two likelihood terms are named 'first'"):
        Likelihood([t1, t1])
    with pytest.raises(ValueError, match="at least one term"):
        Likelihood([])
    with pytest.raises(TypeError, match="terms must be NLL, ExtendedNLL or a penalty, got str"):
        Likelihood(["nll"])


# ---------------------------------------------------------------------------
# fits
# ---------------------------------------------------------------------------
def _fit_sample(seed: int = 21):
    """x drawn from 1 + 0.8 x + 2 x^2 on [0, 1] (rejection), with uniform MC."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 1.0, 12000)
    keep = rng.uniform(0.0, 3.8, x.size) < 1.0 + 0.8 * x + 2.0 * x**2
    data = Dataset.from_arrays(scalars={"x": x[keep][:1500]}, chunk_size=512)
    mc = Dataset.from_arrays(scalars={"x": rng.uniform(0.0, 1.0, 5000)}, chunk_size=2048)
    return data, mc


def _fit_model(a_bounds=(-0.5, 5.0), a_initial=0.3):
    x = scalar("x")
    one = parameter("one", fixed=1.0)  # fixed: folded in, not fitted
    a = parameter("p1", initial=a_initial, bounds=a_bounds)
    b = parameter("p2", initial=1.0, bounds=(0.0, 10.0))
    return Model(one + a * x + b * x * x)


def test_migrad_and_lbfgsb_reach_the_same_minimum():
    data, mc = _fit_sample()
    lik = Likelihood([NLL(_fit_model(), data=data, accepted_mc=mc)])
    assert lik.parameter_names == ["p1", "p2"]  # the fixed parameter is not free
    results = {
        "migrad": lik.fit(method="migrad", tolerance=1e-6),
        "lbfgsb": lik.fit(method="lbfgsb"),
    }
    for method, r in results.items():
        assert isinstance(r, FitResult)
        assert r.method == method
        assert r.valid, r.message
        assert r.values.shape == (2,) and set(r.errors) == {"p1", "p2"}
        assert r.named_parameters == dict(zip(lik.parameter_names, r.values.tolist()))
        assert r.n_calls > 0
        assert r.fval == lik.value(r.values)
        assert r.covariance is not None and r.covariance.shape == (2, 2)
        assert (r.minuit is not None) == (method == "migrad")
    mg, lb = results["migrad"], results["lbfgsb"]
    # same minimum: -2 ln L to 1e-6 (absolute; one standard error is a rise of 1)
    assert mg.fval == pytest.approx(lb.fval, abs=1e-6 * 100)
    assert abs(mg.fval - lb.fval) < 1e-4
    # covariance = 2 H^-1 for -2 ln L, H from central differences of the exact gradient
    x = mg.values
    h = 1e-5
    hess = np.array([(lik.gradient(x + h * e) - lik.gradient(x - h * e)) / (2 * h) for e in np.eye(2)])
    np.testing.assert_allclose(mg.covariance, 2.0 * np.linalg.inv(hess), rtol=5e-3)
    for i, name in enumerate(mg.parameter_names):
        assert mg.errors[name] > 0
        # iminuit maps errors of bounded parameters through its internal transform
        assert mg.errors[name] == pytest.approx(math.sqrt(mg.covariance[i, i]), rel=3e-2)
        assert mg.errors[name] == pytest.approx(lb.errors[name], rel=3e-2)
        # positions agree to a small fraction of the standard error
        assert abs(mg.values[i] - lb.values[i]) < 2e-2 * mg.errors[name]
    # the tight MIGRAD fit sits where the exact gradient vanishes
    _, grad = lik.value_and_gradient(mg.values)
    assert np.all(np.abs(grad) < 1e-3)
    assert mg.to_dict()["values"] == mg.values.tolist()
    assert "valid" in repr(mg) and "p1" in repr(mg)


@pytest.mark.parametrize("method", ["migrad", "lbfgsb"])
def test_fit_honours_bounds(method):
    data, mc = _fit_sample()
    lik = Likelihood([NLL(_fit_model(a_bounds=(-0.5, 0.1), a_initial=0.0), data=data, accepted_mc=mc)])
    free = Likelihood([NLL(_fit_model(), data=data, accepted_mc=mc)]).fit(method="lbfgsb")
    assert free.named_parameters["p1"] > 0.3  # the unconstrained minimum lies outside the bounds
    r = lik.fit(method=method)
    assert -0.5 <= r.named_parameters["p1"] <= 0.1
    assert r.named_parameters["p1"] == pytest.approx(0.1, abs=1e-3)
    assert 0.0 <= r.named_parameters["p2"] <= 10.0
    assert r.fval > free.fval


def test_fit_starts_from_the_given_point_and_checks_it():
    data, mc = _fit_sample()
    lik = Likelihood([NLL(_fit_model(), data=data, accepted_mc=mc)])
    a = lik.fit(initial={"p1": 2.0}, method="lbfgsb")
    b = lik.fit(initial=[2.0, 1.0], method="lbfgsb")
    assert np.array_equal(a.values, b.values)
    with pytest.raises(ParameterError, match=r"start value 7\.0 of 'p1' lies outside its bounds"):
        lik.fit(initial={"p1": 7.0})
    with pytest.raises(ValueError, match="method must be one of 'migrad', 'lbfgsb', got 'newton'"):
        lik.fit(method="newton")


def _plain(message: str) -> None:
    """iminuit's message as words, not its box-drawing table."""
    assert message and "\n" not in message
    assert not any(ch in message for ch in "\u2500\u2502\u250c\u2510\u2514\u2518\u251c\u2524")


@pytest.mark.parametrize("method", ["migrad", "lbfgsb"])
def test_good_fit_is_valid_with_edm_and_correlation(method):
    data, mc = _fit_sample()
    lik = Likelihood([NLL(_fit_model(), data=data, accepted_mc=mc)])
    r = lik.fit(method=method)
    assert r.valid, r.message
    _plain(r.message)
    if method == "migrad":
        fmin = r.minuit.fmin
        assert fmin.has_accurate_covar and not fmin.has_made_posdef_covar
        assert r.message.startswith(f"valid minimum; EDM {fmin.edm:.2g} < goal {fmin.edm_goal:.2g}")
        assert r.edm == fmin.edm and 0.0 <= r.edm < fmin.edm_goal
    else:  # laddu's stopping rule, and the EDM from the gradient and the Hessian there
        assert r.message.startswith("valid minimum; L-BFGS-B: F_EVAL CONVERGED; EDM ")
        grad = lik.gradient(r.values)
        assert r.edm == pytest.approx(0.25 * grad @ r.covariance @ grad, rel=1e-9) and 0.0 <= r.edm < 1e-6
    # correlation = cov / (sigma sigma^T), computed here from the covariance
    sigma = np.sqrt(np.diag(r.covariance))
    np.testing.assert_allclose(r.correlation, r.covariance / np.outer(sigma, sigma), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.diag(r.correlation), 1.0, rtol=1e-14)
    assert -1.0 < r.correlation[0, 1] < 0.0  # the linear and quadratic slopes trade off
    assert r.correlation[0, 1] == r.correlation[1, 0]
    d = r.to_dict()
    assert d["edm"] == r.edm and d["correlation"] == r.correlation.tolist() and d["valid"] is True
    assert d["message"] == r.message
    assert "edm = " in repr(r) and "correlation:" in repr(r) and "[-0.5, 5]" in repr(r)


def _saddle_model():
    """A minimum in p1 that is a saddle in (c, d).

    The data's curvature (x^2) is missing from ``1 + p1 x``, so the sample has too few
    events in the middle of [0, 1] and adding q x (1 - x) raises -2 ln L: its slope
    s = d(-2 ln L)/dq is positive.  With q = c^2 + d^2 + 4 c d the Hessian in (c, d) at
    c = d = 0 is s [[2, 4], [4, 2]], indefinite.  The gradient in c and d is exactly 0
    there, so neither minimiser leaves c = d = 0: MIGRAD calls it a valid minimum and
    HESSE has to force the covariance positive-definite.  (HESSE's steps are positive in
    c and d together, where q > 0, so every intensity it evaluates is positive.)
    """
    x = scalar("x")
    a = parameter("p1", initial=0.3)
    c = parameter("c", initial=0.0)
    d = parameter("d", initial=0.0)
    return Model(1.0 + a * x + (c * c + d * d + 4.0 * c * d) * (x * (1.0 - x)))


@pytest.mark.parametrize("method", ["migrad", "lbfgsb"])
def test_fit_whose_covariance_was_forced_positive_definite_is_invalid(method):
    data, mc = _fit_sample()
    lik = Likelihood([NLL(_saddle_model(), data=data, accepted_mc=mc)])
    r = lik.fit(method=method)
    assert r.converged  # the minimiser itself calls the minimum converged: valid used to be True
    assert r.valid is False and r.to_dict()["valid"] is False
    _plain(r.message)
    if method == "migrad":
        fmin = r.minuit.fmin
        assert fmin.has_made_posdef_covar and not r.minuit.accurate  # the case really happens
        assert r.message.startswith("invalid minimum: covariance forced positive-definite; EDM ")
        assert r.edm == fmin.edm
    else:
        assert np.linalg.eigvalsh(lik.hessian(r.values)).min() < 0  # the Hessian is indefinite
        assert r.message == "invalid minimum: Hessian not positive-definite"
        assert r.covariance is None and r.standard_errors is None  # laddu's: no errors from it
    assert r.named_parameters["c"] == r.named_parameters["d"] == 0.0  # it stayed on the saddle


@pytest.mark.parametrize("method", ["migrad", "lbfgsb"])
def test_fit_that_reaches_its_call_limit_is_invalid(method):
    data, mc = _fit_sample()
    r = Likelihood([NLL(_fit_model(), data=data, accepted_mc=mc)]).fit(method=method, max_calls=5)
    assert r.valid is False
    _plain(r.message)
    assert r.message.startswith("invalid minimum: call limit reached")
    if method == "migrad":
        assert "HESSE not run" in r.message and r.minuit.fmin.has_reached_call_limit
    else:
        assert r.message.startswith("invalid minimum: call limit reached (L-BFGS-B)")
        assert not r.converged and r.outcome == "not_converged"


# ---------------------------------------------------------------------------
# bad input: every case by error type and message
# ---------------------------------------------------------------------------
X = scalar("x")
SIMPLE = Model(A * X * X + B)


def _ones(n: int = 5, **kw) -> Dataset:
    return Dataset.from_arrays(scalars={"x": np.linspace(0.1, 1.0, n)}, **kw)


def _write(path, columns: dict) -> str:
    pq.write_table(pa.table(columns), path)
    return os.fspath(path)


def test_missing_model_column_names_column_and_file(tmp_path, ksks_sample):
    path = _write(tmp_path / "only_y.parquet", {"y": [1.0, 2.0], "weight": [1.0, 1.0]})
    ds = read_parquet(path)
    with pytest.raises(SchemaError, match=rf"model needs column 'x' which {path} lacks"):
        NLL(SIMPLE, data=ds, accepted_mc=_ones())
    with pytest.raises(SchemaError, match=rf"'x' which {path} lacks"):
        ExtendedNLL(SIMPLE, data=_ones(), accepted_mc=ds)
    # a four-vector the sample does not have
    model = Model(Vec4.event("pion").m2() * A)
    with pytest.raises(SchemaError, match=r"needs columns 'pion_e', 'pion_px', 'pion_py', 'pion_pz'"
                       rf" which {ksks_sample['data']} lacks"):
        NLL(model, data=read_parquet(ksks_sample["data"]), accepted_mc=_ones())
    # and the runtime checks it too
    from laddu_dask.compile.compiled import CompiledModel
    from laddu_dask.runtime.prepared import PreparedModel

    ex = Execution()
    with pytest.raises(SchemaError, match=rf"'x' which {path} lacks"):
        PreparedModel.prepare(CompiledModel.from_expr(SIMPLE), ex).prepare_dataset(ex, ds)


def test_incomplete_four_vector_in_parquet(tmp_path):
    path = _write(tmp_path / "partial.parquet",
                  {"k_e": [1.0, 2.0], "k_px": [0.0, 0.1], "k_py": [0.0, 0.2], "x": [1.0, 1.0]})
    with pytest.raises(SchemaError, match=rf"four-vector 'k' in {path} is incomplete: "
                       r"it lacks column\(s\) 'k_pz'"):
        read_parquet(path)


def test_arrays_of_different_lengths():
    with pytest.raises(DataError, match=r"different numbers of events \(four-vector 'k': 3, "
                       r"scalar 'x': 4\)"):
        Dataset.from_arrays(p4s={"k": np.ones((3, 4))}, scalars={"x": np.ones(4)})
    with pytest.raises(DataError, match=r"different numbers of events \(scalar 'x': 4, weights: 5\)"):
        Dataset.from_arrays(scalars={"x": np.ones(4)}, weights=np.ones(5))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_arrays(bad):
    p4 = np.ones((6, 4))
    p4[4, 3] = bad
    with pytest.raises(DataError, match=rf"column 'k_pz' has a non-finite value \({bad!r}\) "
                       r"at event 4 \(arrays\)"):
        Dataset.from_arrays(p4s={"k": p4})
    w = np.ones(6)
    w[2] = bad
    with pytest.raises(DataError, match=r"column 'weight' has a non-finite value .* at event 2"):
        Dataset.from_arrays(p4s={"k": np.ones((6, 4))}, weights=w)


@pytest.mark.parametrize("policy", ["resident", "streaming"])
@pytest.mark.parametrize("column", ["k_e", "k_py", "weight"])
def test_non_finite_parquet(tmp_path, policy, column):
    cols = {f"k_{c}": np.linspace(0.1, 0.2, 10) for c in ("px", "py", "pz")}
    cols = {"k_e": np.linspace(5.0, 6.0, 10), **cols, "weight": np.ones(10)}
    cols[column][7] = np.nan
    path = _write(tmp_path / "nan.parquet", cols)
    ds = read_parquet(path, chunk_size=3, memory_policy=policy)  # opening reads no values
    model = Model(Vec4.event("k").m2() * A)
    with pytest.raises(DataError, match=rf"column '{column}' has a non-finite value \(nan\) at "
                       rf"event 7 \({path} \[rows 6:9\]\)"):
        Likelihood([NLL(model, data=ds, accepted_mc=ds)]).value([1.0])


def test_file_that_is_not_parquet(tmp_path):
    path = tmp_path / "notes.parquet"
    path.write_text("these are not the events you are looking for\n")
    with pytest.raises(DataError, match=rf"{path} is not a readable Parquet file"):
        read_parquet(path)
    with pytest.raises(FileNotFoundError, match="no such Parquet file or folder"):
        read_parquet(tmp_path / "absent.parquet")


def test_unknown_parameter_name_in_mapping():
    lik = Likelihood([NLL(SIMPLE, data=_ones(), accepted_mc=_ones())])
    with pytest.raises(ParameterError, match=r"unknown parameter 'bogus'; the free parameters are: "
                       r"a, b"):
        lik.value({"a": 1.0, "bogus": 2.0})
    with pytest.raises(ParameterError, match="unknown parameter 'bogus'"):
        lik.fit(initial={"bogus": 1.0})


def test_parameter_values_must_be_finite_numbers():
    lik = Likelihood([NLL(SIMPLE, data=_ones(), accepted_mc=_ones())])
    with pytest.raises(ParameterError, match="parameter 'b': value nan is not finite"):
        lik.value([1.0, float("nan")])
    with pytest.raises(ParameterError, match=r"parameter 'a': value 'one' is not a number"):
        lik.value({"a": "one"})


def test_one_name_two_bounds_in_one_model():
    other_a = parameter("a", initial=1.0, bounds=(0.0, 5.0))
    with pytest.raises(ParameterError, match=r"two parameters are named 'a' but differ: "
                       r"a = 1\.0 \[0, 10\] vs a = 1\.0 \[0, 5\]"):
        Model(A * X + other_a)


def test_one_name_two_bounds_across_terms():
    other_a = parameter("a", initial=1.0, bounds=(-1.0, 10.0))
    t1 = NLL(SIMPLE, data=_ones(), accepted_mc=_ones(), name="t1")
    t2 = NLL(Model(other_a * X + 2.0), data=_ones(), accepted_mc=_ones(), name="t2")
    with pytest.raises(ParameterError, match=r"two parameters are named 'a' but differ:.*"
                       r"\[-1, 10\]"):
        Likelihood([t1, t2])


def test_parameter_vector_of_wrong_length():
    lik = Likelihood([NLL(SIMPLE, data=_ones(), accepted_mc=_ones())])
    with pytest.raises(ParameterError, match=r"expected 2 parameter values \(a, b\), got 3"):
        lik.value([1.0, 2.0, 3.0])
    with pytest.raises(ParameterError, match=r"expected 2 parameter values \(a, b\), got 1"):
        lik.value_and_gradient(np.array([1.0]))


@pytest.mark.parametrize("with_gradient", [False, True])
def test_non_positive_intensity_names_the_event(tmp_path, with_gradient):
    x = np.linspace(0.5, 1.5, 40)
    x[31] = -2.0
    path = tmp_path / "data.parquet"
    Dataset.from_arrays(scalars={"x": x}).write_parquet(path)
    data = read_parquet(path, chunk_size=8)
    lik = Likelihood([NLL(Model(A * X), data=data, accepted_mc=_ones())])
    call = lik.value_and_gradient if with_gradient else lik.value
    with pytest.raises(NonPositiveIntensityError, match=rf"non-positive intensity -2\.0 at event 31 "
                       rf"\({path} \[rows 24:32\]\)"):
        call([1.0])
    # a zero data intensity is not positive either
    x[31] = 0.0
    lik = Likelihood([NLL(Model(A * X), data=Dataset.from_arrays(scalars={"x": x}, chunk_size=8),
                          accepted_mc=_ones())])
    call = lik.value_and_gradient if with_gradient else lik.value
    with pytest.raises(NonPositiveIntensityError, match=r"non-positive intensity 0\.0 at event 31"):
        call([1.0])


def test_zero_intensity_at_an_accepted_mc_event_is_accepted():
    """It only adds zero to sum_accmc w I (laddu's convention; sufficient statistics could not
    see it either); only the total must be positive.  Reference: the closed form."""
    x = np.linspace(0.5, 1.5, 40)
    x[31] = 0.0
    data = _ones()
    lik = Likelihood([ExtendedNLL(Model(A * X), data=data, accepted_mc=Dataset.from_arrays(
        scalars={"x": x}, chunk_size=8))])
    xd = np.linspace(0.1, 1.0, 5)
    expected = 2.0 * (math.fsum((2.0 * x).tolist()) - math.fsum(np.log(2.0 * xd).tolist()))
    value, grad = lik.value_and_gradient([2.0])
    # (the kernel's log may be the C library's, not NumPy's: the value is not bitwise NumPy's)
    assert value == pytest.approx(expected, rel=1e-14)
    # the gradient's per-event terms are exact (2x, x / 2x = 1/2): exact sums, one rounding
    assert grad[0] == 2.0 * (math.fsum(x.tolist()) - 5 / 2.0)
    negative = Dataset.from_arrays(scalars={"x": -x})
    lik = Likelihood([ExtendedNLL(Model(A * X), data=data, accepted_mc=negative)])
    with pytest.raises(NormalizationError, match=r"sum_accmc w I is -.*; it must be positive"):
        lik.value([2.0])


def test_zero_total_weight_in_normalization():
    zero = _ones(7, weights=np.zeros(7))
    for term in (NLL, ExtendedNLL):
        lik = Likelihood([term(SIMPLE, data=_ones(), accepted_mc=zero, name="sig")])
        with pytest.raises(NormalizationError, match=r"term 'sig': the accepted Monte Carlo "
                           r"\(arrays\) has zero total weight"):
            lik.value([1.0, 1.0])
    # weights that cancel to zero are zero total weight too
    cancel = _ones(4, weights=[1e16, 1.0, -1e16, -1.0])
    with pytest.raises(NormalizationError, match="zero total weight"):
        Likelihood([NLL(SIMPLE, data=_ones(), accepted_mc=cancel)]).value([1.0, 1.0])


def test_memory_budget_too_small_for_one_chunk():
    lik = Likelihood([NLL(SIMPLE, data=_ones(1000), accepted_mc=_ones(1000))],
                     execution=Execution(memory=MemoryPlan(host="1 KiB")))
    with pytest.raises(BudgetError, match=r"host memory budget too small for one chunk: dataset "
                       r"'nll/data' .*1\.00 kiB \(1024 bytes\)"):
        lik.value([1.0, 1.0])


def test_bad_term_arguments():
    with pytest.raises(TypeError, match="data must be a laddu_dask Dataset"):
        NLL(SIMPLE, data=np.ones(3), accepted_mc=_ones())
    with pytest.raises(TypeError, match="needs a Model or an expression, got str"):
        NLL("a*x", data=_ones(), accepted_mc=_ones())
    with pytest.raises(ValueError, match="term name must be a non-empty string"):
        NLL(SIMPLE, data=_ones(), accepted_mc=_ones(), name="")


@pytest.mark.parametrize("precision", ["f16", "float64", ""])
def test_nothing_is_written_before_an_error(tmp_path, precision):
    target = tmp_path / "out.parquet"
    with pytest.raises(ValueError, match=rf"precision must be one of 'f64', 'f32', got '{precision}'"):
        _ones().write_parquet(target, precision=precision)
    assert os.listdir(tmp_path) == []


def test_failed_write_leaves_no_file(tmp_path):
    """A value that overflows f32 aborts the write; neither file nor temporary remains."""
    target = tmp_path / "out.parquet"
    ds = Dataset.from_arrays(scalars={"x": np.array([1.0, 1e300, 2.0])}, chunk_size=1)
    with pytest.raises(DataError, match=r"column 'x' has a value \(1e\+300\) that overflows float32 "
                       r"at event 1"):
        ds.write_parquet(target, precision="f32")
    assert os.listdir(tmp_path) == []
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ds.write_parquet(tmp_path / "missing" / "out.parquet")
    assert os.listdir(tmp_path) == []


def test_a_new_execution_at_a_collected_ones_address_gets_its_own_preparation(monkeypatch):
    """A term keeps its preparation per execution.  It was keyed by ``id(execution)``, which
    CPython gives to a new execution once the old one is collected: the new (float64)
    execution then evaluated the old (float32) preparation.  ``id`` is made to answer the
    same for every object here, as it does for a recycled address."""
    import laddu_dask.likelihood.term_base as terms

    monkeypatch.setattr(terms, "id", lambda obj: 0, raising=False)
    xd, xm = np.linspace(0.1, 1.0, 7), np.linspace(0.2, 1.0, 9)
    nll = NLL(Model(parameter("a") * scalar("x") * scalar("x") + 0.3),
              data=Dataset.from_arrays(scalars={"x": xd}), accepted_mc=Dataset.from_arrays(scalars={"x": xm}),
              name="t")
    a = 1.1
    s_data, s_mc = math.fsum(np.log(a * xd * xd + 0.3)), math.fsum(a * xm * xm + 0.3)
    expected = -2.0 * (s_data - len(xd) * math.log(s_mc))
    single = Likelihood([nll], execution=Execution(precision="f32")).value_and_gradient(np.array([a]))[0]
    assert single != expected  # float32 differs in the last digits: what the next line tells apart
    value = Likelihood([nll], execution=Execution()).value_and_gradient(np.array([a]))[0]
    assert value == pytest.approx(expected, rel=1e-13, abs=0.0)
