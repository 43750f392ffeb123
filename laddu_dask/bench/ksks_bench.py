"""KsKs benchmark: laddu-dask against laddu's JIT, in one process, on the same files.

The sample is the shared benchmark: 100,000 data and 1,000,000 accepted-MC events of
gamma p -> p K_S K_S (``../shared/bench/ksks.py`` when it exists next to the project,
else :mod:`laddu_dask.ksks`).  Every figure is a median of alternating runs of the
two libraries at the same parameter points; ratios are laddu-dask time / laddu time
(below 1: laddu-dask is faster).

Figures:

* steady-state ``value`` and ``value_and_gradient`` (10 free parameters);
* first evaluation, including reading the files and preparing the datasets;
* a whole MIGRAD fit from the displaced start of :func:`laddu_dask.ksks.displaced_start`
  against laddu's own ``fit`` (L-BFGS-B) and against laddu driven by iminuit's MIGRAD;
* the second model, line shapes fixed (six free coefficients; laddu's ``normalization="auto"``);
* the scheduling overhead of one evaluation graph with an empty kernel;
* TensorWaves (JAX backend) on the same events, when it is installed.

Examples
--------
>>> from laddu_dask.bench.ksks_bench import build_parser
>>> build_parser().parse_args(["--data", "1000"]).data
1000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "bench", "ksks.py")


def make_sample(outdir: str, n_data: int, n_mc: int) -> dict[str, str]:
    """Write the sample once; reuse it when ``sizes.json`` says it has the right size."""
    stamp = os.path.join(outdir, "sizes.json")
    paths = {"data": os.path.join(outdir, "data.parquet"),
             "accmc": os.path.join(outdir, "accmc.parquet")}
    if os.path.exists(stamp) and all(os.path.exists(p) for p in paths.values()):
        with open(stamp) as f:
            if json.load(f) == {"data": n_data, "mc": n_mc}:
                return paths
    os.makedirs(outdir, exist_ok=True)
    if os.path.exists(SHARED):
        subprocess.run([sys.executable, SHARED, outdir, "--data", str(n_data), "--mc", str(n_mc)],
                       check=True)
    else:
        from laddu_dask import ksks

        ksks.write_sample(outdir, n_data=n_data, n_mc=n_mc)
    with open(stamp, "w") as f:
        json.dump({"data": n_data, "mc": n_mc}, f)
    return paths


def _timed(fn: Any, *args: Any) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def _alternate(ours: Any, theirs: Any, points: list[np.ndarray]) -> dict[str, dict[str, float]]:
    rows: dict[str, dict[str, list[float]]] = {
        "laddu-dask": {"value": [], "value+gradient": []},
        "laddu": {"value": [], "value+gradient": []},
    }
    for p in points:
        rows["laddu-dask"]["value"].append(_timed(ours.value, p))
        if theirs is not None:
            rows["laddu"]["value"].append(_timed(theirs.value, p))
        rows["laddu-dask"]["value+gradient"].append(_timed(ours.value_and_gradient, p))
        if theirs is not None:
            rows["laddu"]["value+gradient"].append(_timed(theirs.value_and_gradient, p))
    return {k: {m: statistics.median(v) for m, v in d.items() if v} for k, d in rows.items()}


def _points(names: list[str], repeats: int, seed: int = 7) -> list[np.ndarray]:
    from laddu_dask import ksks

    rng = np.random.default_rng(seed)
    base = np.array([ksks.TRUTH[n] for n in names])
    return [base * rng.uniform(0.98, 1.02, len(names)) for _ in range(repeats)]


def scheduling_overhead(partitions: int = 8, repeats: int = 200, scheduler: str = "pool") -> float:
    """Median seconds of one evaluation graph whose partition tasks do nothing.

    The graph has the shape of a real evaluation's (one task per partition and the
    exact merge tree) and runs through ``Execution.scheduler`` (``"pool"``, the default
    for evaluations, or ``"dask"``, the threaded scheduler).
    """
    from laddu_dask.runtime.accumulate import ExactPartials
    from laddu_dask.runtime.execution import Execution
    from laddu_dask.runtime.prepared import _run_on_pool
    from laddu_dask.runtime.reducer import CertifiedPartials
    from laddu_dask.runtime.reduction import merge_list, tree_graph, unique_name

    ex = Execution(scheduler=scheduler)
    empty = CertifiedPartials.exact(ExactPartials.zeros(11))

    def noop(part: Any) -> Any:
        return part

    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        token = unique_name("noop")
        graph, root = tree_graph({(token, i): (noop, empty) for i in range(partitions)},
                                 ex.split_every, merge_list, f"{token}-merge")
        if scheduler == "pool":
            (merged,) = _run_on_pool(ex, graph, [root])
        else:
            merged = ex.get(graph, root)
        merged.certified_floats()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(n_data: int = 100_000, n_mc: int = 1_000_000, repeats: int = 15, lineshape: str = "bw",
        outdir: str | None = None, results: str | None = None, fit: bool = True,
        quiet: bool = False) -> dict[str, Any]:
    """Run the benchmark and return (and optionally write) its figures."""
    import laddu_dask as ld
    from laddu_dask import ksks
    from laddu_dask.bench.laddu_ksks import laddu_available, laddu_ksks_nll

    say = (lambda *a: None) if quiet else print
    outdir = outdir or os.path.join(ROOT, "bench-data")
    paths = make_sample(outdir, n_data, n_mc)
    have_laddu = laddu_available()
    out: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "sample": {"data": n_data, "mc": n_mc, "lineshape": lineshape, "repeats": repeats,
                   "source": "shared/bench/ksks.py" if os.path.exists(SHARED) else "laddu_dask.ksks"},
    }
    if have_laddu:
        import laddu

        out["versions"] = {"laddu": getattr(laddu, "__version__", "?"), "laddu_dask": ld.__version__}

    def ours_lik(fixed: bool, execution: Any = None) -> Any:
        return ld.Likelihood([ld.NLL(ksks.model(lineshape, fixed_lineshapes=fixed),
                                     data=ld.read_parquet(paths["data"]),
                                     accepted_mc=ld.read_parquet(paths["accmc"]), name="ksks")],
                             execution=execution)

    def theirs_lik(fixed: bool) -> Any:
        if not have_laddu:
            return None
        import laddu

        return laddu_ksks_nll(paths["data"], paths["accmc"], lineshape=lineshape,
                              fixed_lineshapes=fixed,
                              execution=laddu.Execution("jit", threads=os.cpu_count() or 2,
                                                        precision="f64"))

    # -- first evaluation (reading and preparing included) ------------------------------
    names = list(ksks.TRUTH)
    points = _points(names, repeats)
    t0 = time.perf_counter()
    ours = ours_lik(False)
    ours.value(points[0])
    first = {"laddu-dask": time.perf_counter() - t0}
    theirs = None
    if have_laddu:
        t0 = time.perf_counter()
        theirs = theirs_lik(False)
        theirs.value(points[0])
        first["laddu"] = time.perf_counter() - t0
    out["first_evaluation_s"] = first

    # -- steady state -------------------------------------------------------------------------
    out["steady_s"] = _alternate(ours, theirs, points)
    if theirs is not None:
        v, g = ours.value_and_gradient(points[0])
        vr, gr = theirs.value_and_gradient(points[0])
        out["agreement"] = {"value_rel": abs(v / vr - 1.0),
                            "gradient_rel": float(np.max(np.abs(g - gr)) / np.max(np.abs(gr)))}

    # -- fits --------------------------------------------------------------------------------
    if fit:
        start = ksks.displaced_start(names)
        x0 = np.array([start[n] for n in names])
        fits: dict[str, Any] = {}
        result = ours.fit(initial=start, method="migrad")
        fits["laddu-dask migrad"] = {"wall_s": result.wall_time, "fval": result.fval,
                                     "calls": result.n_calls, "valid": result.valid}
        if theirs is not None:
            t0 = time.perf_counter()
            res = theirs.likelihood.fit(list(x0))
            fits["laddu fit"] = {"wall_s": time.perf_counter() - t0, "fval": float(res.objective),
                                 "valid": bool(res.converged)}
            from iminuit import Minuit

            calls = [0]

            def fcn(x: Any) -> float:
                calls[0] += 1
                return theirs.value(x)

            t0 = time.perf_counter()
            m = Minuit(fcn, x0, grad=lambda x: theirs.value_and_gradient(x)[1], name=names)
            m.errordef = Minuit.LEAST_SQUARES
            m.limits = [(-np.inf if lo is None else lo, np.inf if hi is None else hi)
                        for lo, hi in (ours.parameters[n].bounds for n in names)]
            m.migrad()
            m.hesse()
            fits["laddu migrad"] = {"wall_s": time.perf_counter() - t0, "fval": float(m.fval),
                                    "calls": calls[0], "valid": bool(m.valid)}
        out["fits"] = fits

    # -- second model: line shapes fixed ---------------------------------------------------
    coeff_names = [n for n in names if n not in ksks.BOUNDS]
    cpoints = _points(coeff_names, repeats, seed=8)
    ours_fixed = ours_lik(True)
    ours_fixed.value(cpoints[0])
    theirs_fixed = theirs_lik(True)
    if theirs_fixed is not None:
        theirs_fixed.value(cpoints[0])
    out["fixed_lineshapes_steady_s"] = _alternate(ours_fixed, theirs_fixed, cpoints)

    # -- scheduling overhead ---------------------------------------------------------------
    out["scheduling_overhead_s"] = {f"{sched} {k}": scheduling_overhead(k, scheduler=sched)
                                    for sched in ("pool", "dask") for k in (2, 8, 64)}

    # -- ratios ---------------------------------------------------------------------------------
    if have_laddu:
        s, f = out["steady_s"], out["fixed_lineshapes_steady_s"]
        ratios = {
            "value": s["laddu-dask"]["value"] / s["laddu"]["value"],
            "value_and_gradient": s["laddu-dask"]["value+gradient"] / s["laddu"]["value+gradient"],
            "first_evaluation": first["laddu-dask"] / first["laddu"],
            "fixed_value": f["laddu-dask"]["value"] / f["laddu"]["value"],
            "fixed_value_and_gradient": f["laddu-dask"]["value+gradient"] / f["laddu"]["value+gradient"],
        }
        if fit:
            fits = out["fits"]
            ratios["fit_vs_laddu_fit"] = fits["laddu-dask migrad"]["wall_s"] / fits["laddu fit"]["wall_s"]
            ratios["fit_vs_laddu_migrad"] = (fits["laddu-dask migrad"]["wall_s"]
                                             / fits["laddu migrad"]["wall_s"])
            ratios["fit_fval_rel"] = abs(fits["laddu-dask migrad"]["fval"] / fits["laddu migrad"]["fval"] - 1)
        out["ratios"] = ratios
    from laddu_dask.bench.tensorwaves_ksks import TensorWavesKsKs, tensorwaves_available

    if tensorwaves_available():
        t0 = time.perf_counter()
        tw = TensorWavesKsKs(paths["data"], paths["accmc"])
        tw.value(points[0])
        tw_first = time.perf_counter() - t0
        tw_times = _alternate(ours, tw, points)  # laddu-dask again, alternating with TensorWaves
        out["tensorwaves"] = {"first_evaluation_s": tw_first, "steady_s": tw_times["laddu"],
                              "laddu_dask_steady_s": tw_times["laddu-dask"]}
    else:
        out["tensorwaves"] = "not installed"
    _report(out, say)
    if results:
        os.makedirs(os.path.dirname(os.path.abspath(results)), exist_ok=True)
        tmp = f"{results}.tmp-{os.getpid()}"
        with open(tmp, "w") as fh:
            json.dump(out, fh, indent=2)
        os.replace(tmp, results)
    return out


def _report(out: dict[str, Any], say: Any) -> None:
    smp = out["sample"]
    say(f"\nKsKs benchmark: {smp['data']} data, {smp['mc']} accepted MC ({smp['source']}), "
        f"{smp['lineshape']}, median of {smp['repeats']}, {out['machine']['cpus']} CPUs")
    ms = 1e3
    s = out["steady_s"]
    say(f"{'':32s} {'laddu-dask':>12s} {'laddu JIT':>12s} {'ratio':>8s}")

    def row(label: str, ours: float, theirs: float | None, scale: float = ms, unit: str = "ms") -> None:
        if theirs is None:
            say(f"{label:32s} {ours * scale:9.2f} {unit:2s}")
        else:
            say(f"{label:32s} {ours * scale:9.2f} {unit:2s} {theirs * scale:9.2f} {unit:2s} "
                f"{ours / theirs:7.2f}x")

    row("value", s["laddu-dask"]["value"], s["laddu"].get("value"))
    row("value + gradient", s["laddu-dask"]["value+gradient"], s["laddu"].get("value+gradient"))
    fe = out["first_evaluation_s"]
    row("first evaluation (with reading)", fe["laddu-dask"], fe.get("laddu"), 1.0, "s")
    f = out["fixed_lineshapes_steady_s"]
    row("fixed line shapes: value", f["laddu-dask"]["value"], f["laddu"].get("value"))
    row("fixed line shapes: value + grad", f["laddu-dask"]["value+gradient"],
        f["laddu"].get("value+gradient"))
    if "fits" in out:
        fits = out["fits"]
        ours = fits["laddu-dask migrad"]
        for name in ("laddu fit", "laddu migrad"):
            if name in fits:
                row(f"MIGRAD fit vs {name}", ours["wall_s"], fits[name]["wall_s"], 1.0, "s")
        say(f"{'':32s} fval: laddu-dask {ours['fval']:.10f}"
            + "".join(f", {k} {v['fval']:.10f}" for k, v in fits.items() if k != "laddu-dask migrad"))
    for k, v in out["scheduling_overhead_s"].items():
        sched, parts = k.split()
        say(f"{'scheduling (' + sched + '), ' + parts + ' parts':32s} {v * ms:9.3f} ms")
    if "agreement" in out:
        a = out["agreement"]
        say(f"agreement with laddu: value {a['value_rel']:.1e}, gradient {a['gradient_rel']:.1e}")
    tw = out["tensorwaves"]
    if isinstance(tw, dict):
        for m in ("value", "value+gradient"):
            ours, theirs = tw["laddu_dask_steady_s"][m], tw["steady_s"][m]
            say(f"{'TensorWaves (JAX) ' + m:32s} {ours * ms:9.2f} ms {theirs * ms:9.2f} ms "
                f"{ours / theirs:7.2f}x")
        say(f"{'TensorWaves first evaluation':32s} {tw['first_evaluation_s']:9.2f} s")
    else:
        say(f"TensorWaves: {tw}")


def build_parser() -> argparse.ArgumentParser:
    """Command-line options of the benchmark."""
    ap = argparse.ArgumentParser(prog="laddu-dask bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=int, default=100_000)
    ap.add_argument("--mc", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--lineshape", choices=("bw", "rbw"), default="bw")
    ap.add_argument("--outdir", help="where the sample is written (default: ./bench-data)")
    ap.add_argument("--results", default=os.path.join(ROOT, "benchmarks", "results", "bench_ksks.json"))
    ap.add_argument("--no-fit", action="store_true", help="skip the fit comparison")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``laddu-dask bench`` and ``benchmarks/bench_ksks.py``."""
    a = build_parser().parse_args(argv)
    run(a.data, a.mc, a.repeats, a.lineshape, a.outdir, a.results, fit=not a.no_fit)
    return 0
