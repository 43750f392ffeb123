"""Cold start: from ``import`` to the first value and gradient, against laddu's JIT.

What a physicist waits for after every edit of a model, and on every worker of a new
cluster: fresh processes (:mod:`laddu_dask_bench.first_eval`) that import the library,
read the 100k/1M KsKs sample, build the likelihood and evaluate its value and gradient
once, with empty kernel caches (cold), with the caches a cold process filled (warm), and,
for laddu-dask, with only the shared Numba helpers cached (``edit``: a new model on a
machine that has compiled another one before).  Both line shapes; the issue's figure is
the relativistic one.  Writes ``benchmarks/results/first_eval.json``.

Usage: ``python3 benchmarks/bench_first_eval.py [--repeats 3]``.

Examples
--------
>>> from laddu_dask_bench.cold_bench import build_parser
>>> build_parser().parse_args([]).lineshapes
['rbw', 'bw']
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from typing import Any

from laddu_dask_bench.first_eval import first_evaluations, run_process
from laddu_dask_bench.results import RESULTS_DIR, ROOT, command_line, provenance, write_results

__all__ = ["build_parser", "main", "run"]


def _edit_runs(paths: dict[str, str], lineshape: str, other: str, point: list[float],
               repeats: int) -> dict[str, float]:
    """laddu-dask's first evaluation of ``lineshape`` in a cache that holds only another
    model's kernels (``other``): the shared helpers are cached, the model's kernel is not."""
    runs = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="laddu-dask-bench-cache-") as folder:
            run_process("laddu-dask", paths, other, point, folder)
            runs.append(run_process("laddu-dask", paths, lineshape, point, folder))
    return {k: statistics.median(r[k] for r in runs) for k in ("import_s", "first_evaluation_s",
                                                                 "rss_added_mib")}


def run(lineshapes: tuple[str, ...] = ("rbw", "bw"), repeats: int = 3, n_data: int = 100_000,
        n_mc: int = 1_000_000, outdir: str | None = None, results: str | None = None,
        command: str | None = None) -> dict[str, Any]:
    """Measure, print and (with ``results``) write the cold-start figures."""
    from laddu_dask import ksks
    from laddu_dask_bench.ksks_bench import make_sample
    from laddu_dask_bench.laddu_ksks import laddu_available

    prov = provenance(command or command_line(), {"lineshapes": list(lineshapes), "repeats": repeats,
                                                  "data": n_data, "mc": n_mc}, ("laddu",))
    paths = make_sample(outdir or os.path.join(ROOT, "bench-data"), n_data, n_mc)
    libraries = ("laddu-dask", "laddu") if laddu_available() else ("laddu-dask",)
    point = list(ksks.TRUTH.values())
    out: dict[str, Any] = {"provenance": prov, "lineshapes": {}}
    for ls in lineshapes:
        r = first_evaluations(paths, ls, point, repeats, libraries)
        other = "bw" if ls == "rbw" else "rbw"
        r["laddu-dask"]["edit"] = _edit_runs(paths, ls, other, point, repeats)
        out["lineshapes"][ls] = r
    _report(out)
    if results:
        write_results(results, out)
    return out


def total(r: dict[str, float]) -> float:
    """Seconds from the import to the first value and gradient."""
    return r["import_s"] + r["first_evaluation_s"]


def _report(out: dict[str, Any]) -> None:
    print(f"{'':34s} {'laddu-dask':>11s} {'laddu JIT':>10s} {'ratio':>6s}  RSS added (ours / laddu)")
    for ls, r in out["lineshapes"].items():
        ours, theirs = r["laddu-dask"], r.get("laddu", {})
        for kind in ("cold", "warm", "edit"):
            t = theirs.get("cold" if kind == "edit" else kind)
            line = f"{ls} {kind:5s} import to first v+g         {total(ours[kind]):8.2f} s"
            if t:
                line += (f" {total(t):8.2f} s {total(ours[kind]) / total(t):5.2f}x  "
                         f"{ours[kind]['rss_added_mib']:.0f} / {t['rss_added_mib']:.0f} MiB")
            print(line)


def build_parser() -> argparse.ArgumentParser:
    """Options of the cold-start benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per case (default 3)")
    ap.add_argument("--lineshapes", nargs="+", choices=("rbw", "bw"), default=["rbw", "bw"])
    ap.add_argument("--outdir", help="where the sample is written (default: ./bench-data)")
    ap.add_argument("--results", default=os.path.join(RESULTS_DIR, "first_eval.json"))
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``benchmarks/bench_first_eval.py``."""
    a = build_parser().parse_args(argv)
    run(tuple(a.lineshapes), a.repeats, outdir=a.outdir, results=a.results)
    return 0
