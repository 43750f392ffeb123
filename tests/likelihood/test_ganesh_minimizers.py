"""Each ``ld.ganesh`` minimizer against laddu 0.28.1's same method: the same minimum of a
bounded Rosenbrock function and of a small likelihood built the same way in both
libraries, the same number of steps under ``MaxSteps``, observers and Python terminators
called as laddu calls them, and the inverse-Hessian covariance laddu's raw summary holds.

laddu minimizes only likelihoods, so its Rosenbrock function is an ``ExtendedNLL`` whose
intensity is ``1 + (1 - a)^2 + 100 (b - a^2)^2`` on one accepted event of weight 1/2 and one
data event of weight 0: ``2 (w I - 0 ln I) = I``.
"""

from __future__ import annotations

import numpy as np
import pytest
from laddu_reference import laddu, needs_laddu

import laddu_dask as ld
from laddu_dask.errors import GaneshConfigError
from laddu_dask.likelihood.ganesh.engine import minimize

BOX = ((-2.0, 2.0), (-1.0, 3.0))
FREE = ((None, None), (None, None))
START = [-1.2, 1.0]


class Rosenbrock:
    """``1 + (1 - a)^2 + 100 (b - a^2)^2`` with its gradient (the closed form)."""

    def __init__(self) -> None:
        self.calls = 0

    def value(self, x):
        self.calls += 1
        a, b = x
        return float(1 + (1 - a) ** 2 + 100 * (b - a * a) ** 2)

    def value_and_gradient(self, x):
        a, b = x
        return self.value(x), np.array([-2 * (1 - a) - 400 * a * (b - a * a), 200 * (b - a * a)])


def laddu_rosenbrock(bounds):
    a = laddu.parameter("a", initial=START[0], bounds=bounds[0])
    b = laddu.parameter("b", initial=START[1], bounds=bounds[1])
    model = laddu.Model((1.0 - a).norm_sqr() + 100.0 * (b - a * a).norm_sqr() + 1.0)
    one = {"p4s": {"beam": np.array([[8.5, 0.0, 0.0, 8.5]])}, "scalars": {"x": np.array([0.0])}}
    data = laddu.Dataset.from_arrays(**one, weights=np.array([0.0]))
    mc = laddu.Dataset.from_arrays(**one, weights=np.array([0.5]))
    return laddu.Likelihood([laddu.ExtendedNLL(model, data=data, accepted_mc=mc)])


def _box(bounds):
    return [(-np.inf if lo is None else lo, np.inf if hi is None else hi) for lo, hi in bounds]


def both(method, bounds, start=START, steps=None, **kw):
    """laddu's raw summary and ours, for ``method`` from ``start`` within ``bounds``."""
    term = [] if steps is None else [steps]
    theirs = (
        laddu_rosenbrock(bounds)
        .fit(
            start,
            config=getattr(laddu.ganesh, method)(**kw),
            terminators=[laddu.ganesh.MaxSteps(n) for n in term],
        )
        .raw_ganesh_summary
    )
    ours = minimize(
        Rosenbrock(),
        start,
        config=getattr(ld.ganesh, method)(**kw),
        terminators=[ld.ganesh.MaxSteps(n) for n in term],
        bounds=_box(bounds),
        parameter_names=["a", "b"],
    )
    return theirs, ours


# method, bounds, MaxSteps (None: the method's own terminators), how near both come to the
# minimum (1, 1), and how near ours comes to laddu's x. laddu's trust region fails inside
# bounds (NaN intensity) and its Nelder-Mead stops at (-0.995, 1.002) inside them: those two
# run unbounded (where our Nelder-Mead takes laddu's very steps).
CASES = [
    ("LBFGSBConfig", BOX, None, 1e-5, 1e-5),
    ("ConjugateGradientConfig", BOX, None, 1e-4, 1e-4),
    ("TrustRegionConfig", FREE, None, 1e-5, 1e-5),
    ("NelderMeadConfig", FREE, None, 5e-3, 1e-9),
    ("CMAESConfig", BOX, None, 1e-4, 1e-4),
    ("DifferentialEvolutionConfig", BOX, 300, 1e-3, 1e-3),
    ("SimulatedAnnealingConfig", FREE, None, 2e-2, 4e-2),
    ("PSOConfig", BOX, 400, 1e-3, 1e-3),
    ("AdamConfig", FREE, None, 5e-3, 1e-8),
]


@needs_laddu
@pytest.mark.parametrize(("method", "bounds", "steps", "near", "agree"), CASES, ids=[c[0] for c in CASES])
def test_each_method_reaches_laddus_minimum_of_rosenbrock(method, bounds, steps, near, agree):
    theirs, ours = both(method, bounds, steps=steps)
    assert np.abs(np.asarray(theirs.x) - 1).max() <= near  # laddu's own method gets there
    assert np.abs(ours.x - 1).max() <= near
    assert np.abs(ours.x - np.asarray(theirs.x)).max() <= agree
    assert abs(ours.fx - theirs.fx) <= 100 * near**2
    assert ours.message.success == theirs.message.success
    if method != "CMAESConfig":  # cma's TOLFUN usually stops it before laddu's CONDITION COVARIANCE
        assert str(ours.message) == str(theirs.message)
    if method in ("SimulatedAnnealingConfig", "AdamConfig", "NelderMeadConfig"):
        assert ours.evals.f == theirs.evals.f  # the same number of steps, each costing the same
    assert np.array_equal(ours.x0, START)
    assert ours.parameter_names == ["a", "b"]


@needs_laddu
@pytest.mark.parametrize(
    "settings",
    [
        {"expansion_method": "greedy_expansion"},
        {"reflection": 1.5, "expansion": 2.5, "contraction": 0.4, "shrink": 0.6, "initial_step": 0.1},
        {"initial_simplex": [[-1.2, 1.0], [-1.0, 1.0], [-1.2, 1.3]]},
    ],
)
def test_nelder_mead_takes_laddus_steps_with_any_settings(settings):
    seen_laddu, seen_ours = [], []
    # greedy expansion never converges on Rosenbrock (in either library): it stops at MaxSteps
    theirs = (
        laddu_rosenbrock(FREE)
        .fit(
            START,
            config=laddu.ganesh.NelderMeadConfig(**settings),
            terminators=[laddu.ganesh.MaxSteps(300)],
            observers=[lambda k, s: seen_laddu.append(s.message)],
        )
        .raw_ganesh_summary
    )
    ours = minimize(
        Rosenbrock(),
        START,
        config=ld.ganesh.NelderMeadConfig(**settings),
        terminators=[ld.ganesh.MaxSteps(300)],
        observers=[lambda k, s: seen_ours.append(s.message)],
    )
    assert seen_ours == seen_laddu  # every REFLECT, EXPAND, CONTRACT and SHRINK in order
    assert len(seen_ours) > 20
    assert ours.evals.f == theirs.evals.f and str(ours.message) == str(theirs.message)
    assert np.allclose(ours.x, theirs.x, rtol=0, atol=1e-9)


@needs_laddu
def test_lbfgsb_stops_on_an_active_bound_where_laddu_does():
    bounds = ((-2.0, 0.5), (-1.0, 3.0))  # the constrained minimum is (0.5, 0.25)
    theirs, ours = both("LBFGSBConfig", bounds)
    assert np.allclose(theirs.x, [0.5, 0.25], atol=1e-6)
    assert np.allclose(ours.x, theirs.x, atol=1e-6)
    assert ours.x[0] == 0.5  # native bounds: exactly on the bound, never beyond


@needs_laddu
@pytest.mark.parametrize("method", [c[0] for c in CASES])
def test_max_steps_stops_after_laddus_number_of_steps(method):
    seen_laddu, seen_ours = [], []
    theirs = (
        laddu_rosenbrock(FREE)
        .fit(
            START,
            config=getattr(laddu.ganesh, method)(),
            terminators=[laddu.ganesh.MaxSteps(3)],
            observers=[lambda step, snap: seen_laddu.append((step, snap.step, snap.message))],
        )
        .raw_ganesh_summary
    )
    ours = minimize(
        Rosenbrock(),
        START,
        config=getattr(ld.ganesh, method)(),
        terminators=[ld.ganesh.MaxSteps(3)],
        observers=[lambda step, snap: seen_ours.append((step, snap.step, snap.message))],
    )
    assert seen_ours == seen_laddu
    assert [s[:2] for s in seen_ours] == [(0, 0), (1, 1), (2, 2)]
    assert str(ours.message) == str(theirs.message) == "Message: Maximum number of steps reached (3)"
    assert not ours.message.success
    if method in ("NelderMeadConfig", "DifferentialEvolutionConfig", "PSOConfig", "SimulatedAnnealingConfig"):
        assert (ours.evals.f, ours.evals.g) == (
            theirs.evals.f,
            theirs.evals.g,
        )  # a step costs what laddu's does
    if method == "AdamConfig":  # ours evaluates the start's gradient with its value (one value_and_gradient)
        assert (ours.evals.f, ours.evals.g) == (theirs.evals.f, theirs.evals.g + 1)
    if method in ("NelderMeadConfig", "AdamConfig"):  # laddu's very steps (its f agrees to 1e-10)
        assert np.allclose(ours.x, theirs.x, rtol=0, atol=1e-9)


@needs_laddu
def test_without_default_callbacks_only_the_given_terminators_stop_it():
    theirs, ours = [], []
    laddu_rosenbrock(FREE).fit(
        START,
        terminators=[laddu.ganesh.MaxSteps(30)],
        default_callbacks=False,
        observers=[lambda step, snap: theirs.append(step)],
        config=laddu.ganesh.LBFGSBConfig(),
    )
    minimize(
        Rosenbrock(),
        START,
        terminators=[ld.ganesh.MaxSteps(30)],
        default_callbacks=False,
        observers=[lambda step, snap: ours.append(step)],
        config=ld.ganesh.LBFGSBConfig(),
    )
    # its gradient falls below LBFGSBGTerminator's eps^(1/3) after 24 steps (in both libraries)
    assert len(ours) == len(theirs) == 30
    # SciPy's L-BFGS-B ends a run once its line search cannot improve f (at the minimum to
    # machine precision), where laddu's goes on stepping: then the status says so
    done = minimize(Rosenbrock(), START, terminators=[ld.ganesh.MaxSteps(60)], default_callbacks=False)
    assert not done.message.success and done.message.text.startswith("L-BFGS-B stopped: ")
    assert np.allclose(done.x, 1.0, atol=1e-7)
    with pytest.raises(
        GaneshConfigError,
        match=r"LBFGSBConfig would never stop: no terminator applies \(pass "
        r"terminators=\[ld.ganesh.MaxSteps\(n\)\] or default_callbacks",
    ):
        minimize(Rosenbrock(), START, default_callbacks=False)
    with pytest.raises(GaneshConfigError, match=r"PSOConfig would never stop"):
        minimize(Rosenbrock(), START, config=ld.ganesh.PSOConfig())


@needs_laddu
def test_python_terminators_are_called_as_laddus():
    calls = {"laddu": [], "ours": []}

    def stop_at(name):
        def terminator(step, snapshot):
            calls[name].append((step, snapshot.step, snapshot.success, snapshot.message))
            return step >= 4

        return terminator

    theirs = laddu_rosenbrock(FREE).fit(START, terminators=[stop_at("laddu")]).raw_ganesh_summary
    ours = minimize(Rosenbrock(), START, terminators=[stop_at("ours")])
    assert calls["ours"] == calls["laddu"] == [(k, k, False, "Step") for k in range(5)]
    assert str(ours.message) == str(theirs.message) == "Step"
    assert ours.message.text is theirs.message.text is None
    assert ours.message.success is theirs.message.success is False
    with pytest.raises(TypeError, match="a Python terminator must return bool, got NoneType"):
        minimize(Rosenbrock(), START, terminators=[lambda step, snap: None])
    with pytest.raises(TypeError, match="bool"):
        laddu_rosenbrock(FREE).fit(START, terminators=[lambda step, snap: None])


@needs_laddu
@pytest.mark.parametrize("default_callbacks", [True, False])
def test_default_terminators_come_before_observers_given_ones_after(default_callbacks):
    logs = {"laddu": [], "ours": []}

    def callbacks(lib, name):
        log = logs[name]
        terms = [lambda k, s: log.append(("T", k)) or False]
        if not default_callbacks:
            terms += [lib.ganesh.NelderMeadFTerminator(), lib.ganesh.NelderMeadXTerminator()]
        return {
            "observers": [lambda k, s: log.append(("O", k))],
            "terminators": terms,
            "default_callbacks": default_callbacks,
        }

    laddu_rosenbrock(FREE).fit(START, config=laddu.ganesh.NelderMeadConfig(), **callbacks(laddu, "laddu"))
    minimize(Rosenbrock(), START, config=ld.ganesh.NelderMeadConfig(), **callbacks(ld, "ours"))
    assert logs["ours"] == logs["laddu"]
    # a default terminator ends step 66 before the observers see it; given ones after them
    assert logs["ours"][-2:] == ([("O", 65), ("T", 65)] if default_callbacks else [("O", 66), ("T", 66)])


@needs_laddu
def test_a_terminator_of_another_method_is_a_type_error_in_both():
    with pytest.raises(TypeError, match="terminators must match the selected ganesh algorithm"):
        laddu_rosenbrock(FREE).fit(START, terminators=[laddu.ganesh.NelderMeadFTerminator()])
    with pytest.raises(
        TypeError,
        match=r"terminators must be LBFGSBConfig's terminators, ld.ganesh.MaxSteps or "
        r"Python callables \(step, snapshot\) -> bool, got NelderMeadFTerminator",
    ):
        minimize(Rosenbrock(), START, terminators=[ld.ganesh.NelderMeadFTerminator()])
    with pytest.raises(TypeError, match="observers must be ganesh observers or Python callables"):
        minimize(Rosenbrock(), START, observers=[3])
    with pytest.raises(TypeError, match="config must be a ganesh minimizer configuration"):
        minimize(Rosenbrock(), START, config="lbfgsb")


@needs_laddu
def test_the_covariance_is_laddus_raw_inverse_hessian():
    theirs, ours = both("LBFGSBConfig", BOX)
    inverse = np.linalg.inv([[802.0, -400.0], [-400.0, 200.0]])  # Rosenbrock's Hessian at (1, 1)
    assert np.allclose(ours.covariance, inverse, rtol=1e-4)
    assert np.allclose(ours.covariance, theirs.covariance, rtol=1e-4)
    assert np.allclose(ours.std, np.sqrt(np.diag(inverse)), rtol=1e-4)
    assert ours.evals.h == 1
    nm = minimize(Rosenbrock(), START, config=ld.ganesh.NelderMeadConfig())
    assert np.isnan(nm.covariance).all() and np.isnan(nm.std).all()  # as laddu: no Hessian
    skip = minimize(Rosenbrock(), START, config=ld.ganesh.LBFGSBConfig(error_mode="skip"))
    assert np.isnan(skip.covariance).all() and skip.evals.h == 0


@pytest.mark.parametrize(
    "method", ["CMAESConfig", "DifferentialEvolutionConfig", "PSOConfig", "SimulatedAnnealingConfig"]
)
def test_a_seed_makes_a_random_method_reproducible(method):
    def run(seed):
        return minimize(
            Rosenbrock(),
            START,
            config=getattr(ld.ganesh, method)(),
            terminators=[ld.ganesh.MaxSteps(5)],
            seed=seed,
        ).x

    assert np.array_equal(run(3), run(3))
    assert not np.array_equal(run(3), run(4))


def _nll(lib, n=400):
    rng = np.random.default_rng(3)
    x = lib.scalar("x")
    model = lib.Model(
        (
            lib.parameter("c0", fixed=1.0)
            + lib.parameter("c1", initial=0.2) * x
            + lib.parameter("c2", initial=-0.1) * x * x
        ).norm_sqr()
        + 0.05
    )

    def sample(values):
        return lib.Dataset.from_arrays(
            p4s={"beam": np.tile([8.5, 0.0, 0.0, 8.5], (len(values), 1))}, scalars={"x": values}
        )

    data, mc = sample(rng.uniform(-1, 1, n)), sample(np.linspace(-1, 1, 2 * n))
    return lib.Likelihood([lib.NLL(model, data=data, accepted_mc=mc, name="nll")])


LIKELIHOOD_CASES = [
    # laddu's CG never gets its gradient norm below eps^(1/3) here (4000 steps, 30 s): 20 steps
    ("LBFGSBConfig", None, 1e-6),
    ("ConjugateGradientConfig", 20, 1e-5),
    ("TrustRegionConfig", None, 1e-6),
    ("NelderMeadConfig", None, 2e-3),
    ("CMAESConfig", None, 1e-4),
    pytest.param("DifferentialEvolutionConfig", 150, 1e-4, marks=pytest.mark.slow),
    pytest.param("PSOConfig", 150, 1e-4, marks=pytest.mark.slow),
    pytest.param("AdamConfig", None, 2e-2, marks=pytest.mark.slow),
]


@needs_laddu
@pytest.mark.parametrize(("method", "steps", "tol"), LIKELIHOOD_CASES)
def test_each_method_fits_the_same_likelihood_to_laddus_minimum(method, steps, tol):
    ours_lik, theirs_lik = _nll(ld), _nll(laddu)
    start = [0.5, -0.5]
    term = [] if steps is None else [steps]
    theirs = theirs_lik.fit(
        start, config=getattr(laddu.ganesh, method)(), terminators=[laddu.ganesh.MaxSteps(n) for n in term]
    ).raw_ganesh_summary
    ours = minimize(
        ours_lik,
        start,
        config=getattr(ld.ganesh, method)(),
        terminators=[ld.ganesh.MaxSteps(n) for n in term],
        bounds=ours_lik.bounds(),
        parameter_names=ours_lik.parameter_names,
    )
    assert np.abs(ours.x - np.asarray(theirs.x)).max() <= tol
    assert ours.fx <= theirs.fx + 1e-6 + tol
    if method in ("LBFGSBConfig", "ConjugateGradientConfig", "TrustRegionConfig"):
        # laddu's raw covariance: the inverse Hessian of -2 ln L, half the physical one
        assert np.allclose(ours.covariance, theirs.covariance, rtol=1e-5)
        assert np.allclose(ours.std, theirs.std, rtol=1e-5)
