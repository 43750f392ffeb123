"""Many fits (``laddu_dask/analysis/restarts.py``): tests written for the mutants mutmut
found surviving (issue 30, point 3; ``docs/mutation.md``).

References: golden values written down once from the code of this commit's parent (the
defaults' seed 0, as ``tests/analysis/test_seeded_reproducibility.py`` does for other seeds), the closed
form ``a = W_A / W_B`` of that file's two-class model, and the messages a user reads.
"""

from __future__ import annotations

import logging
import os
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from test_seeded_reproducibility import _classes

import laddu_dask as ld
from laddu_dask.analysis import restarts
from laddu_dask.analysis.ensembles import failed_fit
from laddu_dask.analysis.restarts import (
    FIT_FAILURES,
    Progress,
    bootstrap_fit,
    fit_each,
    fit_restarts,
    same_start_warning,
    start_note,
)
from laddu_dask.errors import ParameterError, RestartWarning

# golden values of seed 0, the default seed (see the module docstring)
RESTART_STARTS_0 = [[1.4554425309821815], [0.9046800706458055], [0.5614602859042921]]
REPLICA_CLASS_WEIGHTS_0 = [(4.0, 6.0), (7.0, 6.0)]  # (W_A, W_B) of replicas 0 and 1 of seed 0
HOW = ("give ranges with initial=(minimum, maximum) in ld.parameter or ld.ParameterUpdate "
       "([start] name = [minimum, maximum] in a batch job)")


@pytest.fixture(scope="module")
def lik():
    model, data, mc = _classes()
    return ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])


def test_the_default_seed_is_zero(lik, capsys):
    assert fit_restarts(lik, 3).starts.tolist() == RESTART_STARTS_0
    ensemble = bootstrap_fit(lik, 2, method="migrad", tolerance=1e-6).fits
    want = [w_a / w_b for w_a, w_b in REPLICA_CLASS_WEIGHTS_0]  # closed form a = W_A / W_B
    assert [f.named_parameters["a"] for f in ensemble] == pytest.approx(want, rel=1e-4)
    assert ensemble.label == "bootstrap"
    assert capsys.readouterr().out == ""  # no progress unless asked for


def test_fit_options_reach_every_fit(lik):
    with pytest.raises(ParameterError, match="strategy"):
        lik.fit_restarts(2, seed=1, strategy=7, method="migrad")
    with pytest.raises(ParameterError, match="^strategy is an option of MIGRAD: pass method='migrad'"):
        lik.fit_restarts(2, seed=1, strategy=1)  # laddu's default method has no strategy
    with pytest.raises(ParameterError, match="strategy"):
        lik.bootstrap_fit(2, seed=1, strategy=7)


@pytest.mark.parametrize("samples", [0, -1, True, 2.5, "2"])
def test_bootstrap_needs_a_positive_integer(lik, samples):
    with pytest.raises(ValueError, match=rf"^samples must be a positive integer, got {samples!r}$"):
        lik.bootstrap_fit(samples)



@pytest.mark.parametrize("restarts", [0, -1, True, 2.5, "2"])
def test_restarts_need_a_positive_integer(lik, restarts):
    with pytest.raises(ValueError, match=rf"^restarts must be a positive integer, got {restarts!r}$"):
        lik.fit_restarts(restarts)


def test_a_numpy_integer_count_of_restarts_with_an_initial_start(lik):
    """``initial`` is the first of ``restarts`` starts; the rest are seed 0's draws."""
    fits = fit_restarts(lik, np.int64(3), {"a": 1.0})
    assert fits.starts.tolist() == [[1.0], *RESTART_STARTS_0[:2]]
    (alone,) = fit_restarts(lik, 1, {"a": 0.5}).starts.tolist()
    assert alone == [0.5]

def test_one_bootstrap_replica_is_a_fit(lik):
    (fit,) = lik.bootstrap_fit(1, seed=11, method="migrad", tolerance=1e-6).fits
    # replica 0 of seed 11: W_A = 3, W_B = 7
    assert fit.named_parameters["a"] == pytest.approx(3.0 / 7.0, rel=1e-4)


def test_the_note_of_restarts_without_some_ranges_is_the_whole_advice():
    model = ld.Model(ld.parameter("a", initial=(0.5, 2.0), bounds=(1e-3, 1e3)) * ld.scalar("sa")
                     + ld.parameter("b", initial=1.0, bounds=(1e-3, 1e3)) * ld.scalar("sb"))
    _, data, mc = _classes()
    fits = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)]).fit_restarts(2, seed=3)
    assert fits.message == f"b start at their initial values in every sampled restart (no starting range); " \
                           f"{HOW}"



def _two_parameter_likelihood(a_initial, b_initial):
    x = ld.scalar("x")
    a = ld.parameter("a", initial=a_initial, bounds=(0.0, 10.0))
    b = ld.parameter("b", initial=b_initial, bounds=(0.01, 10.0))
    data = ld.Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0])})
    mc = ld.Dataset.from_arrays(scalars={"x": np.array([0.25, 0.75, 1.0])})
    return ld.Likelihood([ld.NLL(ld.Model(a * x * x + b), data=data, accepted_mc=mc)])


def test_the_note_of_restarts_at_repeated_points_is_the_whole_advice():
    lik = _two_parameter_likelihood(1.0, 1.0)
    no_range = "no free parameter (a, b) has a starting range, so the sampled starts are their initial values"
    assert start_note(lik, [[1.0, 1.0]] * 3) == \
        (f"the 3 restarts start at the same point: {no_range}; {HOW}", True)
    assert start_note(lik, [[2.0, 1.0], [1.0, 1.0], [1.0, 1.0]]) == \
        (f"the 3 restarts start at only 2 distinct points: {no_range}; {HOW}", True)
    assert start_note(lik, [[2.0, 1.0], [1.0, 1.0]]) == \
        (f"a, b start at their initial values in every sampled restart (no starting range); {HOW}", False)
    assert start_note(lik, [[1.0, 1.0]]) == ("", False)  # one start: nothing to say
    ranged = _two_parameter_likelihood((0.5, 3.0), (0.5, 2.0))
    assert start_note(ranged, [[1.0, 1.0]] * 2) == ("", False)  # every parameter has a range

def test_progress_text_with_and_without_a_valid_fit(capsys):
    progress = Progress(True, "restarts", 2)
    progress.line.terminal = progress.line.notebook = False  # one whole line per update
    progress(0, SimpleNamespace(valid=False, fval=3.0))
    progress(1, SimpleNamespace(valid=True, fval=1.25))
    assert capsys.readouterr().out.splitlines() == [
        "restarts: 1 of 2 fits done, 0 valid",
        "restarts: 2 of 2 fits done, 1 valid, best -2 ln L = 1.25"]



def test_progress_in_a_terminal_rewrites_one_line_and_ends_it_after_the_last_fit(capsys):
    progress = Progress(True, "restarts", 2)
    progress.line.terminal, progress.line.notebook = True, False
    progress(0, SimpleNamespace(valid=True, fval=2.5))
    assert capsys.readouterr().out == "\rrestarts: 1 of 2 fits done, 1 valid, best -2 ln L = 2.5"
    progress(1, SimpleNamespace(valid=True, fval=1.25))
    assert capsys.readouterr().out == "\rrestarts: 2 of 2 fits done, 2 valid, best -2 ln L = 1.25\n"


def test_progress_false_shows_nothing_and_a_callable_hears_index_count_and_result(capsys):
    quiet = Progress(False, "restarts", 1)
    assert quiet.line is None
    quiet(0, SimpleNamespace(valid=True, fval=1.0))
    heard = []
    first, second = SimpleNamespace(valid=False, fval=3.0), SimpleNamespace(valid=True, fval=1.0)
    told = Progress(lambda i, n, r: heard.append((i, n, r)), "bootstrap", 2)
    assert told.line is None
    told(0, first)
    told(1, second)
    assert heard == [(0, 2, first), (1, 2, second)]
    assert capsys.readouterr().out == ""

# mutmut calls every mutated function through its trampoline (mutmut/mutation/trampoline.py),
# which is then the warning's immediate caller; outside mutmut it is this file
TRAMPOLINE = os.path.join("mutmut", "mutation", "trampoline.py")


def test_same_start_warning_logs_and_points_outside_the_package(caplog):
    with caplog.at_level(logging.WARNING, logger="laddu_dask"), \
            warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        same_start_warning("the 3 restarts start at the same point")
    assert [(r.name, r.getMessage()) for r in caplog.records] == \
        [("laddu_dask", "the 3 restarts start at the same point")]
    (w,) = [w for w in record if w.category is RestartWarning]
    assert str(w.message) == "the 3 restarts start at the same point"
    assert w.filename == __file__ or w.filename.endswith(TRAMPOLINE), w.filename


def test_restarts_of_one_likelihood_run_in_lockstep_and_replicas_one_by_one(lik, monkeypatch):
    """The module's promise: several restarts of one likelihood run in lockstep (their
    evaluations merged into rounds, no fit on its own); one restart is one plain fit;
    bootstrap replicas (different likelihoods) are fitted one by one."""
    fits = []
    fit = ld.Likelihood.fit

    def counted_fit(self, *args, **kwargs):
        fits.append(self)
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(ld.Likelihood, "fit", counted_fit)
    for n, plain in [(2, 0), (3, 0), (1, 1)]:
        fits.clear()
        fit_restarts(lik, n, seed=4)
        assert len(fits) == plain, n
    fits.clear()
    bootstrap_fit(lik, 2, seed=11, method="migrad", tolerance=1e-3)
    assert len(fits) == 2 and fits[0] is not fits[1] and lik not in fits
    assert all(replica.execution is lik.execution for replica in fits)  # the original's execution


# -- fit_each: the three ways many fits run -------------------------------------------------
def test_fits_that_run_as_tasks_are_handed_everything_they_need(lik, monkeypatch, capsys):
    """Fits run as tasks only on a cluster; here the hand-over to ``fit_as_tasks`` is
    recorded instead (the cluster's side: tests/analysis/test_analysis.py, slow)."""
    calls = []

    def tasks(likelihoods, starts, *, method, label, failures, note, **options):
        calls.append((likelihoods, starts, method, label, failures, options))
        results = [failed_fit(one.parameter_names, s, method, RuntimeError(f"task {i}"))
                   for i, (one, s) in enumerate(zip(likelihoods, starts))]  # not strict: fit_each checks
        for i, result in enumerate(results):
            note(i, result)
        return results

    def lockstep(*args, **kwargs):
        raise AssertionError("fits that run as tasks ran in lockstep here")

    monkeypatch.setattr(restarts, "runs_as_tasks", lambda one: isinstance(one, ld.Likelihood))
    monkeypatch.setattr(restarts, "fit_as_tasks", tasks)
    monkeypatch.setattr(restarts, "fit_batched", lockstep)
    heard = []
    ensemble = fit_each([lik, lik], [None, {"a": 2.0}], method="migrad", label="twins", message="said",
                        progress=lambda i, n, r: heard.append((i, n, r.message)), tolerance=1e-3)
    assert calls == [([lik, lik], [[1.25], [2.0]], "migrad", "twins", FIT_FAILURES, {"tolerance": 1e-3})]
    assert heard == [(0, 2, "failed: RuntimeError: task 0"), (1, 2, "failed: RuntimeError: task 1")]
    assert [f.message for f in ensemble] == ["failed: RuntimeError: task 0", "failed: RuntimeError: task 1"]
    assert ensemble.parameter_names == ["a"] and ensemble.starts.tolist() == [[1.25], [2.0]]
    assert (ensemble.label, ensemble.message) == ("twins", "said")
    with pytest.raises(ValueError, match=r"^zip\(\) argument 2 is shorter than argument 1$"):
        fit_each([lik, lik], [None], method="migrad", label="twins")
    capsys.readouterr()
    fit_each([lik], [None], method="migrad", label="twins", progress=True)
    shown = capsys.readouterr().out.replace("\r", "\n").split("\n")
    assert shown[-2].strip() == "twins: 1 of 1 fits done, 0 valid"


def test_fits_one_by_one_record_a_failure_and_go_on(lik):
    heard = []
    ensemble = fit_each([lik, lik], [{"a": -1.0}, None], method="migrad", label="each", message="said",
                        batch=False, progress=lambda i, n, r: heard.append((i, n, r.valid)))
    failed, fit = ensemble
    assert failed.message == \
        "failed: ParameterError: start value -1.0 of 'a' lies outside its bounds [0.001, 1000]"
    assert (failed.named_parameters, failed.method, failed.parameter_names, failed.valid) == \
        ({"a": -1.0}, "migrad", ["a"], False)  # the method asked for, not the default
    assert (failed.converged, failed.outcome, failed.standard_errors) == (False, "failed", None)
    assert fit.valid and fit.method == "migrad"
    assert fit.named_parameters["a"] == pytest.approx(6.0 / 6.0, rel=1e-4)  # a = W_A / W_B = 6 / 6
    assert heard == [(0, 2, False), (1, 2, True)]
    assert ensemble.parameter_names == ["a"] and ensemble.starts.tolist() == [[-1.0], [1.25]]
    assert (ensemble.label, ensemble.message) == ("each", "said")
    with pytest.raises(ValueError, match=r"^zip\(\) argument 2 is shorter than argument 1$"):
        fit_each([lik, lik], [None], method="migrad", label="each", batch=False)



def test_fits_one_by_one_show_progress_and_take_the_fit_options(lik, capsys):
    fit_each([lik, lik], [None, None], method="lbfgsb", label="each", batch=False, progress=True)
    lines = capsys.readouterr().out.replace("\r", "\n").split("\n")
    assert [line.strip() for line in lines if line.strip()][0] == "each: 1 of 2 fits done, 1 valid, " \
        f"best -2 ln L = {lik.fit(initial=[1.25], method='lbfgsb').fval:.10g}"
    (limited,) = fit_each([lik], [None], method="lbfgsb", label="each", batch=False, max_calls=3)
    assert not limited.valid and "call limit reached" in limited.message
    assert capsys.readouterr().out == ""  # no progress unless asked for


def test_bootstrap_refits_keep_the_parameters_bounds_unless_told_not_to():
    """laddu's ``use_parameter_metadata``: by default each refit (laddu's L-BFGS-B) stays inside
    the parameters' bounds; ``False`` drops them. Replica 0 of seed 11 has its minimum at
    ``a = W_A / W_B = 3/7``, above the bound 0.3."""
    model, data, mc = _classes()
    bounded = model.with_parameters({"a": ld.ParameterUpdate(bounds=(1e-3, 0.3), initial=0.2)})
    lik = ld.Likelihood([ld.NLL(bounded, data=data, accepted_mc=mc)])
    (kept,) = lik.bootstrap_fit(1, seed=11).fits
    (module_kept,) = bootstrap_fit(lik, 1, seed=11).fits  # ld.bootstrap_fit: the same defaults
    (dropped,) = lik.bootstrap_fit(1, seed=11, use_parameter_metadata=False).fits
    assert kept.values[0] == module_kept.values[0] == 0.3
    assert dropped.values[0] == pytest.approx(3.0 / 7.0, rel=1e-6)


def test_restarts_keep_the_parameters_bounds_unless_told_not_to():
    """``fit_restarts`` (the method and ``ld.fit_restarts``) passes laddu's fit settings to
    every fit: by default the bounds hold, ``use_parameter_metadata=False`` drops them. The
    minimum of the twelve events is at ``a = W_A / W_B = 1``, above the bound 0.3."""
    model, data, mc = _classes()
    bounded = model.with_parameters({"a": ld.ParameterUpdate(bounds=(1e-3, 0.3), initial=0.2)})
    lik = ld.Likelihood([ld.NLL(bounded, data=data, accepted_mc=mc)])
    kept, module_kept = lik.fit_restarts(1, seed=2), fit_restarts(lik, 1, seed=2)
    dropped = lik.fit_restarts(1, seed=2, use_parameter_metadata=False)
    assert kept[0].values[0] == module_kept[0].values[0] == 0.3
    assert dropped[0].values[0] == pytest.approx(1.0, rel=1e-6)


def test_bootstrap_refits_take_laddus_terminators():
    """``terminators=[ld.ganesh.MaxSteps(1)]`` reaches every refit: each stops after one step."""
    model, data, mc = _classes()
    lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
    (one_step,) = lik.bootstrap_fit(1, seed=11, terminators=[ld.ganesh.MaxSteps(1)]).fits
    (free,) = lik.bootstrap_fit(1, seed=11).fits
    assert one_step.terminal_message == "Message: Maximum number of steps reached (1)"
    assert not one_step.converged and free.converged
