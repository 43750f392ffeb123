"""Benchmarks-page renderers of the runtime benchmarks: the mass-independent analysis (bins x
restarts), the scheduling overhead, streaming and the LocalCluster (``binned.json``,
``overhead.json``, ``streaming.json``, ``cluster.json``).

Examples
--------
>>> from laddu_dask_bench.readme_runtime import overhead_lines
>>> prov = {"parameters": {"events_per_partition": 16, "repeats": 5}, "command": "c",
...         "date": "2026-01-01", "machine": {"cpu": "x", "cores": 2, "memory_bytes": 2**30},
...         "versions": {"python": "3.11"}}
>>> overhead_lines({"provenance": prov, "local": {"8": 0.001}, "cluster": {}})[-2]
'| 8 | 1.00 ms | n/a |'
"""

from __future__ import annotations

from typing import Any

from laddu_dask_bench.readme_format import ratio, run_line, seconds, table_row


def binned_lines(r: dict[str, Any]) -> list[str]:
    from laddu_dask_bench.ksks_bench import LADDU_FIT

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
        return table_row(label, ours, theirs) if compared else (
            f"| {label} | {seconds(ours)} | {seconds(theirs)} | not compared |")

    def calls(side: dict[str, Any]) -> int:
        return side["value_calls"] + side["value_and_gradient_calls"]

    per_ours, per_theirs = 1.0 / boot["laddu-dask"]["replicas_per_s"], 1.0 / boot["laddu"]["replicas_per_s"]
    out = ["### Mass-independent analysis: bins x restarts", "",
           f"A mass-independent fit of the KsKs sample ({smp['data']:,} data and {smp['mc']:,} accepted-MC "
           f"events, {smp['source']}) in {p['bins']} bins of the K_S K_S mass from {smp['mass_range'][0]:g} "
           f"to {smp['mass_range'][1]:g} GeV, {p['restarts']} restarts per bin ({o['fits']} fits a side; "
           f"{size}), with the 4-wave angular model of `benchmarks/laddu_dask_bench/models.py` (S fixed, D "
           "with m = 0, 1, 2 complex: 6 free parameters; the waves the sample was drawn from, without line "
           "shapes). "
           f"laddu `{r['laddu_execution']}`, laddu-dask's default `Execution()`. "
           + run_line(prov, ("laddu", "laddu-dask", "numpy", "numba", "dask", "distributed", "iminuit")), "",
           f"| {p['bins']} bins x {p['restarts']} restarts | laddu-dask | laddu | ratio |",
           "|---|---|---|---|",
           row("each library's own procedure, end to end", o["wall_s"], t["wall_s"], same),
           *_small_row(r.get("own_small"), row),
           row(f"the same MIGRAD + HESSE driver, {so['fits']} fits from the same starts", so["wall_s"],
               st["wall_s"], sd_same),
           table_row(f"`value`, bin {mid['index']} ({mid['low']:g}-{mid['high']:g} GeV)",
                     so["middle_bin_value_s"], st["middle_bin_value_s"]),
           table_row(f"`value_and_gradient`, bin {mid['index']}", so["middle_bin_value_and_gradient_s"],
                     st["middle_bin_value_and_gradient_s"]),
           table_row(f"`bootstrap_fit`, time per replica (bin {boot['bin']}, "
                     f"{boot['laddu-dask']['replicas']} replicas)", per_ours, per_theirs)]
    c = r.get("cluster")
    if c:
        runs = len(c.get("walls_s", [c["wall_s"]]))
        out.append(row("laddu-dask's own procedure on a 2-process LocalCluster (laddu: locally"
                       + (f"; the fastest of {runs} runs" if runs > 1 else "") + ")", c["wall_s"],
                       t["wall_s"], same))
    bp = own["best_per_bin"]
    out += ["",
            f"Own procedures: laddu's tutorial procedure (`read_parquet`, `bin_by` of data and accepted MC, "
            f"one `NLL` per bin, `fit_restarts({p['restarts']}, seed=)`: {LADDU_FIT}) against "
            f"`ld.fit_bins(..., restarts={p['restarts']})` (its default: laddu's L-BFGS-B and stopping "
            "rules, each bin's restarts in lockstep, then the Hessian from exact gradients; starts from "
            "`sample_parameters`), from reading the files to the last fit"
            + (f" (the fastest of {p['own_repeats']} alternating runs of each)" if p.get("own_repeats", 1) > 1
               else "") + ". Each bin's best -2 ln L "
            f"differs by at most {bp['max_fval_difference']:.1e} between the libraries over "
            f"{bp['bins_compared']} bins"
            + (f" (a ratio is given within {bp['fval_tolerance']:g})." if same else
               f": more than {bp['fval_tolerance']:g}, so no ratio is given."),
            "",
            f"Same driver: both libraries' likelihoods of each bin, prepared, fitted by "
            f"`{sd['settings']['driver']}` (iminuit MIGRAD, strategy {sd['settings']['strategy']}, tolerance "
            f"{sd['settings']['tolerance']}, then Minuit's own HESSE for both, as in the KsKs table) "
            "from the same "
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
            f"| own procedure: evaluations | {o['evaluations']:,} (L-BFGS-B, Hessians' points included) | "
            f"{t['evaluations']['f']:,} values, {t['evaluations']['g']:,} gradients, "
            f"{t['evaluations']['h']:,} Hessians (L-BFGS-B) |",
            f"| own procedure: laddu reading and binning, building the likelihoods | | "
            f"{seconds(t['read_and_bin_s'])}, {seconds(t['build_s'])} |",
            *_per_fit_rows(r), ""]
    if c:
        ts = c["task_stream"]
        bins = r["sample"]["bins"]
        out += [f"On the cluster ({c['workers']} worker processes of {c['threads_per_worker']} thread, "
                f"started in {seconds(c['start_s'])}, not counted) the bins are dealt to at most "
                "`laddu-dask.analysis.tasks-per-thread` tasks per worker thread: each task rebuilds its "
                "bins' likelihoods from their recipes, reads the files once for all its bins, prepares "
                f"each bin once and runs its restarts in lockstep. {ts['tasks']} tasks of "
                f"{seconds(ts['mean_task_s'])} on average (one worker thread each), against "
                f"{seconds(o['wall_s'] / bins)} a bin for the whole local run on both cores, reading "
                f"included. The tasks' compute adds up to {seconds(ts['compute_s'])} over "
                f"{seconds(ts['first_start_to_last_stop_s'])} from the first task's start to the last "
                "one's end; the wall time beyond the compute shared by the workers (scheduling, results) "
                f"is {seconds(c['wall_beyond_compute_s'])}. The minima equal the local ones (largest "
                f"-2 ln L difference {c['max_fval_difference_from_local']:.1e}). The bootstrap as tasks "
                "(one task per worker thread: each rebuilds the bin's likelihood from its recipe, reads "
                "and prepares its data and accepted MC once, then fits its share of the replicas in "
                "lockstep; locally the replicas run in lockstep on the prepared accepted MC): "
                f"{c['bootstrap']['replicas_per_s']:.2f} replicas per second, against "
                f"{boot['laddu-dask']['replicas_per_s']:.2f} locally and "
                f"{boot['laddu']['replicas_per_s']:.2f} for laddu.", ""]
    return out


def _small_row(small: dict[str, Any] | None, row: Any) -> list[str]:
    """The smaller analysis's row of the binned table (none when it was not run)."""
    if not small:
        return []
    label = f"each library's own procedure, {small['bins']} bins x {small['restarts']} restarts"
    ours, theirs = small["laddu-dask"]["wall_s"], small["laddu"]["wall_s"]
    return [row(label, ours, theirs, small["best_per_bin"]["same_minima"])]


def _per_fit_rows(r: dict[str, Any]) -> list[str]:
    """Evaluations per fit of each method, and the fixed cost of one small evaluation."""
    from laddu_dask_bench.binned_bench import evaluations_per_fit

    out = [f"| evaluations per fit, {method} | {ours:.1f} | {theirs:.1f} |"
           for method, (ours, theirs) in evaluations_per_fit(r).items()]
    for method, fixed in r.get("fixed_cost", {}).items():
        out.append(f"| fixed cost of one `{method}` (1,000 and 10,000 KsKs events, extrapolated to none) | "
                   f"{seconds(fixed['laddu-dask_s'])} | {seconds(fixed['laddu_s'])} |")
    return out


def overhead_lines(r: dict[str, Any]) -> list[str]:
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


def streaming_lines(r: dict[str, Any]) -> list[str]:
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
        table_row("time", r["streamed_s"], r["raw_read_s"]),
        f"| events per second | {n / r['streamed_s'] / 1e6:.1f} M | {n / r['raw_read_s'] / 1e6:.1f} M | |",
        "",
    ]


def disk_tier_lines(r: dict[str, Any]) -> list[str]:
    """The disk tier against memory, source streaming and the two raw reads
    (``benchmarks/results/disk_tier.json``)."""
    prov, t = r["provenance"], r["seconds"]
    n = r["events"]
    return [
        "### The disk tier", "",
        f"One value-and-gradient evaluation of {n:,} KsKs accepted-MC events (the event loop, "
        f"`normalization=\"general\"`), the accepted MC resident, on the disk tier "
        f"({r['disk_files']} files, {r['disk_bytes'] / 2**20:.0f} MiB) or streamed from Parquet under a "
        f"{r['budget']} host budget, against pyarrow reading the {r['columns']} columns streaming reads "
        f"and against reading the disk tier's files from the page cache; alternating, median of "
        f"{prov['parameters']['repeats']}. Same bits in all three storages: "
        f"{'yes' if r['bitwise_equal'] else 'NO'}. "
        + run_line(prov, ("laddu-dask", "pyarrow", "numpy", "numba")),
        "",
        "| run | time | |",
        "|---|---|---|",
        f"| resident | {seconds(t['resident'])} | |",
        f"| disk tier | {seconds(t['disk'])} | {ratio(r['disk_over_page_cache'])} the page-cache read "
        f"(goal: at most 2x) |",
        f"| page-cache read of the disk tier's files | {seconds(t['page_cache'])} | |",
        f"| streaming from Parquet | {seconds(t['streaming'])} | {r['streaming_over_disk']:.1f}x the disk "
        f"tier (goal: at least 5x); {ratio(r['streaming_over_pyarrow'])} pyarrow's read (goal: at most 2x) |",
        f"| pyarrow read of the same columns | {seconds(t['pyarrow'])} | |",
        "",
    ]


def _blocks_text(o: dict[str, Any], repeats: int) -> str:
    """How the overhead figure was taken: one median, or the median of block medians."""
    blocks = o.get("cluster_blocks_s")
    if not blocks:
        return f"median of {repeats}"
    return (f"the median of {len(blocks)} medians of {repeats} evaluations each (on the cluster "
            f"{seconds(min(blocks))} to {seconds(max(blocks))})")


def cluster_lines(r: dict[str, Any]) -> list[str]:
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
           f"({seconds(o['local_s'])} on the local pool), " + _blocks_text(o, prov['parameters']['repeats'])
           + ".", "",
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
