"""The ``laddu-dask`` command: the demo, ``--version``, and every documented exit status of
``demo`` and ``fit`` through the real command in a subprocess."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket

import pytest
from batch_helpers import assert_one_error_line, command_env, laddu_dask, make_sample, write_config

import laddu_dask as ld
from laddu_dask import cli, ksks
from laddu_dask.cli import build_parser, main, run_demo


@pytest.mark.slow
def test_demo_recovers_truth_within_three_standard_errors():
    summary = run_demo(seed=2024, quiet=True)
    assert summary["valid"]
    names = [row["name"] for row in summary["parameters"]]
    assert names == list(ksks.TRUTH)
    for row in summary["parameters"]:
        # the fit moved from the displaced start to within 3 sigma of the truth
        assert row["start"] == pytest.approx(ksks.displaced_start()[row["name"]])
        assert row["error"] > 0
        assert abs(row["value"] - row["truth"]) < 3 * row["error"], row


def test_demo_command_writes_summary_and_exits_zero(tmp_path, capsys):
    out = tmp_path / "summary.json"
    code = main(["demo", "--data", "3000", "--mc", "30000", "--seed", "5", "--method", "lbfgsb",
                 "--json", str(out), "--outdir", str(tmp_path / "sample")])
    printed = capsys.readouterr().out
    assert code == 0
    summary = json.loads(out.read_text())
    assert summary["valid"] is True
    assert "d2_im" in printed and "pull" in printed
    assert (tmp_path / "sample" / "data.parquet").exists()
    assert f"(in {tmp_path / 'sample'})" in printed


def test_unknown_command_is_rejected():
    with pytest.raises(SystemExit) as err:
        main(["nonsense"])
    assert err.value.code == 2


def test_demo_options_have_help_text():
    demo = next(a for a in build_parser()._subparsers._group_actions[0].choices.values()
                if a.prog.endswith("demo"))
    helps = {a.dest: a.help for a in demo._actions}
    for option in ("seed", "lineshape", "method", "data", "mc", "outdir", "json", "debug", "generator"):
        assert helps[option] and len(helps[option]) > 15, option
    assert "relativistic" in helps["lineshape"] and "L-BFGS-B" in helps["method"]


def test_version():
    proc = laddu_dask("--version")
    assert proc.returncode == 0
    assert proc.stdout == f"laddu-dask {ld.__version__}\n"


# ----------------------------------------------------------------------------- exit status


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory):
    """500 data and 2000 accepted-MC events."""
    return make_sample(tmp_path_factory, n_data=500, n_mc=2000)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


FIT_STATUS = {
    # case: (lines after BASE, extra arguments, environment, status, what stderr holds)
    "valid": ("", (), {}, 0, None),
    "invalid": ("[fit]\nmax_calls = 2\n", (), {}, 1, None),
    "bad input": ("[fit]\ntolerence = 1\n", (), {}, 2, "unknown key 'tolerence'"),
    "unreachable scheduler": ("", ("--scheduler", "tcp://127.0.0.1:{port}"),
                              {"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"}, 3,
                              "could not start or reach the Dask cluster"),
}


@pytest.mark.parametrize("case", list(FIT_STATUS))
def test_fit_exit_status_of_the_real_command(case, tmp_path, tiny):
    extra, args, env, status, message = FIT_STATUS[case]
    config = write_config(tmp_path, tiny, extra)
    out = tmp_path / "r.json"
    args = [a.format(port=free_port()) for a in args]
    proc = laddu_dask("fit", str(config), "--output", str(out), *args, env=command_env(**env))
    assert proc.returncode == status, proc.stdout + proc.stderr
    if status <= 1:
        assert proc.stderr == ""
        assert json.loads(out.read_text())["valid"] is (status == 0)
        assert f"result written to {out}" in proc.stdout
    else:
        assert_one_error_line(proc.stderr, "laddu-dask fit", message)
        assert not out.exists()


def test_demo_exit_status_of_the_real_command(tmp_path):
    proc = laddu_dask("demo", "--data", "500", "--mc", "2000", "--json", str(tmp_path / "s.json"),
                      cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "s.json").read_text())["valid"] is True
    # the sample was temporary: no path that is gone is printed, and --outdir is offered
    assert "a temporary sample, removed at the end; --outdir DIR keeps it" in proc.stdout
    assert "laddu-dask-demo-" not in proc.stdout
    proc = laddu_dask("demo", "--data", "x")
    assert proc.returncode == 2 and "invalid int value" in proc.stderr


class _FullDisk:
    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_demo_on_a_full_disk_exits_3_with_one_line(tmp_path, capsys, monkeypatch):
    @contextlib.contextmanager
    def full(path, *args, **kwargs):
        yield _FullDisk()

    monkeypatch.setattr(cli, "atomic_write", full)
    code = main(["demo", "--data", "500", "--mc", "2000", "--json", str(tmp_path / "s.json")])
    assert code == 3
    assert_one_error_line(capsys.readouterr().err, "laddu-dask demo", "OSError",
                          "No space left on device")
    assert not (tmp_path / "s.json").exists()


def test_demo_sample_on_a_full_disk_exits_3(tmp_path, capsys, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "data.parquet"))

    monkeypatch.setattr(ksks, "write_sample", full)
    assert main(["demo", "--outdir", str(tmp_path)]) == 3
    assert_one_error_line(capsys.readouterr().err, "laddu-dask demo", "No space left on device",
                          str(tmp_path / "data.parquet"))


def test_interrupted_demo_exits_130(capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ksks, "write_sample", interrupted)
    try:
        code = main(["demo"])
    except KeyboardInterrupt:  # would stop the test session
        pytest.fail("KeyboardInterrupt escaped laddu-dask demo")
    assert code == 130
    assert capsys.readouterr().err == "laddu-dask demo: interrupted (SIGINT); nothing was written\n"

