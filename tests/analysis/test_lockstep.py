"""Fits as steps (laddu_dask.likelihood.steps) and many fits in lockstep
(laddu_dask.analysis.lockstep): the same path as one fit alone, in shared rounds."""

import math

import numpy as np
import pytest
import scipy.optimize as so

import laddu_dask as ld
from laddu_dask.analysis.batching import fit_batched
from laddu_dask.analysis.lockstep import fit_lockstep
from laddu_dask.analysis.restarts import FIT_FAILURES
from laddu_dask.errors import ParameterError
from laddu_dask.likelihood.ganesh.engine import minimize
from laddu_dask.likelihood.steps import drive, observe


def _rosenbrock_vg(x):
    x = np.asarray(x, dtype=float)
    f = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    g = np.array([-2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2), 200 * (x[1] - x[0] ** 2)])
    return float(f), g


class _Rosenbrock:
    def value(self, x):
        return _rosenbrock_vg(x)[0]

    def value_and_gradient(self, x):
        return _rosenbrock_vg(x)


@pytest.mark.parametrize("steps", [1, 5, 17])
def test_ganesh_lbfgsb_by_reverse_communication_is_scipys_minimize_step_for_step(steps):
    # SciPy's own driver of the same Fortran-turned-C routine, stopped after `steps` iterations
    bounds = [(-1.5, 0.9), (None, 2.0)]
    scipy_run = so.minimize(_rosenbrock_vg, [-1.2, 1.0], jac=True, method="L-BFGS-B", bounds=bounds,
                            options={"maxiter": steps, "ftol": 0.0, "gtol": 0.0, "maxcor": 10})
    ours = minimize(_Rosenbrock(), [-1.2, 1.0], bounds=bounds, default_callbacks=False,
                    terminators=[ld.ganesh.MaxSteps(steps)], config=ld.ganesh.LBFGSBConfig(error_mode="skip"))
    assert ours.x.tolist() == scipy_run.x.tolist()
    assert ours.fx == scipy_run.fun
    assert ours.evals.f == scipy_run.nfev


def test_ganesh_lbfgsb_reports_scipys_own_stop():
    # a start exactly at the minimum: SciPy's routine stops before any step, with its message
    s = minimize(_Rosenbrock(), [1.0, 1.0])
    assert s.x.tolist() == [1.0, 1.0]
    assert str(s.message).endswith("CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL")


def _lik(n_data=400, seed=4):
    t = ld.scalar("t")
    b = ld.parameter("lk_b", initial=(-3.0, -0.5), bounds=(-10.0, 0.0))
    c = ld.parameter("lk_c", initial=(0.1, 2.0), bounds=(0.0, 5.0))
    model = ld.Model((b * t).exp() + c)
    events = ld.Dataset.from_arrays(scalars={"t": np.random.default_rng(seed).exponential(0.5, n_data)})
    mc = ld.Dataset.from_arrays(scalars={"t": np.linspace(0.0, 5.0, 3000)})
    return ld.Likelihood([ld.NLL(model, data=events, accepted_mc=mc)])


def _same(a, b):
    return (a.values.tolist() if hasattr(a.values, "tolist") else list(a.values)) == \
        (b.values.tolist() if hasattr(b.values, "tolist") else list(b.values)) and \
        a.fval == b.fval and a.n_calls == b.n_calls and a.message == b.message and \
        np.array_equal(np.asarray(list(a.errors.values()) if isinstance(a.errors, dict) else a.errors),
                       np.asarray(list(b.errors.values()) if isinstance(b.errors, dict) else b.errors),
                       equal_nan=True)


class _CountingLikelihood:
    """The likelihood, counting its evaluation calls and points."""

    def __init__(self, lik):
        self.lik, self.calls, self.points = lik, 0, 0

    def __getattr__(self, name):
        return getattr(self.lik, name)

    def values_and_gradients(self, points):
        self.calls += 1
        self.points += len(points)
        return self.lik.values_and_gradients(points)


def test_lockstep_fits_are_bitwise_the_fits_alone_in_shared_rounds():
    lik = _lik()
    starts = [lik.resolve(s) for s in lik.sample_parameters(seed=3, n=6)]
    alone = [lik.fit(initial=s) for s in starts]
    counted = _CountingLikelihood(lik)
    together = fit_lockstep(counted, starts)
    assert all(_same(a, b) for a, b in zip(alone, together, strict=True))
    assert all(r.converged for r in together)
    # every point of every fit was evaluated, in as many rounds as the longest fit needs
    assert counted.points == sum(r.n_calls for r in alone)
    assert counted.calls < counted.points / 3


def test_lockstep_with_max_calls_and_periodic_parameters_is_the_fit_alone():
    t = ld.scalar("t")
    phase = ld.parameter("lk_phase", initial=(-3.0, 3.0), bounds=(-math.pi, math.pi), periodic=True)
    a = ld.parameter("lk_a", initial=(0.2, 1.0), bounds=(0.0, 2.0))
    model = ld.Model((a * ld.cis(phase) + t).norm_sqr())
    rng = np.random.default_rng(7)
    data = ld.Dataset.from_arrays(scalars={"t": rng.uniform(0.0, 1.0, 300)})
    mc = ld.Dataset.from_arrays(scalars={"t": np.linspace(0.0, 1.0, 1500)})
    lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
    starts = [lik.resolve(s) for s in lik.sample_parameters(seed=2, n=4)]
    for options in ({}, {"max_calls": 4}):
        alone = [lik.fit(initial=s, **options) for s in starts]
        together = fit_lockstep(lik, starts, **options)
        assert all(_same(x, y) for x, y in zip(alone, together, strict=True))
    assert not any(r.converged for r in together)  # the call limit stopped each
    assert all("call limit reached" in r.message for r in together)


def test_a_failing_fit_fails_alone_and_the_others_end_as_alone():
    lik = _lik()
    starts = [lik.resolve(s) for s in lik.sample_parameters(seed=5, n=3)]
    bad = np.array([-1.0, 9.0])  # outside lk_c's bounds: refused before any evaluation
    alone = [lik.fit(initial=s) for s in starts]
    seen = []
    out = fit_lockstep(lik, starts[:1] + [bad] + starts[1:], failures=FIT_FAILURES,
                       note=lambda i, r: seen.append(i))
    assert out[1].outcome == "failed" and "ParameterError" in out[1].message and "lk_c" in out[1].message
    assert [_same(a, b) for a, b in zip(alone, [out[0], out[2], out[3]])] == [True] * 3
    assert sorted(seen) == [0, 1, 2, 3]
    with pytest.raises(ParameterError, match="lk_c"):  # not a failure to record: raised
        fit_lockstep(lik, [bad])


def test_an_evaluation_error_reaches_only_the_fit_that_asked():
    lik = _lik()
    starts = [lik.resolve(s) for s in lik.sample_parameters(seed=6, n=3)]
    alone = [lik.fit(initial=s) for s in starts]

    class Poisoned(_CountingLikelihood):
        def values_and_gradients(self, points):
            if any(np.array_equal(p, starts[1]) for p in points):
                raise FloatingPointError("poisoned start")
            return super().values_and_gradients(points)

    out = fit_lockstep(Poisoned(lik), starts, failures=FIT_FAILURES)
    assert out[1].outcome == "failed" and "poisoned start" in out[1].message
    assert _same(out[0], alone[0]) and _same(out[2], alone[2])


def test_fit_restarts_runs_laddus_default_fit_in_lockstep_and_migrad_in_threads(monkeypatch):
    lik = _lik()
    calls = []
    import laddu_dask.analysis.batching as batching

    real = batching.fit_lockstep
    monkeypatch.setattr(batching, "fit_lockstep", lambda *a, **k: calls.append(k) or real(*a, **k))
    fits = lik.fit_restarts(3, seed=1, max_calls=500)
    assert len(calls) == 1 and calls[0]["max_calls"] == 500
    starts = [lik.resolve(s) for s in lik.sample_parameters(seed=1, n=3)]
    assert [r.fval for r in fits] == [lik.fit(initial=s, max_calls=500).fval for s in starts]
    migrad = fit_batched(lik, starts, method="migrad")
    assert len(calls) == 1 and [r.method for r in migrad] == ["migrad"] * 3


def test_observe_passes_on_errors_thrown_in():
    def asks():
        try:
            yield np.array([[1.0]])
        except ValueError as exc:
            return f"heard {exc}"

    def fails(points):
        raise ValueError("no")

    log = []
    assert drive(observe(asks(), lambda *a: log.append(a)), fails) == "heard no"
    assert log == []


def test_bootstrap_replicas_fit_in_shared_rounds_bitwise_as_each_alone(monkeypatch):
    lik = _lik(n_data=300, seed=9)
    central = lik.fit()
    counter = {"rounds": 0}
    import laddu_dask.analysis.lockstep as lockstep

    real = lockstep.evaluate_together

    def counting(pairs, with_gradient):
        counter["rounds"] += 1
        return real(pairs, with_gradient)

    monkeypatch.setattr(lockstep, "evaluate_together", counting)
    ensemble = lik.bootstrap_fit(5, central.values, seed=11)
    fits = list(ensemble.fits)
    # every replica alone: the same data weights (the same seeds), fitted by itself
    seeds = ld.analysis.replica_seeds(11, 5)
    alone = [ld.Likelihood([t.with_data(t.data.bootstrap(seed=s)) for t in lik.terms],
                           execution=lik.execution).fit(initial=central.values) for s in seeds]
    assert all(_same(a, b) for a, b in zip(fits, alone, strict=True))
    assert len({a.fval for a in alone}) == 5  # five different replicas, not one five times
    # the rounds were shared: far fewer calls than the replicas' evaluations
    assert 0 < counter["rounds"] < sum(a.n_calls for a in alone) / 3
