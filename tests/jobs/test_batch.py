"""Batch fits from TOML files (``laddu-dask fit``): results, exit codes, bad input, failures to run."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os

import numpy as np
import pytest
from batch_helpers import (
    BASE,
    EXAMPLES,
    assert_near_truth,
    assert_one_error_line,
    command_env,
    laddu_dask,
    read_result,
    write_config,
)

from laddu_dask import ksks
from laddu_dask.jobs import ConfigError, load_config, main

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
    # the correlation matrix, computed here from the covariance, and the EDM below its goal
    corr = result["correlation"]
    assert corr["parameters"] == cov["parameters"]
    sigma = np.sqrt(np.diag(matrix))
    np.testing.assert_allclose(np.array(corr["matrix"]), matrix / np.outer(sigma, sigma),
                               rtol=1e-12, atol=1e-15)
    assert 0 <= result["edm"] < 0.002 * 0.1  # MIGRAD's goal for the default tolerance 0.1
    assert "│" not in result["message"] and "valid minimum" in result["message"]
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
    proc = laddu_dask("fit", str(config), "--quiet")
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
                       "must be an integer >= 1, got 0"),
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
    # issue 23 item 4/8: NaN passes both `>= 0` and `<= 0`; every TOML number is finite
    "nan wait_timeout": (BASE + "[cluster]\nwait_timeout = nan\n", "[cluster] wait_timeout",
                         "must be a finite number > 0, got nan"),
    "inf wait_timeout": (BASE + "[cluster]\nwait_timeout = inf\n", "[cluster] wait_timeout",
                         "must be a finite number > 0, got inf"),
    "nan tolerance": (BASE + "[fit]\ntolerance = nan\n", "[fit] tolerance", "finite number > 0, got nan"),
    "inf tolerance": (BASE + "[fit]\ntolerance = +inf\n", "[fit] tolerance", "finite number > 0, got inf"),
    "nan start": (BASE + "[start]\nd0_re = nan\n", "[start] d0_re", "must be a finite number, got nan"),
    "inf bins low": (BASE + "[bins]\nscalar = 'x'\ncount = 2\nlow = -inf\nhigh = 1.0\n", "[bins] low",
                     "finite number, got -inf"),
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


# ----------------------------------------------------------------------------- inputs kept


@pytest.fixture
def own_sample(sample, tmp_path):
    """A private copy of the sample (a test may try to overwrite it)."""
    folder = tmp_path / "own"
    folder.mkdir()
    for name in ("data.parquet", "accmc.parquet"):
        (folder / name).write_bytes((sample / name).read_bytes())
    return folder


OUTPUT_IS_INPUT = {
    # case: (--output relative to the test folder, what the message names)
    "data file": ("own/data.parquet", "a data file of [data]"),
    "data file spelled with ..": ("cfg/../own/./data.parquet", "a data file of [data]"),
    "symlink to the accepted MC": ("link.parquet", "a data file of [accmc]"),
    "hard link to the data": ("hard.parquet", "a data file of [data]"),
    "model file": ("cfg/m.py", "the model file of model"),
    "config through a symlink": ("cfg-link.toml", "the config file"),
}


@pytest.mark.parametrize("case", sorted(OUTPUT_IS_INPUT))
def test_output_naming_an_input_is_refused(case, tmp_path, own_sample, capsys):
    output, what = OUTPUT_IS_INPUT[case]
    folder = tmp_path / "cfg"
    folder.mkdir()
    (folder / "m.py").write_text(MODEL_FILE)
    config = write_config(folder, own_sample, base=BASE.replace(
        '{{ builtin = "ksks", fixed_lineshapes = true }}', '{{ file = "m.py" }}'))
    (tmp_path / "link.parquet").symlink_to(own_sample / "accmc.parquet")
    os.link(own_sample / "data.parquet", tmp_path / "hard.parquet")
    (tmp_path / "cfg-link.toml").symlink_to(config)
    inputs = [own_sample / "data.parquet", own_sample / "accmc.parquet", folder / "m.py", config]
    before = [hashlib.sha256(p.read_bytes()).hexdigest() for p in inputs]
    code = main([str(config), "--output", str(tmp_path / output)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert_one_error_line(err, "laddu-dask fit", f"--output {os.path.abspath(tmp_path / output)}",
                          f"is {what}", "would overwrite it")
    assert [hashlib.sha256(p.read_bytes()).hexdigest() for p in inputs] == before



IMPORTABLE_OUTPUTS = {
    # case: (--output relative to the model's folder, "is" an existing module / "would be" a new one)
    "module the model imports": ("helpers.py", "is"),
    "module of a package there": ("pkg/inner.py", "is"),
    "cached bytecode": ("__pycache__/helpers.cpython-311.pyc", "is"),
    "new module": ("json.py", "would be"),
}


@pytest.mark.parametrize("case", sorted(IMPORTABLE_OUTPUTS))
def test_output_that_the_model_could_import_is_refused(case, tmp_path, own_sample, capsys):
    """``--output helpers.py`` overwrote a module the model file imports (exit 0); any file
    importable from the model's folder is refused, existing or new, and nothing changes."""
    output, verb = IMPORTABLE_OUTPUTS[case]
    folder = tmp_path / "cfg"
    (folder / "pkg").mkdir(parents=True)
    (folder / "__pycache__").mkdir()
    (folder / "helpers.py").write_text("SCALE = 1.0\n")
    (folder / "pkg" / "inner.py").write_text("")
    (folder / "__pycache__" / "helpers.cpython-311.pyc").write_bytes(b"\0")
    (folder / "m.py").write_text("import helpers\n" + MODEL_FILE)
    config = write_config(folder, own_sample, base=BASE.replace(
        '{{ builtin = "ksks", fixed_lineshapes = true }}', '{{ file = "m.py" }}'))
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    code = main([str(config), "--output", str(folder / output)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert_one_error_line(err, "laddu-dask fit", f"--output {folder / output}: {verb} a Python "
                          f"module the fit can import from {folder} (the folder of the model file "
                          "of model)")
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


def test_output_in_a_folder_on_the_import_path_is_refused(tmp_path, sample, monkeypatch, capsys):
    lib = tmp_path / "lib"
    lib.mkdir()
    monkeypatch.syspath_prepend(str(lib))
    config = write_config(tmp_path, sample)
    assert main([str(config), "--output", str(lib / "tools.py")]) == 2
    assert_one_error_line(capsys.readouterr().err, "laddu-dask fit", f"--output {lib / 'tools.py'}: "
                          f"would be a Python module the fit can import from {lib} (a folder on "
                          "the Python import path)")
    assert not (lib / "tools.py").exists()


EXITING_MODELS = {
    "sys.exit(0) on import": ("import sys\nsys.exit(0)\n", "importing", "called sys.exit(0)"),
    "SystemExit in build": (MODEL_FILE.replace('    if scale <= 0:', '    raise SystemExit(0)\n'
                                               '    if scale <= 0:'), "build(**options)",
                            "called sys.exit(0)"),
    "sys.exit('bye') in build": (MODEL_FILE.replace("def build(scale=1.0, column=None):",
                                                    "def build(scale=1.0, column=None):\n"
                                                    "    import sys\n    sys.exit('bye')"),
                                 "build(**options)", "called sys.exit('bye')"),
}


@pytest.mark.parametrize("case", sorted(EXITING_MODELS))
def test_model_file_that_exits_is_bad_input(case, tmp_path, sample, capsys):
    source, *fragments = EXITING_MODELS[case]
    (tmp_path / "m.py").write_text(source)
    config = write_config(tmp_path, sample, base=BASE.replace(
        '{{ builtin = "ksks", fixed_lineshapes = true }}', '{{ file = "m.py" }}'))
    code = main([str(config)])
    err = capsys.readouterr().err
    assert code == 2
    assert_one_error_line(err, "laddu-dask fit", str(tmp_path / "m.py"), "m.py line", *fragments)
    assert not (tmp_path / "fit.result.json").exists()


def test_model_file_exiting_0_fails_the_real_command(tmp_path, sample):
    (tmp_path / "m.py").write_text("import sys\nsys.exit(0)\n")
    config = write_config(tmp_path, sample, base=BASE.replace(
        '{{ builtin = "ksks", fixed_lineshapes = true }}', '{{ file = "m.py" }}'))
    proc = laddu_dask("fit", str(config))
    assert proc.returncode == 2, proc.stderr
    assert_one_error_line(proc.stderr, "laddu-dask fit", "m.py", "called sys.exit(0)")
    assert not (tmp_path / "fit.result.json").exists()


# ----------------------------------------------------------------------------- failures to run


class _FullDisk(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_full_disk_while_writing_the_result_exits_3(tmp_path, sample, capsys, monkeypatch):
    from laddu_dask.jobs import run

    @contextlib.contextmanager
    def full(path, *args, **kwargs):
        yield _FullDisk()

    monkeypatch.setattr(run, "atomic_write", full)
    config = write_config(tmp_path, sample)
    code = main([str(config), "--quiet"])
    err = capsys.readouterr().err
    assert code == 3, err
    assert_one_error_line(err, "laddu-dask fit", f"{tmp_path / 'fit.result.json'}: cannot write the "
                          "result: No space left on device", "nothing was written")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.toml"]
    # --debug adds the traceback, before the same last line
    assert main([str(config), "--quiet", "--debug"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "OSError: [Errno 28]" in err
    assert err.splitlines()[-1].startswith("laddu-dask fit: error: ")


def test_kernel_cache_error_exits_3(tmp_path, sample, capsys, monkeypatch):
    """An unsafe or unwritable kernel cache is a failure to run, not bad input (2)."""
    import laddu_dask as ld

    def refuse(self, *args, **kwargs):
        raise ld.KernelCacheError("the kernel cache folder /shared/cache is writable by others")

    monkeypatch.setattr(ld.Likelihood, "value", refuse)
    config = write_config(tmp_path, sample)
    assert main([str(config)]) == 3
    assert_one_error_line(capsys.readouterr().err, "laddu-dask fit", "KernelCacheError",
                          "/shared/cache is writable by others")
    assert not (tmp_path / "fit.result.json").exists()


@pytest.mark.parametrize("command", ["fit", "demo"])
def test_unwritable_kernel_cache_exits_3_with_one_line(command, tmp_path, sample):
    (tmp_path / "a-file").write_text("")
    env = command_env(LADDU_DASK_CACHE=str(tmp_path / "a-file" / "cache"))
    if command == "fit":
        proc = laddu_dask("fit", str(write_config(tmp_path, sample)), env=env)
    else:
        proc = laddu_dask("demo", "--data", "500", "--mc", "2000", "--outdir", str(tmp_path / "s"),
                          env=env)
    assert proc.returncode == 3, proc.stderr
    assert_one_error_line(proc.stderr, f"laddu-dask {command}", str(tmp_path / "a-file"))
    assert not (tmp_path / "fit.result.json").exists()


def test_kernel_cache_writable_by_others_exits_3_through_the_command(tmp_path, sample):
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    shared.chmod(0o777)
    proc = laddu_dask("fit", str(write_config(tmp_path, sample)),
                      env=command_env(LADDU_DASK_CACHE=str(shared)))
    assert proc.returncode == 3, proc.stderr
    assert_one_error_line(proc.stderr, "laddu-dask fit", "KernelCacheError", str(shared))
    assert not (tmp_path / "fit.result.json").exists()
    assert list(shared.iterdir()) == []  # nothing was written into it


def test_restarts_and_bootstrap_from_the_config(tmp_path, sample):
    """``[fit] restarts``, ``seed`` and ``bootstrap``: the result is the best restart, and the
    bootstrap errors are those of the same refits run through the library."""
    import laddu_dask as ld

    config = write_config(tmp_path, sample, "[fit]\nrestarts = 2\nseed = 3\nbootstrap = 2\n")
    out = tmp_path / "many.json"
    assert main([str(config), "--output", str(out), "--quiet"]) == 0
    result = read_result(out)
    assert result["fit"]["restarts"] == 2 and result["fit"]["bootstrap"] == 2
    restarts = result["restarts"]
    assert restarts["n"] == 2 and restarts["valid"] == 2 and not restarts["failed"]
    data, mc = (ld.read_parquet(sample / f"{k}.parquet") for k in ("data", "accmc"))
    lik = ld.Likelihood([ld.NLL(ksks.model(fixed_lineshapes=True), data=data, accepted_mc=mc, name="data")])
    fits = lik.fit_restarts(2, lik.resolve({}), seed=3, method="migrad")  # the job's default method
    assert result["restarts"]["fvals"] == [f.fval for f in fits] and result["fval"] == fits.best.fval
    replicas = lik.bootstrap_fit(2, fits.best.values, seed=3, method="migrad").fits  # the job's method
    assert result["bootstrap"]["errors"] == replicas.spread() and result["bootstrap"]["valid"] == 2
    with pytest.raises(ConfigError, match=r"\[fit\] restarts"):
        load_config(write_config(tmp_path, sample, "[fit]\nrestarts = 0\n", name="bad.toml"))


def test_a_binned_fit_from_the_config(tmp_path, sample, capsys):
    """``[bins]``: one fit per bin of the K_S K_S mass; each bin's result is the library's
    fit_bins on the same events, and a bin without events makes the job invalid (status 1)."""
    import laddu_dask as ld

    pair = '[bins]\nmass = ["kshort1", "kshort2"]\n'
    config = write_config(tmp_path, sample, f'[fit]\nrestarts = 2\nseed = 1\n{pair}edges = [1.0, 1.5, 2.0]\n')
    out = tmp_path / "bins.json"
    assert main([str(config), "--output", str(out)]) == 0
    assert "2 of 2 bins with a valid fit" in capsys.readouterr().out
    result = read_result(out)
    assert result["valid"] is True and result["binned"] == "m(kshort1 + kshort2)"
    mass = (ld.Vec4.event("kshort1") + ld.Vec4.event("kshort2")).m().real()
    data, mc = (ld.read_parquet(sample / f"{k}.parquet") for k in ("data", "accmc"))
    want = ld.fit_bins(ksks.model(fixed_lineshapes=True), data=data, accepted_mc=mc, by=mass,
                       bins=ld.Bin([1.0, 1.5, 2.0]), restarts=2, seed=1, method="migrad")  # the job's
    for got, ref in zip(result["bins"], want, strict=True):
        assert (got["low"], got["high"], got["fval"], got["values"]) == (ref.low, ref.high, ref.best.fval,
                                                                         ref.best.named_parameters)
        assert got["data_events"] == ref.likelihood.terms[0].data.n_events
    empty = write_config(tmp_path, sample, f"{pair}edges = [1.0, 2.0, 9.0, 9.5]\n",
                         name="e.toml")  # no K_S K_S pair weighs 9 GeV
    assert main([str(empty), "--output", str(tmp_path / "e.json"), "--quiet"]) == 1
    bins = read_result(tmp_path / "e.json")["bins"]
    assert [b["valid"] for b in bins] == [True, False, False]
    assert "no events" in bins[2]["restarts"]["failed"][0]["message"]
    for bad, message in (('[bins]\nedges = [0.0, 1.0]\n', "give either scalar"),
                         ('[bins]\nscalar = "t"\ncount = 0\nlow = 0\nhigh = 1\n', r"\[bins\] count"),
                         ('[bins]\nscalar = "t"\nedges = [1.0, 0.5]\n', "increasing edges")):
        with pytest.raises(ConfigError, match=message):
            load_config(write_config(tmp_path, sample, bad, name="bad.toml"))
