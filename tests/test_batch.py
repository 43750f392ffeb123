"""Batch fits from TOML files (``laddu-dask fit``): results, exit codes, bad input, clusters."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from laddu_dask import ksks
from laddu_dask.jobs import ConfigError, job_script, load_config, main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A KsKs sample (3000 data, 20000 accepted-MC events) as data.parquet and accmc.parquet."""
    out = tmp_path_factory.mktemp("batch-sample")
    ksks.write_sample(out, n_data=3000, n_mc=20000, seed=77)
    return out


@pytest.fixture
def data_env(sample: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``KSKS_DATA`` points the example configs at the sample."""
    monkeypatch.setenv("KSKS_DATA", str(sample))
    return sample


BASE = """\
model = {{ builtin = "ksks", fixed_lineshapes = true }}

[data]
path = "{sample}/data.parquet"

[accmc]
path = "{sample}/accmc.parquet"
"""


def write_config(folder: Path, sample: Path, extra: str = "", base: str = BASE,
                 name: str = "fit.toml") -> Path:
    path = folder / name
    path.write_text(base.format(sample=sample) + extra)
    return path


def read_result(path: Path) -> dict:
    return json.loads(path.read_text())


def assert_near_truth(result: dict, sigmas: float = 5.0) -> None:
    for name in result["parameter_names"]:
        value, error = result["values"][name], result["errors"][name]
        assert error > 0, name
        assert abs(value - ksks.TRUTH[name]) < sigmas * error, (name, value, error)


# ----------------------------------------------------------------------------- fits


def test_ksks_example_fits_through_main(tmp_path, data_env, capsys):
    out = tmp_path / "ksks.json"
    config = EXAMPLES / "ksks_fit.toml"
    code = main([str(config), "--output", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    result = read_result(out)
    assert result["valid"] is True
    assert result["method"] == "migrad"
    assert result["parameter_names"] == list(ksks.TRUTH)
    assert_near_truth(result)
    # started from [start], not from the defaults
    assert result["start"]["s_mass"] == pytest.approx(1.53612)
    cov = result["covariance"]
    assert cov["parameters"] == result["parameter_names"]
    matrix = np.array(cov["matrix"])
    assert matrix.shape == (10, 10)
    np.testing.assert_allclose(matrix, matrix.T, rtol=1e-10, atol=0)
    np.testing.assert_allclose(np.sqrt(np.diag(matrix)),
                               [result["errors"][n] for n in cov["parameters"]], rtol=1e-3)
    assert np.all(np.linalg.eigvalsh(matrix) > 0)
    assert result["config"] == str(config)
    assert result["config_sha256"] == hashlib.sha256(config.read_bytes()).hexdigest()
    assert set(result["timings"]) >= {"read", "prepare", "fit", "wall"}
    assert all(t >= 0 for t in result["timings"].values())
    assert result["timings"]["wall"] >= result["timings"]["fit"]
    assert set(result["versions"]) >= {"laddu_dask", "dask", "numpy", "iminuit", "python"}
    assert result["n_calls"] > 0 and np.isfinite(result["fval"])
    assert result["terms"] == [{"name": "data", "kind": "nll", "data": "data",
                                "accepted_mc": "accmc", "data_events": 3000,
                                "accepted_mc_events": 20000}]
    assert result["execution"]["scheduler"] == "local threaded scheduler"
    assert "fit valid" in printed and "d2_im" in printed
    assert not [p for p in tmp_path.iterdir() if p.name != "ksks.json"]  # no temporary left


def test_subprocess_writes_default_output_beside_config(tmp_path, sample):
    config = write_config(tmp_path, sample, '[fit]\nmethod = "lbfgsb"\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "laddu_dask.cli", "fit", str(config), "--quiet"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    result = read_result(tmp_path / "fit.result.json")
    assert result["valid"] is True and result["method"] == "lbfgsb"
    assert result["parameter_names"] == ["d0_re", "d0_im", "d1_re", "d1_im", "d2_re", "d2_im"]
    assert_near_truth(result)


def test_invalid_fit_exits_1_and_still_writes(tmp_path, sample):
    config = write_config(tmp_path, sample, "[fit]\nmax_calls = 5\n[start]\nd0_re = 0.1\n")
    out = tmp_path / "r.json"
    assert main([str(config), "--output", str(out), "--quiet"]) == 1
    result = read_result(out)
    assert result["valid"] is False
    assert result["fit"]["max_calls"] == 5


def test_custom_model_example(tmp_path, data_env):
    out = tmp_path / "custom.json"
    assert main([str(EXAMPLES / "custom_fit.toml"), "--output", str(out), "--quiet"]) == 0
    result = read_result(out)
    assert result["valid"] is True and result["method"] == "lbfgsb"
    assert result["parameter_names"] == list(ksks.TRUTH)
    assert result["start"]["s_mass"] == 1.52 and result["start"]["s_width"] == 0.112
    assert_near_truth(result)


def test_two_terms_named_models_and_env_defaults(tmp_path, sample, monkeypatch):
    """Two NLL terms over [[datasets]] with a named model share one parameter set."""
    monkeypatch.delenv("LADDU_DASK_NO_SUCH_VAR", raising=False)
    text = f"""\
[models.sd]
builtin = "ksks"
fixed_lineshapes = true

[[datasets]]
name = "d"
path = ["${{LADDU_DASK_NO_SUCH_VAR:-{sample}}}/data.parquet"]
chunk_size = 1000
[[datasets]]
name = "mc"
path = "{sample}/accmc.parquet"
memory_policy = "streaming"

[[terms]]
name = "first"
data = "d"
accepted_mc = "mc"
model = "sd"
[[terms]]
name = "second"
data = "d"
accepted_mc = "mc"
model = "sd"

[execution]
split_every = 2
"""
    config = tmp_path / "two.toml"
    config.write_text(text)
    single = write_config(tmp_path, sample, name="one.toml")
    assert main([str(config), "--quiet"]) == 0
    assert main([str(single), "--quiet"]) == 0
    two, one = read_result(tmp_path / "two.result.json"), read_result(tmp_path / "one.result.json")
    assert [t["name"] for t in two["terms"]] == ["first", "second"]
    # twice the same term: the same minimum, at twice the value, with errors / sqrt(2)
    assert two["fval"] == pytest.approx(2 * one["fval"], abs=1e-2)
    for name in one["parameter_names"]:
        assert two["values"][name] == pytest.approx(one["values"][name], abs=0.05 * one["errors"][name])
        assert two["errors"][name] == pytest.approx(one["errors"][name] / np.sqrt(2), rel=1e-2)


# ----------------------------------------------------------------------------- bad input

BAD = {
    "missing data file": ("model = 'ksks'\n[data]\npath = '{sample}/nope.parquet'\n"
                          "[accmc]\npath = '{sample}/accmc.parquet'\n", "[data] path", "nope.parquet"),
    "unknown top-level key": (BASE + "[fitt]\nmethod = 'migrad'\n", "unknown key 'fitt'", "allowed keys"),
    "unknown key in fit": (BASE + "[fit]\ntolerence = 0.5\n", "[fit]: unknown key 'tolerence'",
                           "did you mean 'tolerance'"),
    "unknown key in data": (BASE.replace("[accmc]", "chunksize = 10\n[accmc]"), "[data]",
                            "unknown key 'chunksize'"),
    "bad type": (BASE + "[fit]\ntolerance = 'small'\n", "[fit] tolerance", "expected a number"),
    "bad method": (BASE + "[fit]\nmethod = 'newton'\n", "[fit] method", "'newton'"),
    "bad chunk size": (BASE.replace("[accmc]", "chunk_size = 0\n[accmc]"), "[data] chunk_size",
                       "must be >= 1, got 0"),
    "unknown model": (BASE.replace('{{ builtin = "ksks", fixed_lineshapes = true }}', '"kskss"'),
                      "unknown model 'kskss'", "built-in models: ksks"),
    "bad lineshape": (BASE.replace("fixed_lineshapes = true", 'lineshape = "flat"'),
                      "model lineshape", "'flat'"),
    "bad start name": (BASE + "[start]\ns_mas = 1.5\n", "[start] s_mas", "free parameters: d0_re"),
    "fixed start": (BASE + "[start]\ns_mass = 1.5\n", "[start] s_mass", "is fixed"),
    "start out of bounds": (BASE.replace("fixed_lineshapes = true", "fixed_lineshapes = false")
                            + "[start]\ns_mass = 2.5\n", "[start] s_mass", "outside"),
    "start not a number": (BASE + "[start]\nd0_re = 'one'\n", "[start] d0_re", "expected a number"),
    "model file missing": (BASE.replace('{{ builtin = "ksks", fixed_lineshapes = true }}',
                                        '{{ file = "absent.py" }}'), "model file", "absent.py"),
    "model file without function": (BASE.replace('{{ builtin = "ksks", fixed_lineshapes = true }}',
                                                 '{{ file = "m.py", function = "make" }}'),
                                    "has no function 'make'", "functions defined: bad, build"),
    "model returns wrong type": (BASE.replace('{{ builtin = "ksks", fixed_lineshapes = true }}',
                                              '{{ file = "m.py", function = "bad" }}'),
                                 "returned int", "Model or expression"),
    "model raises": (BASE.replace('{{ builtin = "ksks", fixed_lineshapes = true }}',
                                  '{{ file = "m.py", options = {{ scale = -1 }} }}'),
                     "ValueError: scale must be positive", "m.py line"),
    "model needs missing column": (BASE.replace('{{ builtin = "ksks", fixed_lineshapes = true }}',
                                                '{{ file = "m.py", options = {{ column = "pol" }} }}'),
                                   "the default term", "pol"),
    "unknown dataset": (BASE + "[[terms]]\nname = 'x'\ndata = 'other'\n", "[[terms]] 'x' data",
                        "no dataset named 'other'"),
    "duplicate dataset": (BASE + "[[datasets]]\nname = 'data'\npath = 'x'\n", "[[datasets]] 'data'",
                          "defined twice"),
    "bad term kind": (BASE + "[[terms]]\nkind = 'binned'\n", "kind", "'extended_nll'"),
    "unset env var": (BASE.replace("{sample}/data", "${{LADDU_DASK_NO_SUCH_VAR}}/data"),
                      "[data] path", "environment variable 'LADDU_DASK_NO_SUCH_VAR' is not set"),
    "bad precision": (BASE + "[execution]\nprecision = 'f16'\n", "[execution] precision", "'f16'"),
    "bad memory budget": (BASE + "[execution]\nmemory = 'lots'\n", "[execution]", "lots"),
    "scheduler and kind": (BASE + "[cluster]\nscheduler = 'tcp://x:1'\nkind = 'slurm'\n",
                           "[cluster]", "only one of scheduler"),
    "jobqueue key without kind": (BASE + "[cluster]\ncores = 4\n", "[cluster] cores", "needs kind"),
    "not toml": ("model = \n", "not valid TOML", ""),
}

MODEL_FILE = '''\
import laddu_dask as ld


def build(scale=1.0, column=None):
    if scale <= 0:
        raise ValueError("scale must be positive")
    a = ld.parameter("a", initial=1.0, bounds=(0.0, 10.0))
    x = ld.Vec4.event("kshort1").m2() if column is None else ld.scalar(column)
    return ld.Model(a * x + scale)


def bad():
    return 42
'''


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_exits_2_with_one_line_and_writes_nothing(case, tmp_path, sample, capsys):
    text, *expected = BAD[case]
    folder = tmp_path / "cfg"
    folder.mkdir()
    (folder / "m.py").write_text(MODEL_FILE)
    config = write_config(folder, sample, base=text)
    before = sorted(p.name for p in folder.iterdir())
    code = main([str(config)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("laddu-dask fit: error: ")
    assert str(config) in err
    for fragment in expected:
        assert fragment in err, (fragment, err)
    assert sorted(p.name for p in folder.iterdir() if p.name != "__pycache__") == before


def test_bad_input_raises_typed_errors(tmp_path, sample):
    with pytest.raises(ConfigError, match=r"cannot read the config file"):
        load_config(tmp_path / "absent.toml")
    config = write_config(tmp_path, sample, "[fit]\nstrategy = 3\n")
    with pytest.raises(ConfigError, match=r"\[fit\] strategy: expected one of 0, 1, 2, got 3"):
        load_config(config)


def test_missing_config_and_output_folder_exit_2(tmp_path, sample, capsys):
    assert main([str(tmp_path / "absent.toml")]) == 2
    assert "absent.toml: cannot read the config file" in capsys.readouterr().err
    config = write_config(tmp_path, sample)
    assert main([str(config), "--output", str(tmp_path / "no" / "r.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.toml"]


# ----------------------------------------------------------------------------- clusters


def test_scheduler_address_runs_on_a_distributed_cluster(tmp_path, sample):
    distributed = pytest.importorskip("distributed")
    config = write_config(tmp_path, sample)
    local = tmp_path / "local.json"
    assert main([str(config), "--output", str(local), "--quiet"]) == 0
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        out = tmp_path / "cluster.json"
        code = main([str(config), "--scheduler", cluster.scheduler_address, "--output", str(out),
                     "--quiet"])
        assert code == 0
    remote, here = read_result(out), read_result(local)
    assert remote["execution"]["scheduler"] == cluster.scheduler_address
    assert remote["execution"]["workers"] == 2
    assert remote["valid"] is True
    # exact partial sums: the same likelihood wherever it is evaluated
    assert remote["fval"] == pytest.approx(here["fval"], rel=1e-13)
    for name in here["parameter_names"]:
        assert remote["values"][name] == pytest.approx(here["values"][name], rel=1e-9)


def test_cluster_without_workers_exits_3_and_writes_nothing(tmp_path, sample, capsys):
    distributed = pytest.importorskip("distributed")
    config = write_config(tmp_path, sample, "[cluster]\nwait_for_workers = 1\nwait_timeout = 0.2\n")
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        code = main([str(config), "--scheduler", cluster.scheduler_address])
    err = capsys.readouterr().err
    assert code == 3
    assert err.strip().splitlines()[-1].startswith("laddu-dask fit: error: ")
    assert "could not start or reach the Dask cluster" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.toml"]


def fake_queue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, accept: bool) -> Path:
    """Fake sbatch/qsub/scancel/qdel first on PATH, logging each call (and a copy of each
    submitted script) to the returned file; ``accept``: submissions succeed with job 4242."""
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is not installed "
                                                "(pip install 'laddu-dask[jobqueue]')")
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    log = tmp_path / "queue.log"
    for tool in ("sbatch", "qsub", "scancel", "qdel", "squeue", "qstat"):
        script = bin_dir / tool
        body = f'echo {tool} "$@" >> {log}\n'
        if tool in ("sbatch", "qsub"):
            body += f'cat "$1" >> {log}\n'
        body += 'echo "Submitted batch job 4242"\n' if accept else "exit 1\n"
        script.write_text("#!/bin/sh\n" + body)
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


@pytest.fixture
def no_submission(tmp_path, monkeypatch) -> Path:
    """A log file that any call of a (fake) queue command would create."""
    return fake_queue(tmp_path, monkeypatch, accept=False)


JOBQUEUE = """\
[cluster]
kind = "{kind}"
cores = 3
memory = "5GB"
walltime = "00:42:00"
queue = "shortq"
account = "acct42"
jobs = 2
job_extra_directives = ["{directive}"]
"""


def test_slurm_job_script(tmp_path, sample, no_submission, capsys):
    config = write_config(tmp_path, sample,
                          JOBQUEUE.format(kind="slurm", directive="--constraint=haswell"))
    script = job_script(config)
    assert script.startswith("#!")
    for fragment in ("#SBATCH --cpus-per-task=3", "#SBATCH --mem=5G", "#SBATCH -t 00:42:00",
                     "#SBATCH -p shortq", "#SBATCH -A acct42", "#SBATCH --constraint=haswell",
                     "distributed.cli.dask_worker"):
        assert fragment in script, (fragment, script)
    assert main([str(config), "--print-job-script"]) == 0
    assert "#SBATCH -t 00:42:00" in capsys.readouterr().out
    assert not no_submission.exists()
    assert not (tmp_path / "fit.result.json").exists()


def test_pbs_job_script(tmp_path, sample, no_submission):
    config = write_config(tmp_path, sample, JOBQUEUE.format(kind="pbs", directive="-m abe")
                          + 'resource_spec = "select=1:ncpus=3:mem=5GB"\n')
    script = job_script(load_config(config))
    for fragment in ("#PBS -l select=1:ncpus=3:mem=5GB", "#PBS -l walltime=00:42:00",
                     "#PBS -q shortq", "#PBS -A acct42", "#PBS -m abe"):
        assert fragment in script, (fragment, script)
    assert not no_submission.exists()


def test_slurm_example_job_script(data_env, no_submission, monkeypatch):
    monkeypatch.setenv("SLURM_ACCOUNT", "physics7")
    config = load_config(EXAMPLES / "slurm_fit.toml")
    assert config.cluster.kind == "slurm" and config.cluster.jobs == 4
    script = job_script(config)
    for fragment in ("--cpus-per-task=8", "-t 02:00:00", "-A physics7", "--exclusive"):
        assert fragment in script
    assert not no_submission.exists()


def test_print_job_script_needs_a_jobqueue_cluster(tmp_path, sample, capsys):
    config = write_config(tmp_path, sample)
    assert main([str(config), "--print-job-script"]) == 2
    assert "no batch-job cluster is configured" in capsys.readouterr().err


def test_sbatch_example_runs_the_slurm_config():
    text = (EXAMPLES / "submit_fit.sbatch").read_text()
    assert text.startswith("#!/bin/bash")
    assert "laddu-dask fit \"$CONFIG\" --output" in text
    assert "CONFIG=examples/slurm_fit.toml" in text
    assert shutil.which("bash") is None or subprocess.run(
        ["bash", "-n", str(EXAMPLES / "submit_fit.sbatch")]).returncode == 0


def test_slurm_run_submits_jobs_then_cancels_them(tmp_path, sample, monkeypatch, capsys):
    """The fit path scales to `jobs` worker jobs; no worker arrives (fake sbatch): exit 3."""
    log = fake_queue(tmp_path, monkeypatch, accept=True)
    folder = tmp_path / "cfg"
    folder.mkdir()
    config = write_config(folder, sample, JOBQUEUE.format(kind="slurm", directive="--exclusive")
                          + "wait_timeout = 0.5\n")
    assert main([str(config)]) == 3
    err = capsys.readouterr().err
    assert "could not start or reach the Dask cluster" in err
    calls = log.read_text()
    assert calls.count("sbatch ") == 2 and calls.count("#SBATCH --cpus-per-task=3") == 2
    assert "scancel 4242" in calls
    assert sorted(p.name for p in folder.iterdir()) == ["fit.toml"]


def test_jobqueue_kind_without_dask_jobqueue_is_bad_input(tmp_path, sample, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)
    config = write_config(tmp_path, sample, "[cluster]\nkind = 'pbs'\ncores = 2\n")
    assert main([str(config), "--print-job-script"]) == 2
    assert "pip install 'laddu-dask[jobqueue]'" in capsys.readouterr().err
    assert main([str(config)]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.toml"]
