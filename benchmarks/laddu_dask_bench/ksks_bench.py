"""KsKs benchmark: laddu-dask against laddu's JIT (and TensorWaves), on the same files.

The sample is the shared benchmark: 100,000 data and 1,000,000 accepted-MC events of
gamma p -> p K_S K_S (``../shared/bench/ksks.py`` when it exists next to the project,
else :mod:`laddu_dask.datasets.ksks`).  Ratios are laddu-dask / competitor (below 1: laddu-dask
is faster).  Figures, each side measured in the same run on the same files:

* steady-state ``value`` and ``value_and_gradient`` (10 free parameters), and with the
  line shapes fixed (6 free): medians of alternating calls at the same points, after
  checking that both compute the same numbers;
* first evaluation (import, then reading, preparing, compiling and evaluating) in fresh
  processes, with empty caches (cold) and with the caches a previous process filled
  (warm): :mod:`laddu_dask_bench.first_eval`;
* a whole fit from :func:`laddu_dask.datasets.ksks.displaced_start` with the same minimiser on
  both sides (:func:`laddu_dask_bench.compare.migrad`: iminuit MIGRAD + HESSE, same
  strategy, tolerance, errordef and limits, each likelihood behind the same cache),
  reported only when both reach the same minimum; laddu's own ``fit`` (ganesh
  L-BFGS-B, a different algorithm and stopping rule) separately;
* the scheduling overhead of one evaluation graph with an empty kernel;
* TensorWaves (JAX) on the same events when installed, timed only after it is shown
  to compute the same likelihood (:func:`laddu_dask_bench.compare.same_function`);
* then (``--models``, ``--no-ksks`` for only these) the polarized Zlm and the 3-channel
  K-matrix models: :mod:`laddu_dask_bench.model_bench`;
* and with ``--binned`` (``--binned-bins``, ``--binned-restarts``, ...) the mass-independent
  analysis of the same sample: :mod:`laddu_dask_bench.binned_bench`.

Examples
--------
>>> from laddu_dask_bench.ksks_bench import build_parser
>>> build_parser().parse_args(["--data", "1000"]).data
1000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

from laddu_dask_bench.results import (
    RESULTS_DIR,
    ROOT,
    TENSORWAVES_PACKAGES,
    command_line,
    provenance,
    write_results,
)

SHARED = os.path.join(os.path.dirname(ROOT), "shared", "bench", "ksks.py")
#: MIGRAD settings of the like-for-like fit (those of :func:`laddu_dask.fit`'s defaults).
FIT_SETTINGS = {"strategy": 1, "tolerance": 0.1}
#: What laddu's ``Likelihood.fit()`` does with its defaults (laddu 0.28.1, ganesh's defaults).
LADDU_FIT = ("ganesh L-BFGS-B (10 stored corrections, strong-Wolfe line search), stopping when "
             "-2 ln L changes by less than sqrt(machine epsilon) = 1.5e-8 between iterations or "
             "the gradient norm falls below epsilon^(1/3) = 6.1e-6, then a finite-difference "
             "Hessian for the errors")


def make_sample(outdir: str, n_data: int, n_mc: int) -> dict[str, str]:
    """Write the sample once; reuse it when ``sizes.json`` says it has the right size."""
    from laddu_dask.files import atomic_write

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
    with atomic_write(stamp) as f:
        json.dump({"data": n_data, "mc": n_mc}, f)
    return paths


def _timed(fn: Any, *args: Any) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def _alternate(ours: Any, theirs: Any, points: list[np.ndarray]) -> dict[str, dict[str, float]]:
    """Medians of ``value`` and ``value_and_gradient``, the two sides alternating at each point."""
    rows: dict[str, dict[str, list[float]]] = {side: {"value": [], "value+gradient": []}
                                               for side in ("ours", "theirs")}
    for p in points:
        for side, lik in (("ours", ours), ("theirs", theirs)):
            if lik is not None:
                rows[side]["value"].append(_timed(lik.value, p))
                rows[side]["value+gradient"].append(_timed(lik.value_and_gradient, p))
    return {k: {m: statistics.median(v) for m, v in d.items() if v} for k, d in rows.items()}


def _points(names: list[str], repeats: int, seed: int = 7) -> list[np.ndarray]:
    from laddu_dask import ksks

    return spread([ksks.TRUTH[n] for n in names], repeats, seed)


def spread(base: Any, repeats: int, seed: int = 7) -> list[np.ndarray]:
    """``repeats`` parameter points within 2% of ``base`` (the timed points), from ``seed``."""
    rng = np.random.default_rng(seed)
    base = np.asarray(base, dtype=float)
    return [base * rng.uniform(0.98, 1.02, base.size) for _ in range(repeats)]


def scheduling_overhead(partitions: int = 8, repeats: int = 200, scheduler: str = "pool") -> float:
    """Median seconds of one evaluation graph whose partition tasks do nothing.

    The graph has the shape of a real evaluation's (one task per partition and the
    exact merge tree) and runs through ``Execution.scheduler`` (``"pool"``, the default
    for evaluations, or ``"dask"``, the threaded scheduler).
    """
    from laddu_dask.runtime.accumulate import CertifiedPartials, ExactPartials
    from laddu_dask.runtime.execution import Execution
    from laddu_dask.runtime.local import run_on_pool
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
            (merged,) = run_on_pool(ex.runner.pool, graph, [root], ex.runner.num_workers)
        else:
            merged = ex.get(graph, root)
        merged.certified_floats()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _agreement(ours: Any, theirs: Any, p: np.ndarray) -> dict[str, float]:
    v, g = ours.value_and_gradient(p)
    vr, gr = theirs.value_and_gradient(p)
    return {"value_rel": abs(v / vr - 1.0),
            "gradient_rel": float(np.max(np.abs(g - gr)) / np.max(np.abs(gr)))}


def compare_fits(ours: Any, theirs: Any, names: list[str], start: dict[str, float],
                 repeats: int) -> dict[str, Any]:
    """The like-for-like MIGRAD fits (alternating, ``repeats`` each) and laddu's own ``fit``."""
    from laddu_dask_bench.compare import NotComparableError, migrad, same_minimum

    runs: dict[str, list[dict[str, Any]]] = {"laddu-dask": [], "laddu": []}
    for _ in range(repeats):
        for side, lik in (("laddu-dask", ours), ("laddu", theirs)):
            runs[side].append(migrad(lik, start, **FIT_SETTINGS))
    out: dict[str, Any] = {"settings": dict(FIT_SETTINGS, errordef=1, repeats=repeats,
                                            driver="laddu_dask.fit(method='migrad')")}
    for side, rs in runs.items():
        out[side] = dict(rs[0], wall_s=statistics.median(r["wall_s"] for r in rs),
                         wall_s_runs=[r["wall_s"] for r in rs])
    try:
        checks = [same_minimum(a, b, names) for a, b in zip(runs["laddu-dask"], runs["laddu"])]
        out["same_minimum"] = max(checks, key=lambda c: c["max_parameter_difference_sigma"])
    except NotComparableError as e:
        out["not_comparable"] = str(e)
    x0 = theirs.vector(start)
    own = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = theirs.likelihood.fit(list(x0))
        own.append((time.perf_counter() - t0, res))
    res = own[0][1]
    evals = res.raw_ganesh_summary.evals
    out["laddu_own_fit"] = {
        "algorithm": LADDU_FIT, "wall_s": statistics.median(t for t, _ in own),
        "wall_s_runs": [t for t, _ in own], "fval": float(res.objective), "converged": bool(res.converged),
        "message": str(res.terminal_message), "f_evals": int(evals.f), "g_evals": int(evals.g),
        "h_evals": int(evals.h),
        "fval_minus_migrad": float(res.objective) - out["laddu-dask"]["fval"],
    }
    return out


def compare_tensorwaves(ours: Any, paths: dict[str, str], points: list[np.ndarray]) -> dict[str, Any]:
    """TensorWaves on the same events: checked to be the same function, then timed."""
    from laddu_dask_bench.compare import NotComparableError, same_function
    from laddu_dask_bench.tensorwaves_ksks import SCALE, TensorWavesKsKs

    tw = TensorWavesKsKs(paths["data"], paths["accmc"])
    out: dict[str, Any] = {"estimator": "UnbinnedNLL formula in one jitted jax.value_and_grad",
                           "scale": SCALE}
    try:
        out["agreement"] = same_function(ours.value_and_gradient, tw.value_and_gradient, points[:3],
                                         scale=SCALE)
        if tw.data_weights_are_one:
            v, u = tw.value(points[0]), tw.unbinned_nll(points[0])
            if abs(v - u) > 1e-9 * abs(v):
                raise NotComparableError(f"the jitted estimator ({v!r}) is not TensorWaves' "
                                         f"UnbinnedNLL ({u!r})")
            out["agreement"]["unbinned_nll_rel"] = abs(v - u) / abs(v)
    except NotComparableError as e:
        return {"status": "not comparable", "reason": str(e)}
    tw.value_and_gradient(points[0])  # compiled before timing, as the other sides are
    times = _alternate(ours, tw, points)
    out.update(status="compared", steady_s=times["theirs"], laddu_dask_steady_s=times["ours"])
    return out


def run(n_data: int = 100_000, n_mc: int = 1_000_000, repeats: int = 15, lineshape: str = "bw",
        outdir: str | None = None, results: str | None = None, fit: bool = True, fit_repeats: int = 3,
        first_repeats: int = 3, tensorwaves: bool = True, quiet: bool = False,
        command: str | None = None) -> dict[str, Any]:
    """Run the benchmark and return (and optionally write) its figures."""
    import laddu_dask as ld
    from laddu_dask import ksks
    from laddu_dask_bench.first_eval import first_evaluations
    from laddu_dask_bench.laddu_ksks import laddu_available, laddu_ksks_nll
    from laddu_dask_bench.tensorwaves_ksks import tensorwaves_available

    say = (lambda *a: None) if quiet else print
    use_tw = tensorwaves and lineshape == "bw" and tensorwaves_available()
    parameters = {"data": n_data, "mc": n_mc, "repeats": repeats, "lineshape": lineshape, "fit": fit,
                  "fit_repeats": fit_repeats, "first_repeats": first_repeats, "tensorwaves": tensorwaves}
    out: dict[str, Any] = {"provenance": provenance(command or command_line(), parameters,
                                                    TENSORWAVES_PACKAGES if use_tw else ())}
    outdir = outdir or os.path.join(ROOT, "bench-data")
    paths = make_sample(outdir, n_data, n_mc)
    have_laddu = laddu_available()
    threads = os.cpu_count() or 2
    out["sample"] = {"data": n_data, "mc": n_mc, "lineshape": lineshape,
                     "source": ("shared/bench/ksks.py" if os.path.exists(SHARED)
                                else "laddu_dask.datasets.ksks")}
    out["laddu_execution"] = f'Execution("jit", threads={threads}, precision="f64")' if have_laddu else None

    def ours_lik(fixed: bool) -> Any:
        return ld.Likelihood([ld.NLL(ksks.model(lineshape, fixed_lineshapes=fixed),
                                     data=ld.read_parquet(paths["data"]),
                                     accepted_mc=ld.read_parquet(paths["accmc"]), name="ksks")])

    def theirs_lik(fixed: bool) -> Any:
        if not have_laddu:
            return None
        import laddu

        return laddu_ksks_nll(paths["data"], paths["accmc"], lineshape=lineshape, fixed_lineshapes=fixed,
                              execution=laddu.Execution("jit", threads=threads, precision="f64"))

    names = list(ksks.TRUTH)
    points = _points(names, repeats)
    # -- steady state: both prepared and compiled first, checked to agree, then timed -------
    ours, theirs = ours_lik(False), theirs_lik(False)
    for lik in (ours, theirs):
        if lik is not None:
            lik.value_and_gradient(points[0])
    if theirs is not None:
        out["agreement"] = _agreement(ours, theirs, points[0])
    out["steady_s"] = _alternate(ours, theirs, points)
    coeff_names = [n for n in names if n not in ksks.BOUNDS]
    cpoints = _points(coeff_names, repeats, seed=8)
    ours_fixed, theirs_fixed = ours_lik(True), theirs_lik(True)
    for lik in (ours_fixed, theirs_fixed):
        if lik is not None:
            lik.value_and_gradient(cpoints[0])
    if theirs_fixed is not None:
        out["fixed_lineshapes_agreement"] = _agreement(ours_fixed, theirs_fixed, cpoints[0])
    out["fixed_lineshapes_steady_s"] = _alternate(ours_fixed, theirs_fixed, cpoints)
    del ours_fixed, theirs_fixed
    # -- fits ------------------------------------------------------------------------------
    if fit and theirs is not None:
        out["fit"] = compare_fits(ours, theirs, names, ksks.displaced_start(names), fit_repeats)
    # -- TensorWaves -------------------------------------------------------------------------
    if use_tw:
        out["tensorwaves"] = compare_tensorwaves(ours, paths, points)
    else:
        why = " (only the bw line shape is written)" if tensorwaves else ""
        out["tensorwaves"] = {"status": "not installed" if tensorwaves and not tensorwaves_available()
                              else "not run" + why}
    del ours, theirs
    # -- first evaluation in fresh processes ---------------------------------------------------
    libraries = ["laddu-dask"] + (["laddu"] if have_laddu else [])
    if out["tensorwaves"].get("status") == "compared":
        libraries.append("tensorwaves")
    out["first_evaluation"] = first_evaluations(paths, lineshape, list(points[0]), first_repeats, libraries)
    # -- scheduling overhead -------------------------------------------------------------------
    out["scheduling_overhead_s"] = {f"{sched} {k}": scheduling_overhead(k, scheduler=sched)
                                    for sched in ("pool", "dask") for k in (2, 8, 64)}
    out["ratios"] = ratios(out)
    _report(out, say)
    save(out, results, say)
    return out


def save(out: dict[str, Any], results: str | None, say: Any) -> None:
    """Write ``out`` to ``results`` (when given) and say how to render the README from it."""
    if results:
        write_results(results, out)
        say(f"wrote {results}; render the README with: python3 benchmarks/render_readme.py --write")


def ratios(out: dict[str, Any]) -> dict[str, float]:
    """laddu-dask / competitor for every figure both sides have (a fit only at the same minimum)."""
    r: dict[str, float] = {}
    for key, prefix in (("steady_s", ""), ("fixed_lineshapes_steady_s", "fixed_")):
        s = out[key]
        for m, name in (("value", "value"), ("value+gradient", "value_and_gradient")):
            if m in s.get("theirs", {}):
                r[prefix + name] = s["ours"][m] / s["theirs"][m]
    fe = out.get("first_evaluation", {})
    for lib, tag in (("laddu", ""), ("tensorwaves", "tensorwaves_")):
        for kind in ("cold", "warm", "fresh"):
            if kind in fe.get(lib, {}):
                ours_kind = "cold" if kind == "fresh" else kind
                r[f"{tag}first_evaluation_{kind}"] = (fe["laddu-dask"][ours_kind]["first_evaluation_s"]
                                                      / fe[lib][kind]["first_evaluation_s"])
    f = out.get("fit", {})
    if "same_minimum" in f:
        r["fit_migrad"] = f["laddu-dask"]["wall_s"] / f["laddu"]["wall_s"]
    tw = out.get("tensorwaves", {})
    if tw.get("status") == "compared":
        for m, name in (("value", "value"), ("value+gradient", "value_and_gradient")):
            r["tensorwaves_" + name] = tw["laddu_dask_steady_s"][m] / tw["steady_s"][m]
    return r


def table_row(label: str, ours: float, theirs: float | None, scale: float = 1e3, unit: str = "ms") -> str:
    """One printed line: ``label``, both times (in ``unit``, ``scale`` per second) and their ratio."""
    text = f"{label:40s} {ours * scale:8.2f} {unit:2s}"
    if theirs is not None:
        text += f" {theirs * scale:8.2f} {unit:2s} {ours / theirs:6.2f}x"
    return text


def _report(out: dict[str, Any], say: Any) -> None:
    smp, prov = out["sample"], out["provenance"]
    say(f"\nKsKs benchmark: {smp['data']} data, {smp['mc']} accepted MC ({smp['source']}), "
        f"{smp['lineshape']}, {prov['machine']['cores']} cores ({prov['machine']['cpu']}), "
        f"load average {prov['machine']['load_average_start']}")
    say(f"{'':40s} {'laddu-dask':>11s} {'laddu JIT':>11s} {'ratio':>7s}")

    def row(label: str, ours: float, theirs: float | None, scale: float = 1e3, unit: str = "ms") -> None:
        say(table_row(label, ours, theirs, scale, unit))

    for key, label in (("steady_s", ""), ("fixed_lineshapes_steady_s", "fixed line shapes: ")):
        s = out[key]
        for m in ("value", "value+gradient"):
            row(label + m, s["ours"][m], s["theirs"].get(m))
    fe = out["first_evaluation"]
    for kind in ("cold", "warm"):
        for what in ("import_s", "first_evaluation_s"):
            theirs = fe["laddu"][kind][what] if "laddu" in fe else None
            row(f"{kind}: {what[:-2].replace('_', ' ')}", fe["laddu-dask"][kind][what], theirs, 1.0, "s")
    if "fit" in out:
        f = out["fit"]
        a, b = f["laddu-dask"], f["laddu"]
        if "same_minimum" in f:
            row("MIGRAD + HESSE, same driver", a["wall_s"], b["wall_s"], 1.0, "s")
            sm = f["same_minimum"]
            say(f"{'':40s} same minimum: |d fval| {sm['fval_difference']:.2g}, "
                f"max {sm['max_parameter_difference_sigma']:.2g} sigma")
        else:
            say(f"MIGRAD fits NOT COMPARED: {f['not_comparable']}")
        for side, r in (("laddu-dask", a), ("laddu", b)):
            say(f"{'':40s} {side}: {r['value_and_gradient_calls']} value_and_gradient, "
                f"{r['value_calls']} value calls, fval {r['fval']:.10f}")
        own = f["laddu_own_fit"]
        say(f"laddu's own fit ({own['message']}): {own['wall_s']:.2f} s, {own['f_evals']} f, "
            f"{own['g_evals']} g evaluations, fval {own['fval']:.10f}")
    for k, v in out["scheduling_overhead_s"].items():
        say(f"{'scheduling (' + k.split()[0] + '), ' + k.split()[1] + ' parts':40s} {v * 1e3:8.3f} ms")
    if "agreement" in out:
        a = out["agreement"]
        say(f"agreement with laddu: value {a['value_rel']:.1e}, gradient {a['gradient_rel']:.1e}")
    tw = out["tensorwaves"]
    if tw.get("status") == "compared":
        say(f"TensorWaves agrees: value differences {tw['agreement']['value_difference_rel']:.1e}, "
            f"gradients {tw['agreement']['gradient_difference_rel']:.1e}")
        for m in ("value", "value+gradient"):
            row(f"TensorWaves {m}", tw["laddu_dask_steady_s"][m], tw["steady_s"][m])
        row("TensorWaves first evaluation (fresh)", fe["laddu-dask"]["cold"]["first_evaluation_s"],
            fe["tensorwaves"]["fresh"]["first_evaluation_s"], 1.0, "s")
    else:
        say(f"TensorWaves: {tw['status']} {tw.get('reason', '')}")


def build_parser() -> argparse.ArgumentParser:
    """Command-line options of the benchmark."""
    ap = argparse.ArgumentParser(prog="benchmarks/bench_ksks.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=int, default=100_000)
    ap.add_argument("--mc", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=15, help="steady-state points (default 15)")
    ap.add_argument("--fit-repeats", type=int, default=3, help="fits of each kind (default 3)")
    ap.add_argument("--first-repeats", type=int, default=3,
                    help="fresh processes per library and cache state (default 3)")
    ap.add_argument("--lineshape", choices=("bw", "rbw"), default="bw")
    ap.add_argument("--outdir", help="where the sample is written (default: ./bench-data)")
    ap.add_argument("--results", default=os.path.join(RESULTS_DIR, "bench_ksks.json"))
    ap.add_argument("--no-fit", action="store_true", help="skip the fit comparison")
    ap.add_argument("--no-tensorwaves", action="store_true", help="skip TensorWaves even when installed")
    ap.add_argument("--models", nargs="*", choices=("zlm", "kmatrix"), default=["zlm", "kmatrix"],
                    help="benchmark models timed after the KsKs section (default: zlm kmatrix; none "
                         "with no names); see laddu_dask_bench.model_bench")
    ap.add_argument("--models-results", default=os.path.join(RESULTS_DIR, "models.json"),
                    help="results file of the models section")
    ap.add_argument("--no-ksks", action="store_true", help="skip the KsKs section (only the models)")
    from laddu_dask_bench.binned_bench import RESULTS as BINNED_RESULTS
    from laddu_dask_bench.binned_bench import add_arguments

    ap.add_argument("--binned", action="store_true",
                    help="also the mass-independent analysis (bins x restarts, the cluster, the bootstrap); "
                         "see laddu_dask_bench.binned_bench")
    ap.add_argument("--binned-results", default=BINNED_RESULTS, help="results file of the binned section")
    add_arguments(ap, prefix="binned-")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``benchmarks/bench_ksks.py``."""
    a = build_parser().parse_args(argv)
    if not a.no_ksks:
        run(a.data, a.mc, a.repeats, a.lineshape, a.outdir, a.results, fit=not a.no_fit,
            fit_repeats=a.fit_repeats, first_repeats=a.first_repeats, tensorwaves=not a.no_tensorwaves)
    if a.models:
        from laddu_dask_bench.model_bench import run as run_models

        run_models(tuple(a.models), a.data, a.mc, a.repeats, a.first_repeats, a.outdir, a.models_results)
    if a.binned:
        from laddu_dask_bench.binned_bench import run as run_binned

        run_binned(a.data, a.mc, a.binned_bins, a.binned_restarts, a.binned_driver_restarts,
                   a.binned_bootstrap, repeats=a.repeats, cluster=not a.binned_no_cluster, outdir=a.outdir,
                   results=a.binned_results)
    return 0
