"""Fan-out: what one cluster evaluation costs the client as the workers grow, flat and as a tree.

**Measured: the table.** A tiny NLL (dispatch and merge, not kernels: 128 partitions of 64
events for the data and for the accepted MC, ``normalization="general"`` so that both are
reduced on the workers) is evaluated (``value_and_gradient``) on a ``LocalCluster`` of worker
processes of one thread, scaled to each of ``--workers`` (4, 16, 32, 64) in turn. At each size
it alternates blocks of ``--evals`` evaluations with the flat fan-in (the client calls every
worker) and the tree (``laddu-dask.cluster.fan-in`` = ``--fan-in``), ``--blocks`` times, and
keeps each mode's median block. Measured per evaluation: the client's CPU time (the thread
time of the evaluating thread, where the calls leave and the replies are merged: the
scheduler, in the same process, is not counted) and the wall time, and the calls the client
made. On this 2-core machine every worker process competes for the same two cores (and each
worker reduces 128 / N partitions per job), so these wall times grow with the workers for
those reasons too: they are not what the model below is built from.

**Measured: the hop runs.** The same NLL with one partition per worker (for the data and for
the MC), on ``--hop-workers`` (1 and 2) workers, flat: at most two processes are busy at a
time on this machine's two cores, and each worker's share is fixed and small. Then the
validation: ``--validate`` workers (3, one partition each) flat and as a tree of fan-in 2
(two levels below the client: the client calls two workers, one of which calls the third).

**Modelled** (:func:`model`, fitted on these figures; the partitions' kernels are not in it: a
100M-event NLL's come on top):

* client CPU per evaluation = ``c0 + c1 * calls``: ``c1`` is the cost of one call and its
  reply to the caller (the per-child cost, which a parent in the tree pays too), from a
  least-squares line through the table's flat runs of at most ``--fit-max-workers``
  workers (32: beyond, this machine runs more than 16 processes per core, and the client's
  own CPU time grows with them); ``c0`` is the client's fixed cost of an evaluation of the
  128-partition NLL;
* a hop ``h`` (one level of the tree: the round trip of one call besides the caller's CPU,
  the callee's handling of its small share included) = the wall time less the client CPU of
  the hop runs (their mean), where each worker has a core;
* so one evaluation on ``N`` workers takes ``c0 + depth * (fan_in * c1 + h)`` of wall time
  with ``depth = ceil(log_fan_in N)`` (the flat fan-in: ``depth`` 1 and ``fan_in`` = ``N``),
  and costs the client ``c0 + c1 * min(N, fan_in)`` of CPU, whatever the events;
* validated against the validation runs, with the tiny NLL's own ``c0`` (the hop runs'
  client CPU less ``c1`` per call): predicted and measured wall time, side by side.

``python3 benchmarks/bench_fanout.py`` runs it and writes ``benchmarks/results/fanout.json``.

Examples
--------
>>> tree_depth(256, 16), tree_depth(1024, 16), tree_depth(16, 16), tree_depth(4, 16)
(2, 3, 1, 1)
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import numpy as np

from laddu_dask_bench.results import RESULTS_DIR, command_line, provenance, write_results

__all__ = ["build_parser", "main", "model", "readme_lines", "run", "tree_depth"]

PARTITIONS = 128
EVENTS_PER_PARTITION = 64


def tree_depth(n: int, fan_in: int) -> int:
    """Levels of calls below the client for ``n`` workers (1: the flat fan-in)."""
    depth, reach = 1, fan_in
    while reach < n:
        reach *= fan_in
        depth += 1
    return depth


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[4, 16, 32, 64])
    ap.add_argument("--fan-in", type=int, default=4, help="the tree's fan-in (the flat one calls all)")
    ap.add_argument("--evals", type=int, default=40, help="evaluations per block")
    ap.add_argument("--blocks", type=int, default=3, help="blocks per mode and size")
    ap.add_argument("--predict", type=int, nargs="+", default=[256, 1024], help="sizes the model predicts")
    ap.add_argument("--model-fan-in", type=int, nargs="+", default=[4, 8, 16, 32],
                    help="fan-ins the model predicts for")
    ap.add_argument("--fit-max-workers", type=int, default=32,
                    help="the largest size the model's line is fitted on")
    ap.add_argument("--hop-workers", type=int, nargs="+", default=[1, 2],
                    help="workers of the hop runs (one partition each, flat)")
    ap.add_argument("--validate", type=int, nargs=2, default=[3, 2], metavar=("WORKERS", "FAN_IN"),
                    help="the validation's workers (one partition each) and tree fan-in")
    ap.add_argument("--hop-evals", type=int, default=200, help="evaluations per block of the hop runs")
    ap.add_argument("--hop-blocks", type=int, default=5, help="blocks per mode of the hop runs")
    ap.add_argument("--results", default=os.path.join(RESULTS_DIR, "fanout.json"))
    return ap


def _likelihood(execution: Any, partitions: int = PARTITIONS) -> Any:
    import laddu_dask as ld

    rng = np.random.default_rng(11)
    x = ld.scalar("x")
    model = ld.Model((ld.complex(ld.parameter("a", initial=1.0), ld.parameter("b", initial=0.2)) * x
                      + ld.complex(x, 1.0)).norm_sqr())
    n = partitions * EVENTS_PER_PARTITION
    data = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0.1, 1.0, n)}, chunk_size=EVENTS_PER_PARTITION)
    mc = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0.0, 1.0, n)}, chunk_size=EVENTS_PER_PARTITION)
    return ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc, name="fanout")], execution=execution)


def _block(lik: Any, evals: int) -> tuple[float, float, float]:
    """Client CPU (this thread's), wall time and client calls per evaluation over ``evals``."""
    runner = lik.execution.runner
    point = np.array([0.9, 0.3])
    calls0, cpu0, wall0 = runner.calls, time.thread_time(), time.perf_counter()
    for _ in range(evals):
        lik.value_and_gradient(point)
    cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
    return cpu / evals, wall / evals, (runner.calls - calls0) / evals


def _modes(fan_in: int | None, blocks: int, evals: int, lik: Any) -> dict[str, tuple[float, float, float]]:
    """Blocks of the flat fan-in and of the tree (of ``fan_in``; None: flat only) alternated;
    each mode's medians (CPU, wall, calls)."""
    import dask

    modes = (("flat", 1 << 20),) + ((("tree", fan_in),) if fan_in else ())
    got: dict[str, list[tuple[float, float, float]]] = {mode: [] for mode, _ in modes}
    for _ in range(blocks):
        for mode, fi in modes:
            with dask.config.set({"laddu-dask.cluster.fan-in": fi}):
                got[mode].append(_block(lik, evals))
    return {mode: tuple(statistics.median(g[k] for g in blocks_) for k in range(3))  # type: ignore[misc]
            for mode, blocks_ in got.items()}


def _cluster(n: int) -> Any:
    import distributed

    return distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                    dashboard_address=None, silence_logs=50, memory_limit=0)


def _settle(client: Any, cluster: Any, lik: Any, n: int) -> int:
    """Scale to ``n`` workers, let them take their partitions and finish compiling their
    kernels; the workers holding data.

    Until a worker's fused kernel is compiled (a child process, in the background) it
    evaluates with the tier-0 kernel and the compiler takes one of the two cores: the first
    2-3 s of evaluations then take about three times as long. The figures are of the
    evaluations that follow, as a fit's are."""
    from laddu_dask.runtime.compilations import wait_compilations

    cluster.scale(n)
    client.wait_for_workers(n, timeout=900)
    for _ in range(20):  # the new workers take their partitions (moves), kernels load
        lik.value_and_gradient([1.0, 0.2])
    client.run(wait_compilations, 600.0)
    wait_compilations(600.0)
    for _ in range(20):
        lik.value_and_gradient([1.0, 0.2])
    return len({w for w in client.who_has().values() for w in w})


def hop_runs(hop_workers: list[int], validate: tuple[int, int], evals: int,
             blocks: int) -> list[dict[str, Any]]:
    """The hop runs and the validation (see the module): the tiny NLL with one partition per
    worker, on a fresh cluster per size; each row's ``role`` says which."""
    import distributed

    import laddu_dask as ld

    rows = []
    sizes = [(n, None, "hop") for n in hop_workers] + [(*validate, "validation")]
    for n, fi, role in sizes:
        with _cluster(n) as cluster, distributed.Client(cluster) as client:
            lik = _likelihood(ld.Execution(client=client, normalization="general"), partitions=n)
            held = _settle(client, cluster, lik, n)
            for mode, (cpu, wall, calls) in _modes(fi, blocks, evals, lik).items():
                rows.append({"role": role, "workers": n, "partitions": n, "mode": mode,
                             "fan_in": None if mode == "flat" else fi, "client_cpu_s": cpu,
                             "wall_s": wall, "client_calls": calls, "workers_holding_data": held,
                             "load_1min": round(os.getloadavg()[0], 2)})
                print(f"hop run: {n} workers ({held} hold data), {mode:4s} client CPU {1e3 * cpu:6.3f} ms, "
                      f"wall {1e3 * wall:6.3f} ms, {calls:.0f} calls", flush=True)
    return rows


def run(workers: list[int], fan_in: int, evals: int, blocks: int, predict: list[int],
        model_fan_in: list[int], results: str | None, fit_max: int = 32,
        hop_workers: tuple[int, ...] = (1, 2), validate: tuple[int, int] = (3, 2), hop_evals: int = 200,
        hop_blocks: int = 5) -> dict[str, Any]:
    """Measure every size (see the module); the results as a dict, written to ``results``."""
    import distributed

    import laddu_dask as ld

    parameters = {"workers": workers, "fan_in": fan_in, "evals": evals, "blocks": blocks,
                  "partitions": PARTITIONS, "events_per_partition": EVENTS_PER_PARTITION,
                  "fit_max_workers": fit_max, "predict": predict, "model_fan_in": model_fan_in,
                  "hop_workers": list(hop_workers), "validate": list(validate), "hop_evals": hop_evals,
                  "hop_blocks": hop_blocks}
    prov = provenance(command_line(), parameters, ("distributed",))
    hops = hop_runs(list(hop_workers), validate, hop_evals, hop_blocks)
    rows = []
    with _cluster(workers[0]) as cluster, distributed.Client(cluster) as client:
        lik = _likelihood(ld.Execution(client=client, normalization="general"))
        for n in workers:
            started = time.perf_counter()
            held = _settle(client, cluster, lik, n)
            print(f"{n} workers ({time.perf_counter() - started:.0f} s to start and balance; "
                  f"{held} hold data)", flush=True)
            for mode, (cpu, wall, calls) in _modes(fan_in, blocks, evals, lik).items():
                rows.append({"workers": n, "mode": mode, "fan_in": None if mode == "flat" else fan_in,
                             "client_cpu_s": cpu, "wall_s": wall, "client_calls": calls})
                print(f"  {mode:5s} client CPU {1e3 * cpu:7.3f} ms, wall {1e3 * wall:8.3f} ms, "
                      f"{calls:.0f} calls per evaluation", flush=True)
    out = {"provenance": prov, "rows": rows, "hop_rows": hops}
    out["model"] = model(rows, hops, predict, model_fan_in, fit_max)
    flat = {r["workers"]: r["client_cpu_s"] for r in rows if r["mode"] == "flat"}
    tree = {r["workers"]: r["client_cpu_s"] for r in rows if r["mode"] == "tree"}
    if 4 in flat and 32 in tree:
        out["cpu_32_over_4"] = {"flat": flat[32] / flat[4], "tree": tree[32] / tree[4]} if 32 in flat else {}
    print("model:", out["model"]["fit"])
    for v in out["model"]["validation"]:
        print(f"  validation: {v['workers']} workers {v['mode']} (fan-in {v['fan_in']}, {v['depth']} "
              f"levels): predicted {1e3 * v['predicted_wall_s']:.3f} ms, "
              f"measured {1e3 * v['measured_wall_s']:.3f} ms")
    for p in out["model"]["predictions"]:
        print(f"  {p['workers']:5d} workers, fan-in {p['fan_in']:3d}: "
              f"client CPU {1e3 * p['client_cpu_s']:.2f} ms (flat {1e3 * p['flat_client_cpu_s']:.1f} ms), "
              f"wall {1e3 * p['wall_s']:.2f} ms ({p['depth']} levels)")
    if results:
        write_results(results, out)
    return out


def _wall(c0: float, c1: float, h: float, n: int, fan_in: int) -> tuple[int, float]:
    """The model's levels and wall time of one evaluation on ``n`` workers."""
    depth = tree_depth(n, fan_in)
    return depth, c0 + depth * (min(fan_in, n) * c1 + h)


def model(rows: list[dict[str, Any]], hop_rows: list[dict[str, Any]], predict: list[int],
          fan_ins: list[int], fit_max: int = 32) -> dict[str, Any]:
    """The fitted model (see the module), its validation and its predictions.

    Examples
    --------
    >>> rows = [{"mode": "flat", "workers": n, "client_cpu_s": 1e-3 + 2e-4 * n, "wall_s": 9.0}
    ...         for n in (4, 16)]
    >>> hops = [{"role": "hop", "mode": "flat", "workers": 1, "fan_in": None, "client_calls": 1.0,
    ...          "client_cpu_s": 6e-4, "wall_s": 1.6e-3},
    ...         {"role": "validation", "mode": "tree", "workers": 3, "fan_in": 2, "client_calls": 2.0,
    ...          "client_cpu_s": 8e-4, "wall_s": 3.7e-3}]
    >>> m = model(rows, hops, [256], [16])
    >>> [round(m["fit"][k], 9) for k in ("c0_s", "c1_s", "h_s", "hop_c0_s")]
    [0.001, 0.0002, 0.001, 0.0004]
    >>> v = m["validation"][0]
    >>> v["depth"], round(v["predicted_wall_s"], 9), v["measured_wall_s"]
    (2, 0.0032, 0.0037)
    >>> p = m["predictions"][0]
    >>> p["depth"], round(p["wall_s"], 9), round(p["client_cpu_s"], 9)
    (2, 0.0094, 0.0042)
    """
    flat = sorted((r for r in rows if r["mode"] == "flat" and r["workers"] <= fit_max),
                  key=lambda r: r["workers"])
    fitted = np.polyfit([r["workers"] for r in flat], [r["client_cpu_s"] for r in flat], 1)
    c1, c0 = (float(x) for x in fitted)
    hops = [r for r in hop_rows if r["role"] == "hop"]
    h = float(np.mean([r["wall_s"] - r["client_cpu_s"] for r in hops]))
    hop_c0 = float(np.mean([r["client_cpu_s"] - c1 * r["client_calls"] for r in hops]))
    validation = []
    for r in hop_rows:
        if r["role"] != "validation":
            continue
        fi = r["fan_in"] or r["workers"]
        depth, wall = _wall(hop_c0, c1, h, r["workers"], fi)
        validation.append({"workers": r["workers"], "mode": r["mode"], "fan_in": fi, "depth": depth,
                           "predicted_wall_s": wall, "measured_wall_s": r["wall_s"],
                           "predicted_client_cpu_s": hop_c0 + c1 * r["client_calls"],
                           "measured_client_cpu_s": r["client_cpu_s"]})
    predictions = []
    for size in predict:
        for f in fan_ins:
            depth, wall = _wall(c0, c1, h, size, f)
            predictions.append({"workers": size, "fan_in": f, "depth": depth,
                                "client_cpu_s": c0 + c1 * min(size, f), "flat_client_cpu_s": c0 + c1 * size,
                                "below_client_s": wall - c0, "wall_s": wall})
    return {"fit": {"c0_s": c0, "c1_s": c1, "h_s": h, "hop_c0_s": hop_c0, "fit_max_workers": fit_max,
                    "hop_workers": sorted({r["workers"] for r in hops})},
            "validation": validation, "predictions": predictions}


def readme_lines(r: dict[str, Any]) -> list[str]:
    """The README's lines for a ``fanout.json`` result."""
    from laddu_dask_bench.readme_format import run_line

    prov = r["provenance"]
    p = prov["parameters"]

    def ms(t: float) -> str:
        return f"{1e3 * t:.2f} ms"

    out = ["### Fan-out: one evaluation on 4 to 64 workers, flat and as a tree", "",
           f"A tiny NLL ({p['partitions']} partitions of {p['events_per_partition']} events for the data and "
           "for the accepted MC, both reduced on the workers), so that an evaluation is its dispatch and "
           "merge, on a `LocalCluster` of worker processes of one thread scaled to each size (measured "
           "once the workers' kernels are compiled); blocks of "
           f"{p['evals']} `value_and_gradient` calls alternate the flat fan-in (the client calls every "
           f"worker) and the tree (`laddu-dask.cluster.fan-in` = {p['fan_in']}), median of {p['blocks']} "
           "blocks each. Client CPU: the evaluating thread's CPU time (the calls leave from it and the "
           "replies are merged there). Measured on this 2-core machine, where every worker process "
           "competes for the same two cores, so the wall time grows with the workers for that reason too "
           "(the model below is not fitted on it). "
           + run_line(prov, ("laddu-dask", "dask", "distributed"), own_processes=max(p["workers"])), "",
           "**Measured**", "",
           "| workers | mode | client calls per evaluation | client CPU | wall |", "|---|---|---|---|---|"]
    for row in r["rows"]:
        mode = "flat" if row["mode"] == "flat" else f"tree (fan-in {row['fan_in']})"
        out.append(f"| {row['workers']} | {mode} | {row['client_calls']:.0f} | {ms(row['client_cpu_s'])} "
                   f"| {ms(row['wall_s'])} |")
    ratio = r.get("cpu_32_over_4")
    if ratio:
        out += ["", f"Client CPU at 32 workers over that at 4: {ratio['tree']:.2f}x with the tree, "
                    f"{ratio['flat']:.2f}x flat (goal: at most 2x)."]
    fit = r["model"]["fit"]
    hop_loads = ", ".join(f"{h['load_1min']:.2f}" for h in r["hop_rows"])
    out += ["", f"**Measured: hops** (the same NLL with one partition per worker, so that at most two "
                f"processes are busy at a time on the two cores: medians of {p['hop_blocks']} blocks of "
                f"{p['hop_evals']} evaluations; 1-minute load average after each: {hop_loads})", "",
            "| workers | mode | client calls per evaluation | client CPU | wall | wall less client CPU |",
            "|---|---|---|---|---|---|"]
    for row in r["hop_rows"]:
        mode = "flat" if row["mode"] == "flat" else f"tree (fan-in {row['fan_in']})"
        out.append(f"| {row['workers']} | {mode} | {row['client_calls']:.0f} | {ms(row['client_cpu_s'])} "
                   f"| {ms(row['wall_s'])} | {ms(row['wall_s'] - row['client_cpu_s'])} |")
    hop_sizes = " and ".join(str(n) for n in fit["hop_workers"])
    out += ["", f"**Modelled** (`laddu_dask_bench.fanout_bench.model`, dispatch and merge only: a 100M-event "
                f"NLL's kernels come on top): client CPU per evaluation c0 + c1 per call the client makes, "
                f"c1 = {ms(fit['c1_s'])} and c0 = {ms(fit['c0_s'])} (a least-squares line through the "
                f"measured flat runs of at most {fit['fit_max_workers']} workers; c1 is the per-child cost "
                f"a parent pays too); a hop h = {ms(fit['h_s'])} (the wall time less the client CPU of the "
                f"hop runs on {hop_sizes} worker(s), where each worker has a core: a call's round trip "
                "besides the caller's CPU, the worker's handling of its small share included). An "
                "evaluation then takes c0 + levels x (fan-in x c1 + h) of wall time on workers with "
                "cores of their own, whatever the number of events.", "",
            f"**Validation** (the model against a measured tree that this machine runs with at most two "
            f"processes busy at a time; c0 there is the one-partition-per-worker NLL's own, "
            f"{ms(fit['hop_c0_s'])}: the hop runs' client CPU less c1 per call)", "",
            "| workers | mode | levels | wall (modelled) | wall (measured) | client CPU (modelled) "
            "| client CPU (measured) |", "|---|---|---|---|---|---|---|"]
    for v in r["model"]["validation"]:
        mode = "flat" if v["mode"] == "flat" else f"tree (fan-in {v['fan_in']})"
        out.append(f"| {v['workers']} | {mode} | {v['depth']} | {ms(v['predicted_wall_s'])} "
                   f"| {ms(v['measured_wall_s'])} | {ms(v['predicted_client_cpu_s'])} "
                   f"| {ms(v['measured_client_cpu_s'])} |")
    out += ["", "**Modelled: predictions**", "",
            "| workers | fan-in | levels | client CPU (tree) | client CPU (flat) "
            "| levels x (fan-in x c1 + h) | wall (with c0) |",
            "|---|---|---|---|---|---|---|"]
    for pr in r["model"]["predictions"]:
        out.append(f"| {pr['workers']:,} | {pr['fan_in']} | {pr['depth']} | {ms(pr['client_cpu_s'])} "
                   f"| {ms(pr['flat_client_cpu_s'])} | {ms(pr['below_client_s'])} | {ms(pr['wall_s'])} |")
    at_256 = [pr for pr in r["model"]["predictions"] if pr["workers"] == 256]
    if at_256:
        best = min(at_256, key=lambda pr: pr["wall_s"])
        out += ["", f"At 256 workers the modelled wall time is {ms(best['wall_s'])} at best (fan-in "
                    f"{best['fan_in']}; goal: at most 10 ms)."]
    return [*out, ""]


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``benchmarks/bench_fanout.py``."""
    a = build_parser().parse_args(argv)
    run(a.workers, a.fan_in, a.evals, a.blocks, a.predict, a.model_fan_in, a.results, a.fit_max_workers,
        tuple(a.hop_workers), tuple(a.validate), a.hop_evals, a.hop_blocks)
    return 0
