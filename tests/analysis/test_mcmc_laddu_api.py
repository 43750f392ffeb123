"""laddu 0.28.1's MCMC and bootstrap API: ``Likelihood.sample(init, config=, seed=,
terminators=, observers=)`` with the ``ganesh`` inits, configs, moves and chain storage,
``MCMCSummary``, ``Ensemble`` (``from_arrays``, ``from_mcmc``) and ``bootstrap_fit``.

Shapes, counts, names and the retention of steps against laddu itself on the same walkers;
the samples against the closed-form posterior of an exactly Gaussian likelihood (and the
ensemble slice sampler against a standard normal's moments), with tolerances from the
number of effective samples; the bootstrap draws against the closed-form replica means.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from laddu_reference import laddu, needs_laddu

import laddu_dask as ld
from laddu_dask.analysis.restarts import replica_seeds
from laddu_dask.errors import GaneshConfigError, ParameterError
from laddu_dask.likelihood.ganesh.sampling import run_ensemble

#: The toy's data: the posterior of (mu, nu) is N(mean(X), 1 / N) x N(mean(X), 1 / (4 N)).
X = np.array([-1.0, 0.0, 1.5, 0.5, 0.25, -0.4, 0.9, 1.2])
SIGMA = np.array([1.0, 0.5]) / np.sqrt(len(X))


def max_steps(lib, n: int):
    """``lib.ganesh.MaxSteps(n)`` (for laddu-dask a stand-in with its ``steps`` until the
    namespace has it)."""
    cls = getattr(lib.ganesh, "MaxSteps", None)
    return cls(n) if cls is not None else SimpleNamespace(steps=n)


def gaussian(lib):
    """``NLL = sum_i (x_i - mu)^2 + 4 (x_i - nu)^2`` exactly: the data intensity is
    ``exp(-(...) / 2)`` and the one accepted-MC event has ``s = 0`` (intensity 1)."""
    x, s = lib.scalar("x"), lib.scalar("s")
    mu, nu = lib.parameter("mu", initial=0.0), lib.parameter("nu", initial=0.0)
    model = lib.Model((-0.5 * s * ((x - mu) * (x - mu) + 4.0 * (x - nu) * (x - nu))).exp())
    beam = np.tile([8.5, 0.0, 0.0, 8.5], (len(X), 1))
    data = lib.Dataset.from_arrays(p4s={"beam": beam}, scalars={"x": X, "s": np.ones(len(X))})
    mc = lib.Dataset.from_arrays(p4s={"beam": beam[:1]}, scalars={"x": np.zeros(1), "s": np.zeros(1)})
    return lib.Likelihood([lib.NLL(model, data=data, accepted_mc=mc)])


@pytest.fixture(scope="module")
def pair():
    return gaussian(ld), gaussian(laddu)


WALKERS = np.array([[0.2, 0.3], [0.25, 0.28], [0.18, 0.33], [0.22, 0.31], [0.21, 0.27], [0.19, 0.29]])


def _both(pair, make_init, config=None, **kwargs):
    """The same run in both libraries (each its own ``ganesh``)."""
    out = []
    for lik, lib in zip(pair, (ld, laddu), strict=True):
        cfg = None if config is None else config(lib)
        terminators = kwargs.get("terminators", lambda lib: [max_steps(lib, 10)])(lib)
        out.append(lik.sample(make_init(lib)(WALKERS), config=cfg, seed=3, terminators=terminators,
                              **{k: v for k, v in kwargs.items() if k != "terminators"}))
    return out


@needs_laddu
@pytest.mark.parametrize("sampler", ["AIES", "ESS"])
def test_summary_shape_names_and_message_are_laddus(pair, sampler):
    ours, theirs = _both(pair, lambda lib: getattr(lib.ganesh, f"{sampler}Init"))
    assert ours.dimension == theirs.dimension == (6, 11, 2) == ours.chain.shape
    assert np.array_equal(ours.chain[:, 0], WALKERS)
    assert np.array_equal(np.asarray(theirs.chain)[:, 0], WALKERS)
    assert ours.parameter_names == theirs.parameter_names == ["mu", "nu"]
    assert (ours.message.success, ours.message.text) == (theirs.message.success, theirs.message.text) \
        == (True, "Maximum number of steps reached (10)")
    if sampler == "AIES":  # every walker once per step, the start included
        assert ours.evals.f == theirs.evals.f == 6 * 11
    # the log-density is -NLL / 2 at every kept position
    assert ours.log_density[4, 9] == -0.5 * pair[0].value(ours.chain[4, 9])


@needs_laddu
@pytest.mark.parametrize("storage", [("rolling", (3,), {}), ("sampled", (2,), {}),
                                     ("sampled", (3,), {"max_samples": 2}), ("full", (), {})])
def test_chain_storage_keeps_the_steps_laddus_keeps(pair, storage):
    kind, args, kw = storage

    def kept(lik, lib):
        full = lik.sample(lib.ganesh.AIESInit(WALKERS), seed=5, terminators=[max_steps(lib, 10)])
        config = lib.ganesh.AIESConfig(chain_storage=getattr(lib.ganesh.ChainStorage, kind)(*args, **kw))
        part = lik.sample(lib.ganesh.AIESInit(WALKERS), config=config, seed=5,
                          terminators=[max_steps(lib, 10)])
        chain, whole = np.asarray(part.chain), np.asarray(full.chain)  # the same seed, the same path
        return part.dimension, [next(k for k in range(11) if np.array_equal(chain[:, i], whole[:, k]))
                                for i in range(chain.shape[1])]

    ours, theirs = kept(pair[0], ld), kept(pair[1], laddu)
    assert ours == theirs
    want = {"rolling": [8, 9, 10], "sampled": [0, 2, 4, 6, 8, 10] if not kw else [6, 9],
            "full": list(range(11))}[kind]
    assert ours[1] == want


@needs_laddu
def test_parameter_names_follow_use_parameter_metadata(pair):
    def names(lib, lik, **kw):
        config = lib.ganesh.AIESConfig(**kw)
        return [lik.sample(lib.ganesh.AIESInit(WALKERS), config=config, terminators=[max_steps(lib, 1)],
                           use_parameter_metadata=meta).parameter_names for meta in (True, False)]

    for lib, lik in zip((ld, laddu), pair, strict=True):
        assert names(lib, lik) == [["mu", "nu"], None]
        assert names(lib, lik, parameter_names=["a", "b"]) == [["mu", "nu"], ["a", "b"]]


@needs_laddu
def test_observers_and_callable_terminators_see_laddus_steps(pair):
    seen = {}
    for lib, lik in zip((ld, laddu), pair, strict=True):
        steps = seen.setdefault(lib.__name__, [])
        summary = lik.sample(lib.ganesh.AIESInit(WALKERS), terminators=[lambda step, snap: step >= 3],
                             observers=[lambda step, snap, steps=steps: steps.append((step, snap.step))])
        assert summary.dimension == (6, 5, 2)  # stopped after step 3: the start and four steps
    assert seen["laddu_dask"] == seen["laddu"] == [(k, k) for k in range(4)]
    with pytest.raises(TypeError, match=r"^terminators\[0\] must return a bool, got NoneType$"):
        pair[0].sample(ld.ganesh.AIESInit(WALKERS), terminators=[lambda step, snap: None])


@needs_laddu
def test_ensemble_from_mcmc_drops_and_thins_as_laddus(pair):
    summaries = {}
    for lib, lik in zip((ld, laddu), pair, strict=True):
        summary = summaries[lib] = lik.sample(lib.ganesh.AIESInit(WALKERS), seed=1,
                                              terminators=[max_steps(lib, 10)])
        ensemble = lib.Ensemble.from_mcmc(summary, discard=2, thin=3)
        chain = np.asarray(summary.chain)  # entries 2, 5, 8 of walker 0, then of walker 1, ...
        assert np.array_equal(np.asarray(ensemble.draws), np.concatenate([w[2::3] for w in chain]))
        assert len(ensemble) == 18 and ensemble.parameter_names == ["mu", "nu"]
        assert isinstance(ensemble.source_id, int)
        assert lib.Ensemble.from_mcmc(summary, discard=10).draws.shape == (6, 2)
    ours = summaries[ld]
    one, two = (ld.Ensemble.from_mcmc(ours, discard=2) for _ in range(2))
    assert one.source_id != two.source_id  # ids are per ensemble
    with pytest.raises(ParameterError, match=r"^discard=11 must leave at least one step in every walker"):
        ld.Ensemble.from_mcmc(ours, discard=11)
    with pytest.raises(ParameterError, match=r"^thin must be an integer >= 1, got 0$"):
        ld.Ensemble.from_mcmc(ours, discard=0, thin=0)
    nameless = pair[0].sample(ld.ganesh.AIESInit(WALKERS), terminators=[max_steps(ld, 2)],
                              use_parameter_metadata=False)
    with pytest.raises(ParameterError, match=r"^the MCMC summary has no parameter names"):
        ld.Ensemble.from_mcmc(nameless, discard=1)


def test_ensemble_from_arrays_and_its_errors():
    e = ld.Ensemble.from_arrays(np.array([[1.0, 2.0], [3.0, 4.0]]), parameter_names=["a", "b"], source_id=7)
    assert (len(e), e.parameter_names, e.source_id, e.draws.tolist()) == (2, ["a", "b"], 7, [[1, 2], [3, 4]])
    with pytest.raises(ValueError):
        e.draws[0, 0] = 5.0  # read-only
    cases = [
        (([[1.0, 2.0]],), {"parameter_names": ["a"]}, r"^parameter_names: 1 names for draws of 2 parameters"),
        (([1.0, 2.0],), {"parameter_names": ["a"]},
         r"two-dimensional \(draws, parameters\), got shape \(2,\)"),
        ((np.zeros((0, 2)),), {"parameter_names": ["a", "b"]},
         r"^an ensemble must contain at least one draw"),
        (([[np.nan, 1.0]],), {"parameter_names": ["a", "b"]}, r"^every ensemble draw must be finite$"),
        (([[2.0, 1.0]],), {"parameter_names": ["a", "a"]}, r"^parameter_names must be distinct"),
    ]
    for args, kw, message in cases:
        with pytest.raises(ParameterError, match=message):
            ld.Ensemble.from_arrays(*args, **kw)


@needs_laddu
def test_bootstrap_fit_returns_laddus_ensemble_of_the_replica_means(pair):
    ours, theirs = pair[0].bootstrap_fit(4, [0.2, 0.3], seed=3), pair[1].bootstrap_fit(4, [0.2, 0.3], seed=3)
    assert type(ours).__name__ == type(theirs).__name__ == "Ensemble"
    assert len(ours) == len(theirs) == 4 and ours.draws.shape == np.asarray(theirs.draws).shape == (4, 2)
    assert ours.parameter_names == theirs.parameter_names == ["mu", "nu"]
    # closed form: replica k's minimum is the Poisson-weighted mean of X, for mu and nu alike
    data = ld.Dataset.from_arrays(scalars={"x": X})
    for row, s in zip(ours.draws, replica_seeds(3, 4), strict=True):
        w = data.bootstrap(seed=s).weights()
        np.testing.assert_allclose(row, [w @ X / w.sum()] * 2, rtol=0, atol=1e-4)
    assert [f.valid for f in ours.fits] == [True] * 4 and ours.fits.label == "bootstrap"
    assert ours.source_id != pair[0].bootstrap_fit(1, seed=3).source_id


@needs_laddu
@pytest.mark.parametrize("sampler", ["AIES", pytest.param("ESS", marks=pytest.mark.slow)])
def test_samples_agree_with_the_closed_form_posterior_and_with_laddu(pair, sampler):
    """Mean and standard deviation of each parameter within 4.5 Monte Carlo standard errors
    of the exact posterior: ``sigma sqrt(tau / n)`` for the mean, ``sigma / sqrt(2 n_eff)``
    for the standard deviation, ``n_eff = n / tau`` from the chain's own autocorrelation."""
    rng = np.random.default_rng(11)
    start = X.mean() + rng.normal(size=(16, 2)) * SIGMA
    discard = 101
    for lib, lik in zip((ld, laddu), pair, strict=True):
        init = getattr(lib.ganesh, f"{sampler}Init")(start)
        summary = lik.sample(init, seed=4, terminators=[max_steps(lib, 700 if sampler == "AIES" else 350)])
        samples = np.asarray(summary.chain)[:, discard:]
        import emcee

        tau = np.maximum(emcee.autocorr.integrated_time(np.swapaxes(samples, 0, 1), tol=0), 1.0)
        n_eff = samples.shape[0] * samples.shape[1] / tau
        mean, std = samples.mean(axis=(0, 1)), samples.std(axis=(0, 1))
        assert np.all(np.abs(mean - X.mean()) < 4.5 * SIGMA / np.sqrt(n_eff)), (lib.__name__, mean, n_eff)
        assert np.all(np.abs(std - SIGMA) < 4.5 * SIGMA / np.sqrt(2 * n_eff)), (lib.__name__, std, n_eff)
        assert n_eff.min() > 300, (lib.__name__, n_eff)


ALL_MOVES = ["differential", "gaussian", "global"]


@pytest.mark.parametrize("moves", [["differential"], ["gaussian"],  # the global move's k-means takes seconds
                                   pytest.param(["global"], marks=pytest.mark.slow),
                                   pytest.param(ALL_MOVES, marks=pytest.mark.slow)])
def test_ensemble_slice_sampler_draws_a_standard_normal(moves):
    """The ESS moves on a 3-d standard normal: the mean, variance and fourth moment
    (3, the normal's kurtosis) within 4.5 Monte Carlo standard errors."""
    g = ld.ganesh
    config = g.ESSConfig(moves=[getattr(g.ESSMove, m)() for m in moves], adaptive_steps=20)
    start = np.random.default_rng(2).normal(size=(24, 3)) * 0.1 + 2.0  # a tight cloud far from the mode
    summary = run_ensemble(lambda x: -0.5 * np.sum(x * x, axis=1), g.ESSInit(start), config, seed=7,
                           terminators=[max_steps(ld, 500)])
    samples = summary.chain[:, 101:]
    import emcee

    tau = np.maximum(emcee.autocorr.integrated_time(np.swapaxes(samples, 0, 1), tol=0), 1.0)
    n_eff = samples.shape[0] * samples.shape[1] / tau
    assert np.all(np.abs(samples.mean(axis=(0, 1))) < 4.5 / np.sqrt(n_eff))
    assert np.all(np.abs(np.mean(samples**2, axis=(0, 1)) - 1.0) < 4.5 * np.sqrt(2.0 / n_eff))
    assert np.all(np.abs(np.mean(samples**4, axis=(0, 1)) - 3.0) < 4.5 * np.sqrt(96.0 / n_eff))
    assert summary.acceptance_fraction.min() == 1.0  # a slice step always moves


@pytest.mark.slow
def test_ess_global_move_jumps_between_separated_modes():
    """Two unit Gaussians 10 sigma apart with equal weight, the walkers started 3 : 1 in them:
    the global move alone (within a cluster it moves inside the mode) evens them out."""
    g = ld.ganesh

    def log_p(x):
        return np.logaddexp(-0.5 * np.sum((x - 5.0) ** 2, axis=1), -0.5 * np.sum((x + 5.0) ** 2, axis=1))

    start = np.random.default_rng(3).normal(size=(32, 2)) + np.repeat([5.0, -5.0], [24, 8])[:, None]
    config = g.ESSConfig(moves=[getattr(g.ESSMove, "global")(components=2)])
    summary = run_ensemble(log_p, g.ESSInit(start), config, seed=4, terminators=[max_steps(ld, 300)])
    right = np.mean(summary.chain[:, 100:, 0] > 0)
    assert abs(right - 0.5) < 0.12, right


def test_autocorrelation_terminator_stops_at_a_check_once_the_chain_is_long_enough():
    g = ld.ganesh
    start = np.random.default_rng(2).normal(size=(16, 2))
    term = g.AutocorrelationTerminator(n_check=20, n_taus_threshold=60, dtau_threshold=0.3)
    summary = run_ensemble(lambda x: -0.5 * np.sum(x * x, axis=1), g.AIESInit(start), None, seed=3,
                           terminators=[term, max_steps(ld, 5000)])
    step = summary.steps - 1
    assert summary.message.text.startswith("Converged: integrated autocorrelation time")
    assert step % 20 == 0 and step < 5000 and len(term.taus) == step // 20 + 1
    assert term.taus[-1] * 60 < step and abs(term.taus[-1] - term.taus[-2]) < 0.3 * term.taus[-1]
    for i, tau in enumerate(term.taus[1:-1], start=1):  # no earlier check met both conditions
        assert not (tau * 60 < 20 * i and abs(term.taus[i - 1] - tau) < 0.3 * tau), (i, term.taus)
    import emcee  # the last tau: the walkers' mean over the chain after the first half of the steps

    kept = np.swapaxes(summary.chain[:, step // 2:], 0, 1)
    want = np.mean(emcee.autocorr.integrated_time(kept, c=7, tol=0))
    assert term.taus[-1] == pytest.approx(want, rel=1e-12)
    late = g.AutocorrelationTerminator(n_check=20, n_taus_threshold=10, dtau_threshold=0.3, terminate=False)
    summary = run_ensemble(lambda x: -0.5 * np.sum(x * x, axis=1), g.AIESInit(start), None, seed=3,
                           terminators=[late, max_steps(ld, 200)])
    assert summary.dimension == (16, 201, 2) and len(late.taus) == 10  # checked at 0, 20, ..., 180
    never = g.AutocorrelationTerminator(n_check=20, n_taus_threshold=0, dtau_threshold=0.0)  # never
    summary = run_ensemble(lambda x: -0.5 * np.sum(x * x, axis=1), g.AIESInit(start), None, seed=3,
                           terminators=[never, max_steps(ld, 100)])
    assert summary.dimension == (16, 101, 2)
    assert summary.message.text == "Maximum number of steps reached (100)"


@needs_laddu
def test_laddus_errors_are_typed_and_name_the_keyword(pair):
    lik, g = pair[0], ld.ganesh
    ten = [max_steps(ld, 10)]
    with pytest.raises(TypeError, match=r"^init must be a ganesh.AIESInit or ganesh.ESSInit .*got ndarray$"):
        lik.sample(WALKERS, terminators=ten)
    with pytest.raises(TypeError, match=r"^config must be a ganesh.AIESConfig for a AIESInit, got ESSConfig"):
        lik.sample(g.AIESInit(WALKERS), config=g.ESSConfig(), terminators=ten)
    with pytest.raises(ParameterError, match=r"^terminators: sample needs a terminator that ends the run"):
        lik.sample(g.AIESInit(WALKERS))
    with pytest.raises(ParameterError, match=r"^init: walkers have 1 coordinates, the likelihood has 2 free "
                                             r"parameters \(mu, nu\)$"):
        lik.sample(g.AIESInit(WALKERS[:, :1]), terminators=ten)  # laddu samples one variable here
    with pytest.raises(ParameterError, match=r"^config: transform is not supported by sample"):
        lik.sample(g.AIESInit(WALKERS), config=g.AIESConfig(transform=object()), terminators=ten)
    cases = [
        (lambda g: g.AIESInit(WALKERS[:1]), r"^AIESInit: AIES requires at least 2 walkers, got 1$"),
        (lambda g: g.ESSInit(WALKERS[:2]), r"^ESSInit: ESS requires at least 3 walkers, got 2$"),
        (lambda g: g.AIESMove.stretch(scale=0.5),
         r"^AIESMove.stretch scale must be a finite number > 1, got 0.5"),
        (lambda g: g.AIESMove.walk(weight=-1), r"^AIESMove.walk weight must be a finite number >= 0, got -1"),
        (lambda g: g.AIESConfig(stretch_scale=0.9), r"^AIESConfig stretch_scale must be a finite number > 1"),
        (lambda g: g.AIESConfig(moves=[]), r"^AIESConfig: move weights must be finite, non-negative, and "
                                           r"include a positive entry"),
        (lambda g: g.ChainStorage.rolling(0), r"^ChainStorage.rolling window must be an integer >= 1, got 0"),
        (lambda g: g.ChainStorage.sampled(0), r"^ChainStorage.sampled keep_every must be an integer >= 1"),
        (lambda g: g.ChainStorage.sampled(1, max_samples=0), r"^ChainStorage.sampled max_samples must be an"),
        (lambda g: g.ESSConfig(bracket_width=0),
         r"^ESSConfig bracket_width must be a finite number > 0, got 0"),
        (lambda g: g.ESSConfig(max_shrink_steps=0), r"^ESSConfig max_shrink_steps must be an integer >= 1"),
        (lambda g: g.ESSConfig(direction_scale=0), r"^ESSConfig direction_scale must be a finite number > 0"),
        (lambda g: getattr(g.ESSMove, "global")(components=1),
         r"^ESSMove.global components must be an integer >= 2, got 1$"),
    ]
    for make, message in cases:
        with pytest.raises(GaneshConfigError, match=message):
            make(ld.ganesh)
        with pytest.raises(Exception) as theirs:  # noqa: B017 - laddu refuses the same
            make(laddu.ganesh)
        assert type(theirs.value).__name__ in ("GaneshConfigError", "OverflowError")
    with pytest.raises(TypeError, match=r"^AIESConfig: moves\[0\] must be a AIESMove, got ESSMove$"):
        g.AIESConfig(moves=[g.ESSMove.gaussian()])
    with pytest.raises(GaneshConfigError, match=r"^AIESInit: walker 1 is not finite: \[nan, 0.3\]$"):
        g.AIESInit([[0.2, 0.3], [np.nan, 0.3]])  # laddu accepts it and samples NaN
