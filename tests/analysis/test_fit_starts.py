"""Where many fits start: restarts without starting ranges are said to repeat one point
(issue 23, item 10), and a likelihood with every parameter fixed is refused by every fit
entry point (item 11)."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest
from batch_helpers import BASE, read_result, write_config

import laddu_dask as ld
from laddu_dask import ksks
from laddu_dask.errors import ParameterError, RestartWarning
from laddu_dask.jobs import ConfigError, load_config, main

X = ld.scalar("x")
RNG = np.random.default_rng(1)
DATA = ld.Dataset.from_arrays(scalars={"x": RNG.uniform(0, 1, 400) ** 0.5})
MC = ld.Dataset.from_arrays(scalars={"x": RNG.uniform(0, 1, 3000)})


def likelihood(a_initial=1.0, b_initial=1.0, **fixed):
    a = ld.parameter("a", initial=a_initial, bounds=(0.0, 10.0), fixed=fixed.get("a"))
    b = ld.parameter("b", initial=b_initial, bounds=(0.01, 10.0), fixed=fixed.get("b"))
    return ld.Likelihood([ld.NLL(ld.Model(a * X * X + b), data=DATA, accepted_mc=MC)])


SAME = r"the 3 restarts start at the same point: no free parameter \(a, b\) has a starting range"

# ------------------------------------------------------------------ item 10: restarts


def test_restarts_without_ranges_warn_log_and_say_so_in_the_result(caplog):
    lik = likelihood()
    with caplog.at_level(logging.WARNING, logger="laddu_dask"), \
            pytest.warns(RestartWarning, match=SAME) as record:
        fits = lik.fit_restarts(3, seed=2)
    assert len([w for w in record if w.category is RestartWarning]) == 1  # once, not per fit
    assert [w.filename for w in record if w.category is RestartWarning] == [__file__]  # the caller's line
    assert [r.getMessage() for r in caplog.records if "restarts start" in r.getMessage()] == \
        [str(w.message) for w in record if w.category is RestartWarning]
    assert np.all(fits.starts == fits.starts[0])  # what the message says is true
    assert "start at the same point" in fits.message and "initial=(minimum, maximum)" in fits.message
    assert "start at the same point" in repr(fits)
    assert ld.FitEnsemble.from_dict(fits.to_dict()).message == fits.message


def test_restarts_with_some_ranges_differ_name_the_rest_and_do_not_warn():
    lik = likelihood(a_initial=(0.5, 3.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RestartWarning)
        fits = lik.fit_restarts(3, seed=2)
    assert len({row[0] for row in fits.starts}) == 3 and set(fits.starts[:, 1]) == {1.0}
    assert fits.message.startswith("b start at their initial values in every sampled restart")
    every = likelihood(a_initial=(0.5, 3.0), b_initial=(0.5, 2.0))
    assert every.fit_restarts(2, seed=2).message == ""  # every parameter has a range: nothing to say


def test_two_restarts_from_a_given_start_differ_and_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RestartWarning)
        fits = likelihood().fit_restarts(2, {"a": 2.0}, seed=2)
    assert fits.starts.tolist() == [[2.0, 1.0], [1.0, 1.0]]
    assert fits.message.startswith("a, b start at their initial values in every sampled restart")
    with pytest.warns(RestartWarning, match="the 3 restarts start at only 2 distinct points"):
        likelihood().fit_restarts(3, {"a": 2.0}, seed=2)


def test_one_fit_and_bootstrap_say_nothing_of_starts():
    lik = likelihood()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RestartWarning)
        assert lik.fit_restarts(1).message == ""
        assert lik.bootstrap_fit(2, seed=1).fits.message == ""  # replicas share a start on purpose


def test_fit_bins_warns_once_for_every_bin():
    model = likelihood().terms[0].model
    with pytest.warns(RestartWarning, match=r"fit_bins: in every bin, the 2 restarts") as record:
        fits = ld.fit_bins(model, data=DATA, accepted_mc=MC, by=X, bins=ld.Bin.uniform(3, low=0, high=1),
                           restarts=2, seed=1)
    assert [w.filename for w in record if w.category is RestartWarning] == [__file__]
    assert all("start at the same point" in f.ensemble.message for f in fits)


# ------------------------------------------------------------------ item 10: the batch job


def test_batch_restarts_record_the_same_start_and_toml_ranges_are_honoured(tmp_path, sample, caplog):
    config = write_config(tmp_path, sample, "[fit]\nrestarts = 3\nseed = 5\n")
    out = tmp_path / "same.json"
    with pytest.warns(RestartWarning, match="the 3 restarts start at the same point"):
        assert main([str(config), "--output", str(out), "--quiet"]) == 0
    restarts = read_result(out)["restarts"]
    assert "start at the same point" in restarts["message"]
    assert len(set(restarts["fvals"])) == 1  # three identical fits, as the message says

    ranges = {"d0_re": (0.3, 0.8), "d1_im": (0.1, 0.6)}
    ranged = write_config(tmp_path, sample, "[start]\nd0_re = [0.3, 0.8]\nd1_im = [0.1, 0.6]\nd2_re = 0.4\n"
                                            "[fit]\nrestarts = 3\nseed = 5\nmax_calls = 20\n",
                          name="ranged.toml")
    loaded = load_config(ranged)
    assert dict(loaded.start_ranges) == ranges and dict(loaded.start) == {"d2_re": 0.4}
    out = tmp_path / "ranged.json"
    with warnings.catch_warnings():
        warnings.simplefilter("error", RestartWarning)
        assert main([str(ranged), "--output", str(out), "--quiet"]) in (0, 1)  # 1: not converged
    result = read_result(out)
    names = result["parameter_names"]
    starts = np.array(result["restarts"]["starts"])
    assert result["start"]["d0_re"] == pytest.approx(0.55) and result["start"]["d2_re"] == 0.4  # the middle
    np.testing.assert_array_equal(starts[0], [result["start"][n] for n in names])
    for name, (lo, hi) in ranges.items():  # the first at the middle, the others drawn inside the range
        column = starts[:, names.index(name)]
        assert len(set(column)) == 3 and np.all((lo <= column) & (column <= hi)), column
    others = [i for i, n in enumerate(names) if n not in ranges]
    assert np.all(starts[1:, others] == starts[1, others])
    # the draws are the library's: sample_parameters of the model with those ranges, seed 5
    model = ksks.model(fixed_lineshapes=True).with_parameters(
        {n: ld.ParameterUpdate(initial=r) for n, r in ranges.items()})
    np.testing.assert_array_equal(starts[1:], model.sample_parameters(seed=5, n=2))
    assert "d1_re" in result["restarts"]["message"] and "d0_re" not in result["restarts"]["message"]


@pytest.mark.parametrize(("text", "message"), [
    ("[start]\nd0_re = [0.8, 0.3]\n", r"\[start\] d0_re: a starting range is \[minimum, maximum\]"),
    ("[start]\nd0_re = [0.3]\n", r"\[start\] d0_re: a starting range"),
    ("[start]\nd0_re = [0.3, nan]\n", r"\[start\] d0_re: a starting range"),
    ("[start]\nd0_re = ['a', 'b']\n", r"\[start\] d0_re: a starting range"),
])
def test_bad_starting_ranges_are_config_errors(tmp_path, sample, text, message):
    with pytest.raises(ConfigError, match=message):
        load_config(write_config(tmp_path, sample, text))


def test_starting_ranges_of_unknown_fixed_or_bounded_parameters_exit_2(tmp_path, sample, capsys):
    free_lineshapes = BASE.replace("fixed_lineshapes = true", "fixed_lineshapes = false")
    for text, base, fragment in (
            ("[start]\nnope = [0.0, 1.0]\n", BASE, "nope: is not a parameter of the model"),
            ("[start]\ns_mass = [1.4, 1.6]\n", BASE, "s_mass: is fixed in the model"),
            ("[start]\ns_mass = [0.5, 1.5]\n", free_lineshapes,
             "s_mass: starting range [0.5, 1.5] lies outside the parameter's bounds [1.0, 2.0]")):
        config = write_config(tmp_path, sample, text, base=base)
        assert main([str(config), "--output", str(tmp_path / "x.json")]) == 2
        err = capsys.readouterr().err
        assert fragment in err and err.count("\n") == 1, err
        assert not (tmp_path / "x.json").exists()


# ------------------------------------------------------------------ item 11: nothing free

NOTHING = r"nothing to fit: every parameter is fixed \(a = 1\.0, b = 0\.5\)"


@pytest.mark.parametrize("entry", ["fit", "lbfgsb", "fit_restarts", "bootstrap_fit", "sample", "fit_bins",
                                   "closure_study"])
def test_every_fit_entry_point_refuses_a_likelihood_without_free_parameters(entry):
    lik = likelihood(a=1.0, b=0.5)
    assert lik.parameter_names == [] and lik.fixed_parameters == {"a": 1.0, "b": 0.5}
    calls = {
        "fit": lambda: lik.fit(),
        "lbfgsb": lambda: lik.fit(method="lbfgsb"),
        "fit_restarts": lambda: lik.fit_restarts(3),
        "bootstrap_fit": lambda: lik.bootstrap_fit(2),
        "sample": lambda: lik.sample(ld.ganesh.AIESInit([[0.0], [1.0]])),
        "fit_bins": lambda: ld.fit_bins(lik.terms[0].model, data=DATA, accepted_mc=MC, by=X,
                                        bins=ld.Bin.uniform(2, low=0, high=1), restarts=2),
        "closure_study": lambda: ld.closure_study(lik.terms[0].model, {}, source=MC, accepted_mc=MC,
                                                  n_events=50, n_replicas=2),
    }
    with pytest.raises(ParameterError, match=NOTHING):
        calls[entry]()
    assert np.isfinite(lik.value([]))  # evaluating it at its fixed point is still fine


def test_the_batch_job_refuses_a_model_without_free_parameters(tmp_path, sample, capsys):
    (tmp_path / "m.py").write_text(
        "import laddu_dask as ld\n\n\ndef build():\n"
        "    return ld.Model(ld.parameter('a', fixed=2.0) * ld.Vec4.event('kshort1').m2() + 1.0)\n")
    for extra in ("", "[fit]\nrestarts = 2\n", '[bins]\nscalar = "t"\nedges = [0.0, 1.0]\n'):
        config = write_config(tmp_path, sample, extra, base=BASE.replace(
            'builtin = "ksks", fixed_lineshapes = true', 'file = "m.py"'))
        assert main([str(config), "--output", str(tmp_path / "r.json")]) == 2
        err = capsys.readouterr().err
        assert "model: nothing to fit: every parameter is fixed (a = 2.0)" in err and err.count("\n") == 1
        assert not (tmp_path / "r.json").exists()
