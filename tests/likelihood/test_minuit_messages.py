"""Minuit's own messages go to the ``laddu_dask`` logger and the fit's message, never raw
into the user's output (issue 23, item 17)."""

from __future__ import annotations

import logging
import sys
import threading

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.likelihood.fit import ProgressLine
from laddu_dask.likelihood.fit_messages import minuit_output

RAW = "VariableMetricBuilder Initial matrix not pos.def."


def saddle_likelihood(start=0.1):
    """-2 ln L = -2 (a^2 + b^2 - 0.01 (a^4 + b^4)) + const: the start is near a maximum, so
    MIGRAD's first matrix is not positive-definite and Minuit says so."""
    x = ld.scalar("x")
    a, b = ld.parameter("a", initial=start), ld.parameter("b", initial=start)
    model = ld.Model(((a * a + b * b - 0.01 * (a * a * a * a + b * b * b * b)) * x).exp())
    return ld.Likelihood([ld.NLL(model, data=ld.Dataset.from_arrays(scalars={"x": np.array([1.0])}),
                                 accepted_mc=ld.Dataset.from_arrays(scalars={"x": np.array([0.0])}))])


@pytest.mark.filterwarnings("ignore:invalid value encountered in sqrt:RuntimeWarning")  # iminuit's
def test_minuit_messages_are_logged_and_in_the_message_not_printed(capfd, caplog):
    stdout = sys.stdout
    with caplog.at_level(logging.DEBUG, logger="laddu_dask"):
        result = saddle_likelihood().fit(method="migrad")
    out, err = capfd.readouterr()
    assert RAW not in out and RAW not in err
    assert sys.stdout is stdout  # the router is gone
    assert result.message.endswith(f"; Minuit: E {RAW}")
    logged = [r for r in caplog.records if RAW in r.getMessage()]
    assert [(r.levelno, r.getMessage()) for r in logged] == [(logging.WARNING, f"Minuit: E {RAW}")]


@pytest.mark.filterwarnings("ignore:invalid value encountered in sqrt:RuntimeWarning")
def test_lockstep_restarts_each_keep_their_own_messages(capfd, caplog):
    lik = saddle_likelihood()
    spread = ld.Model(lik.terms[0].model.source).with_parameters(
        {n: ld.ParameterUpdate(initial=(0.05, 0.2)) for n in ("a", "b")})
    lik = ld.Likelihood([ld.NLL(spread, data=lik.terms[0].data, accepted_mc=lik.terms[0].accepted_mc)])
    with caplog.at_level(logging.WARNING, logger="laddu_dask"):
        fits = lik.fit_restarts(4, seed=3, method="migrad")  # four fits, one thread each, evaluations merged
    out, err = capfd.readouterr()
    assert RAW not in out and RAW not in err
    assert [r.message.count(RAW) for r in fits] == [1, 1, 1, 1]
    assert len([r for r in caplog.records if RAW in r.getMessage()]) == 4


@pytest.mark.filterwarnings("ignore:invalid value encountered in sqrt:RuntimeWarning")
def test_the_progress_line_still_prints_during_a_fit(capsys, monkeypatch):
    monkeypatch.setattr(ProgressLine, "interval", 0.0)
    result = saddle_likelihood().fit(progress=True, method="migrad")
    out = capsys.readouterr().out
    assert out.count("evaluations") >= 2 and RAW not in out  # lines during the fit, and its end
    assert RAW in result.message


def test_other_threads_print_as_usual_while_a_fit_keeps_minuit_output(capsys):
    inside, printed = threading.Event(), threading.Event()

    def other():
        assert inside.wait(10)
        print("from another thread")
        printed.set()

    thread = threading.Thread(target=other)
    thread.start()
    with minuit_output() as said:
        print("W Example from Minuit")
        inside.set()
        assert printed.wait(10)
    thread.join(10)
    assert said == ["W Example from Minuit"]
    assert capsys.readouterr().out == "from another thread\n"


@pytest.mark.filterwarnings("ignore:invalid value encountered in sqrt:RuntimeWarning")
def test_minuit_chatter_at_a_higher_print_level_is_debug_only(capfd, caplog):
    from iminuit import Minuit

    level = Minuit.print_level.fget(None)  # iminuit's level is global
    Minuit.print_level.fset(None, 2)
    try:
        with caplog.at_level(logging.DEBUG, logger="laddu_dask"):
            result = saddle_likelihood().fit(method="migrad")
    finally:
        Minuit.print_level.fset(None, level)
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    chatter = [r for r in caplog.records if r.getMessage().startswith("Minuit: I ")]
    assert chatter and all(r.levelno == logging.DEBUG for r in chatter)
    assert "Minuit: I " not in result.message and result.message.count(RAW) == 1


def test_a_library_log_record_never_reaches_stderr_without_the_users_logging(tmp_path):
    """Importing laddu_dask gives its logger a NullHandler: an application that configured
    no logging sees no record twice (Python's last-resort handler would print a WARNING to
    stderr beside the matching warnings.warn); one that did configure it gets the record."""
    import subprocess
    from pathlib import Path

    root = str(Path(ld.__file__).resolve().parents[1])
    code = ("import logging, sys; sys.path.insert(0, sys.argv[1]); import laddu_dask; "
            "logging.getLogger('laddu_dask.fit').warning('RECORD %s', sys.argv[2])")
    quiet = subprocess.run([sys.executable, "-I", "-c", code, root, "quiet"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert quiet.returncode == 0, quiet.stderr
    assert "RECORD" not in quiet.stderr and quiet.stdout == ""
    configured = subprocess.run(
        [sys.executable, "-I", "-c", "import logging; logging.basicConfig(); " + code, root, "configured"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "WARNING:laddu_dask.fit:RECORD configured" in configured.stderr
