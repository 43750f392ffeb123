"""Benchmarks-page renderers of the benchmarks against laddu's JIT and TensorWaves: the KsKs
tables (steady state, first evaluation, fit, TensorWaves), the cold start and the
polarized Zlm / K-matrix models (``bench_ksks.json``, ``first_eval.json``, ``models.json``).

Examples
--------
>>> from laddu_dask_bench.readme_laddu import MODEL_TITLES
>>> MODEL_TITLES["zlm"]
'polarized Zlm'
"""

from __future__ import annotations

from typing import Any

from laddu_dask_bench.readme_format import div, get, ratio, run_line, seconds, table_row

#: How the README names the benchmark models of :mod:`laddu_dask_bench.models`.
MODEL_TITLES = {"zlm": "polarized Zlm", "kmatrix": "3-channel K-matrix"}


def ksks_lines(r: dict[str, Any]) -> list[str]:
    from laddu_dask_bench.compare import FVAL_TOLERANCE, SIGMA_TOLERANCE

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
        table_row("`value`, 10 free parameters", s["ours"]["value"], get(s, "theirs", "value")),
        table_row("`value_and_gradient`, 10 free parameters", s["ours"]["value+gradient"],
             get(s, "theirs", "value+gradient")),
        table_row("`value`, line shapes fixed (6 free)", f["ours"]["value"], get(f, "theirs", "value")),
        table_row("`value_and_gradient`, line shapes fixed", f["ours"]["value+gradient"],
             get(f, "theirs", "value+gradient")),
        "",
    ]
    fe = r["first_evaluation"]
    ours, theirs = fe["laddu-dask"], fe.get("laddu", {})
    out += [
        f"| first evaluation in a fresh process (median of {fe['repeats']}) "
        "| laddu-dask | laddu JIT | ratio |",
        "|---|---|---|---|",
        table_row("import", ours["cold"]["import_s"], get(theirs, "cold", "import_s")),
        table_row("cold: read, prepare, compile, value and gradient once (empty caches)",
             ours["cold"]["first_evaluation_s"], get(theirs, "cold", "first_evaluation_s")),
        table_row("warm: the same, with the caches an earlier process filled",
             ours["warm"]["first_evaluation_s"], get(theirs, "warm", "first_evaluation_s")),
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
        out.append(table_row("wall time", a["wall_s"], b["wall_s"]))
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
        f"{st['tolerance']}, errordef {st['errordef']} for -2 ln L, the same limits), then "
        "Minuit's own HESSE (`hessian=\"minuit\"`: laddu's likelihood has no K-point evaluation "
        "for the one from exact gradients), each "
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
        table_row("`value`", ours["value"], theirs["value"]),
        table_row("`value_and_gradient` (one jitted `jax.value_and_grad`)", ours["value+gradient"],
             theirs["value+gradient"]),
        table_row("import, fresh process", first_ours["import_s"], first_tw["import_s"]),
        table_row("first evaluation, fresh process (laddu-dask cold)", first_ours["first_evaluation_s"],
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


def first_eval_lines(r: dict[str, Any]) -> list[str]:
    from laddu_dask_bench.cold_bench import total

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
                       f"| {ratio(div(total(mine), t and total(t)))} | {seconds(mine['import_s'])} "
                       f"| {memory} |")
    return [*out, ""]


def models_lines(r: dict[str, Any]) -> list[str]:
    from laddu_dask_bench.model_bench import compile_share

    smp, prov = r["sample"], r["provenance"]
    p = prov["parameters"]
    angles = ", ".join(str(a) for a in smp["pol_angles_deg"])
    out = ["### Polarized Zlm and 3-channel K-matrix: laddu-dask against laddu's JIT", "",
           "The models of `benchmarks/laddu_dask_bench/models.py`, each written once as a function of the "
           "library module and built with both: the GlueX `Zlm` amplitudes (S and D waves with m = -1..2, "
           "both "
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
        out += [table_row(f"{title}: `value`", s["ours"]["value"], get(s, "theirs", "value")),
                table_row(f"{title}: `value_and_gradient`", s["ours"]["value+gradient"],
                     get(s, "theirs", "value+gradient")),
                table_row(f"{title}: first value and gradient, cold (empty caches)",
                     ours["cold"]["first_evaluation_s"], get(theirs, "cold", "first_evaluation_s")),
                table_row(f"{title}: first value and gradient, warm (caches filled)",
                     ours["warm"]["first_evaluation_s"], get(theirs, "cold", "first_evaluation_s"))]
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
