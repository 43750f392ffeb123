"""The polarized Zlm and the 3-channel K-matrix models against laddu's JIT, on the same events.

The models of :mod:`laddu_dask_bench.models` (each written once, built with both
libraries) on the KsKs benchmark sample with the beam polarization added.  Per model,
each side measured in the same run on the same files:

* steady-state ``value`` and ``value_and_gradient``: medians of alternating calls at the
  same points (:func:`laddu_dask_bench.ksks_bench.spread` of the start values), after
  checking that both compute the same numbers (values to ``VALUE_RTOL``, gradients to
  ``GRADIENT_RTOL`` of their largest component, else no time is reported);
* the first value and gradient in fresh processes (:mod:`laddu_dask_bench.first_eval`):
  cold (empty ``LADDU_DASK_CACHE`` and ``NUMBA_CACHE_DIR``), warm (the caches a cold
  process filled), laddu's JIT (it compiles in every process), with laddu-dask's kernel
  compile seconds as its ``laddu_dask`` logger reports them.

Ratios are laddu-dask / laddu (below 1: laddu-dask is faster).  Written to
``benchmarks/results/models.json`` by ``python3 benchmarks/bench_ksks.py`` (its ``--models`` section).

Examples
--------
>>> from laddu_dask_bench.model_bench import compile_share
>>> compile_share({"cold": {"first_evaluation_s": 4.0, "compile_s": 3.0}})
0.75
"""

from __future__ import annotations

import os
from typing import Any

from laddu_dask_bench.compare import GRADIENT_RTOL, VALUE_RTOL, NotComparableError
from laddu_dask_bench.results import RESULTS_DIR, ROOT, command_line, provenance

#: The default results file of this section.
RESULTS = os.path.join(RESULTS_DIR, "models.json")


def compile_share(ours: dict[str, Any]) -> float | None:
    """Kernel compile seconds over the cold first evaluation's (None when none was reported)."""
    cold = ours["cold"]
    return cold["compile_s"] / cold["first_evaluation_s"] if "compile_s" in cold else None


def _compare(name: str, paths: dict[str, str], repeats: int, first_repeats: int,
             laddu_execution: Any) -> dict[str, Any]:
    from laddu_dask_bench.first_eval import first_evaluations
    from laddu_dask_bench.ksks_bench import _agreement, _alternate, spread
    from laddu_dask_bench.models import initial_point, likelihood, parameter_names

    points = spread(initial_point(name), repeats, seed=9)
    ours = likelihood("laddu-dask", name, paths)
    theirs = None if laddu_execution is None else likelihood("laddu", name, paths, execution=laddu_execution)
    r: dict[str, Any] = {"free_parameters": len(parameter_names(name))}
    for lik in (ours, theirs):
        if lik is not None:
            lik.value_and_gradient(points[0])  # prepared and compiled before timing
    if theirs is not None:
        a = r["agreement"] = _agreement(ours, theirs, points[0])
        if not (a["value_rel"] <= VALUE_RTOL and a["gradient_rel"] <= GRADIENT_RTOL):
            raise NotComparableError(f"{name}: laddu-dask and laddu compute different numbers ({a})")
    r["steady_s"] = _alternate(ours, theirs, points)
    del ours, theirs
    libraries = ["laddu-dask"] + ([] if laddu_execution is None else ["laddu"])
    r["first_evaluation"] = first_evaluations(paths, name, list(points[0]), first_repeats, libraries)
    return r


def run(models: tuple[str, ...] = ("zlm", "kmatrix"), n_data: int = 100_000, n_mc: int = 1_000_000,
        repeats: int = 15, first_repeats: int = 3, outdir: str | None = None, results: str | None = None,
        quiet: bool = False, command: str | None = None) -> dict[str, Any]:
    """Run the models section and return (and with ``results``, write) its figures."""
    from laddu_dask_bench.ksks_bench import SHARED, make_sample, save
    from laddu_dask_bench.laddu_ksks import laddu_available
    from laddu_dask_bench.models import POL_ANGLES, POL_MAGNITUDE, polarized_sample

    say = (lambda *a: None) if quiet else print
    parameters = {"models": list(models), "data": n_data, "mc": n_mc, "repeats": repeats,
                  "first_repeats": first_repeats}
    out: dict[str, Any] = {"provenance": provenance(command or command_line(), parameters, ("laddu",))}
    outdir = outdir or os.path.join(ROOT, "bench-data")
    paths = polarized_sample(make_sample(outdir, n_data, n_mc), outdir)
    threads = os.cpu_count() or 2
    laddu_execution = None
    if laddu_available():
        import laddu

        laddu_execution = laddu.Execution("jit", threads=threads, precision="f64")
        out["laddu_execution"] = f'Execution("jit", threads={threads}, precision="f64")'
    out["sample"] = {"data": n_data, "mc": n_mc,
                     "source": ("shared/bench/ksks.py" if os.path.exists(SHARED)
                                else "laddu_dask.datasets.ksks"),
                     "pol_angles_deg": [round(a * 180 / 3.141592653589793) for a in POL_ANGLES],
                     "pol_magnitude": list(POL_MAGNITUDE)}
    out["models"] = {name: _compare(name, paths, repeats, first_repeats, laddu_execution) for name in models}
    out["ratios"] = ratios(out)
    _report(out, say)
    save(out, results, say)
    return out


def ratios(out: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per model: laddu-dask / laddu for each figure both have, and the cold compile share."""
    from laddu_dask_bench.cold_bench import total

    r: dict[str, dict[str, float]] = {}
    for name, m in out["models"].items():
        s, fe = m["steady_s"], m["first_evaluation"]
        ours, theirs = fe["laddu-dask"], fe.get("laddu", {})
        x: dict[str, float] = {}
        for key, label in (("value", "value"), ("value+gradient", "value_and_gradient")):
            if key in s.get("theirs", {}):
                x[label] = s["ours"][key] / s["theirs"][key]
        if "cold" in theirs:
            for kind in ("cold", "warm"):
                x[f"first_evaluation_{kind}"] = (ours[kind]["first_evaluation_s"]
                                                 / theirs["cold"]["first_evaluation_s"])
                x[f"import_to_first_{kind}"] = total(ours[kind]) / total(theirs["cold"])
        share = compile_share(ours)
        if share is not None:
            x["compile_share_cold"] = share
        r[name] = x
    return r


def _report(out: dict[str, Any], say: Any) -> None:
    from laddu_dask_bench.ksks_bench import table_row

    smp, prov = out["sample"], out["provenance"]
    say(f"\nBenchmark models: {smp['data']} data, {smp['mc']} accepted MC ({smp['source']}, polarization "
        f"added), {prov['machine']['cores']} cores, load average {prov['machine']['load_average_start']}")
    say(f"{'':40s} {'laddu-dask':>11s} {'laddu JIT':>11s} {'ratio':>7s}")
    for name, m in out["models"].items():
        s, fe = m["steady_s"], m["first_evaluation"]
        for key in ("value", "value+gradient"):
            say(table_row(f"{name}: {key}", s["ours"][key], s.get("theirs", {}).get(key)))
        ours, theirs = fe["laddu-dask"], fe.get("laddu", {}).get("cold")
        for kind in ("cold", "warm"):
            say(table_row(f"{name}: first v+g, {kind}", ours[kind]["first_evaluation_s"],
                          theirs and theirs["first_evaluation_s"], 1.0, "s"))
        cold_runs = ours.get("runs", {}).get("cold", [])
        if "compile_s" in ours["cold"] and cold_runs and all(r.get("tier0") for r in cold_runs):
            say(f"{name}: kernel compilation {ours['cold']['compile_s']:.1f} s in a child process; the "
                "tier-0 kernel served the cold first evaluation")
        elif "compile_s" in ours["cold"]:
            say(f"{name}: kernel compilation {ours['cold']['compile_s']:.1f} s of the cold first evaluation "
                f"({compile_share(ours):.0%})")
        if "agreement" in m:
            a = m["agreement"]
            say(f"{name}: agreement with laddu: value {a['value_rel']:.1e}, gradient {a['gradient_rel']:.1e}")
