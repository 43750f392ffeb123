"""Per-evaluation overhead on the local scheduler and on a two-process LocalCluster.

The model is ``a * x`` on partitions of 16 events, so an evaluation's time is almost
all scheduling: one task per partition and a tree merge locally; one call per worker
store on the cluster.  Prints the median per evaluation for 8, 64 and 512 partitions
and writes them, with the run's provenance, to ``benchmarks/results/overhead.json``.

Examples
--------
>>> from laddu_dask_bench.overhead_bench import build_parser
>>> build_parser().parse_args(["--repeats", "5"]).repeats
5
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import numpy as np

from laddu_dask_bench.results import RESULTS_DIR, command_line, provenance, write_results


def _time(lik: Any, repeats: int) -> float:
    lik.value_and_gradient([1.0])
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        lik.value_and_gradient([1.0])
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(partitions: tuple[int, ...] = (8, 64, 512), repeats: int = 50, cluster: bool = True,
        results: str | None = None, command: str | None = None) -> dict[str, Any]:
    """Measure and print; returns ``{"local": {n: s}, "cluster": {n: s}, "provenance": ...}``."""
    import laddu_dask as ld

    prov = provenance(command or command_line(), {"partitions": list(partitions), "repeats": repeats,
                                                  "cluster": cluster, "events_per_partition": 16})

    x = ld.scalar("x")
    model = ld.Model(ld.parameter("a", initial=1.0) * x * x + 1.0)
    out: dict[str, Any] = {"provenance": prov, "local": {}, "cluster": {}}

    def lik_for(n_parts: int, execution: Any) -> Any:
        rng = np.random.default_rng(n_parts)
        data = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 16 * n_parts)}, chunk_size=16)
        mc = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 16)}, chunk_size=16)
        return ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)], execution=execution)

    for n in partitions:
        out["local"][n] = _time(lik_for(n, ld.Execution(normalization="general")), repeats)
    if cluster:
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None, silence_logs=50) as lc, Client(lc) as client:
            for n in partitions:
                ex = ld.Execution(client=client, normalization="general")
                out["cluster"][n] = _time(lik_for(n, ex), repeats)
    print(f"{'partitions':>10s} {'local (ms)':>12s} {'LocalCluster, 2 procs (ms)':>28s}")
    for n in partitions:
        c = out["cluster"].get(n)
        print(f"{n:10d} {1e3 * out['local'][n]:12.2f} {'' if c is None else f'{1e3 * c:28.2f}'}")
    if results:
        write_results(results, out)
    return out


def build_parser() -> argparse.ArgumentParser:
    """Options of the overhead benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--no-cluster", action="store_true")
    ap.add_argument("--results", default=os.path.join(RESULTS_DIR, "overhead.json"))
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``benchmarks/bench_overhead.py``."""
    a = build_parser().parse_args(argv)
    run(repeats=a.repeats, cluster=not a.no_cluster, results=a.results)
    return 0
