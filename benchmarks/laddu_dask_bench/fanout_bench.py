"""Fan-out: what one cluster evaluation costs the client as the workers grow, flat and as a tree.

A tiny NLL (dispatch and merge, not kernels: 128 partitions of 64 events for the data and
for the accepted MC, ``normalization="general"`` so that both are reduced on the workers) is
evaluated (``value_and_gradient``) on a ``LocalCluster`` of worker processes of one thread,
scaled to each of ``--workers`` (4, 16, 32, 64) in turn. At each size it alternates blocks
of ``--evals`` evaluations with the flat fan-in (the client calls every worker) and the
tree (``laddu-dask.cluster.fan-in`` = ``--fan-in``), ``--blocks`` times, and keeps each
mode's median block. Measured per evaluation: the client's CPU time (the thread time of the
evaluating thread, where the calls leave and the replies are merged: the scheduler, in the
same process, is not counted) and the wall time, and the calls the client made.

The model (:func:`model`), fitted on these figures:

* client CPU per evaluation = ``c0 + c1 * calls``: ``c1`` is the cost of one call and its
  reply to the caller (the per-child cost a parent pays too), from a least-squares line
  through the flat runs of at most ``--fit-max-workers`` workers (32: beyond, this machine
  runs more than 16 processes per core, and the client's own CPU time grows with them);
* a hop (one level of the tree) adds ``h``, one call's round trip: the flat wall time at the
  smallest size less its client CPU;
* so the dispatch and merge of one evaluation on ``N`` workers (their kernels aside) takes
  ``depth * (fan_in * c1 + h)`` of wall time with ``depth = ceil(log_fan_in N)``, and costs
  the client ``c0 + c1 * min(N, fan_in)`` of CPU, whatever the events.

On this 2-core machine every worker process competes for the same two cores, so the
measured wall times grow with the workers for that reason alone; the model's wall time is
that of workers with cores of their own. ``python3 benchmarks/bench_fanout.py`` runs it and
writes ``benchmarks/results/fanout.json``.

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
    ap.add_argument("--model-fan-in", type=int, nargs="+", default=[8, 16, 32],
                    help="fan-ins the model predicts for")
    ap.add_argument("--fit-max-workers", type=int, default=32,
                    help="the largest size the model's line is fitted on")
    ap.add_argument("--results", default=os.path.join(RESULTS_DIR, "fanout.json"))
    return ap


def _likelihood(execution: Any) -> Any:
    import laddu_dask as ld

    rng = np.random.default_rng(11)
    x = ld.scalar("x")
    model = ld.Model((ld.complex(ld.parameter("a", initial=1.0), ld.parameter("b", initial=0.2)) * x
                      + ld.complex(x, 1.0)).norm_sqr())
    n = PARTITIONS * EVENTS_PER_PARTITION
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


def run(workers: list[int], fan_in: int, evals: int, blocks: int, predict: list[int],
        model_fan_in: list[int], results: str | None, fit_max: int = 32) -> dict[str, Any]:
    """Measure every size (see the module); the results as a dict, written to ``results``."""
    import dask
    import distributed

    import laddu_dask as ld

    parameters = {"workers": workers, "fan_in": fan_in, "evals": evals, "blocks": blocks,
                  "partitions": PARTITIONS, "events_per_partition": EVENTS_PER_PARTITION,
                  "fit_max_workers": fit_max, "predict": predict, "model_fan_in": model_fan_in}
    prov = provenance(command_line(), parameters, ("distributed",))
    rows = []
    with distributed.LocalCluster(n_workers=workers[0], threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=50, memory_limit=0) as cluster, \
            distributed.Client(cluster) as client:
        lik = _likelihood(ld.Execution(client=client, normalization="general"))
        for n in workers:
            started = time.perf_counter()
            cluster.scale(n)
            client.wait_for_workers(n, timeout=900)
            for _ in range(20):  # the new workers take their partitions (moves), kernels load
                lik.value_and_gradient([1.0, 0.2])
            held = len({w for w in client.who_has().values() for w in w})
            print(f"{n} workers ({time.perf_counter() - started:.0f} s to start and balance; "
                  f"{held} hold data)", flush=True)
            per_mode: dict[str, list[tuple[float, float, float]]] = {"flat": [], "tree": []}
            for _ in range(blocks):
                for mode, fi in (("flat", 1 << 20), ("tree", fan_in)):
                    with dask.config.set({"laddu-dask.cluster.fan-in": fi}):
                        per_mode[mode].append(_block(lik, evals))
            for mode, got in per_mode.items():
                cpu = statistics.median(g[0] for g in got)
                wall = statistics.median(g[1] for g in got)
                row = {"workers": n, "mode": mode, "fan_in": None if mode == "flat" else fan_in,
                       "client_cpu_s": cpu, "wall_s": wall,
                       "client_calls": statistics.median(g[2] for g in got)}
                rows.append(row)
                print(f"  {mode:5s} client CPU {1e3 * cpu:7.3f} ms, wall {1e3 * wall:8.3f} ms, "
                      f"{row['client_calls']:.0f} calls per evaluation", flush=True)
    out = {"provenance": prov, "rows": rows}
    out["model"] = model(rows, predict, model_fan_in, fit_max)
    flat = {r["workers"]: r["client_cpu_s"] for r in rows if r["mode"] == "flat"}
    tree = {r["workers"]: r["client_cpu_s"] for r in rows if r["mode"] == "tree"}
    if 4 in flat and 32 in tree:
        out["cpu_32_over_4"] = {"flat": flat[32] / flat[4], "tree": tree[32] / tree[4]} if 32 in flat else {}
    print("model:", out["model"]["fit"])
    for p in out["model"]["predictions"]:
        print(f"  {p['workers']:5d} workers, fan-in {p['fan_in']:3d}: "
              f"client CPU {1e3 * p['client_cpu_s']:.2f} ms "
              f"(flat {1e3 * p['flat_client_cpu_s']:.1f} ms), dispatch and merge {1e3 * p['wall_s']:.2f} ms "
              f"({p['depth']} levels)")
    if results:
        write_results(results, out)
    return out


def model(rows: list[dict[str, Any]], predict: list[int], fan_ins: list[int],
          fit_max: int = 32) -> dict[str, Any]:
    """The fitted model (see the module) and its predictions.

    Examples
    --------
    >>> rows = [{"mode": "flat", "workers": n, "client_cpu_s": 1e-3 + 2e-4 * n, "wall_s": 2e-3 + 2e-4 * n}
    ...         for n in (4, 16)]
    >>> m = model(rows, [256], [16])
    >>> round(m["fit"]["c1_s"], 9), round(m["fit"]["h_s"], 9), m["predictions"][0]["depth"]
    (0.0002, 0.001, 2)
    """
    flat = sorted((r for r in rows if r["mode"] == "flat" and r["workers"] <= fit_max),
                  key=lambda r: r["workers"])
    n = np.array([r["workers"] for r in flat], dtype=float)
    cpu = np.array([r["client_cpu_s"] for r in flat])
    c1, c0 = np.polyfit(n, cpu, 1)
    h = max(flat[0]["wall_s"] - flat[0]["client_cpu_s"], 0.0)
    predictions = []
    for size in predict:
        for f in fan_ins:
            depth = tree_depth(size, f)
            predictions.append({"workers": size, "fan_in": f, "depth": depth,
                                "client_cpu_s": float(c0 + c1 * min(size, f)),
                                "flat_client_cpu_s": float(c0 + c1 * size),
                                "wall_s": float(depth * (f * c1 + h))})
    return {"fit": {"c0_s": float(c0), "c1_s": float(c1), "h_s": float(h), "fit_max_workers": fit_max},
            "predictions": predictions}


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
           "merge, on a `LocalCluster` of worker processes of one thread scaled to each size; blocks of "
           f"{p['evals']} `value_and_gradient` calls alternate the flat fan-in (the client calls every "
           f"worker) and the tree (`laddu-dask.cluster.fan-in` = {p['fan_in']}), median of {p['blocks']} "
           "blocks each. Client CPU: the evaluating thread's CPU time (the calls leave from it and the "
           "replies are merged there). Measured on this 2-core machine, where every worker process "
           "competes for the same two cores, so the wall time grows with the workers for that reason too. "
           + run_line(prov, ("laddu-dask", "dask", "distributed")), "",
           "**Measured**", "",
           "| workers | mode | client calls per evaluation | client CPU | wall |", "|---|---|---|---|---|"]
    for row in r["rows"]:
        mode = "flat" if row["mode"] == "flat" else f"tree (fan-in {row['fan_in']})"
        out.append(f"| {row['workers']} | {mode} | {row['client_calls']:.0f} | {ms(row['client_cpu_s'])} "
                   f"| {ms(row['wall_s'])} |")
    fit = r["model"]["fit"]
    out += ["", f"**Modelled** (`laddu_dask_bench.fanout_bench.model`): client CPU per evaluation "
                f"{ms(fit['c0_s'])} + {ms(fit['c1_s'])} per call the client makes (a least-squares line "
                f"through the flat runs of at most {fit['fit_max_workers']} workers; the per-child cost a "
                f"parent pays too), a hop {ms(fit['h_s'])} "
                "(the flat wall time at the smallest size less its client CPU); the dispatch and merge of an "
                "evaluation then take depth x (fan-in x per-call + hop) of wall time on workers with cores "
                "of their own, whatever the number of events (a 100M-event NLL's kernels come on top).", "",
            "| workers | fan-in | levels | client CPU (tree) | client CPU (flat) "
            "| dispatch and merge (tree) |",
            "|---|---|---|---|---|---|"]
    for pr in r["model"]["predictions"]:
        out.append(f"| {pr['workers']:,} | {pr['fan_in']} | {pr['depth']} | {ms(pr['client_cpu_s'])} "
                   f"| {ms(pr['flat_client_cpu_s'])} | {ms(pr['wall_s'])} |")
    return [*out, ""]


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``benchmarks/bench_fanout.py``."""
    a = build_parser().parse_args(argv)
    run(a.workers, a.fan_in, a.evals, a.blocks, a.predict, a.model_fan_in, a.results, a.fit_max_workers)
    return 0
