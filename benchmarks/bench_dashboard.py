#!/usr/bin/env python3
"""Cost of showing evaluations on the dashboard (laddu_dask.runtime.dashboard), on vs off.

A stand-in of a cluster evaluation: one direct call per worker (a worker handler that
does nothing but, when on, call ``record_worker_evaluation``), the calls to both workers of
a two-process ``LocalCluster`` (dashboard on) in parallel, then, when on,
``record_client_evaluation`` on the client. The modes alternate in blocks, so drift of the
machine's load falls on all of them alike; prints the median and mean per evaluation of
each mode, the median over cycles of a block's median minus the "off" block's of its cycle,
the cost of one call of each function, and writes them with the run's provenance to
``benchmarks/results/dashboard.json``.

Usage: ``python3 benchmarks/bench_dashboard.py [--blocks 100] [--block 25]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

MODES = ("off", "worker", "client", "both")
LABEL = "bench nll"


def _standin(worker, record: bool = False) -> int:
    """The per-evaluation call on a worker: no work, then the worker-side note when on."""
    t0 = time.perf_counter()
    if record:
        from laddu_dask.runtime.dashboard import record_worker_evaluation

        record_worker_evaluation(worker, LABEL, time.perf_counter() - t0, 1000)
    return 0


def _install(dask_worker) -> None:
    def laddu_dask_standin(record: bool = False) -> int:
        return _standin(dask_worker, record)

    dask_worker.handlers["laddu_dask_standin"] = laddu_dask_standin


def _worker_call_cost(dask_worker, n: int) -> float:
    """Seconds per call of record_worker_evaluation on a worker (median of 5 runs of n)."""
    from laddu_dask.runtime.dashboard import record_worker_evaluation

    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            record_worker_evaluation(dask_worker, "call cost", 1e-3, 1000)
        runs.append((time.perf_counter() - t0) / n)
    return statistics.median(runs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--blocks", type=int, default=100, help="blocks of each mode")
    ap.add_argument("--block", type=int, default=25, help="evaluations per block")
    ap.add_argument("--results", default=None, help="results file (default: benchmarks/results/)")
    args = ap.parse_args(argv)

    from distributed import Client, LocalCluster

    from laddu_dask.runtime.dashboard import record_client_evaluation
    from laddu_dask_bench.results import RESULTS_DIR, command_line, provenance, write_results

    prov = provenance(command_line(), {"blocks": args.blocks, "block": args.block, "workers": 2,
                                       "threads_per_worker": 1, "dashboard": True})
    times: dict[str, list[float]] = {m: [] for m in MODES}
    medians: dict[str, list[float]] = {m: [] for m in MODES}  # per block
    number = 0
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
                      silence_logs=50) as cluster, Client(cluster) as client:
        client.run(_install)
        addrs = sorted(client.scheduler_info()["workers"])

        async def evaluate(record: bool) -> list[int]:
            return await asyncio.gather(*(client.rpc(a).laddu_dask_standin(record=record) for a in addrs))

        for _ in range(50):  # warm the connections
            client.sync(evaluate, False)
        for _ in range(args.blocks):
            for mode in MODES:
                block = []
                for _ in range(args.block):
                    t0 = time.perf_counter()
                    client.sync(evaluate, mode in ("worker", "both"))
                    if mode in ("client", "both"):
                        number += 1
                        record_client_evaluation(client, LABEL, number, 1.0, time.perf_counter() - t0)
                    block.append(time.perf_counter() - t0)
                times[mode].extend(block)
                medians[mode].append(statistics.median(block))
        time.sleep(0.5)
        shown = sum(r["key"].startswith("laddu-dask-bench-nll") for r in client.get_task_stream())
        n = 10_000
        worker_call = statistics.median(client.run(_worker_call_cost, n=n, workers=[a])[a] for a in addrs)
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            for i in range(n):
                record_client_evaluation(client, "call cost", i, 1.0, 1e-3)
            runs.append((time.perf_counter() - t0) / n)
        client_call = statistics.median(runs)

    median = {m: statistics.median(v) for m, v in times.items()}
    mean = {m: statistics.fmean(v) for m, v in times.items()}
    # each block against the "off" block of its own cycle, so the machine's drift cancels
    added = {m: statistics.median(a - b for a, b in zip(medians[m], medians["off"])) for m in MODES[1:]}
    out = {"provenance": prov, "median_seconds": median, "mean_seconds": mean,
           "added_seconds": added,
           "call_seconds": {"record_worker_evaluation": worker_call, "record_client_evaluation": client_call},
           "task_stream_records": shown}
    print(f"{'mode':>8s} {'median':>10s} {'mean':>10s} {'added (paired blocks)':>22s}")
    for m in MODES:
        print(f"{m:>8s} {1e6 * median[m]:7.1f} us {1e6 * mean[m]:7.1f} us {1e6 * added.get(m, 0.0):19.1f} us")
    print(f"one call: record_worker_evaluation {1e6 * worker_call:.2f} us, "
          f"record_client_evaluation {1e6 * client_call:.2f} us")
    print(f"Task Stream records of the timed evaluations: {shown}")
    write_results(args.results or os.path.join(RESULTS_DIR, "dashboard.json"), out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
