"""The README's Benchmarks section, rendered from the results files.

``python3 -m laddu_dask.bench.readme`` prints the section (Markdown) from
``benchmarks/results/bench_ksks.json``, ``overhead.json``, ``streaming.json``,
``cluster.json``, ``first_eval.json``, ``models.json``, ``binned.json``, ``generation.json`` and
``closure.json``;
``--write`` puts it in ``README.md`` in place of the current one.  The tests check that
the README's section is exactly what this renders from the committed files, so no
figure in it can be edited by hand or left behind by a new run.

Examples
--------
>>> from laddu_dask.bench.readme import ratio, seconds
>>> seconds(0.0123), seconds(2.5), ratio(0.456)
('12.30 ms', '2.50 s', '0.46x')
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from typing import Any

from laddu_dask.bench.closure_bench import readme_lines as _closure
from laddu_dask.bench.generation_bench import readme_lines as _generation
from laddu_dask.bench.results import RESULTS_DIR, ROOT, read_results

README = os.path.join(ROOT, "README.md")
HEADING = "## Benchmarks"
FILES = ("bench_ksks.json", "overhead.json", "streaming.json", "cluster.json", "first_eval.json",
         "models.json", "binned.json", "generation.json", "closure.json")
#: How the README names the benchmark models of :mod:`laddu_dask.bench.models`.
MODEL_TITLES = {"zlm": "polarized Zlm", "kmatrix": "3-channel K-matrix"}


def seconds(x: float | None) -> str:
    """``12.30 ms`` below one second, ``2.50 s`` above; ``n/a`` for a missing figure."""
    if x is None:
        return "n/a"
    return f"{x * 1e3:.2f} ms" if x < 1.0 else f"{x:.2f} s"


def ratio(x: float | None) -> str:
    """``0.46x``; ``n/a`` for a missing figure."""
    return "n/a" if x is None else f"{x:.2f}x"


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _div(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a / b


def _row(label: str, ours: float | None, theirs: float | None) -> str:
    return f"| {label} | {seconds(ours)} | {seconds(theirs)} | {ratio(_div(ours, theirs))} |"


def run_line(prov: dict[str, Any], packages: tuple[str, ...]) -> str:
    """One sentence: command, date, machine, load, versions."""
    from dask.utils import format_bytes

    m, v = prov["machine"], prov["versions"]
    start, end = m.get("load_average_start"), m.get("load_average_end")
    load = ""
    if start and end:
        load = f"; 1-minute load average {start[0]:.2f} at the start and {end[0]:.2f} at the end"
        if max(start[0], end[0]) > m["cores"]:
            load += " (more than its cores: other work shared the machine)"
    names = ", ".join(f"{p} {v[p]}" for p in packages if p in v)
    return (f"Command `{prov['command']}`, run {prov['date'][:10]} on {m['cpu']} ({m['cores']} cores, "
            f"{format_bytes(m['memory_bytes'])}){load}; Python {v['python']}, {names}.")


def _ksks(r: dict[str, Any]) -> list[str]:
    from laddu_dask.bench.compare import FVAL_TOLERANCE, SIGMA_TOLERANCE

    smp, prov = r["sample"], r["provenance"]
    s, f = r["steady_s"], r["fixed_lineshapes_steady_s"]
    out = [
        "### KsKs: laddu-dask against laddu's JIT", "",
        f"{smp['data']:,} data and {smp['mc']:,} accepted-MC events of gamma p -> p K_S K_S "
        f"({smp['source']}), `{smp['lineshape']}` line shapes, f64; laddu `{r['laddu_execution']}`, "
        "laddu-dask's default `Execution()`. "
        + run_line(prov, ("laddu", "laddu-dask", "numpy", "numba", "dask", "iminuit", "pyarrow")), "",
    ]
    a, af = r.get("agreement"), r.get("fixed_lineshapes_agreement")
    if a and af:
        out += [f"Both compute the same numbers at the timed points: values agree to {a['value_rel']:.1e} "
                f"relative and gradients to {a['gradient_rel']:.1e} of the largest component (line shapes "
                f"fixed: {af['value_rel']:.1e} and {af['gradient_rel']:.1e}).", ""]
    out += [
        f"| steady state (median of {prov['parameters']['repeats']} alternating calls) "
        "| laddu-dask | laddu JIT | ratio |",
        "|---|---|---|---|",
        _row("`value`, 10 free parameters", s["ours"]["value"], _get(s, "theirs", "value")),
        _row("`value_and_gradient`, 10 free parameters", s["ours"]["value+gradient"],
             _get(s, "theirs", "value+gradient")),
        _row("`value`, line shapes fixed (6 free)", f["ours"]["value"], _get(f, "theirs", "value")),
        _row("`value_and_gradient`, line shapes fixed", f["ours"]["value+gradient"],
             _get(f, "theirs", "value+gradient")),
        "",
    ]
    fe = r["first_evaluation"]
    ours, theirs = fe["laddu-dask"], fe.get("laddu", {})
    out += [
        f"| first evaluation in a fresh process (median of {fe['repeats']}) "
        "| laddu-dask | laddu JIT | ratio |",
        "|---|---|---|---|",
        _row("import", ours["cold"]["import_s"], _get(theirs, "cold", "import_s")),
        _row("cold: read, prepare, compile, value and gradient once (empty caches)",
             ours["cold"]["first_evaluation_s"], _get(theirs, "cold", "first_evaluation_s")),
        _row("warm: the same, with the caches an earlier process filled",
             ours["warm"]["first_evaluation_s"], _get(theirs, "warm", "first_evaluation_s")),
        "",
        "Cold: `LADDU_DASK_CACHE` and `NUMBA_CACHE_DIR` point at a new, empty folder, so laddu-dask "
        "generates and compiles every kernel; laddu keeps no compiled code on disk and compiles its JIT "
        "in every process. Warm: a second process given the folder the cold one filled. Each process "
        "finds the Parquet files in the OS page cache.", "",
    ]
    if "fit" in r:
        out += _fit(r["fit"], prov, FVAL_TOLERANCE, SIGMA_TOLERANCE)
    tw = r.get("tensorwaves", {})
    out += _tensorwaves(tw, fe, prov)
    so = r["scheduling_overhead_s"]
    out += [f"Scheduling one evaluation graph whose kernels do nothing costs {seconds(so['pool 8'])} for 8 "
            f"partitions and {seconds(so['pool 64'])} for 64 ({seconds(so['dask 8'])} and "
            f"{seconds(so['dask 64'])} through Dask's threaded scheduler, `Execution(scheduler=\"dask\")`).",
            ""]
    return out


def _fit(f: dict[str, Any], prov: dict[str, Any], fval_tol: float, sigma_tol: float) -> list[str]:
    a, b, st = f["laddu-dask"], f["laddu"], f["settings"]
    iminuit = prov["versions"].get("iminuit", "?")
    out = [
        f"| fit from the displaced start, MIGRAD + HESSE, one driver (median of {st['repeats']}) "
        "| laddu-dask | laddu JIT | ratio |",
        "|---|---|---|---|",
    ]
    if "same_minimum" in f:
        out.append(_row("wall time", a["wall_s"], b["wall_s"]))
    else:
        out.append(f"| wall time | {seconds(a['wall_s'])} | {seconds(b['wall_s'])} | not compared |")
    out += [
        f"| `value_and_gradient` calls | {a['value_and_gradient_calls']} "
        f"| {b['value_and_gradient_calls']} | |",
        f"| `value` calls (line searches and HESSE, at new points) | {a['value_calls']} "
        f"| {b['value_calls']} | |",
        f"| -2 ln L at the minimum | {a['fval']:.6f} | {b['fval']:.6f} | |",
        "",
        f"Both fits run `{st['driver']}`: iminuit {iminuit} MIGRAD (strategy {st['strategy']}, tolerance "
        f"{st['tolerance']}, errordef {st['errordef']} for -2 ln L, the same limits), then HESSE, each "
        "likelihood behind the same cache: one `value_and_gradient` per new point, reused when a value "
        "is asked at that point; a value at a new point is the library's own `value`.",
    ]
    if "same_minimum" in f:
        sm = f["same_minimum"]
        out[-1] += (f" They reach the same minimum: -2 ln L differs by {sm['fval_difference']:.1e} and the "
                    f"parameters by at most {sm['max_parameter_difference_sigma']:.1e} of their errors "
                    f"(`{sm['worst_parameter']}`); the benchmark reports the ratio only within "
                    f"{fval_tol:g} and {sigma_tol:g} sigma.")
    else:
        out[-1] += f" The minima differ, so no ratio is reported: {f['not_comparable']}."
    own = f["laddu_own_fit"]
    out += ["",
            f"laddu's own `Likelihood.fit()` is another algorithm with another stopping rule: "
            f"{own['algorithm']}. From the same start it takes {seconds(own['wall_s'])} "
            f"({own['f_evals']} value and {own['g_evals']} gradient evaluations, \"{own['message']}\") to "
            f"-2 ln L = {own['fval']:.6f} ({own['fval_minus_migrad']:+.1e} from MIGRAD's). Not a "
            "like-for-like comparison, so no ratio is given.", ""]
    return out


def _tensorwaves(tw: dict[str, Any], fe: dict[str, Any], prov: dict[str, Any]) -> list[str]:
    if tw.get("status") != "compared":
        why = f": {tw['reason']}" if "reason" in tw else ""
        return [f"TensorWaves: {tw.get('status', 'not run')}{why}.", ""]
    v = prov["versions"]
    a, ours, theirs = tw["agreement"], tw["laddu_dask_steady_s"], tw["steady_s"]
    first_ours, first_tw = fe["laddu-dask"]["cold"], fe["tensorwaves"]["fresh"]
    unbinned = (f"; it equals TensorWaves' own `UnbinnedNLL` to {a['unbinned_nll_rel']:.1e}"
                if "unbinned_nll_rel" in a else "")
    return [
        "### KsKs: laddu-dask against TensorWaves", "",
        f"| TensorWaves {v.get('tensorwaves', '?')} (JAX {v.get('jax', '?')}), same events, same run "
        "| laddu-dask | TensorWaves | ratio |",
        "|---|---|---|---|",
        _row("`value`", ours["value"], theirs["value"]),
        _row("`value_and_gradient` (one jitted `jax.value_and_grad`)", ours["value+gradient"],
             theirs["value+gradient"]),
        _row("import, fresh process", first_ours["import_s"], first_tw["import_s"]),
        _row("first evaluation, fresh process (laddu-dask cold)", first_ours["first_evaluation_s"],
             first_tw["first_evaluation_s"]),
        "",
        "TensorWaves computes the angles from the four-vectors inside its SymPy expression, and "
        "`create_cached_function` evaluates the parameter-independent parts once per sample, as "
        "laddu-dask prepares a model's event-only part once. Its estimator is TensorWaves' `UnbinnedNLL` "
        f"formula, -ln L normalised by the accepted-MC mean, jitted whole{unbinned}. Before timing, the "
        f"benchmark checks that it is the same likelihood: at {a['points']} parameter points its "
        f"differences times {a['scale']:g} agree with laddu-dask's -2 ln L differences to "
        f"{a['value_difference_rel']:.1e} of the value, and its gradients to "
        f"{a['gradient_difference_rel']:.1e}; a function that does not agree is not timed. JAX compiles "
        "in every process (no persistent compilation cache).", "",
    ]


def _first(r: dict[str, Any]) -> list[str]:
    from laddu_dask.bench.cold_bench import total

    prov = r["provenance"]
    out = ["### Cold start", "",
           "From `import` to the first value and gradient (what a fit asks for first) in fresh "
           f"processes, median of {prov['parameters']['repeats']}, on the 100,000 / 1,000,000-event "
           "KsKs sample. " + run_line(prov, ("laddu", "laddu-dask", "numba")), "",
           "Cold: empty kernel and Numba caches. Warm: the caches a cold process filled. New model: "
           "laddu-dask with the caches another model's process filled, so the Numba helpers every "
           "kernel shares are compiled but this model's kernel is not (what an edit of a model costs); "
           "laddu has no disk cache and is the same in every case. The fused kernel compiles in a child "
           "process, started while the data are prepared; until it is ready the tier-0 kernel evaluates "
           "(the same terms, bit for bit, computed by NumPy), so a first evaluation does not wait for "
           "Numba. Memory: resident memory the process holds after the first evaluation and after its "
           "compilation has finished and been loaded, less before the likelihood was built (data "
           "included).", "",
           "| line shapes, caches | laddu-dask | laddu JIT | ratio | import (ours) | memory added "
           "(ours / laddu) |",
           "|---|---|---|---|---|---|"]
    for ls, fe in r["lineshapes"].items():
        ours, theirs = fe["laddu-dask"], fe.get("laddu", {})
        for kind, label in (("cold", "cold"), ("warm", "warm"), ("edit", "new model")):
            t = theirs.get("cold" if kind == "edit" else kind)
            mine = ours[kind]
            memory = f"{mine['rss_added_mib']:.0f} MiB / " + (f"{t['rss_added_mib']:.0f} MiB" if t else "-")
            out.append(f"| `{ls}`, {label} | {seconds(total(mine))} | {seconds(t and total(t))} "
                       f"| {ratio(_div(total(mine), t and total(t)))} | {seconds(mine['import_s'])} "
                       f"| {memory} |")
    return [*out, ""]


def _models(r: dict[str, Any]) -> list[str]:
    from laddu_dask.bench.model_bench import compile_share

    smp, prov = r["sample"], r["provenance"]
    p = prov["parameters"]
    angles = ", ".join(str(a) for a in smp["pol_angles_deg"])
    out = ["### Polarized Zlm and 3-channel K-matrix: laddu-dask against laddu's JIT", "",
           f"The models of `laddu_dask/bench/models.py`, each written once as a function of the library "
           f"module and built with both: the GlueX `Zlm` amplitudes (S and D waves with m = -1..2, both "
           f"reflectivities, beam polarization; {r['models']['zlm']['free_parameters']} free parameters) "
           "and an S-wave K-matrix of pi+ pi-, K_S K_S and pi0 eta with two poles and P-vector production "
           f"(|F_KK|^2 of the K_S K_S mass; {r['models']['kmatrix']['free_parameters']} free), on "
           f"{smp['data']:,} data and {smp['mc']:,} accepted-MC events of the KsKs sample ({smp['source']}) "
           f"with the polarization added (planes at {angles} degrees, magnitudes uniform in "
           f"{smp['pol_magnitude'][0]}-{smp['pol_magnitude'][1]}). laddu `{r.get('laddu_execution')}`, "
           "laddu-dask's default `Execution()`, f64. " + run_line(prov, ("laddu", "laddu-dask", "numba")), "",
           f"| figure (steady state: median of {p['repeats']} alternating calls; first evaluation: fresh "
           f"processes, median of {p['first_repeats']}) | laddu-dask | laddu JIT | ratio |",
           "|---|---|---|---|"]
    notes = []
    for name, m in r["models"].items():
        title, s = MODEL_TITLES.get(name, name), m["steady_s"]
        ours, theirs = m["first_evaluation"]["laddu-dask"], m["first_evaluation"].get("laddu", {})
        out += [_row(f"{title}: `value`", s["ours"]["value"], _get(s, "theirs", "value")),
                _row(f"{title}: `value_and_gradient`", s["ours"]["value+gradient"],
                     _get(s, "theirs", "value+gradient")),
                _row(f"{title}: first value and gradient, cold (empty caches)",
                     ours["cold"]["first_evaluation_s"], _get(theirs, "cold", "first_evaluation_s")),
                _row(f"{title}: first value and gradient, warm (caches filled)",
                     ours["warm"]["first_evaluation_s"], _get(theirs, "cold", "first_evaluation_s"))]
        a = m.get("agreement")
        agree = (f"values agree with laddu's to {a['value_rel']:.1e} and gradients to "
                 f"{a['gradient_rel']:.1e}; " if a else "")
        share = compile_share(ours)
        warm = (f"; warm, Numba loads it from its cache in {seconds(ours['warm']['compile_s'])}"
                if "compile_s" in ours["warm"] else "")
        runs = m["first_evaluation"]["laddu-dask"].get("runs", {}).get("cold", [])
        if runs and all(run.get("tier0") for run in runs):
            compiled = ("its cold first evaluation ran the tier-0 kernel, while Numba compiled the "
                        "fused kernel in a child process"
                        + (f" ({seconds(ours['cold']['compile_s'])}, reported after the first "
                           "evaluation had returned)" if share is not None else ""))
        elif share is not None:
            compiled = (f"its kernel compiles in {seconds(ours['cold']['compile_s'])} of its "
                        f"{seconds(ours['cold']['first_evaluation_s'])} cold first evaluation "
                        f"({share:.0%}{warm})")
        else:
            compiled = "no kernel compilation over a second was reported"
        notes += [f"{title[0].upper() + title[1:]}: {agree}{compiled}; with the caches filled the "
                  f"first evaluation takes {seconds(ours['warm']['first_evaluation_s'])}, so the cold "
                  f"start costs "
                  f"{seconds(ours['cold']['first_evaluation_s'] - ours['warm']['first_evaluation_s'])} "
                  "more.", ""]
    out += ["", *notes,
            "Cold and warm as in the KsKs tables; laddu compiles its JIT in every process, so both rows "
            "compare with laddu's one figure. The compile time is what laddu-dask's `laddu_dask` logger "
            "reports (Numba compiling the fused value-and-gradient kernel in a child process, started "
            "while the data are read and prepared; until it is done the tier-0 kernel evaluates, with "
            "the same bits, so the first evaluation does not wait for it). The "
            "Zlm intensity is quadratic in its couplings, so laddu-dask's default normalization reduces "
            "the accepted MC to sufficient statistics once, in the first evaluation; the K-matrix's is "
            "not, and every evaluation sums over the accepted MC.", ""]
    return out


def _binned(r: dict[str, Any]) -> list[str]:
    from laddu_dask.bench.ksks_bench import LADDU_FIT

    smp, prov, p = r["sample"], r["provenance"], r["provenance"]["parameters"]
    own, sd, boot = r["own"], r["same_driver"], r["bootstrap"]
    o, t, so, st = own["laddu-dask"], own["laddu"], sd["laddu-dask"], sd["laddu"]
    full = p["bins"] == 30 and p["restarts"] == 20 and smp["mc"] == 1_000_000
    size = ("the issue's full size" if full else
            "scaled down from the issue's 30 bins x 20 restarts on 1,000,000 accepted-MC events")
    mid = sd["middle_bin"]
    same = own["best_per_bin"]["same_minima"]
    sd_same = "best_per_bin" in sd and "not_comparable" not in sd

    def row(label: str, ours: float | None, theirs: float | None, compared: bool = True) -> str:
        return _row(label, ours, theirs) if compared else (
            f"| {label} | {seconds(ours)} | {seconds(theirs)} | not compared |")

    def calls(side: dict[str, Any]) -> int:
        return side["value_calls"] + side["value_and_gradient_calls"]

    per_ours, per_theirs = 1.0 / boot["laddu-dask"]["replicas_per_s"], 1.0 / boot["laddu"]["replicas_per_s"]
    out = ["### Mass-independent analysis: bins x restarts", "",
           f"A mass-independent fit of the KsKs sample ({smp['data']:,} data and {smp['mc']:,} accepted-MC "
           f"events, {smp['source']}) in {p['bins']} bins of the K_S K_S mass from {smp['mass_range'][0]:g} "
           f"to {smp['mass_range'][1]:g} GeV, {p['restarts']} restarts per bin ({o['fits']} fits a side; "
           f"{size}), with the 4-wave angular model of `laddu_dask/bench/models.py` (S fixed, D with m = 0, "
           "1, 2 complex: 6 free parameters; the waves the sample was drawn from, without line shapes). "
           f"laddu `{r['laddu_execution']}`, laddu-dask's default `Execution()`. "
           + run_line(prov, ("laddu", "laddu-dask", "numpy", "numba", "dask", "distributed", "iminuit")), "",
           f"| {p['bins']} bins x {p['restarts']} restarts | laddu-dask | laddu | ratio |",
           "|---|---|---|---|",
           row("each library's own procedure, end to end", o["wall_s"], t["wall_s"], same),
           row(f"the same MIGRAD + HESSE driver, {so['fits']} fits from the same starts", so["wall_s"],
               st["wall_s"], sd_same),
           _row(f"`value`, bin {mid['index']} ({mid['low']:g}-{mid['high']:g} GeV)", so["middle_bin_value_s"],
                st["middle_bin_value_s"]),
           _row(f"`value_and_gradient`, bin {mid['index']}", so["middle_bin_value_and_gradient_s"],
                st["middle_bin_value_and_gradient_s"]),
           _row(f"`bootstrap_fit`, time per replica (bin {boot['bin']}, {boot['laddu-dask']['replicas']} "
                "replicas)", per_ours, per_theirs)]
    c = r.get("cluster")
    if c:
        out.append(row("laddu-dask's own procedure on a 2-process LocalCluster (laddu: locally)", c["wall_s"],
                       t["wall_s"], same))
    bp = own["best_per_bin"]
    out += ["",
            f"Own procedures: laddu's tutorial procedure (`read_parquet`, `bin_by` of data and accepted MC, "
            f"one `NLL` per bin, `fit_restarts({p['restarts']}, seed=)`: {LADDU_FIT}) against "
            f"`ld.fit_bins(..., restarts={p['restarts']})` (MIGRAD + HESSE, starts from "
            "`sample_parameters`), from reading the files to the last fit. Each bin's best -2 ln L "
            f"differs by at most {bp['max_fval_difference']:.1e} between the libraries over "
            f"{bp['bins_compared']} bins"
            + (f" (a ratio is given within {bp['fval_tolerance']:g})." if same else
               f": more than {bp['fval_tolerance']:g}, so no ratio is given."),
            "",
            f"Same driver: both libraries' likelihoods of each bin, prepared, fitted by "
            f"`{sd['settings']['driver']}` (iminuit MIGRAD, strategy {sd['settings']['strategy']}, tolerance "
            f"{sd['settings']['tolerance']}, then HESSE, as in the KsKs table) from the same "
            f"{p['driver_restarts']} starts per bin, alternating fit by fit: the ratio measures the engines. "
            f"{so['valid']} and {st['valid']} of the {so['fits']} fits are valid; of {sd['pairs_compared']} "
            f"pairs from one start, {sd['pairs_at_different_minima']} end at different minima (-2 ln L up to "
            f"{sd['max_pair_fval_difference']:.2g} apart: the bins' likelihoods have several minima, and "
            "rounding differences send a fit from the same start to another one)"
            + (f"; each bin's best fits agree to {sd['best_per_bin']['fval_difference']:.1e} in -2 ln L and "
               f"{sd['best_per_bin']['max_parameter_difference_sigma']:.1e} of an error." if sd_same else
               f"; not compared: {'; '.join(sd.get('not_comparable', []))}."),
            "",
            "| where the time goes | laddu-dask | laddu |", "|---|---|---|",
            f"| preparation: read, bin, build and evaluate once every bin's likelihood | "
            f"{seconds(so['preparation_s'])} | {seconds(st['preparation_s'])} |",
            f"| same driver: `value` / `value_and_gradient` calls | {so['value_calls']:,} / "
            f"{so['value_and_gradient_calls']:,} | {st['value_calls']:,} / "
            f"{st['value_and_gradient_calls']:,} |",
            "| same driver: seconds inside those calls (per call) | "
            f"{seconds(so['evaluations_s'])} ({seconds(so['evaluations_s'] / calls(so))}) | "
            f"{seconds(st['evaluations_s'])} ({seconds(st['evaluations_s'] / calls(st))}) |",
            "| same driver: the rest of the fits (iminuit, the driver) | "
            f"{seconds(so['minimizer_and_driver_s'])} | {seconds(st['minimizer_and_driver_s'])} |",
            f"| own procedure: evaluations | {o['evaluations']:,} (MIGRAD + HESSE) | "
            f"{t['evaluations']['f']:,} values, {t['evaluations']['g']:,} gradients, "
            f"{t['evaluations']['h']:,} Hessians (L-BFGS-B) |",
            f"| own procedure: laddu reading and binning, building the likelihoods | | "
            f"{seconds(t['read_and_bin_s'])}, {seconds(t['build_s'])} |",
            ""]
    if c:
        ts = c["task_stream"]
        bins = r["sample"]["bins"]
        out += [f"On the cluster ({c['workers']} worker processes of {c['threads_per_worker']} thread, "
                f"started in {seconds(c['start_s'])}, not counted) the fits of each bin are one task next "
                "to its data: the worker rebuilds the bin's likelihood from its recipe, reads and prepares "
                f"the bin once and runs its restarts in lockstep. {ts['tasks']} tasks of "
                f"{seconds(ts['mean_task_s'])} on average (one worker thread each), against "
                f"{seconds(o['wall_s'] / bins)} a bin for the whole local run on both cores, reading "
                f"included. The tasks' compute adds up to {seconds(ts['compute_s'])} over "
                f"{seconds(ts['first_start_to_last_stop_s'])} from the first task's start to the last "
                "one's end; the wall time beyond the compute shared by the workers (scheduling, results) "
                f"is {seconds(c['wall_beyond_compute_s'])}. The minima equal the local ones (largest "
                f"-2 ln L difference {c['max_fval_difference_from_local']:.1e}). The bootstrap as tasks "
                "(one replica a task, each preparing its replica's data and the accepted MC): "
                f"{c['bootstrap']['replicas_per_s']:.2f} replicas per second, against "
                f"{boot['laddu-dask']['replicas_per_s']:.2f} locally and "
                f"{boot['laddu']['replicas_per_s']:.2f} for laddu.", ""]
    return out


def _overhead(r: dict[str, Any]) -> list[str]:
    prov = r["provenance"]
    out = ["### Scheduling overhead", "",
           f"Value and gradient of a one-parameter model on partitions of "
           f"{prov['parameters']['events_per_partition']} events, so almost all of it is scheduling; "
           f"median of {prov['parameters']['repeats']}. " + run_line(prov, ("laddu-dask", "dask",
                                                                           "distributed")), "",
           "| partitions | local scheduler | LocalCluster, 2 worker processes |", "|---|---|---|"]
    for n, t in r["local"].items():
        out.append(f"| {n} | {seconds(t)} | {seconds(r['cluster'].get(n))} |")
    return [*out, ""]


def _streaming(r: dict[str, Any]) -> list[str]:
    prov = r["provenance"]
    n = r["events"]
    return [
        "### Streaming", "",
        f"One value-and-gradient evaluation of {n:,} events streamed from Parquet under a "
        f"{r['budget']} host budget (storage: `{r['storage']}`), against pyarrow reading the same three "
        f"columns into NumPy, alternating, median of {prov['parameters']['repeats']}. "
        + run_line(prov, ("laddu-dask", "pyarrow", "numpy", "numba")), "",
        "| | streamed evaluation | pyarrow read | ratio |",
        "|---|---|---|---|",
        _row("time", r["streamed_s"], r["raw_read_s"]),
        f"| events per second | {n / r['streamed_s'] / 1e6:.1f} M | {n / r['raw_read_s'] / 1e6:.1f} M | |",
        "",
    ]


def _cluster(r: dict[str, Any]) -> list[str]:
    from dask.utils import format_bytes

    prov = r["provenance"]
    o, k, b = r["overhead"], r["ksks"], r["rebalance"]
    out = ["### On a LocalCluster", "",
           "Value and gradient on `LocalCluster` worker processes of this machine, against the local "
           "thread pool in the same run (alternating calls, medians of "
           f"{prov['parameters']['ksks_repeats']}). " + run_line(prov, ("laddu-dask", "dask", "distributed",
                                                                    "numba"))
           + f" Two threads of GIL-free NumPy work got {r['available_cores_start']:.2f} cores at the start "
           f"and {r['available_cores_end']:.2f} at the end: that is what the run had of the machine.", "",
           f"One evaluation of an NLL whose data and accepted MC have 8 partitions each (16 events a "
           f"partition, `normalization=\"general\"`: both reduced on the workers, in one call per worker) "
           f"costs {seconds(o['cluster_s'])} on 2 worker processes of 1 thread "
           f"({seconds(o['local_s'])} on the local pool), median of {prov['parameters']['repeats']}.", "",
           "| 100,000 data / 1,000,000 accepted-MC KsKs events, value and gradient | local pool, 2 threads "
           "| cluster | ratio | cores busy on the workers |",
           "|---|---|---|---|---|"]
    for name, row in k.items():
        normalization, layout = name.split(" ")
        workers, threads = layout.split("x")
        what = ("accepted MC from sufficient statistics" if normalization == "auto"
                else "all 1.1 M events reduced")
        out.append(f"| {workers} worker(s) x {threads} thread(s), {what} | {seconds(row['local_s'])} "
                   f"| {seconds(row['cluster_s'])} | {ratio(row['ratio'])} | {row['worker_cores']:.2f} |")
    out += ["",
            f"After `cluster.scale(3)` (the KsKs sample prepared on 2 workers, all events reduced), the "
            f"first evaluation moves the new worker's share, {b['moved_partitions']} of "
            f"{sum(b['partitions'].values())} partitions ({format_bytes(b['moved_bytes'])} of "
            f"{format_bytes(b['resident_bytes'])}), and takes {seconds(b['first_after_scale_s'])} against "
            f"{seconds(b['steady_3_workers_s'])} for the next ones on 3 workers "
            f"({seconds(b['steady_2_workers_s'])} on 2): the rebalance costs "
            f"{seconds(b['rebalance_s'])} once, {seconds(sum(m['seconds'] for m in b['moves']))} of it "
            "moving the partitions and the rest the new worker's first call (it is sent the model and "
            "loads its kernels).", ""]
    return out


def render(folder: str = RESULTS_DIR) -> str:
    """The Benchmarks section (heading included) from the results files in ``folder``."""
    ksks, overhead, streaming, cluster, first, models, binned, generation, closure = (
        read_results(name, folder) for name in FILES)
    lines = [
        HEADING, "",
        "<!-- Rendered by `python3 -m laddu_dask.bench.readme --write` from benchmarks/results/*.json; "
        "tests/test_bench.py fails when this section differs. Do not edit by hand. -->", "",
        "Every figure in this section comes from a results file in `benchmarks/results/`, written by "
        "the benchmark that measured it with the machine, the package versions, the date, the command "
        "and its parameters. Ratios are laddu-dask / competitor (below 1: laddu-dask is faster), both "
        "sides measured in the same run on the same files. Absolute times depend on the machine and "
        "on its load; compare the ratios. To measure again, run the command given with each table, "
        "then `python3 -m laddu_dask.bench.readme --write`.", "",
        *_ksks(ksks), *_first(first), *_models(models), *_binned(binned), *_overhead(overhead),
        *_streaming(streaming), *_cluster(cluster), *_generation(generation), *_closure(closure),
        "`benchmarks/gpu_check.py` is the one-shot check for a GPU machine (see GPUs above).",
    ]
    return "\n".join(_wrap(line) for line in lines) + "\n"


def _wrap(line: str, width: int = 92) -> str:
    """Prose wrapped like the rest of the README; headings, tables and comments as they are."""
    if not line or line.startswith(("#", "|", "<!--")):
        return line
    return textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False)


def section(text: str) -> str:
    """The Benchmarks section of a README's text: from its heading to the next ``## `` or the end.

    Compare it with :func:`render` after stripping trailing newlines (the blank line
    before a following section belongs to neither).
    """
    start = text.index(HEADING + "\n")
    end = text.find("\n## ", start + len(HEADING))
    return text[start:] if end < 0 else text[start:end + 1]


def main(argv: list[str] | None = None) -> int:
    """``python3 -m laddu_dask.bench.readme [--write]``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=RESULTS_DIR, help="folder of the results files")
    ap.add_argument("--write", action="store_true", help=f"replace the section in {README}")
    a = ap.parse_args(argv)
    rendered = render(a.results)
    if not a.write:
        sys.stdout.write(rendered)
        return 0
    from laddu_dask.files import atomic_write

    with open(README) as f:
        text = f.read()
    old = section(text).rstrip("\n")
    with atomic_write(README) as f:
        f.write(text.replace(old, rendered.rstrip("\n"), 1))
    print(f"rewrote the Benchmarks section of {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
