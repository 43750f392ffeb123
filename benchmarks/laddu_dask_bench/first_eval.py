"""First evaluation in a fresh process, with cold and with warm caches.

Each measurement is a new Python process (this file run as a script) that imports one
library, reads the KsKs Parquet files, builds the likelihood and evaluates its value and
gradient once (what a fit asks for first); it reports the import time and the first
evaluation's (reading, preparing, compiling and evaluating) separately, and the resident
memory the first evaluation added to the process (``rss_added_mib``: after it, less
before the likelihood was built; the data's own share is in it).  The model is the KsKs
model with line shape ``"bw"`` or ``"rbw"``, or a benchmark model of
:mod:`laddu_dask_bench.models` (``"zlm"``, ``"kmatrix"``).  A laddu-dask process also
reports ``compile_s``: the seconds of the kernel compilations the ``laddu_dask`` logger
reported (it reports those over a second; they run on a background thread, in a child
process, while the data are prepared and the tier-0 kernel evaluates), ``None`` when
there was none, and ``tier0``: whether the first evaluation returned while the fused
kernel was still compiling (the tier-0 kernel served it).  The process waits, untimed,
for its compilations before it exits, so that a warm process finds them on disk.  The caches a process
may find on disk are pointed at a temporary folder: ``LADDU_DASK_CACHE`` (laddu-dask's generated kernels) and
``NUMBA_CACHE_DIR`` (Numba's machine code, for every ``cache=True`` function).

* **cold**: the folder is new and empty, so laddu-dask generates and compiles every
  kernel; laddu compiles its JIT in every process in any case;
* **warm**: a second process with the folder the cold one filled.

TensorWaves (JAX keeps no compiled code on disk unless configured to) is measured
once per repeat, in a fresh process.  The OS page cache holds the Parquet files for
every process alike.

Examples
--------
>>> from laddu_dask_bench.first_eval import cache_environment
>>> env = cache_environment("/tmp/x")
>>> env["LADDU_DASK_CACHE"], env["NUMBA_CACHE_DIR"]
('/tmp/x/kernels', '/tmp/x/numba')
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

# Only the standard library at module level: the measured process runs this file as a
# script, so that nothing of laddu-dask is imported before the timed import.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBRARIES = ("laddu-dask", "laddu", "tensorwaves")


def cache_environment(folder: str) -> dict[str, str]:
    """The environment of a measured process whose caches live under ``folder``."""
    env = dict(os.environ)
    env["LADDU_DASK_CACHE"] = os.path.join(folder, "kernels")
    env["NUMBA_CACHE_DIR"] = os.path.join(folder, "numba")
    env["PYTHONPATH"] = os.pathsep.join([ROOT, os.path.join(ROOT, "benchmarks"),
                                         *filter(None, [env.get("PYTHONPATH")])])
    return env


def _count_files(*folders: str | None) -> int:
    return sum(len(files) for f in folders if f and os.path.isdir(f) for _, _, files in os.walk(f))


class _CompileLog:
    """Collects the ``compiled ... in X s`` lines of the ``laddu_dask`` logger (INFO)."""

    PATTERN = r"^compiled .* in ([0-9.]+) s$"

    def __init__(self) -> None:
        import logging

        self.seconds: list[float] = []
        handler = logging.Handler(logging.INFO)
        handler.emit = self._emit  # type: ignore[method-assign]
        logger = logging.getLogger("laddu_dask")
        logger.setLevel(logging.INFO)
        logger.addHandler(handler)

    def _emit(self, record: Any) -> None:
        import re

        m = re.match(self.PATTERN, record.getMessage())
        if m:
            self.seconds.append(float(m.group(1)))

    def total(self) -> float | None:
        return sum(self.seconds) if self.seconds else None


def _measure(library: str, data: str, mc: str, model: str, point: list[float]) -> dict[str, Any]:
    """Run in the fresh process: import, build, evaluate once (the harness's own imports untimed)."""
    import psutil

    before = _count_files(os.environ.get("LADDU_DASK_CACHE"), os.environ.get("NUMBA_CACHE_DIR"))
    process = psutil.Process()
    compile_log = None
    ksks_model = model in ("bw", "rbw")
    t0 = time.perf_counter()
    if library == "laddu-dask":
        import laddu_dask as ld

        import_s = time.perf_counter() - t0
        from laddu_dask import ksks
        from laddu_dask_bench.models import likelihood

        compile_log = _CompileLog()
        rss = process.memory_info().rss
        t1 = time.perf_counter()
        if ksks_model:
            lik = ld.Likelihood([ld.NLL(ksks.model(model), data=ld.read_parquet(data),
                                        accepted_mc=ld.read_parquet(mc), name="ksks")])
        else:
            lik = likelihood(library, model, {"data": data, "accmc": mc})
        value = lik.value_and_gradient(point)[0]
    elif library == "laddu":
        import laddu

        import_s = time.perf_counter() - t0
        from laddu_dask_bench.laddu_ksks import laddu_ksks_nll
        from laddu_dask_bench.models import likelihood, parameter_names

        order = None if ksks_model else parameter_names(model)  # laddu-dask's order, untimed
        rss = process.memory_info().rss
        t1 = time.perf_counter()
        execution = laddu.Execution("jit", threads=os.cpu_count() or 2, precision="f64")
        if ksks_model:
            lik = laddu_ksks_nll(data, mc, lineshape=model, execution=execution)
        else:
            lik = likelihood(library, model, {"data": data, "accmc": mc}, execution=execution, order=order)
        value = lik.value_and_gradient(point)[0]
    elif library == "tensorwaves":
        import jax  # noqa: F401
        import sympy  # noqa: F401
        import tensorwaves.estimator  # noqa: F401

        import_s = time.perf_counter() - t0
        from laddu_dask_bench.tensorwaves_ksks import TensorWavesKsKs

        rss = process.memory_info().rss
        t1 = time.perf_counter()
        if not ksks_model or model != "bw":
            raise ValueError(f"TensorWaves has only the KsKs model with bw line shapes, not {model!r}")
        value = TensorWavesKsKs(data, mc).value_and_gradient(point)[0]
    else:
        raise ValueError(f"library must be one of {LIBRARIES}, got {library!r}")
    first = time.perf_counter() - t1
    tier0 = None
    if library == "laddu-dask":  # untimed: the kernels compiled meanwhile reach the disk cache
        from laddu_dask.runtime.compilations import wait_compilations

        tier0 = not wait_compilations(0.0)  # still compiling: the tier-0 kernel evaluated
        wait_compilations(900.0)
    out = {"library": library, "import_s": import_s, "first_evaluation_s": first, "value": value,
           "rss_added_mib": (process.memory_info().rss - rss) / 2**20, "cache_files_before": before}
    if compile_log is not None:
        out["compile_s"] = compile_log.total()
        out["tier0"] = tier0
    return out


def run_process(library: str, paths: dict[str, str], model: str, point: Sequence[float],
                cache_folder: str, timeout: float = 900.0) -> dict[str, Any]:
    """Measure ``library`` on ``model`` in a new process whose caches live under ``cache_folder``."""
    cmd = [sys.executable, os.path.abspath(__file__), library, paths["data"], paths["accmc"],
           "--model", model, "--point", json.dumps([float(x) for x in point])]
    proc = subprocess.run(cmd, env=cache_environment(cache_folder), capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"first-evaluation process for {library} failed ({proc.returncode}):\n"
                           f"{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def first_evaluations(paths: dict[str, str], model: str, point: Sequence[float], repeats: int = 3,
                      libraries: Sequence[str] = ("laddu-dask", "laddu")) -> dict[str, Any]:
    """Cold and warm first evaluations of each library, ``repeats`` times, alternating.

    Returns per library the medians (``cold`` and ``warm``: ``import_s``,
    ``first_evaluation_s`` and ``rss_added_mib``, and laddu-dask's ``compile_s`` where
    every run reported one; TensorWaves: ``fresh``) and every single run.  Raises
    RuntimeError when a cold laddu-dask process found a kernel in its cache or a warm
    one found none.
    """
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {lib: {} for lib in libraries}
    for _ in range(repeats):
        for lib in libraries:
            with tempfile.TemporaryDirectory(prefix="laddu-dask-bench-cache-") as folder:
                kinds = ("fresh",) if lib == "tensorwaves" else ("cold", "warm")
                for kind in kinds:
                    r = run_process(lib, paths, model, point, folder)
                    if lib == "laddu-dask" and (kind == "cold") != (r["cache_files_before"] == 0):
                        raise RuntimeError(f"a {kind} laddu-dask process found "
                                           f"{r['cache_files_before']} files in its caches")
                    runs[lib].setdefault(kind, []).append(r)
    out: dict[str, Any] = {"repeats": repeats}
    for lib, kinds in runs.items():
        out[lib] = {kind: {k: statistics.median(r[k] for r in rs)
                           for k in ("import_s", "first_evaluation_s", "rss_added_mib", "compile_s")
                           if all(r.get(k) is not None for r in rs)}
                    for kind, rs in kinds.items()}
        out[lib]["runs"] = kinds
    return out


def main(argv: list[str] | None = None) -> int:
    """The measured process: prints one JSON line."""
    ap = argparse.ArgumentParser(description="one first evaluation (run by first_evaluations)")
    ap.add_argument("library", choices=LIBRARIES)
    ap.add_argument("data")
    ap.add_argument("mc")
    ap.add_argument("--model", default="bw", help="bw or rbw (the KsKs model), zlm or kmatrix")
    ap.add_argument("--point", required=True, help="parameter values, a JSON list")
    a = ap.parse_args(argv)
    print(json.dumps(_measure(a.library, a.data, a.mc, a.model, json.loads(a.point))))
    return 0


if __name__ == "__main__":
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]  # run as a script: import laddu_dask from PYTHONPATH, not siblings
    sys.exit(main())
