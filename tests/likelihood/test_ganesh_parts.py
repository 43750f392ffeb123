"""The parts of ``ld.ganesh``'s minimizers: laddu 0.28.1's signatures and defaults, bad
keywords as typed errors naming the keyword, the transforms against finite differences,
each terminator's test on hand-computed cases, observers and summaries."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import numpy as np
import pytest
from laddu_reference import laddu, needs_laddu

import laddu_dask as ld
from laddu_dask.errors import GaneshConfigError
from laddu_dask.likelihood.ganesh.engine import minimize

g = ld.ganesh
EPS = np.finfo(float).eps

SIGNED = [
    "LBFGSBConfig",
    "NelderMeadConfig",
    "ConjugateGradientConfig",
    "TrustRegionConfig",
    "CMAESConfig",
    "DifferentialEvolutionConfig",
    "SimulatedAnnealingConfig",
    "PSOConfig",
    "AdamConfig",
    "MoreThuenteLineSearch",
    "HagerZhangLineSearch",
    "Bounds",
    "ScaleTransform",
    "PeriodicTransform",
    "TransformChain",
    "VectorInit",
    "MaxSteps",
    "LBFGSBFTerminator",
    "LBFGSBGTerminator",
    "LBFGSBInfNormGTerminator",
    "NelderMeadFTerminator",
    "NelderMeadXTerminator",
    "ConjugateGradientGTerminator",
    "TrustRegionGTerminator",
    "CMAESSigmaTerminator",
    "CMAESConditionCovTerminator",
    "CMAESTolFunTerminator",
    "CMAESTolXTerminator",
    "CMAESTolXUpTerminator",
    "CMAESEqualFunValuesTerminator",
    "CMAESStagnationTerminator",
    "CMAESNoEffectAxisTerminator",
    "CMAESNoEffectCoordTerminator",
    "SimulatedAnnealingTerminator",
    "AdamEMATerminator",
    "ProgressObserver",
    "DebugObserver",
]


@needs_laddu
@pytest.mark.parametrize("name", SIGNED)
def test_signature_and_defaults_are_laddus(name):
    theirs = inspect.signature(getattr(laddu.ganesh, name)).parameters
    ours = inspect.signature(getattr(g, name)).parameters
    assert list(ours) == list(theirs)
    for key, p in theirs.items():
        assert ours[key].kind == p.kind, key
        if p.default is not Ellipsis:  # laddu's stub spells eps-derived defaults as "..."
            assert ours[key].default == p.default, key


def test_defaults_laddu_writes_as_ellipsis():
    assert g.LBFGSBFTerminator().eps_abs == EPS**0.5
    assert g.LBFGSBGTerminator().eps_abs == g.LBFGSBInfNormGTerminator().eps_abs == EPS ** (1 / 3)
    assert g.ConjugateGradientGTerminator().eps_abs == g.TrustRegionGTerminator().eps_abs == EPS ** (1 / 3)
    assert g.NelderMeadFTerminator().tolerance == g.NelderMeadXTerminator().tolerance == EPS**0.25
    assert g.AdamEMATerminator().eps_loss == EPS**0.5
    assert (
        g.CMAESSigmaTerminator().value,
        g.CMAESTolFunTerminator().value,
        g.CMAESTolXTerminator().value,
        g.CMAESTolXUpTerminator().value,
        g.CMAESConditionCovTerminator().value,
    ) == (1e-10, 1e-12, 0.0, 1e4, 1e14)


BAD = [
    ("LBFGSBConfig(history_size=0)", "history_size must be an integer >= 1, got 0"),
    ("LBFGSBConfig(max_step=-1)", "max_step must be a finite number > 0, got -1"),
    ("LBFGSBConfig(error_mode='x')", "error_mode must be one of 'exact_hessian', 'skip', got 'x'"),
    (
        "LBFGSBConfig(bounds=[(1, 0), (0, 1)])",
        r"bounds\[0\] must be ordered \(low < high\) and not NaN, got \(1, 0\)",
    ),
    ("NelderMeadConfig(reflection=0)", "reflection must be a finite number > 0, got 0"),
    ("NelderMeadConfig(expansion=0.5)", r"expansion must be > 1 and > reflection \(1.0\), got 0.5"),
    ("NelderMeadConfig(contraction=1.5)", r"contraction must be in \(0, 1\), got 1.5"),
    ("NelderMeadConfig(shrink=0)", r"shrink must be in \(0, 1\), got 0"),
    ("NelderMeadConfig(expansion_method='x')", "expansion_method must be one of 'greedy_minimization', "),
    ("NelderMeadConfig(initial_step=0)", "initial_step must be a finite number > 0, got 0"),
    ("ConjugateGradientConfig(update='x')", "update must be one of 'fletcher_reeves', "),
    (
        "ConjugateGradientConfig(line_search=3)",
        "line_search must be a MoreThuenteLineSearch, a HagerZhangLineSearch or None, got int",
    ),
    ("TrustRegionConfig(subproblem='x')", "subproblem must be one of 'dogleg', 'cauchy_point', got 'x'"),
    ("TrustRegionConfig(initial_radius=0)", "initial_radius must be a finite number > 0, got 0"),
    ("TrustRegionConfig(eta=-1)", r"eta must be in \[0, 1\), got -1"),
    ("CMAESConfig(population_size=1)", "population_size must be an integer >= 2, got 1"),
    ("CMAESConfig(initial_sigma=0)", "initial_sigma must be a finite number > 0, got 0"),
    ("DifferentialEvolutionConfig(population_size=2)", "population_size must be an integer >= 4, got 2"),
    ("DifferentialEvolutionConfig(differential_weight=0)", r"differential_weight must be in \(0, 2\), got 0"),
    (
        "DifferentialEvolutionConfig(crossover_probability=2)",
        r"crossover_probability must be in \[0, 1\], got 2",
    ),
    ("DifferentialEvolutionConfig(initial_scale=0)", "initial_scale must be a finite number > 0, got 0"),
    (
        "SimulatedAnnealingConfig(initial_temperature=0)",
        "initial_temperature must be a finite number > 0, got 0",
    ),
    ("SimulatedAnnealingConfig(cooling_rate=1)", r"cooling_rate must be in \(0, 1\), got 1"),
    ("SimulatedAnnealingConfig(proposal_scale=0)", "proposal_scale must be a finite number > 0, got 0"),
    ("PSOConfig(particles=1)", "particles must be an integer >= 2, got 1"),
    ("PSOConfig(topology='x')", "topology must be one of 'global', 'ring', got 'x'"),
    ("PSOConfig(update_method='x')", "update_method must be one of 'synchronous', 'asynchronous', got 'x'"),
    ("PSOConfig(inertia=-1)", "inertia must be a finite number > 0, got -1"),
    ("AdamConfig(alpha=0)", "alpha must be a finite number > 0, got 0"),
    ("AdamConfig(beta_1=1)", r"beta_1 must be in \[0, 1\), got 1"),
    ("AdamConfig(epsilon=0)", "epsilon must be a finite number > 0, got 0"),
    ("MaxSteps(0)", "steps must be an integer >= 1, got 0"),
    ("ProgressObserver(interval=0)", "interval must be an integer >= 1, got 0"),
    ("Bounds([(1, 0)])", r"bounds\[0\] must be ordered \(low < high\) and not NaN, got \(1, 0\)"),
    ("ScaleTransform([0])", r"scales must be a non-empty sequence of finite, nonzero numbers, got \[0\]"),
    ("PeriodicTransform([(1, 0)])", r"intervals\[0\] must be finite and ordered, got \(1, 0\)"),
    (
        "TransformChain([1])",
        "transforms must hold Bounds, ScaleTransform, PeriodicTransform or TransformChain objects, got int",
    ),
    ("VectorInit([])", r"values must be non-empty and finite, got \[\]"),
    ("VectorInit([float('nan')])", r"values must be non-empty and finite, got \[nan\]"),
    ("MoreThuenteLineSearch(c1=0.95)", "MoreThuenteLineSearch needs 0 < c1 < c2 < 1, got c1=0.95, c2=0.9"),
    ("HagerZhangLineSearch(delta=0.95)", "HagerZhangLineSearch needs 0 < delta < sigma < 1, got delta=0.95"),
    ("LBFGSBFTerminator(eps_abs=-1)", "eps_abs must be a finite number > 0, got -1"),
    ("NelderMeadFTerminator(kind='x')", "kind must be one of 'amoeba', 'absolute', 'stddev', got 'x'"),
    (
        "NelderMeadXTerminator(kind='x')",
        "kind must be one of 'diameter', 'higham', 'rowan', 'singer', got 'x'",
    ),
    ("SimulatedAnnealingTerminator(min_temperature=0)", "min_temperature must be a finite number > 0, got 0"),
    ("AdamEMATerminator(patience=0)", "patience must be an integer >= 1, got 0"),
    ("AdamEMATerminator(beta_c=1)", r"beta_c must be in \[0, 1\), got 1"),
]


@pytest.mark.parametrize(("call", "message"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_keyword_is_an_error_naming_it(call, message):
    with pytest.raises(GaneshConfigError, match=message) as caught:
        eval(f"g.{call}")
    assert isinstance(caught.value, ValueError)  # except ValueError keeps working
    if laddu is not None:  # laddu refuses the same value when constructing
        with pytest.raises(Exception) as theirs:  # noqa: B017, PT011 - laddu's types differ by case
            eval(f"laddu.ganesh.{call}")
        assert type(theirs.value).__name__ in ("GaneshConfigError", "ValueError")


def test_an_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        g.LBFGSBConfig(foo=1)
    with pytest.raises(TypeError, match="takes 1 positional argument"):
        g.AdamConfig(0.1)


def _central(f, y, h=1e-6):
    return np.array([(f(y + h * e)[i] - f(y - h * e)[i]) / (2 * h) for i, e in enumerate(np.eye(len(y)))])


@pytest.mark.parametrize(
    "transform",
    [
        g.Bounds([(0.0, 2.0), (1.0, None), (None, -1.0), (None, None)]),
        g.ScaleTransform([2.0, -0.5, 3.0, 1.0]),
        g.TransformChain(
            [
                g.Bounds([(0.0, 2.0), (1.0, None), (None, -1.0), (None, None)]),
                g.ScaleTransform([2.0, 0.5, 3.0, 1.0]),
            ]
        ),
    ],
)
def test_transforms_round_trip_and_their_derivative_is_the_finite_difference(transform):
    x = np.array([0.3, 4.0, -2.5, 7.0])
    y = transform.to_internal(x)
    assert np.allclose(transform.to_external(y), x, rtol=1e-12)
    assert np.allclose(transform.derivative(y), _central(transform.to_external, y), rtol=1e-7)


def test_bounds_keep_every_internal_point_inside():
    b = g.Bounds([(0.0, 2.0), (1.0, None), (None, -1.0)])
    for y in np.random.default_rng(1).normal(0, 50, (200, 3)):
        x = b.to_external(y)
        assert 0 <= x[0] <= 2 and x[1] >= 1 and x[2] <= -1


def test_periodic_transform_wraps_into_its_interval():
    p = g.PeriodicTransform([(-np.pi, np.pi), None])
    assert np.allclose(p.to_external(np.array([3 * np.pi + 0.5, 10.0])), [-np.pi + 0.5, 10.0])
    assert np.allclose(p.to_external(np.array([-7.0, 0.0])), [-7.0 + 2 * np.pi, 0.0])


class Periodic:
    """``-cos(phi - 1)`` plus a quadratic: minimum at ``phi = 1 (mod 2 pi)``, ``s = 2``."""

    def value(self, x):
        return float(-np.cos(x[0] - 1.0) + (x[1] - 2.0) ** 2)

    def value_and_gradient(self, x):
        return self.value(x), np.array([np.sin(x[0] - 1.0), 2 * (x[1] - 2.0)])


@pytest.mark.parametrize("config", [g.LBFGSBConfig, g.NelderMeadConfig, g.TrustRegionConfig])
def test_a_config_transform_changes_coordinates_not_the_minimum(config):
    chain = g.TransformChain([g.PeriodicTransform([(-np.pi, np.pi), None]), g.ScaleTransform([0.1, 10.0])])
    s = minimize(Periodic(), [7.0, 0.0], config=config(transform=chain))
    assert -np.pi <= s.x[0] < np.pi  # the summary holds the wrapped value the objective saw
    # the gradient tests act on internal gradients: scaled by 0.1 here
    assert np.allclose(s.x, [1.0, 2.0], atol=1e-2 if config is g.NelderMeadConfig else 1e-4)


def _state(**kw):
    return SimpleNamespace(**{"step": 0, "memory": {}, **kw})


def test_nelder_mead_terminators_on_a_hand_made_simplex():
    f = np.array([1.0, 1.0 + 3e-4, 1.0 + 6e-4])  # std 2.449e-4, spread 6e-4
    st = _state(simplex_f=f)
    assert g.NelderMeadFTerminator(tolerance=2.5e-4).check(st) == "term_f = STDDEV"
    assert g.NelderMeadFTerminator(tolerance=2.4e-4).check(st) is None
    assert g.NelderMeadFTerminator(kind="absolute", tolerance=6.01e-4).check(st) == "term_f = ABSOLUTE"
    assert (
        g.NelderMeadFTerminator(kind="amoeba", tolerance=5.99e-4).check(st) is None
    )  # 2*6e-4/2.0006 = 5.9982e-4
    assert g.NelderMeadFTerminator(kind="amoeba", tolerance=6e-4).check(st) == "term_f = AMOEBA"
    xs = np.array([[2.0, 0.0], [2.1, 0.05], [1.8, 0.1]])
    st = _state(simplex_x=xs, relative_volume=1e-4, initial_spread=1.0)
    assert g.NelderMeadXTerminator(kind="diameter", tolerance=0.2).check(st) == "term_x = DIAMETER"
    assert g.NelderMeadXTerminator(kind="diameter", tolerance=0.19).check(st) is None
    assert g.NelderMeadXTerminator(kind="higham", tolerance=0.15).check(st) == "term_x = HIGHAM"  # 0.3 / 2
    assert g.NelderMeadXTerminator(kind="higham", tolerance=0.149).check(st) is None
    assert (
        g.NelderMeadXTerminator(kind="rowan", tolerance=0.224).check(st) == "term_x = ROWAN"
    )  # |(-0.2, 0.1)|
    assert g.NelderMeadXTerminator(kind="rowan", tolerance=0.223).check(st) is None
    assert g.NelderMeadXTerminator(tolerance=0.01).check(st) == "term_x = SINGER"  # 1e-4 <= 0.01^2
    assert g.NelderMeadXTerminator(tolerance=0.0099).check(st) is None


def test_gradient_terminators_on_hand_made_states():
    st = _state(
        gradient=np.array([3e-6, -4e-6]),
        fx=1.0,
        f_previous=1.0 + 1e-8,
        y=np.array([0.0, 1.0]),
        bounds=(np.array([0.0, -5.0]), np.array([5.0, 5.0])),
    )
    assert g.LBFGSBGTerminator(eps_abs=5.01e-6).check(st) == "GRADIENT CONVERGED"  # norm 5e-6
    assert g.LBFGSBGTerminator(eps_abs=5e-6).check(st) is None
    assert g.LBFGSBFTerminator().check(st) == "F_EVAL CONVERGED"  # 1e-8 < sqrt(eps)
    assert g.LBFGSBFTerminator(eps_abs=1e-9).check(st) is None
    # on its lower bound, a positive gradient component is projected away: only |-4e-6| counts
    st.gradient = np.array([1.0, -4e-6])
    assert g.LBFGSBInfNormGTerminator(eps_abs=5e-6).check(st) == "PROJECTED GRADIENT WITHIN TOLERANCE"
    st.gradient = np.array([-1.0, -4e-6])
    assert g.LBFGSBInfNormGTerminator(eps_abs=5e-6).check(st) is None


def test_adam_ema_terminator_counts_small_changes():
    t = g.AdamEMATerminator(beta_c=0.5, eps_loss=0.1, patience=2)
    st = _state()
    answers = []
    for fx in (1.0, 1.0, 1.0, 1.0):  # ema 0.5, 0.75, 0.875 (change 0.125), 0.9375 (0.0625)
        st.fx = fx
        answers.append(t.check(st))
    assert answers == [None, None, None, None]
    st.fx = 1.0  # 0.96875: a second change below 0.1
    assert t.check(st) == "EMA LOSS HAS NOT IMPROVED IN 2 STEPS"


def test_max_steps_and_annealing_terminators():
    assert g.MaxSteps(3).check(_state(step=1)) is None
    assert g.MaxSteps(3).check(_state(step=2)) == "Maximum number of steps reached (3)"
    assert g.SimulatedAnnealingTerminator().check(_state(temperature=1.1e-3)) is None
    assert g.SimulatedAnnealingTerminator().check(_state(temperature=0.9e-3)) == ""  # stops without a text


class Bowl:
    def value(self, x):
        return float(np.sum((np.asarray(x) - 1) ** 2))

    def value_and_gradient(self, x):
        return self.value(x), 2 * (np.asarray(x) - 1)


def test_observers_print_each_step(capsys):
    minimize(
        Bowl(),
        [0.0, 0.0],
        observers=[g.ProgressObserver(interval=2), g.DebugObserver()],
        terminators=[g.MaxSteps(3)],
        default_callbacks=False,
        config=g.AdamConfig(),
    )
    err = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in err] == ["step 0", "step 0", "step 1", "step 2", "step 2"]
    assert "gradient = [" in err[1] and "evaluations f = " in err[0]


def test_the_start_may_be_a_vector_init_and_a_config_bounds_win():
    s = minimize(
        Bowl(),
        g.VectorInit([0.0, 0.0]),
        config=g.LBFGSBConfig(bounds=[(0.0, 0.5), (None, None)]),
        bounds=[(-5.0, 5.0), (-5.0, 5.0)],
    )
    assert np.allclose(s.x, [0.5, 1.0], atol=1e-8)
    with pytest.raises(GaneshConfigError, match="bounds has 1 entries, the problem has 2 parameters"):
        minimize(Bowl(), [0.0, 0.0], bounds=[(0.0, 1.0)])
    with pytest.raises(GaneshConfigError, match="transform has 1 entries, the problem has 2 parameters"):
        minimize(Bowl(), [0.0, 0.0], config=g.NelderMeadConfig(transform=g.ScaleTransform([2.0])))


@pytest.mark.parametrize("line_search", [g.MoreThuenteLineSearch(c2=0.4), g.HagerZhangLineSearch()])
@pytest.mark.parametrize("update", g.ConjugateGradientConfig.UPDATES)
def test_every_conjugate_gradient_update_and_line_search_converges(update, line_search):
    s = minimize(
        Bowl(), [3.0, -2.0], config=g.ConjugateGradientConfig(update=update, line_search=line_search)
    )
    assert s.message.success and np.allclose(s.x, 1.0, atol=1e-6)


def test_conjugate_gradient_updates_by_hand():
    from laddu_dask.likelihood.ganesh.gradient_methods import _beta

    g0, g1, d = np.array([1.0, 0.0]), np.array([0.5, 0.5]), np.array([-1.0, 0.0])
    # y = g1 - g0 = (-0.5, 0.5); d.y = 0.5; g1.y = 0; g1.g1 = 0.5; g0.g0 = 1; y.y = 0.5
    assert _beta("fletcher_reeves", g1, g0, d) == 0.5
    assert _beta("polak_ribiere_plus", g1, g0, d) == 0.0
    assert _beta("polak_ribiere_plus", np.array([0.5, 0.0]), g0, d) == 0.0  # g1.y = -0.25 < 0: clipped
    assert _beta("polak_ribiere_plus", np.array([2.0, 0.0]), g0, d) == 2.0  # g1.y = 2
    assert _beta("hestenes_stiefel_plus", np.array([2.0, 0.0]), g0, d) == 0.0  # 2 / d.y = 2 / -1 < 0: clipped
    assert _beta("hestenes_stiefel_plus", np.array([0.5, 1.0]), g0, d) == 1.5  # g1.y = 0.75, d.y = 0.5
    assert _beta("dai_yuan", g1, g0, d) == 1.0  # 0.5 / 0.5
    # Hager-Zhang: (y - 2 d |y|^2 / d.y) . g1 / d.y = ((-0.5, 0.5) - 2 (-1, 0) 0.5 / 0.5) . g1 / 0.5
    assert _beta("hager_zhang", g1, g0, d) == pytest.approx(((1.5 * 0.5) + 0.5 * 0.5) / 0.5)


def test_lbfgsb_history_size_is_scipys_number_of_corrections():
    scales = np.logspace(0, 3, 12)

    class Valley:  # an ill-conditioned quadratic: more corrections, fewer steps
        def value(self, x):
            return float(np.sum(scales * np.asarray(x) ** 2))

        def value_and_gradient(self, x):
            return self.value(x), 2 * scales * np.asarray(x)

    def steps(history):
        seen = []
        minimize(
            Valley(),
            np.ones(12),
            config=g.LBFGSBConfig(history_size=history),
            observers=[lambda step, snapshot: seen.append(step)],
        )
        return len(seen)

    assert steps(1) > steps(3) > steps(12)


def test_summaries():
    s = minimize(Bowl(), [3.0, -2.0], parameter_names=["p", "q"])
    assert np.allclose(s.covariance, 0.5 * np.eye(2), atol=1e-8)  # inverse of the Hessian 2 I
    assert np.allclose(s.std, np.sqrt(0.5))
    text = str(s)
    assert "Success: " in text and "\np " in text and "\nq " in text
    runs = [minimize(Bowl(), x0, terminators=[g.MaxSteps(1)]) for x0 in ([5.0, 5.0], [1.1, 1.0], [3.0, 0.0])]
    multi = g.MultiStartSummary(runs)
    assert multi.best_run_index == int(np.argmin([r.fx for r in runs]))
    assert multi.best is runs[multi.best_run_index] and multi.restart_count == 2 and multi.runs == runs
    assert g.MultiStartSummary([]).best is None


class Recorded(Bowl):
    """The bowl around (1, 1), recording every point it is evaluated at."""

    def __init__(self):
        self.points = []

    def value(self, x):
        self.points.append(np.array(x, dtype=float))
        return super().value(x)


@pytest.mark.parametrize("method", [name for name in SIGNED if name.endswith("Config")])
def test_no_method_evaluates_outside_the_bounds(method):
    bowl = Recorded()
    steps = [g.MaxSteps(300)] if method in ("DifferentialEvolutionConfig", "PSOConfig") else []
    config = getattr(g, method)(**({"alpha": 0.05} if method == "AdamConfig" else {}))
    s = minimize(bowl, [0.0, 0.0], config=config, terminators=steps, bounds=[(-2.0, 0.5), (-3.0, None)])
    points = np.array(bowl.points)
    assert (points[:, 0] >= -2.0).all() and (points[:, 0] <= 0.5).all() and (points[:, 1] >= -3.0).all()
    assert np.allclose(s.x, [0.5, 1.0], atol=2e-2)  # the constrained minimum, on the bound
