"""Each ganesh minimizer on the KsKs toy: laddu-dask's ``ld.ganesh`` method against laddu
0.28.1's same method, in one process on the same events.

Both libraries build the KsKs likelihood on one sample (``--data`` events, ``--mc`` accepted
MC, :func:`laddu_dask.datasets.ksks.write_sample`; by default the line shapes fixed at the truth, six
free coefficients, ``--free-lineshapes`` for all ten), then, for each method, fit it with
``Likelihood.fit(start, config=..., terminators=...)`` from the displaced start
(:func:`laddu_dask.datasets.ksks.displaced_start`), laddu first, with the method's default settings
and terminators (``MaxSteps(--steps)`` for differential evolution and PSO, which need one,
and for conjugate gradient, which in laddu takes thousands of steps). Before any timing each
side evaluates the likelihood once (one value, one value and gradient, one 12-point round)
and runs the method for two steps, so that no compilation or first import is timed. Per
method: the evaluations each side made (``f``, ``g``; the Hessian of the error estimate
counts in ``h``), the wall time of the fit, and where each ended.
``python3 benchmarks/ganesh_methods.py`` runs it; ``python3 benchmarks/render_readme.py
--write`` puts its table in the README.

Examples
--------
>>> build_parser().parse_args([]).data
2000
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

import numpy as np

from laddu_dask_bench.results import RESULTS_DIR, command_line, provenance, write_results

__all__ = ["METHODS", "build_parser", "main", "readme_lines", "run"]

#: The minimizer configs, the library behind ours, and whether the run needs ``MaxSteps``.
METHODS: tuple[tuple[str, str, bool], ...] = (
    ("LBFGSBConfig", "SciPy L-BFGS-B", False),
    ("ConjugateGradientConfig", "own CG on SciPy's line search", True),
    ("TrustRegionConfig", "SciPy trust-exact", False),
    ("NelderMeadConfig", "own, laddu's steps", False),
    ("CMAESConfig", "cma", False),
    ("DifferentialEvolutionConfig", "SciPy differential_evolution", True),
    ("PSOConfig", "own", True),
    ("SimulatedAnnealingConfig", "own", False),
    ("AdamConfig", "own", False),
)


def build_parser() -> argparse.ArgumentParser:
    """Options of the ganesh benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=int, default=2000)
    ap.add_argument("--mc", type=int, default=10_000)
    ap.add_argument("--steps", type=int, default=300, help="MaxSteps of CG, DE and PSO")
    ap.add_argument("--threads", type=int, default=2, help="laddu's Execution threads")
    ap.add_argument("--free-lineshapes", action="store_true", help="fit all ten parameters")
    ap.add_argument("--methods", nargs="*", default=[m for m, _, _ in METHODS])
    ap.add_argument("--results", default=os.path.join(RESULTS_DIR, "ganesh_methods.json"))
    return ap


def _fit(lib: Any, lik: Any, start: list[float], method: str, steps: int | None) -> dict[str, Any]:
    terminators = [] if steps is None else [lib.ganesh.MaxSteps(steps)]
    t0 = time.perf_counter()
    summary = lik.fit(start, config=getattr(lib.ganesh, method)(), terminators=terminators).raw_ganesh_summary
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "f": summary.evals.f, "g": summary.evals.g, "h": summary.evals.h,
            "fx": float(summary.fx), "x": [float(v) for v in summary.x], "message": str(summary.message),
            "success": bool(summary.message.success)}


def run(data: int, mc: int, steps: int, threads: int, free_lineshapes: bool, methods: list[str],
        results: str | None) -> dict[str, Any]:
    """Fit with every method in both libraries (see the module); the results as a dict,
    written to ``results``."""
    import laddu

    import laddu_dask as ld
    from laddu_dask import ksks
    from laddu_dask_bench.laddu_ksks import laddu_ksks_nll

    unknown = sorted(set(methods) - {m for m, _, _ in METHODS})
    if unknown:
        raise ValueError(f"unknown methods {unknown}; choose from {[m for m, _, _ in METHODS]}")
    fixed = not free_lineshapes
    prov = provenance(command_line(), {"data": data, "mc": mc, "steps": steps, "threads": threads,
                                       "free_lineshapes": free_lineshapes}, ("laddu", "scipy", "cma"))
    with tempfile.TemporaryDirectory() as folder:
        sample = ksks.write_sample(folder, n_data=data, n_mc=mc, seed=7)
        theirs = laddu_ksks_nll(sample["data"], sample["accmc"], fixed_lineshapes=fixed,
                                execution=laddu.Execution("jit", threads=threads, precision="f64")).likelihood
        ours = ld.Likelihood([ld.NLL(ksks.model(fixed_lineshapes=fixed), data=ld.read_parquet(sample["data"]),
                                     accepted_mc=ld.read_parquet(sample["accmc"]), name="ksks")])
        names = ours.parameter_names
        start = [ksks.displaced_start()[n] for n in names]
        for lik in (theirs, ours):  # every kernel compiled before the clocks start
            lik.value(start)
            lik.value_and_gradient(start)
        ours.values_and_gradients([start] * 12)
        rows = []
        for method, library, needs_steps in METHODS:
            if method not in methods:
                continue
            cap = steps if needs_steps else None
            for lib, lik in ((laddu, theirs), (ld, ours)):
                _fit(lib, lik, start, method, 2)  # the method's first run: imports, caches
            row = {"method": method, "library": library, "max_steps": cap,
                   "laddu": _fit(laddu, theirs, start, method, cap),
                   "laddu-dask": _fit(ld, ours, start, method, cap)}
            row["ratio"] = row["laddu-dask"]["wall_s"] / row["laddu"]["wall_s"]
            row["max_dx"] = float(np.abs(np.subtract(row["laddu-dask"]["x"], row["laddu"]["x"])).max())
            row["dfx"] = row["laddu-dask"]["fx"] - row["laddu"]["fx"]
            rows.append(row)
            o, t = row["laddu-dask"], row["laddu"]
            print(f"{method}: laddu-dask {o['wall_s']:.3f} s (f={o['f']}, g={o['g']}), laddu "
                  f"{t['wall_s']:.3f} s (f={t['f']}, g={t['g']}), ratio {row['ratio']:.2f}, max |dx| "
                  f"{row['max_dx']:.1e}, d(-2 ln L) {row['dfx']:.1e}", flush=True)
    out = {"provenance": prov, "parameters": names, "start": start, "methods": rows}
    if results:
        write_results(results, out)
    return out


def readme_lines(r: dict[str, Any]) -> list[str]:
    """The README's lines for a ``ganesh_methods.json`` result."""
    from laddu_dask_bench.readme_format import ratio, run_line, seconds

    prov = r["provenance"]
    p = prov["parameters"]
    what = ("all ten parameters (line shapes inside their bounds)" if p["free_lineshapes"] else
            "the six D-wave coefficients (line shapes fixed at the truth)")
    out = ["### ganesh minimizers: laddu-dask against laddu", "",
           f"Each `ld.ganesh` method against laddu's same method: both fit {what} of the KsKs toy "
           f"({p['data']:,} data and {p['mc']:,} accepted-MC events, `ksks.write_sample`) from the displaced "
           "start with `Likelihood.fit(start, config=...)`, the method's default settings and terminators "
           f"(`MaxSteps({p['steps']})` where the table gives steps), in one process, after both have "
           f"compiled and run the method for two steps; laddu `Execution(\"jit\", threads={p['threads']})`, "
           "laddu-dask's default `Execution()`. "
           "Evaluations are `f` (values) / `g` (gradients) as each summary counts them. "
           + run_line(prov, ("laddu", "laddu-dask", "scipy", "cma", "numpy", "numba", "dask")), "",
           "| method (ours on) | steps | laddu-dask f / g | laddu f / g | laddu-dask | laddu | ratio "
           "| max abs dx | d(-2 ln L) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for row in r["methods"]:
        o, t = row["laddu-dask"], row["laddu"]
        out.append(f"| `{row['method']}` ({row['library']}) | {row['max_steps'] or ''} | {o['f']} / {o['g']} "
                   f"| {t['f']} / {t['g']} | {seconds(o['wall_s'])} | {seconds(t['wall_s'])} "
                   f"| {ratio(row['ratio'])} | {row['max_dx']:.1e} | {row['dfx']:.1e} |")
    out += ["", "Max abs dx: the largest difference between the two end points' parameters; "
            "d(-2 ln L): laddu-dask's minus laddu's -2 ln L at them. Simulated annealing stops on its "
            "schedule in both, each at its own random point near the minimum. "
            "`tests/likelihood/test_ganesh_ksks.py` holds every method to laddu's minimum on a smaller "
            "sample."]
    free = [row for row in r["methods"] if row["laddu"]["g"] == 0]  # the derivative-free methods
    if free:
        each = {side: float(np.median([row[side]["wall_s"] / row[side]["f"] for row in free]))
                for side in ("laddu-dask", "laddu")}
        out[-1] += (f" On events this few a value costs laddu-dask {seconds(each['laddu-dask'])} and "
                    f"laddu {seconds(each['laddu'])} (median of wall time / f, derivative-free methods): "
                    "laddu-dask's fixed cost per evaluation round, not the method, sets most ratios (the "
                    "KsKs table above has the cost per event, on 1.1 million).")
    for row in r["methods"]:  # where one side stopped elsewhere, say where and why
        if row["method"] != "SimulatedAnnealingConfig" and abs(row["dfx"]) > 1e-3:
            higher, lower = ("laddu-dask", "laddu") if row["dfx"] > 0 else ("laddu", "laddu-dask")
            out[-1] += (f" `{row['method']}`: {higher}'s ends {abs(row['dfx']):.1f} higher in -2 ln L than "
                        f"{lower}'s (\"{row[higher]['message']}\" against \"{row[lower]['message']}\").")
    return [*out, ""]


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``benchmarks/ganesh_methods.py``."""
    a = build_parser().parse_args(argv)
    run(a.data, a.mc, a.steps, a.threads, a.free_lineshapes, a.methods, a.results)
    return 0
