"""A mass-independent analysis end to end: laddu-dask's ``fit_bins`` against laddu's procedure.

The KsKs benchmark sample (:func:`laddu_dask_bench.ksks_bench.make_sample`: 100,000 data
and 1,000,000 accepted-MC events, drawn from S and D waves with Breit-Wigner line
shapes) binned in the K_S K_S mass (:func:`~laddu_dask_bench.models.ksks_mass`, 30 bins
of 1-2 GeV by default), each bin fitted with the 4-wave angular model of
:func:`~laddu_dask_bench.models.angular_waves_model` (S fixed, three complex D
couplings: 6 free parameters) from ``restarts`` starts.  Figures, in one run on the
same files, ratios laddu-dask / laddu (below 1: laddu-dask is faster):

* **own procedures** (``own``): laddu's tutorial procedure (``read_parquet``, ``bin_by``
  of data and accepted MC, one ``NLL`` likelihood per bin on ``Execution("jit",
  threads=cores)``, ``fit_restarts(restarts, seed=)``: ganesh L-BFGS-B, see
  :data:`~laddu_dask_bench.ksks_bench.LADDU_FIT`) against ``ld.fit_bins`` (MIGRAD +
  HESSE) from reading the files to the last fit, with the evaluations each made.  The
  preparation (reading, binning, building the likelihoods and their first evaluation:
  laddu-dask prepares a bin lazily, in its first fit) is timed in the same-driver
  section.  The best -2 ln L of every bin must agree within
  :data:`~laddu_dask_bench.compare.FVAL_TOLERANCE` for a ratio to be given.
* **same driver** (``same_driver``): both libraries' per-bin likelihoods, prepared,
  fitted by the one MIGRAD + HESSE driver (:func:`laddu_dask_bench.compare.migrad`)
  from the same starts (laddu-dask's ``sample_parameters`` of each bin), the two sides
  alternating fit by fit: the ratio measures the engines.  Pairs of fits from one start
  that end at different minima (both valid; a multimodal -2 ln L lets rounding send
  them apart) are counted, and each bin's best fits must reach the same minimum
  (:func:`~laddu_dask_bench.compare.same_minimum`).
  Where the time goes: the calls counted and the seconds spent in them
  (:class:`~laddu_dask_bench.compare.Counted`), against the fits' wall time (the rest is
  the minimiser and the driver); the median ``value`` and ``value_and_gradient`` of the
  middle bin, the two sides alternating.
* **cluster**: ``ld.fit_bins`` on a 2-process ``LocalCluster`` (1 thread each), where
  each fit is one task next to its data (:mod:`laddu_dask.analysis.tasks`); its minima
  must equal the local ones.  From Dask's task stream: the tasks' compute time (each
  task rebuilds and prepares its bin's likelihood), so the per-task cost beyond the
  local fit, and the scheduling gaps.
* **bootstrap**: replicas per second of ``bootstrap_fit`` on the middle bin, laddu's
  and ours (locally, and on the cluster as tasks).

Written to ``benchmarks/results/binned.json`` by ``python3 benchmarks/bench_ksks.py --binned`` (or
``benchmarks/bench_binned.py``).

Examples
--------
>>> from laddu_dask_bench.binned_bench import build_parser
>>> build_parser().parse_args(["--restarts", "5"]).restarts
5
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import numpy as np

from laddu_dask_bench.results import RESULTS_DIR, ROOT, command_line, provenance

#: The default results file of this benchmark.
RESULTS = os.path.join(RESULTS_DIR, "binned.json")
#: The mass range binned (GeV): the KsKs sample's.
MASS_RANGE = (1.0, 2.0)


def edges(n_bins: int) -> list[float]:
    """``n_bins + 1`` uniform edges of :data:`MASS_RANGE`."""
    return [float(e) for e in np.linspace(*MASS_RANGE, n_bins + 1)]


def bin_seeds(seed: int, n_bins: int) -> list[int]:
    """The start seeds of the bins (``ld.fit_bins``'s rule), used by every side."""
    from laddu_dask.analysis import replica_seeds

    return replica_seeds(seed, n_bins)


def _bounds() -> dict[str, tuple[float, float]]:
    import laddu_dask as ld
    from laddu_dask_bench.models import ANGULAR_BOUNDS, angular_waves_model

    return {n: ANGULAR_BOUNDS for n in angular_waves_model(ld).parameter_names}


# -- each library's own procedure ---------------------------------------------------------------


def laddu_bins(paths: dict[str, str], bin_edges: list[float],
               execution: Any) -> tuple[list[Any], float, float]:
    """laddu's per-bin likelihoods (None for a bin without events), the seconds reading and
    binning took, and the seconds building the likelihoods."""
    import laddu

    from laddu_dask_bench.laddu_ksks import LadduKsKsNLL
    from laddu_dask_bench.models import angular_waves_model, ksks_mass

    t0 = time.perf_counter()
    mass, bins = ksks_mass(laddu), laddu.Bin(bin_edges)
    data = laddu.read_parquet(paths["data"]).bin_by(mass, bins=bins)
    mc = laddu.read_parquet(paths["accmc"]).bin_by(mass, bins=bins)
    t1 = time.perf_counter()
    model, limits, out = angular_waves_model(laddu), _bounds(), []
    for d, m in zip(data, mc, strict=True):
        if len(d.dataset) == 0 or len(m.dataset) == 0:
            out.append(None)
            continue
        term = laddu.NLL(model, data=d.dataset, accepted_mc=m.dataset, name=f"bin {d.index}")
        out.append(LadduKsKsNLL(laddu.Likelihood([term], execution=execution), model, limits))
    return out, t1 - t0, time.perf_counter() - t1


def laddu_own(paths: dict[str, str], bin_edges: list[float], restarts: int, seed: int,
              execution: Any) -> dict[str, Any]:
    """laddu's tutorial procedure end to end, ``fit_restarts`` in every bin."""
    t0 = time.perf_counter()
    liks, read_bin_s, build_s = laddu_bins(paths, bin_edges, execution)
    t1 = time.perf_counter()
    best, evals = [], {"f": 0, "g": 0, "h": 0}
    converged = 0
    for lik, s in zip(liks, bin_seeds(seed, len(liks)), strict=True):
        if lik is None:
            best.append(None)
            continue
        fits = lik.likelihood.fit_restarts(restarts, seed=s)
        for r in fits:
            e = r.raw_ganesh_summary.evals
            evals["f"], evals["g"], evals["h"] = evals["f"] + e.f, evals["g"] + e.g, evals["h"] + e.h
            converged += bool(r.converged)
        best.append(min(float(r.objective) for r in fits))
    end = time.perf_counter()
    return {"wall_s": end - t0, "read_and_bin_s": read_bin_s, "build_s": build_s, "fits_s": end - t1,
            "fits": restarts * sum(lik is not None for lik in liks), "converged": converged,
            "evaluations": evals, "best_fval": best}


def ours_own(paths: dict[str, str], bin_edges: list[float], restarts: int, seed: int,
             execution: Any = None) -> tuple[dict[str, Any], list[Any]]:
    """``ld.fit_bins`` end to end (on ``execution``, default local); its figures and fits."""
    import laddu_dask as ld
    from laddu_dask_bench.models import angular_waves_model, ksks_mass

    t0 = time.perf_counter()
    fits = ld.fit_bins(angular_waves_model(ld), data=ld.read_parquet(paths["data"]),
                       accepted_mc=ld.read_parquet(paths["accmc"]), by=ksks_mass(ld),
                       bins=ld.Bin(bin_edges), restarts=restarts, seed=seed, execution=execution)
    wall = time.perf_counter() - t0
    results = [r for f in fits for r in f.ensemble]
    return {"wall_s": wall, "fits_s": sum(r.wall_time for r in results),
            "fits": len(results), "valid": sum(r.valid for r in results),
            "evaluations": sum(r.n_calls for r in results),
            "best_fval": [None if f.best is None else f.best.fval for f in fits]}, fits


def best_difference(a: list[float | None], b: list[float | None]) -> dict[str, Any]:
    """The largest ``|a - b|`` over the bins both have, and whether it is within
    :data:`~laddu_dask_bench.compare.FVAL_TOLERANCE`."""
    from laddu_dask_bench.compare import FVAL_TOLERANCE

    diffs = [abs(x - y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    worst = max(diffs) if diffs else float("nan")
    return {"bins_compared": len(diffs), "max_fval_difference": worst, "fval_tolerance": FVAL_TOLERANCE,
            "same_minima": bool(diffs) and worst <= FVAL_TOLERANCE}


# -- the same driver ------------------------------------------------------------------------------


def same_driver(paths: dict[str, str], bin_edges: list[float], restarts: int, seed: int,
                execution: Any, repeats: int) -> dict[str, Any]:
    """Both libraries' prepared per-bin likelihoods, fitted by one MIGRAD driver from the same
    starts (see the module), and where the time goes."""
    import laddu_dask as ld
    from laddu_dask_bench.compare import FVAL_TOLERANCE, NotComparableError, migrad, same_minimum
    from laddu_dask_bench.ksks_bench import FIT_SETTINGS, _alternate, spread
    from laddu_dask_bench.models import angular_waves_model, ksks_mass

    t0 = time.perf_counter()
    ours = ld.binned_likelihoods(angular_waves_model(ld), data=ld.read_parquet(paths["data"]),
                                 accepted_mc=ld.read_parquet(paths["accmc"]), by=ksks_mass(ld),
                                 bins=ld.Bin(bin_edges))
    seeds = bin_seeds(seed, len(ours))
    starts = {b.index: lik.sample_parameters(seed=s, n=restarts)
              for (b, lik), s in zip(ours, seeds, strict=True) if not isinstance(lik, Exception)}
    for b, lik in ours:  # prepared (and compiled) before timing: the preparation's time
        if not isinstance(lik, Exception):
            lik.value_and_gradient(starts[b.index][0])
    t1 = time.perf_counter()
    theirs, _, _ = laddu_bins(paths, bin_edges, execution)
    for (b, _), other in zip(ours, theirs, strict=True):
        if other is not None and b.index in starts:
            other.value_and_gradient(starts[b.index][0])
    preparation = {"laddu-dask": t1 - t0, "laddu": time.perf_counter() - t1}
    names = None
    runs: dict[str, list[dict[str, Any]]] = {"laddu-dask": [], "laddu": []}
    pair_worst, pairs_compared, pairs_apart, best_checks, problems = 0.0, 0, 0, [], []
    for (b, lik), other in zip(ours, theirs, strict=True):
        if isinstance(lik, Exception) or other is None:
            continue
        names = list(lik.parameter_names)
        pairs = []
        for start in starts[b.index]:
            pairs.append((migrad(lik, start, **FIT_SETTINGS), migrad(other, start, **FIT_SETTINGS)))
        for a, c in pairs:
            runs["laddu-dask"].append(a)
            runs["laddu"].append(c)
            if a["valid"] and c["valid"]:
                pair_worst = max(pair_worst, abs(a["fval"] - c["fval"]))
                pairs_compared += 1
                pairs_apart += abs(a["fval"] - c["fval"]) > FVAL_TOLERANCE
        valid = [(a, c) for a, c in pairs if a["valid"] and c["valid"]]
        try:
            if not valid:
                raise NotComparableError("no start gave two valid fits")
            a = min((p[0] for p in valid), key=lambda r: r["fval"])
            c = min((p[1] for p in valid), key=lambda r: r["fval"])
            best_checks.append(dict(same_minimum(a, c, names), bin=b.index))
        except NotComparableError as e:
            problems.append(f"bin {b.index}: {e}")
    settings = dict(FIT_SETTINGS, errordef=1, driver="laddu_dask.fit(method='migrad')",
                    starts="laddu-dask's sample_parameters of each bin")
    out: dict[str, Any] = {"settings": settings,
                           "max_pair_fval_difference": pair_worst, "pairs_compared": pairs_compared,
                           "pairs_at_different_minima": int(pairs_apart)}
    if best_checks:
        out["best_per_bin"] = max(best_checks, key=lambda c: c["fval_difference"])
    if problems:
        out["not_comparable"] = problems
    # one evaluation of the middle bin, both sides alternating
    mid = len(ours) // 2
    lik, other = ours[mid][1], theirs[mid]
    points = spread(lik.sample_parameters(seed=1, n=1)[0], repeats, seed=3)
    times = _alternate(lik, other, points)
    for side, key in (("laddu-dask", "ours"), ("laddu", "theirs")):
        rs = runs[side]
        v, vg = sum(r["value_calls"] for r in rs), sum(r["value_and_gradient_calls"] for r in rs)
        t = times[key]
        wall = sum(r["wall_s"] for r in rs)
        evals_s = sum(r["evaluation_s"] for r in rs)
        out[side] = {"preparation_s": preparation[side], "fits": len(rs),
                     "valid": sum(r["valid"] for r in rs), "wall_s": wall,
                     "value_calls": v, "value_and_gradient_calls": vg,
                     "middle_bin_value_s": t["value"], "middle_bin_value_and_gradient_s": t["value+gradient"],
                     "evaluations_s": evals_s, "minimizer_and_driver_s": wall - evals_s}
    out["middle_bin"] = {"index": ours[mid][0].index, "low": ours[mid][0].low, "high": ours[mid][0].high}
    return out


# -- the cluster and the bootstrap ----------------------------------------------------------------


def _task_stream(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Compute seconds and span of the ``laddu-dask-fit`` tasks in a Dask task stream."""
    spans = [(ss["start"], ss["stop"]) for r in records if str(r["key"]).startswith("laddu-dask-fit")
             for ss in r["startstops"] if ss["action"] == "compute"]
    if not spans:
        return {"tasks": 0}
    compute = [stop - start for start, stop in spans]
    return {"tasks": len(spans), "compute_s": sum(compute), "mean_task_s": statistics.mean(compute),
            "first_start_to_last_stop_s": max(s for _, s in spans) - min(s for s, _ in spans)}


def on_cluster(paths: dict[str, str], bin_edges: list[float], restarts: int, seed: int, local: list[Any],
               bootstrap_replicas: int, bootstrap_seed: int, repeats: int = 1) -> dict[str, Any]:
    """``ld.fit_bins`` on a 2-process LocalCluster of 1 thread each (the fastest of
    ``repeats`` runs, as the local procedure's; ``walls_s`` all of them), against the local
    fits ``local``; then the bootstrap of the middle bin as tasks."""
    from distributed import get_task_stream

    import laddu_dask as ld
    from laddu_dask_bench.cluster_bench import _cluster

    t0 = time.perf_counter()
    lc, client = _cluster(2, 1)
    out: dict[str, Any] = {"workers": 2, "threads_per_worker": 1, "start_s": time.perf_counter() - t0}
    try:
        ex = ld.Execution(client=client)
        runs = []
        for _ in range(max(1, repeats)):
            with get_task_stream(client) as ts:
                figures, fits = ours_own(paths, bin_edges, restarts, seed, execution=ex)
            runs.append((figures, _task_stream(ts.data)))
        figures, stream = min(runs, key=lambda r: r[0]["wall_s"])
        out.update(figures, walls_s=[r[0]["wall_s"] for r in runs])
        out["task_stream"] = stream
        diffs = [abs(a.fval - b.fval) for f, g in zip(fits, local, strict=True)
                 for a, b in zip(f.ensemble, g.ensemble, strict=True) if a.valid and b.valid]
        out["max_fval_difference_from_local"] = max(diffs) if diffs else None
        local_fit_s = sum(r.wall_time for g in local for r in g.ensemble)
        n = out["task_stream"]["tasks"]
        if n:
            out["task_cost_beyond_local_fit_s"] = (out["task_stream"]["compute_s"] - local_fit_s) / n
            out["wall_beyond_compute_s"] = out["wall_s"] - out["task_stream"]["compute_s"] / out["workers"]
        mid = fits[len(fits) // 2]
        with get_task_stream(client) as ts:
            out["bootstrap"] = _bootstrap_ours(mid.likelihood, bootstrap_replicas, bootstrap_seed)
        out["bootstrap"]["task_stream"] = _task_stream(ts.data)
    finally:
        client.close()
        lc.close()
    return out


def _bootstrap_ours(lik: Any, replicas: int, seed: int) -> dict[str, Any]:
    central = lik.fit()
    t0 = time.perf_counter()
    ens = lik.bootstrap_fit(replicas, central.values, seed=seed)
    wall = time.perf_counter() - t0
    return {"replicas": replicas, "wall_s": wall, "replicas_per_s": replicas / wall,
            "valid": len(ens.fits.valid), "central_fval": central.fval}


def bootstrap(ours: Any, theirs: Any, replicas: int, seed: int) -> dict[str, Any]:
    """Replicas per second of both libraries' ``bootstrap_fit`` on one bin's likelihood."""
    out = {"laddu-dask": _bootstrap_ours(ours, replicas, seed)}
    central = theirs.likelihood.fit()
    t0 = time.perf_counter()
    ens = theirs.likelihood.bootstrap_fit(replicas, list(central.values), seed=seed)
    wall = time.perf_counter() - t0
    out["laddu"] = {"replicas": len(ens), "wall_s": wall, "replicas_per_s": replicas / wall,
                    "central_fval": float(central.objective)}
    return out


def _alternating(paths: dict[str, str], bin_edges: list[float], restarts: int, seed: int, execution: Any,
                 repeats: int, say: Any) -> tuple[tuple[dict[str, Any], dict[str, Any]], list[Any]]:
    """Both own procedures ``repeats`` times, alternating (laddu first): the fastest run of each
    (``walls_s`` lists them all; the minima are the same in every run) and our last fits."""
    runs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    fits: list[Any] = []
    for _ in range(max(1, repeats)):
        theirs = laddu_own(paths, bin_edges, restarts, seed, execution)
        ours, fits = ours_own(paths, bin_edges, restarts, seed)
        say(f"  {len(bin_edges) - 1} bins x {restarts} restarts: laddu {theirs['wall_s']:.1f} s, "
            f"laddu-dask {ours['wall_s']:.1f} s")
        runs.append((theirs, ours))
    best = []
    for side in (0, 1):
        fastest = dict(min((r[side] for r in runs), key=lambda r: r["wall_s"]))
        fastest["walls_s"] = [r[side]["wall_s"] for r in runs]
        best.append(fastest)
    return (best[0], best[1]), fits


# -- the run --------------------------------------------------------------------------------------


def run(n_data: int = 100_000, n_mc: int = 1_000_000, n_bins: int = 30, restarts: int = 20,
        driver_restarts: int | None = None, bootstrap_replicas: int = 50, repeats: int = 15, seed: int = 12,
        cluster: bool = True, outdir: str | None = None, results: str | None = None, quiet: bool = False,
        command: str | None = None, small: tuple[int, int] | None = (12, 8),
        fixed_repeats: int = 1000, own_repeats: int = 2) -> dict[str, Any]:
    """Run the benchmark (see the module) and return (with ``results``, write) its figures."""
    import laddu

    from laddu_dask_bench.ksks_bench import SHARED, make_sample, save

    say = (lambda *a: None) if quiet else print
    driver_restarts = restarts if driver_restarts is None else driver_restarts
    parameters = {"data": n_data, "mc": n_mc, "bins": n_bins, "restarts": restarts,
                  "driver_restarts": driver_restarts, "bootstrap_replicas": bootstrap_replicas,
                  "repeats": repeats, "seed": seed, "cluster": cluster, "small": small,
                  "fixed_repeats": fixed_repeats, "own_repeats": own_repeats}
    out: dict[str, Any] = {"provenance": provenance(command or command_line(), parameters, ("laddu",))}
    paths = make_sample(outdir or os.path.join(ROOT, "bench-data"), n_data, n_mc)
    threads = os.cpu_count() or 2
    execution = laddu.Execution("jit", threads=threads, precision="f64")
    out["laddu_execution"] = f'Execution("jit", threads={threads}, precision="f64")'
    out["sample"] = {"data": n_data, "mc": n_mc, "bins": n_bins, "mass_range": list(MASS_RANGE),
                     "source": ("shared/bench/ksks.py" if os.path.exists(SHARED)
                                else "laddu_dask.datasets.ksks")}
    bin_edges = edges(n_bins)
    say(f"binned benchmark: {n_bins} bins x {restarts} restarts; laddu's procedure ...")
    (theirs, ours), local_fits = _alternating(paths, bin_edges, restarts, seed, execution, own_repeats, say)
    out["own"] = {"laddu-dask": ours, "laddu": theirs,
                  "best_per_bin": best_difference(ours["best_fval"], theirs["best_fval"])}
    if small:  # the smaller analysis, on the same files
        b_small, r_small = small
        say(f"  laddu-dask {ours['wall_s']:.1f} s; {b_small} bins x {r_small} restarts ...")
        small_edges = edges(b_small)
        (theirs_small, ours_small), _ = _alternating(paths, small_edges, r_small, seed, execution,
                                                     own_repeats, say)
        best = best_difference(ours_small["best_fval"], theirs_small["best_fval"])
        out["own_small"] = {"bins": b_small, "restarts": r_small, "laddu-dask": ours_small,
                            "laddu": theirs_small, "best_per_bin": best}
    say(f"  laddu-dask {ours['wall_s']:.1f} s; the same driver ({driver_restarts} restarts) ...")
    out["same_driver"] = same_driver(paths, bin_edges, driver_restarts, seed, execution, repeats)
    say("  bootstrap ...")
    mid = len(local_fits) // 2
    laddu_liks, _, _ = laddu_bins(paths, bin_edges[mid:mid + 2], execution)
    out["bootstrap"] = dict(bootstrap(local_fits[mid].likelihood, laddu_liks[0], bootstrap_replicas, seed),
                            bin=mid)
    if fixed_repeats:
        say("  the fixed cost of one small evaluation ...")
        from laddu_dask_bench.small_eval_bench import run as small_eval

        out["fixed_cost"] = small_eval([1000, 10_000], 10_000, fixed_repeats, threads, None)["fixed"]
    if cluster:
        say("  on a LocalCluster ...")
        out["cluster"] = on_cluster(paths, bin_edges, restarts, seed, local_fits, bootstrap_replicas, seed,
                                    own_repeats)
    out["ratios"] = ratios(out)
    _report(out, say)
    save(out, results, say)
    return out


def ratios(out: dict[str, Any]) -> dict[str, float]:
    """laddu-dask / laddu for every figure compared at the same minima (and the cluster's
    against the local run, the bootstrap's rates laddu / laddu-dask: time per replica)."""
    r: dict[str, float] = {}
    own, sd = out["own"], out.get("same_driver", {})
    if own["best_per_bin"]["same_minima"]:
        r["own_procedure"] = own["laddu-dask"]["wall_s"] / own["laddu"]["wall_s"]
    small = out.get("own_small")
    if small and small["best_per_bin"]["same_minima"]:
        r["own_procedure_small"] = small["laddu-dask"]["wall_s"] / small["laddu"]["wall_s"]
    if "best_per_bin" in sd and "not_comparable" not in sd:
        r["same_driver"] = sd["laddu-dask"]["wall_s"] / sd["laddu"]["wall_s"]
        r["same_driver_evaluations"] = sd["laddu-dask"]["evaluations_s"] / sd["laddu"]["evaluations_s"]
        for key, name in (("middle_bin_value_s", "value"),
                          ("middle_bin_value_and_gradient_s", "value_and_gradient")):
            r[name] = sd["laddu-dask"][key] / sd["laddu"][key]
    b = out.get("bootstrap")
    if b:
        r["bootstrap_time_per_replica"] = b["laddu"]["replicas_per_s"] / b["laddu-dask"]["replicas_per_s"]
    c = out.get("cluster")
    if c:
        r["cluster_over_local"] = c["wall_s"] / own["laddu-dask"]["wall_s"]
        if own["best_per_bin"]["same_minima"]:
            r["cluster_over_laddu"] = c["wall_s"] / own["laddu"]["wall_s"]
    return r


def evaluations_per_fit(out: dict[str, Any]) -> dict[str, tuple[float, float | None]]:
    """Likelihood evaluations per fit of each method to the same minima, ``(laddu-dask,
    laddu)``: the own procedures' L-BFGS-B with its Hessian (laddu-dask: values and
    gradients, the Hessian's points included; laddu: ganesh's value, gradient and Hessian
    counts, a Hessian as ``2 n`` gradients) and the same driver's MIGRAD + HESSE."""
    own, sd = out["own"], out.get("same_driver", {})
    ours, theirs = own["laddu-dask"], own["laddu"]
    e = theirs["evaluations"]
    n = 6  # the angular model's free parameters
    per: dict[str, tuple[float, float | None]] = {
        "L-BFGS-B + Hessian (own procedures)": (ours["evaluations"] / max(ours["fits"], 1),
                                                (e["f"] + e["g"] + 2 * n * e["h"]) / max(theirs["fits"], 1))}
    if "laddu-dask" in sd:
        def calls(side: dict[str, Any]) -> float:
            return (side["value_calls"] + side["value_and_gradient_calls"]) / max(side["fits"], 1)

        per["MIGRAD + HESSE (same driver)"] = (calls(sd["laddu-dask"]), calls(sd["laddu"]))
    return per


def _report(out: dict[str, Any], say: Any) -> None:
    from laddu_dask_bench.ksks_bench import table_row

    own, sd = out["own"], out["same_driver"]
    say(f"{'':40s} {'laddu-dask':>11s} {'laddu':>11s} {'ratio':>7s}")
    say(table_row("own procedures, end to end", own["laddu-dask"]["wall_s"], own["laddu"]["wall_s"],
                  1.0, "s"))
    if "own_small" in out:
        sm = out["own_small"]
        say(table_row(f"own procedures, {sm['bins']} x {sm['restarts']}", sm["laddu-dask"]["wall_s"],
                      sm["laddu"]["wall_s"], 1.0, "s"))
    say(table_row("same driver, fits", sd["laddu-dask"]["wall_s"], sd["laddu"]["wall_s"], 1.0, "s"))
    say(table_row("value (middle bin)", sd["laddu-dask"]["middle_bin_value_s"],
                  sd["laddu"]["middle_bin_value_s"]))
    say(table_row("value_and_gradient (middle bin)", sd["laddu-dask"]["middle_bin_value_and_gradient_s"],
                  sd["laddu"]["middle_bin_value_and_gradient_s"]))
    b = out["bootstrap"]
    say(f"bootstrap replicas per second: laddu-dask {b['laddu-dask']['replicas_per_s']:.2f}, "
        f"laddu {b['laddu']['replicas_per_s']:.2f}")
    say(f"best -2 ln L per bin (own procedures): max difference "
        f"{own['best_per_bin']['max_fval_difference']:.2g}; same driver: pairs "
        f"{sd['max_pair_fval_difference']:.2g}")
    if "cluster" in out:
        c = out["cluster"]
        say(f"cluster: {c['wall_s']:.1f} s ({c['task_stream'].get('tasks', 0)} fit tasks), bootstrap "
            f"{c['bootstrap']['replicas_per_s']:.2f} replicas/s")
    for method, (per_ours, per_theirs) in evaluations_per_fit(out).items():
        say(f"evaluations per fit, {method}: laddu-dask {per_ours:.1f}, laddu {per_theirs:.1f}")
    for method, fixed in out.get("fixed_cost", {}).items():
        say(f"fixed cost of one {method}: laddu-dask {1e6 * fixed['laddu-dask_s']:.1f} us, "
            f"laddu {1e6 * fixed['laddu_s']:.1f} us")
    say(f"ratios: {out['ratios']}")


def build_parser() -> argparse.ArgumentParser:
    """Command-line options of the benchmark."""
    ap = argparse.ArgumentParser(prog="benchmarks/bench_binned.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=int, default=100_000)
    ap.add_argument("--mc", type=int, default=1_000_000)
    add_arguments(ap)
    ap.add_argument("--outdir", help="where the sample is written (default: ./bench-data)")
    ap.add_argument("--results", default=RESULTS)
    ap.add_argument("--no-closure", action="store_true",
                    help="skip the closure study (laddu_dask_bench.closure_bench, run here with its "
                         "defaults into benchmarks/results/closure.json)")
    return ap


def add_arguments(ap: argparse.ArgumentParser, prefix: str = "") -> None:
    """The options of this benchmark (``prefix`` them in ``bench_ksks.py``: ``--binned-...``)."""
    ap.add_argument(f"--{prefix}bins", type=int, default=30, help="mass bins (default 30)")
    ap.add_argument(f"--{prefix}restarts", type=int, default=20, help="fits per bin (default 20)")
    ap.add_argument(f"--{prefix}driver-restarts", type=int, default=None,
                    help="fits per bin of the same-driver comparison (default: --restarts)")
    ap.add_argument(f"--{prefix}bootstrap", type=int, default=50, help="bootstrap replicas (default 50)")
    ap.add_argument(f"--{prefix}small", default="12x8",
                    help="the smaller analysis, BINSxRESTARTS ('none': skip; default 12x8)")
    ap.add_argument(f"--{prefix}fixed-repeats", type=int, default=1000,
                    help="calls per median of the fixed-cost measurement (0: skip)")
    ap.add_argument(f"--{prefix}own-repeats", type=int, default=2,
                    help="alternating runs of each own procedure, the fastest kept (default 2)")
    ap.add_argument(f"--{prefix}no-cluster", action="store_true", help="skip the LocalCluster run")


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``benchmarks/bench_binned.py``."""
    a = build_parser().parse_args(argv)
    small = None if a.small == "none" else tuple(int(v) for v in a.small.lower().split("x"))
    run(a.data, a.mc, a.bins, a.restarts, a.driver_restarts, a.bootstrap, cluster=not a.no_cluster,
        outdir=a.outdir, results=a.results, small=small, fixed_repeats=a.fixed_repeats,
        own_repeats=a.own_repeats)
    if not a.no_closure:  # the many-fit rows of issue 25 in one run: the closure study too
        from laddu_dask_bench.closure_bench import build_parser as closure_parser
        from laddu_dask_bench.closure_bench import run as closure_run

        c = closure_parser().parse_args([])
        print("closure study ...", flush=True)
        closure_run(c.replicas, c.events, c.mc, c.pool, c.threads, c.results)
    return 0
