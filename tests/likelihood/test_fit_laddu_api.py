"""``Likelihood.fit`` and ``fit_restarts`` with laddu 0.28.1's keywords, default method and
``FitResult`` (issue 24, point 2).

The reference is laddu itself: the same model and events built in both libraries, fitted
by both with no configuration (laddu's ganesh L-BFGS-B; ours on SciPy's L-BFGS-B with
laddu's stopping rules and covariance ``2 H^-1``).
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
from laddu_reference import laddu, needs_laddu

import laddu_dask as ld
from laddu_dask.errors import ParameterError
from laddu_dask.likelihood.fit_result import FitResult


def _columns():
    """Data drawn from |1 + 0.5 x + 0.3 x^2|^2 on [-1, 1] (accept-reject), flat MC."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, 4000)
    keep = rng.uniform(0, 1.5, x.size) < (1 + 0.5 * x + 0.3 * x * x) ** 2 / 2.5
    return {"x": x[keep][:800]}, {"x": rng.uniform(-1, 1, 3000)}


def _likelihood(lib, c1_bounds=(-5.0, 5.0)):
    """The same likelihood in laddu or laddu-dask (c0 fixed, c1 bounded, c2 free)."""
    data, mc = _columns()
    x = lib.scalar("x")
    model = lib.Model((lib.parameter("c0", fixed=1.0) + lib.parameter("c1", initial=0.2, bounds=c1_bounds) * x
                       + lib.parameter("c2", initial=-0.1) * x * x).norm_sqr() + 0.05)

    def dataset(columns):
        beam = np.tile([8.5, 0.0, 0.0, 8.5], (len(columns["x"]), 1))
        return lib.Dataset.from_arrays(p4s={"beam": beam}, scalars=columns)

    return lib.Likelihood([lib.NLL(model, data=dataset(data), accepted_mc=dataset(mc), name="nll")])


@needs_laddu
@pytest.mark.parametrize("c1_bounds", [(-5.0, 5.0), (-5.0, 0.4)], ids=["inside", "at-a-bound"])
def test_default_fit_is_laddus(c1_bounds):
    """No config: laddu's minimum, objective, standard errors and covariance; at an active
    bound too (laddu's central differences step across it, ours are one-sided)."""
    ours, theirs = _likelihood(ld, c1_bounds).fit(), _likelihood(laddu, c1_bounds).fit()
    assert ours.parameter_names == list(theirs.parameter_names) == ["c1", "c2"]
    np.testing.assert_allclose(ours.values, np.asarray(theirs.values), rtol=1e-6)
    assert ours.objective == pytest.approx(theirs.objective, rel=1e-9)
    np.testing.assert_allclose(ours.standard_errors, np.asarray(theirs.standard_errors), rtol=1e-4)
    np.testing.assert_allclose(ours.covariance, np.asarray(theirs.covariance), rtol=1e-4)
    assert ours.named_parameters == pytest.approx(dict(theirs.named_parameters), rel=1e-6)
    assert (ours.converged, ours.outcome) == (theirs.converged, theirs.outcome) == (True, "converged")
    assert ours.terminal_message == theirs.terminal_message == "Success: F_EVAL CONVERGED"
    assert set(ours.diagnostics) == set(theirs.diagnostics)
    assert ours.diagnostics["hessian_evaluations"] == 1 and ours.valid and ours.method == "lbfgsb"
    assert ours.raw_ganesh_summary is None and ours.minuit is None
    if c1_bounds[1] == 0.4:
        assert ours.values[0] == 0.4


@needs_laddu
def test_fit_restarts_returns_a_list_of_fit_results_as_laddus():
    lik, theirs = _likelihood(ld), _likelihood(laddu)
    first = [0.1, 0.1]
    with pytest.warns(ld.RestartWarning, match="no free parameter"):  # no starting ranges here
        ours = lik.fit_restarts(3, first, seed=1)
    want = theirs.fit_restarts(3, first, seed=1)
    assert isinstance(ours, list) and len(ours) == len(want) == 3
    assert all(type(r) is FitResult for r in ours)
    # the first restart starts at `initial` in both: the same minimum, to the stopping rule's
    # reach (laddu's own fits from two starts differ by 1e-6 relative here)
    assert np.all(np.abs(ours[0].values - np.asarray(want[0].values)) < 1e-4 * ours[0].standard_errors)
    for r in ours:  # every sampled start reaches laddu's minimum on this convex problem
        assert r.objective == pytest.approx(want[0].objective, rel=1e-9) and r.converged
    with pytest.warns(ld.RestartWarning):
        assert len(lik.fit_restarts(2, seed=1)) == 2


def test_values_are_an_array_in_parameter_name_order():
    """laddu's idiom dict(zip(names, fit.values)) pairs names with values (values used to be a
    dict, so it paired each name with itself)."""
    lik = _likelihood(ld)
    fit = lik.fit()
    assert isinstance(fit.values, np.ndarray) and fit.values.shape == (2,)
    paired = dict(zip(lik.parameter_names, fit.values))
    assert all(isinstance(v, float) for v in paired.values())
    assert paired == fit.named_parameters and lik.value(paired) == fit.objective
    assert fit.standard_errors.tolist() == [fit.errors["c1"], fit.errors["c2"]]
    np.testing.assert_allclose(fit.standard_errors, np.sqrt(np.diag(fit.covariance)), rtol=1e-15)
    # a mapping given to the constructor is taken by name, in parameter_names order
    r = FitResult({"b": 2.0, "a": 1.0}, {"a": 0.1, "b": 0.2}, 3.0, True, 12, "migrad", None, ["a", "b"])
    assert r.values.tolist() == [1.0, 2.0] and r.standard_errors is None
    with pytest.raises(ValueError, match="FitResult values name no value for 'b'"):
        FitResult({"a": 1.0}, [0.1, 0.2], 3.0, True, 12, "migrad", None, ["a", "b"])


def test_the_default_fit_covariance_is_twice_the_inverse_hessian():
    """Closed form: with n events x_i drawn and flat MC on [-1, 1] ... here the independent
    reference is the Hessian from central differences of the exact gradient, taken by hand."""
    lik = _likelihood(ld)
    fit = lik.fit()
    h = 1e-5
    hess = np.array([(lik.gradient(fit.values + h * e) - lik.gradient(fit.values - h * e)) / (2 * h)
                     for e in np.eye(2)])
    np.testing.assert_allclose(fit.covariance, 2.0 * np.linalg.inv(hess), rtol=1e-5)
    assert fit.edm < 1e-8 and np.linalg.norm(lik.gradient(fit.values)) < 1e-2


def test_migrad_stays_one_keyword_away():
    lik = _likelihood(ld)
    default, migrad = lik.fit(), lik.fit(method="migrad", tolerance=1e-4)
    assert migrad.method == "migrad" and migrad.minuit is not None and migrad.converged
    np.testing.assert_allclose(migrad.values, default.values, atol=1e-3 * default.standard_errors.max())
    np.testing.assert_allclose(migrad.standard_errors, default.standard_errors, rtol=1e-3)
    assert ld.fit(lik).objective == default.objective  # the module-level fit is the method's
    # MIGRAD's options with laddu's default would be silently unused: an error naming them
    with pytest.raises(ParameterError, match="^tolerance is an option of MIGRAD: pass method='migrad'"):
        lik.fit(tolerance=1e-4)
    with pytest.raises(ParameterError, match="^strategy, hessian are options of MIGRAD"):
        lik.fit(method="lbfgsb", strategy=2, hessian="minuit")


def test_use_parameter_metadata_false_drops_the_bounds():
    """laddu's meaning: the parameters' bounds are not given to the minimiser."""
    lik = _likelihood(ld, c1_bounds=(-5.0, 0.4))
    bounded, free = lik.fit(), lik.fit(use_parameter_metadata=False)
    assert bounded.values[0] == 0.4 and free.values[0] > 0.5
    assert free.objective < bounded.objective


def test_a_bad_ganesh_config_or_callback_is_a_type_error_naming_it():
    lik = _likelihood(ld)
    with pytest.raises(TypeError, match=r"^config must be a ganesh minimizer configuration "
                                        r"\(LBFGSBConfig, NelderMeadConfig, \.\.\.\), got object$"):
        lik.fit(config=object())
    with pytest.raises(TypeError, match=r"^terminators must be .*, got <object object"):
        lik.fit(terminators=[object()])
    with pytest.raises(ParameterError, match="method='migrad' and a ganesh config, terminators or observers"):
        lik.fit(method="migrad", config=ld.ganesh.NelderMeadConfig())


def _summary(success=True, h=1, covariance=((0.5, 0.1), (0.1, 0.25))):
    """A ganesh MinimizationSummary as laddu's: covariance the inverse Hessian of -2 ln L."""
    cov = None if covariance is None else np.array(covariance)
    return SimpleNamespace(
        x=np.array([1.5, -0.5]), fx=12.25, parameter_names=["a", "b"],
        std=None if cov is None else np.sqrt(np.diag(cov)), covariance=cov,
        evals=SimpleNamespace(f=40, g=20, h=h),
        message=SimpleNamespace(success=success, text="F_EVAL CONVERGED" if success else "Maximum steps"))


def test_a_ganesh_summary_becomes_laddus_fit_result():
    r = FitResult.from_summary(_summary(), method="lbfgsb", bounds=[(0.0, 2.0), (None, None)])
    assert r.values.tolist() == [1.5, -0.5] and r.objective == 12.25
    assert r.covariance.tolist() == [[1.0, 0.2], [0.2, 0.5]]  # twice ganesh's raw covariance (laddu's)
    assert r.standard_errors.tolist() == [1.0, math.sqrt(0.5)]
    assert (r.converged, r.outcome, r.valid) == (True, "converged", True)
    assert r.terminal_message == "Success: F_EVAL CONVERGED"
    assert r.diagnostics == {"function_evaluations": 40, "gradient_evaluations": 20, "hessian_evaluations": 1}
    assert r.bounds == {"a": (0.0, 2.0), "b": (None, None)} and r.raw_ganesh_summary is not None
    assert r.correlation[0, 1] == pytest.approx(0.2 / math.sqrt(0.5))
    stopped = FitResult.from_summary(_summary(success=False), method="lbfgsb")
    assert (stopped.converged, stopped.outcome, stopped.valid) == (False, "not_converged", False)
    assert stopped.terminal_message == "Message: Maximum steps"
    gradient_free = FitResult.from_summary(_summary(h=0), method="neldermead")  # no Hessian: no errors
    assert gradient_free.covariance is None and gradient_free.standard_errors is None and gradient_free.valid
    saddle = FitResult.from_summary(_summary(covariance=((0.5, 0.9), (0.9, 0.25))), method="lbfgsb")
    assert saddle.covariance is None and not saddle.valid and saddle.converged
    assert saddle.message == "invalid minimum: F_EVAL CONVERGED; Hessian not positive-definite"


def test_fit_results_save_and_load_and_old_files_still_load(tmp_path):
    fit = _likelihood(ld).fit()
    fit.save(tmp_path / "fit.json")
    back = FitResult.load(tmp_path / "fit.json")
    assert back.values.tolist() == fit.values.tolist() and back.errors == fit.errors
    assert (back.converged, back.terminal_message, back.diagnostics) == (
        fit.converged, fit.terminal_message, fit.diagnostics)
    # a file written before values became an array: values (and errors) by name
    old = json.loads((tmp_path / "fit.json").read_text())
    old["values"] = {"c2": fit.values[1], "c1": fit.values[0]}
    for key in ("converged", "terminal_message", "diagnostics"):
        del old[key]
    (tmp_path / "old.json").write_text(json.dumps(old))
    again = FitResult.load(tmp_path / "old.json")
    assert again.values.tolist() == fit.values.tolist() and again.converged is fit.valid


@needs_laddu
def test_a_ganesh_config_fit_is_laddus():
    """With the ganesh engine (``ld.ganesh``): a config, or terminators with no config, gives
    laddu's FitResult of the same method."""
    engine = pytest.importorskip("laddu_dask.likelihood.ganesh.engine")
    assert callable(engine.minimize)
    lik, theirs = _likelihood(ld), _likelihood(laddu)
    ours, want = lik.fit(config=ld.ganesh.LBFGSBConfig()), theirs.fit(config=laddu.ganesh.LBFGSBConfig())
    np.testing.assert_allclose(ours.values, np.asarray(want.values), rtol=1e-6)
    np.testing.assert_allclose(ours.standard_errors, np.asarray(want.standard_errors), rtol=1e-4)
    assert ours.terminal_message == want.terminal_message and ours.raw_ganesh_summary is not None
    simplex = lik.fit(config=ld.ganesh.NelderMeadConfig())
    assert simplex.method == "neldermead" and simplex.standard_errors is None and simplex.converged
    stopped = lik.fit(terminators=[ld.ganesh.MaxSteps(2)])
    assert not stopped.converged
    assert stopped.terminal_message == "Message: Maximum number of steps reached (2)"
