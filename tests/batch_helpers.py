"""Shared pieces of the batch-fit tests: sample, configs, fake batch systems, the real command."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from laddu_dask import ksks

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

BASE = """\
model = {{ builtin = "ksks", fixed_lineshapes = true }}

[data]
path = "{sample}/data.parquet"

[accmc]
path = "{sample}/accmc.parquet"
"""

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


def make_sample(tmp_path_factory: pytest.TempPathFactory, n_data: int = 3000,
                n_mc: int = 20000) -> Path:
    """A KsKs sample as data.parquet and accmc.parquet in a new folder."""
    out = tmp_path_factory.mktemp("batch-sample")
    ksks.write_sample(out, n_data=n_data, n_mc=n_mc, seed=77)
    return out


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


def assert_one_error_line(err: str, prog: str = "laddu-dask fit", *fragments: str) -> None:
    """stderr is exactly one line ``PROG: error: ...`` holding every fragment (no traceback)."""
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith(f"{prog}: error: "), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def fake_queue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, accept: bool) -> Path:
    """Fake sbatch/qsub/scancel/qdel first on PATH, logging each call (and a copy of each
    submitted script) to the returned file; ``accept``: submissions succeed with job 4242.
    The current folder is ``tmp_path`` (where temporary TLS certificates go by default)."""
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
    monkeypatch.chdir(tmp_path)
    return log


def command_env(**changes: str) -> dict[str, str]:
    """The environment of a ``laddu-dask`` subprocess: this checkout first on PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    env.update(changes)
    return env


def laddu_dask(*args: str, env: dict[str, str] | None = None, timeout: float = 120,
               cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real command (``python -m laddu_dask.cli ARGS``) of this checkout."""
    return subprocess.run([sys.executable, "-m", "laddu_dask.cli", *args], capture_output=True,
                          text=True, env=env or command_env(), timeout=timeout, cwd=cwd)


def interrupt_when(args: list[str], ready: str, env: dict[str, str] | None = None,
                   timeout: float = 120) -> tuple[int, str, str]:
    """Start ``laddu-dask ARGS``, send SIGINT once a stdout line starts with ``ready`` (fail
    if none does within ``timeout`` seconds); returns ``(status, stdout, stderr)``."""
    proc = subprocess.Popen([sys.executable, "-m", "laddu_dask.cli", *args], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env or command_env())
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"no line {ready!r} within {timeout} s: {seen}") from None
            if line is None:
                raise AssertionError(f"the command ended before printing {ready!r}: {seen}")
            seen.append(line)
            if line.startswith(ready):
                break
        proc.send_signal(signal.SIGINT)
        status = proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=10)
    while not lines.empty():
        seen.append(lines.get() or "")
    assert proc.stderr is not None
    return status, "".join(seen), proc.stderr.read()
