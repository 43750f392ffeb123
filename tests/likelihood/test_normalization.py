"""Tests of the accepted-MC normalization from sufficient statistics.

``decompose`` must find ``I = sum_j s_j |sum_k P_jk E_jk|^2`` wherever a model has that
form (and decline otherwise); the statistics it leads to must give the normalization
integral and its gradient of the event loop.  References: ``math.fsum`` of ``w I`` per
event and ``w @ Re(jacobian)`` from the compiled model's own values and Jacobian, and the
same likelihoods under ``Execution(normalization="general")`` (the event loop).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask import Model, ksks  # the public Model: its evaluate is a test's event loop
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.compile.normalization import decompose
from laddu_dask.data.dataset import Dataset
from laddu_dask.errors import NonFiniteError, NormalizationError
from laddu_dask.likelihood import term_base as terms_module
from laddu_dask.likelihood.likelihood import Likelihood
from laddu_dask.likelihood.terms import NLL, ExtendedNLL
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.normalization import NormalizationStatistics

X, Y, Z = (ld.scalar(c) for c in ("x", "y", "z"))
P = [ld.parameter(f"p{i}", initial=0.3 + 0.1 * i) for i in range(8)]


def C(i: int) -> ld.Expr:  # noqa: N802 - a complex coefficient from two parameters
    return ld.complex(P[i], P[i + 1])


N_TOY = 257
_RNG = np.random.default_rng(31)
TOY_COLUMNS = {"x": _RNG.uniform(-1.5, 1.5, N_TOY), "y": _RNG.uniform(0.2, 2.0, N_TOY),
               "z": _RNG.uniform(-1.0, 1.0, N_TOY)}
TOY_WEIGHTS = _RNG.uniform(-0.4, 2.0, N_TOY)


def _ksks_columns(n: int = 300, seed: int = 5) -> dict[str, np.ndarray]:
    _, mc = ksks.generate(n_data=0, n_mc=n, seed=seed)
    return {f"{name}_{c}": np.ascontiguousarray(mc[name][:, i])
            for name in ksks.P4_NAMES for i, c in enumerate(("e", "px", "py", "pz"))}


def _check_statistics(model, columns: dict, weights: np.ndarray, params) -> None:
    """The decomposition's ``sum w I`` and gradient equal the event loop's (fsum)."""
    cm = CompiledModel.from_expr(model)
    d = decompose(cm.split)
    assert d is not None
    assert set(d.columns) <= set(cm.columns)
    totals = np.array([math.fsum(row) for row in d.matrix_terms(
        {c: columns[c] for c in d.columns}, weights).tolist()])
    matrices = d.matrices(totals)
    assert [m.shape for m in matrices] == [(k, k) for k in d.sizes]
    for m in matrices:  # the amplitude product matrices are Hermitian
        np.testing.assert_allclose(m, m.conj().T, rtol=0, atol=1e-13 * np.abs(m).max())
    values, jac = cm.values_and_jacobian(cm.event_cache({c: columns[c] for c in cm.columns}),
                                         list(params))
    expected = math.fsum((weights * values.real).tolist())
    expected_gradient = weights @ jac.real
    value, gradient = d.value_and_gradient(params, matrices, True)
    assert isinstance(value, float)
    assert value == pytest.approx(expected, rel=1e-12, abs=1e-13 * np.abs(weights * values).sum())
    np.testing.assert_allclose(gradient, expected_gradient, rtol=0,
                               atol=1e-12 * np.abs(expected_gradient).max())
    assert d.value_and_gradient(params, matrices, False) == (value, None)


# ---------------------------------------------------------------------------------------
# decompose: which models have the form, and the statistics are right for them
# ---------------------------------------------------------------------------------------
def test_ksks_fixed_lineshapes_decompose():
    for lineshape in ("bw", "rbw"):
        model = ksks.model(lineshape, fixed_lineshapes=True)
        d = decompose(CompiledModel.from_expr(model).split)
        assert d is not None
        assert d.sizes == [4]  # S wave, and the D wave's three m projections
        assert d.scales == [None]
        cols = _ksks_columns()
        w = np.random.default_rng(2).uniform(0.1, 2.0, len(cols["beam_e"]))
        point = {**ksks.TRUTH, "d0_re": 0.7, "d1_im": -0.4, "d2_re": 0.25}
        _check_statistics(model, cols, w, [point[n] for n in model.parameter_names])


TOY_PARAMS = [0.7, -0.3, 1.1, 0.45, -0.8, 0.2, 0.6, -1.3]

FOUND = {
    "incoherent sum": (
        (C(0) * X + C(2) * Y).norm_sqr() + (C(4) * X * Y).norm_sqr()
        + (C(6) * Z + C(2) * X * X + Y).norm_sqr(),
        [2, 1, 3],
    ),
    "incoherent equal sizes": (
        (C(0) * X + C(2) * Y).norm_sqr() + (C(4) * X + C(6) * Z).norm_sqr(), [2, 2],
    ),
    "polar coefficients": (
        (ld.polar_complex(P[0], P[1]) * X + ld.polar_complex(P[2], P[3]) * ld.complex(Y, Z)
         + ld.polar_complex(P[4], 0.5) * ld.breit_wigner(Y, mass=1.2, width=0.2)).norm_sqr(),
        [3],
    ),
    "scale inside": ((P[5] * (C(0) * X + C(2) * Z)).norm_sqr(), [2]),
    "scale outside": (P[5] * (C(0) * X + C(2) * Z).norm_sqr(), [2]),
    "scale of a sum": (
        P[5] * ((C(0) * X).norm_sqr() + 2.0 * (C(2) * Z + Y).norm_sqr()) / P[6], [1, 2],
    ),
    "constant scale": (0.25 * (C(0) * X + C(2) * Z).norm_sqr(), [2]),
    "products distribute": (((C(0) * X + C(2) * Y) * (C(4) * Z + ld.complex(Y, 1.0))).norm_sqr(),
                            [4]),
    "quotients": ((C(0) * X / P[4] + C(2) / ld.complex(Y, Z)).norm_sqr(), [2]),
    "term without events": ((C(0) + C(2) * X + P[4] * Y * Z).norm_sqr(), [3]),
}


@pytest.mark.parametrize("name", list(FOUND))
def test_decompose_finds_the_structure(name):
    model, sizes = FOUND[name]
    d = decompose(CompiledModel.from_expr(model).split)
    assert d is not None, f"{name}: not decomposed"
    assert sorted(d.sizes) == sorted(sizes)
    cm = CompiledModel.from_expr(model)
    by_name = {f"p{i}": v for i, v in enumerate(TOY_PARAMS)}
    _check_statistics(model, TOY_COLUMNS, TOY_WEIGHTS, [by_name[n] for n in cm.parameter_names])


def test_scales_are_recorded():
    d = decompose(CompiledModel.from_expr(FOUND["scale outside"][0]).split)
    assert d.scales == [P[5]]
    d = decompose(CompiledModel.from_expr(FOUND["incoherent sum"][0]).split)
    assert d.scales == [None, None, None]


NOT_FOUND = {
    "free masses": ksks.model().expr,
    "free masses rbw": ksks.model("rbw").expr,
    "not a square": C(0).real() * X + P[2],
    "modulus, not its square": (C(0) * X).abs(),
    "parameter in a per-event function": (C(0) * (P[2] * X).sin()).norm_sqr(),
    "parameter in a per-event denominator": (C(0) / (X - P[2])).norm_sqr(),
    "event-dependent scale": X * (C(0) * Y).norm_sqr(),
    "constant added": (C(0) * X).norm_sqr() + 0.1,
    "difference of squares": (C(0) * X).norm_sqr() - (C(2) * Y).norm_sqr(),
    "no parameter in the squares": (X + Y).norm_sqr() + P[0] * Z,
}


@pytest.mark.parametrize("name", list(NOT_FOUND))
def test_decompose_declines_other_forms(name):
    assert decompose(CompiledModel.from_expr(NOT_FOUND[name]).split) is None


# ---------------------------------------------------------------------------------------
# NLL and ExtendedNLL: "auto" (statistics) against "general" (event loop), and "verify"
# ---------------------------------------------------------------------------------------
def _term(kind, model, data: Dataset, mc: Dataset, name: str = "sig"):
    return kind(model, data=data, accepted_mc=mc, name=name)


def _evaluate(kind, model, data, mc, normalization: str, points, **execution):
    ex = Execution(normalization=normalization, **execution)
    lik = Likelihood([_term(kind, model, data, mc)], execution=ex)
    return [lik.value_and_gradient(p) for p in points], ex


def _strategies(ex: Execution) -> dict[str, str]:
    return {d.dataset: d.strategy for d in ex.memory_decisions()}


def _assert_agree(a, b) -> None:
    for (va, ga), (vb, gb) in zip(a, b):
        assert va == pytest.approx(vb, rel=1e-12, abs=0)
        np.testing.assert_allclose(ga, gb, rtol=0, atol=1e-12 * np.abs(gb).max())


@pytest.fixture(scope="module")
def ksks_weighted(ksks_arrays):
    rng = np.random.default_rng(17)
    (dp4, _), (mp4, _) = ksks_arrays["data"], ksks_arrays["accmc"]
    data = Dataset.from_arrays(p4s=dp4, weights=rng.uniform(0.3, 1.8, len(dp4["beam"])),
                               chunk_size=1100)
    # accepted-MC weights of both signs, as after a background subtraction
    mc = Dataset.from_arrays(p4s=mp4, weights=rng.normal(1.0, 0.6, len(mp4["beam"])),
                             chunk_size=1500)
    return data, mc


KSKS_POINTS = [
    {n: ksks.TRUTH[n] for n in ksks.model(fixed_lineshapes=True).parameter_names},
    {"d0_re": 0.7, "d0_im": 0.35, "d1_re": -0.3, "d1_im": 0.55, "d2_re": 0.2, "d2_im": -0.4},
]


@pytest.mark.parametrize("kind", [NLL, ExtendedNLL], ids=["nll", "extended"])
def test_ksks_fixed_lineshapes_auto_equals_general(ksks_weighted, kind):
    data, mc = ksks_weighted
    model = ksks.model(fixed_lineshapes=True)
    auto, ex_auto = _evaluate(kind, model, data, mc, "auto", KSKS_POINTS)
    general, ex_general = _evaluate(kind, model, data, mc, "general", KSKS_POINTS)
    _assert_agree(auto, general)
    assert _strategies(ex_auto)["sig/accepted_mc"] == "statistics"
    assert _strategies(ex_general)["sig/accepted_mc"] in ("resident", "streaming")
    stats_decision = [d for d in ex_auto.memory_decisions() if d.strategy == "statistics"][0]
    assert "sufficient statistics" in stats_decision.reason and "4" in stats_decision.reason
    # the data are reduced by the event loop either way
    assert _strategies(ex_auto)["sig/data"] in ("resident", "streaming")
    verified, ex_verify = _evaluate(kind, model, data, mc, "verify", KSKS_POINTS)
    _assert_agree(verified, general)
    strategies = [d.strategy for d in ex_verify.memory_decisions()
                  if d.dataset == "sig/accepted_mc"]
    assert "statistics" in strategies and len(strategies) == 2  # both were prepared


INCOHERENT = Model(
    (ld.breit_wigner(Y, mass=1.1, width=0.3) * C(0) + C(2) * X).norm_sqr()
    + P[4] * (ld.polar_complex(P[5], P[6]) * Z * Y + 0.5).norm_sqr()
)


def _toy(n: int, seed: int, chunk: int, weights: str) -> Dataset:
    rng = np.random.default_rng(seed)
    cols = {"x": rng.uniform(-1.5, 1.5, n), "y": rng.uniform(0.2, 2.0, n),
            "z": rng.uniform(-1.0, 1.0, n)}
    w = rng.uniform(0.2, 2.5, n) if weights == "positive" else rng.normal(1.0, 0.8, n)
    return Dataset.from_arrays(scalars=cols, weights=w, chunk_size=chunk)


@pytest.mark.parametrize("kind", [NLL, ExtendedNLL], ids=["nll", "extended"])
@pytest.mark.parametrize("policy", ["resident", "streaming"])
def test_incoherent_sum_auto_equals_general(kind, policy):
    data = _toy(400, 1, 150, "positive")
    mc = _toy(900, 2, 256, "signed").with_memory_policy(policy)
    points = [[0.7, -0.3, 1.1, 0.45, 0.8, 0.6, -1.3], [1.2, 0.1, -0.4, 0.9, 2.5, 0.3, 0.2]]
    assert Likelihood([_term(kind, INCOHERENT, data, mc)]).parameter_names == [
        "p0", "p1", "p2", "p3", "p4", "p5", "p6"]
    d = CompiledModel.from_expr(INCOHERENT).decomposition
    assert d is not None and d.sizes == [2, 2] and d.scales == [None, P[4]]
    auto, ex_auto = _evaluate(kind, INCOHERENT, data, mc, "auto", points)
    general, ex_general = _evaluate(kind, INCOHERENT, data, mc, "general", points)
    _assert_agree(auto, general)
    assert _strategies(ex_auto)["sig/accepted_mc"] == "statistics"
    assert _strategies(ex_general)["sig/accepted_mc"] == policy
    verified, _ = _evaluate(kind, INCOHERENT, data, mc, "verify", points)
    _assert_agree(verified, general)


def test_undecomposable_model_uses_the_event_loop_under_auto():
    model = Model((C(0) * (P[2] * X).sin() + Y).norm_sqr())
    data, mc = _toy(50, 3, 64, "positive"), _toy(80, 4, 64, "positive")
    auto, ex = _evaluate(NLL, model, data, mc, "auto", [[0.5, 0.2, 0.9]])
    general, _ = _evaluate(NLL, model, data, mc, "general", [[0.5, 0.2, 0.9]])
    assert "statistics" not in _strategies(ex).values()
    _assert_agree(auto, general)
    # "verify" has nothing to compare with, and runs the event loop
    verified, ex = _evaluate(NLL, model, data, mc, "verify", [[0.5, 0.2, 0.9]])
    assert "statistics" not in _strategies(ex).values()
    _assert_agree(verified, general)


@pytest.mark.parametrize("kind", [NLL, ExtendedNLL], ids=["nll", "extended"])
@pytest.mark.parametrize("with_gradient", [False, True])
def test_verify_detects_corrupt_statistics(monkeypatch, kind, with_gradient):
    original = terms_module.prepare_statistics

    def corrupt(*args, **kwargs) -> NormalizationStatistics:
        stats = original(*args, **kwargs)
        stats.matrices = [m * (1.0 + 1e-6) for m in stats.matrices]
        return stats

    monkeypatch.setattr(terms_module, "prepare_statistics", corrupt)
    data, mc = _toy(60, 5, 64, "positive"), _toy(90, 6, 40, "positive")
    lik = Likelihood([_term(kind, INCOHERENT, data, mc, name="corrupted")],
                     execution=Execution(normalization="verify"))
    point = [0.7, -0.3, 1.1, 0.45, 0.8, 0.6, -1.3]
    call = lik.value_and_gradient if with_gradient else lik.value
    with pytest.raises(NormalizationError,
                       match=r"term 'corrupted': the accepted-MC normalisation from sufficient "
                             r"statistics \(.*\) disagrees with the event loop \(.*\)"):
        call(point)
    # "auto" trusts the statistics (nothing to compare with): no error, a shifted value
    lik_auto = Likelihood([_term(kind, INCOHERENT, data, mc, name="corrupted")],
                          execution=Execution(normalization="auto"))
    lik_general = Likelihood([_term(kind, INCOHERENT, data, mc, name="corrupted")],
                             execution=Execution(normalization="general"))
    assert lik_auto.value(point) != lik_general.value(point)


def test_verify_detects_a_corrupt_gradient(monkeypatch):
    """Statistics whose value is right but whose gradient is not."""
    original = NormalizationStatistics.values_and_gradients  # the one place both paths go through

    def skewed(self, points, with_gradient):
        values, grads = original(self, points, with_gradient)
        return values, (None if grads is None else grads * (1.0 + 1e-5))

    monkeypatch.setattr(NormalizationStatistics, "values_and_gradients", skewed)
    data, mc = _toy(60, 5, 64, "positive"), _toy(90, 6, 40, "positive")
    lik = Likelihood([_term(NLL, INCOHERENT, data, mc, name="grad")],
                     execution=Execution(normalization="verify"))
    point = [0.7, -0.3, 1.1, 0.45, 0.8, 0.6, -1.3]
    lik.value(point)  # values agree
    with pytest.raises(NormalizationError, match=r"term 'grad': the accepted-MC normalisation"):
        lik.value_and_gradient(point)


# ---------------------------------------------------------------------------------------
# zero accepted-MC weight
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("normalization", ["auto", "general", "verify"])
@pytest.mark.parametrize("kind", [NLL, ExtendedNLL], ids=["nll", "extended"])
@pytest.mark.parametrize("weights", ["zeros", "cancelling"])
def test_zero_total_accepted_mc_weight(normalization, kind, weights):
    n = 6
    w = np.zeros(n) if weights == "zeros" else np.array([1e16, 1.0, -1e16, -1.0, 2.5, -2.5])
    rng = np.random.default_rng(8)
    mc = Dataset.from_arrays(scalars={"x": rng.uniform(-1, 1, n), "y": rng.uniform(0.2, 2, n),
                                      "z": rng.uniform(-1, 1, n)}, weights=w, chunk_size=4)
    ex = Execution(normalization=normalization)
    lik = Likelihood([_term(kind, INCOHERENT, _toy(20, 9, 8, "positive"), mc, name="zero")],
                     execution=ex)
    with pytest.raises(NormalizationError, match=r"term 'zero': the accepted Monte Carlo "
                                                 r"\(arrays\) has zero total weight"):
        lik.value_and_gradient([0.7, -0.3, 1.1, 0.45, 0.8, 0.6, -1.3])
    strategies = [d.strategy for d in ex.memory_decisions() if d.dataset == "zero/accepted_mc"]
    if normalization == "general":
        assert "statistics" not in strategies
    else:  # the statistics were summed (and their weight found to be zero)
        assert "statistics" in strategies


# ---------------------------------------------------------------------------------------
# what each accepted-MC event must satisfy: the same under "auto", "general" and "verify"
# ---------------------------------------------------------------------------------------
COHERENT = Model((C(0) * X + C(2) * Y).norm_sqr())  # zero wherever x = y = 0


def _coherent_sample(n: int, seed: int, zero_at: int | None = None) -> tuple[dict, np.ndarray]:
    rng = np.random.default_rng(seed)
    cols = {"x": rng.uniform(-1.5, 1.5, n), "y": rng.uniform(0.2, 2.0, n), "z": np.zeros(n)}
    if zero_at is not None:
        cols["x"][zero_at] = cols["y"][zero_at] = 0.0
    return cols, rng.uniform(0.2, 2.5, n)


@pytest.mark.parametrize("kind", [NLL, ExtendedNLL], ids=["nll", "extended"])
@pytest.mark.parametrize("kernel", ["fused", "numpy"])
def test_zero_intensity_accepted_mc_event_is_accepted_by_every_normalization(kind, kernel):
    """An accepted-MC event where the model vanishes only adds zero to sum_accmc w I (laddu's
    convention); the event loop used to reject it (positive_real) while the statistics
    accepted it.  Reference: the closed form with NumPy intensities and math.fsum."""
    (dcols, dw), (mcols, mw) = _coherent_sample(60, 11), _coherent_sample(90, 12, zero_at=37)
    data = Dataset.from_arrays(scalars=dcols, weights=dw, chunk_size=32)
    mc = Dataset.from_arrays(scalars=mcols, weights=mw, chunk_size=32)
    point = [0.7, -0.3, 1.1, 0.45]
    c0, c2 = complex(point[0], point[1]), complex(point[2], point[3])

    def intensity(cols: dict) -> np.ndarray:
        return np.abs(c0 * cols["x"] + c2 * cols["y"]) ** 2

    assert intensity(mcols)[37] == 0.0
    s_data = math.fsum((dw * np.log(intensity(dcols))).tolist())
    s_mc = math.fsum((mw * intensity(mcols)).tolist())
    expected = (-2.0 * (s_data - math.fsum(dw.tolist()) * math.log(s_mc)) if kind is NLL
                else 2.0 * (s_mc - s_data))
    results = {}
    for normalization in ("auto", "general", "verify"):
        ex = Execution(normalization=normalization, kernel=kernel)
        lik = Likelihood([_term(kind, COHERENT, data, mc)], execution=ex)
        results[normalization] = lik.value_and_gradient(point)
        assert results[normalization][0] == pytest.approx(expected, rel=1e-12)
        assert lik.value(point) == pytest.approx(expected, rel=1e-12)
        uses_statistics = "statistics" in [d.strategy for d in ex.memory_decisions()]
        assert uses_statistics == (normalization != "general")
    _assert_agree([results["auto"]], [results["general"]])
    _assert_agree([results["verify"]], [results["general"]])


@pytest.mark.parametrize("normalization", ["auto", "general", "verify"])
def test_infinite_accepted_mc_intensity_names_the_event_in_every_normalization(tmp_path,
                                                                               normalization):
    """exp(x) = inf at accepted-MC event 41: the statistics (an infinite amplitude factor)
    and the event loop (an infinite intensity) name the same event and file."""
    model = Model((C(0) * X.exp() + C(2) * Y).norm_sqr())
    assert CompiledModel.from_expr(model).decomposition is not None
    rng = np.random.default_rng(13)
    cols = {"x": rng.uniform(-1.5, 1.5, 90), "y": rng.uniform(0.2, 2.0, 90), "z": np.zeros(90)}
    cols["x"][41] = 800.0
    path = tmp_path / "accmc.parquet"
    Dataset.from_arrays(scalars=cols).write_parquet(path)
    mc = ld.read_parquet(path, chunk_size=32)
    lik = Likelihood([_term(NLL, model, _toy(60, 11, 32, "positive"), mc)],
                     execution=Execution(normalization=normalization))
    with pytest.raises(NonFiniteError, match=rf"non-finite .* at event 41 \({path} \[rows 32:64\]\)"):
        lik.value_and_gradient([0.7, -0.3, 1.1, 0.45])


@pytest.mark.parametrize("name", list(FOUND))
def test_statistics_at_many_points_are_each_point_alone_and_the_event_loop(name):
    """The statistics of a round's K points at once (the lockstep's path): each point bitwise
    its own evaluation, whatever the other points, and the event loop's sum to rounding."""
    model = Model(FOUND[name][0])
    data = Dataset.from_arrays(scalars=TOY_COLUMNS, weights=np.abs(TOY_WEIGHTS) + 0.1, chunk_size=64)
    mc = Dataset.from_arrays(scalars=TOY_COLUMNS, weights=TOY_WEIGHTS, chunk_size=100)
    lik = Likelihood([_term(NLL, model, data, mc)])
    n = len(lik.parameter_names)
    points = np.random.default_rng(3).uniform(-1.5, 1.5, (7, n))
    stats = lik.terms[0].prepare(lik.execution).stats
    values, grads = stats.values_and_gradients(points, True)
    alone = [stats.value_and_gradient(p, True) for p in points]
    assert values.tolist() == [v for v, _ in alone]
    assert grads.tolist() == [g.tolist() for _, g in alone]
    reversed_values, _ = stats.values_and_gradients(points[::-1].copy(), True)
    assert reversed_values.tolist() == values.tolist()[::-1]
    # the event loop: sum_accmc w I at each point, summed exactly event by event
    for p, v in zip(points, values):
        intensities = model.evaluate(mc, parameters=dict(zip(lik.parameter_names, p)))
        assert v == pytest.approx(math.fsum(np.real(intensities) * TOY_WEIGHTS), rel=1e-11)
