"""Evaluations on a LocalCluster: per-evaluation cost, the KsKs sample, a rebalance.

Three measurements, each on fresh ``LocalCluster`` worker processes of this machine:

* ``overhead``: value and gradient of an NLL whose data and accepted MC have 8
  partitions of 16 events each (``normalization="general"``: both are reduced event by
  event), on 2 worker processes of 1 thread; almost all of it is the round trip of one
  call per worker.  Median of ``repeats``, with the local thread pool's for reference.
* ``ksks``: value and gradient of the 100,000 / 1,000,000 event KsKs sample
  (:func:`laddu_dask_bench.ksks_bench.make_sample`) on 1 worker x 2 threads and on 2
  workers x 1 thread, against the local thread pool with 2 threads, alternating calls
  (medians), with the default normalization (the accepted MC from sufficient
  statistics) and with ``normalization="general"`` (all 1.1 M events reduced); and the
  cores the worker processes were busy during the cluster's calls.
* ``rebalance``: the KsKs sample prepared (``general``) on 2 workers, then
  ``cluster.scale(3)``: the first evaluation after the new worker joined moves its
  share of the partitions to it; the moves (partitions, bytes, seconds) and that
  evaluation's time, against a steady one on 3 workers (their difference is the cost
  of the rebalance).

The cores two threads of GIL-free NumPy work get in this process, at the start and at
the end, say how much of the machine the run had (:func:`available_cores`).  Writes
``benchmarks/results/cluster.json``.

Examples
--------
>>> from laddu_dask_bench.cluster_bench import build_parser
>>> build_parser().parse_args(["--repeats", "5"]).repeats
5
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from laddu_dask_bench.results import RESULTS_DIR, ROOT, command_line, provenance, write_results


def _median(fn: Callable[[], Any], repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _alternating(a: Callable[[], Any], b: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """Medians of ``a`` and ``b`` called in turn (the same load for both)."""
    a(), b()
    ta, tb = [], []
    for _ in range(repeats):
        for fn, out in ((a, ta), (b, tb)):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb)


def available_cores(seconds: float = 1.0) -> float:
    """Cores two threads of GIL-free NumPy work get in this process now (2.0 on a free machine
    of two cores or more; less where other work shares it)."""
    import threading

    import psutil

    def sort() -> None:
        a = np.random.default_rng(0).random(1_000_000)
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            np.sort(a)

    me = psutil.Process()
    c0, t0 = sum(me.cpu_times()[:2]), time.perf_counter()
    threads = [threading.Thread(target=sort) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (sum(me.cpu_times()[:2]) - c0) / (time.perf_counter() - t0)


def _cluster(n_workers: int, threads: int) -> Any:
    from distributed import Client, LocalCluster

    lc = LocalCluster(n_workers=n_workers, threads_per_worker=threads, processes=True,
                      dashboard_address=":0", silence_logs=50)
    return lc, Client(lc)


#: Blocks of ``repeats`` evaluations the overhead is measured in (their medians' median).
OVERHEAD_BLOCKS = 5


def _blocks(fn: Callable[[], Any], repeats: int) -> tuple[float, list[float]]:
    """The median of :data:`OVERHEAD_BLOCKS` medians of ``repeats`` calls each, and those
    medians (one median right after a cluster starts moves by 1.5x between runs)."""
    medians = [_median(fn, repeats) for _ in range(OVERHEAD_BLOCKS)]
    return statistics.median(medians), medians


def overhead(repeats: int) -> dict[str, Any]:
    """Per-evaluation seconds of the 8 + 8 partition NLL: local pool and 2-process cluster."""
    import laddu_dask as ld

    x = ld.scalar("x")
    model = ld.Model(ld.parameter("a", initial=1.0) * x * x + 1.0)
    rng = np.random.default_rng(8)
    data = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 128)}, chunk_size=16)
    mc = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 128)}, chunk_size=16)

    def lik(execution: Any) -> Any:
        return ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)], execution=execution)

    local = lik(ld.Execution(normalization="general"))
    out: dict[str, Any] = {}
    out["local_s"], out["local_blocks_s"] = _blocks(lambda: local.value_and_gradient([1.0]), repeats)
    lc, client = _cluster(2, 1)
    try:
        remote = lik(ld.Execution(client=client, normalization="general"))
        out["cluster_s"], out["cluster_blocks_s"] = _blocks(lambda: remote.value_and_gradient([1.0]), repeats)
    finally:
        client.close()
        lc.close()
    return out


def _ksks_likelihood(paths: dict[str, str], execution: Any) -> Any:
    import laddu_dask as ld
    from laddu_dask import ksks

    data = ld.read_parquet(paths["data"])
    mc = ld.read_parquet(paths["accmc"])
    return ld.Likelihood([ld.NLL(ksks.model(), data=data, accepted_mc=mc)], execution=execution)


def _point() -> np.ndarray:
    from laddu_dask import ksks

    return np.array([ksks.TRUTH[n] for n in ksks.TRUTH]) * 1.01


def _worker_cores(client: Any, fn: Callable[[], Any], repeats: int) -> float:
    """CPU seconds of all worker processes over the wall time of ``repeats`` calls of ``fn``."""
    import psutil

    procs = [psutil.Process(pid) for pid in client.run(os.getpid).values()]

    def cpu() -> float:
        return sum(sum(pr.cpu_times()[:2]) for pr in procs)

    c0, t0 = cpu(), time.perf_counter()
    for _ in range(repeats):
        fn()
    return (cpu() - c0) / (time.perf_counter() - t0)


def ksks_layouts(paths: dict[str, str], repeats: int) -> dict[str, Any]:
    """KsKs value+gradient: local pool (2 threads) against 1x2 and 2x1 clusters, alternating."""
    import laddu_dask as ld

    p = _point()
    out: dict[str, Any] = {}
    for normalization in ("auto", "general"):
        local = _ksks_likelihood(paths, ld.Execution(num_workers=2, normalization=normalization))
        for n_workers, threads in ((1, 2), (2, 1)):
            lc, client = _cluster(n_workers, threads)
            try:
                remote = _ksks_likelihood(paths, ld.Execution(client=client, normalization=normalization))
                if remote.value_and_gradient(p)[0] != local.value_and_gradient(p)[0]:
                    raise AssertionError("the cluster and the local pool disagree")
                t_local, t_remote = _alternating(partial(local.value_and_gradient, p),
                                                 partial(remote.value_and_gradient, p), repeats)
                cores = _worker_cores(client, partial(remote.value_and_gradient, p), repeats)
            finally:
                client.close()
                lc.close()
            out[f"{normalization} {n_workers}x{threads}"] = {
                "local_s": t_local, "cluster_s": t_remote, "ratio": t_remote / t_local,
                "worker_cores": cores}
    return out


def rebalance(paths: dict[str, str], repeats: int) -> dict[str, Any]:
    """The evaluation after ``scale(3)`` (it moves the new worker's share) and its moves."""
    import laddu_dask as ld

    p = _point()
    lc, client = _cluster(2, 1)
    try:
        ex = ld.Execution(client=client, normalization="general")
        lik = _ksks_likelihood(paths, ex)
        steady_2 = _median(lambda: lik.value_and_gradient(p), repeats)
        lc.scale(3)
        client.wait_for_workers(3, timeout=120)
        time.sleep(1.0)  # the new worker's announcement reaches the client
        t0 = time.perf_counter()
        lik.value_and_gradient(p)
        first = time.perf_counter() - t0
        steady_3 = _median(lambda: lik.value_and_gradient(p), repeats)
        moves = list(getattr(ex.runner, "moves", []))
        prepared = lik.terms[0].prepare(ex)
    finally:
        client.close()
        lc.close()
    return {"steady_2_workers_s": steady_2, "first_after_scale_s": first, "steady_3_workers_s": steady_3,
            "rebalance_s": first - steady_3, "moves": moves,
            "moved_bytes": sum(m["bytes"] for m in moves),
            "moved_partitions": sum(m["partitions"] for m in moves),
            "partitions": {"data": prepared.data.stats.batches, "accepted_mc": prepared.mc.stats.batches},
            "resident_bytes": prepared.data.stats.resident_bytes + prepared.mc.stats.resident_bytes}


def run(repeats: int = 50, ksks_repeats: int = 10, outdir: str | None = None, results: str | None = None,
        parts: tuple[str, ...] = ("overhead", "ksks", "rebalance"), command: str | None = None
        ) -> dict[str, Any]:
    """Measure and print; returns what :func:`write_results` records."""
    from laddu_dask_bench.ksks_bench import make_sample

    outdir = outdir or os.path.join(ROOT, "bench-data")
    prov = provenance(command or command_line(), {"repeats": repeats, "ksks_repeats": ksks_repeats,
                                                  "parts": list(parts)})
    out: dict[str, Any] = {"provenance": prov, "available_cores_start": available_cores()}
    if "overhead" in parts:
        out["overhead"] = overhead(repeats)
        print(f"NLL 8+8 partitions: local {1e3 * out['overhead']['local_s']:.2f} ms, "
              f"2-process cluster {1e3 * out['overhead']['cluster_s']:.2f} ms", flush=True)
    paths = make_sample(outdir, 100_000, 1_000_000) if {"ksks", "rebalance"} & set(parts) else {}
    if "ksks" in parts:
        out["ksks"] = ksks_layouts(paths, ksks_repeats)
        for name, r in out["ksks"].items():
            print(f"KsKs {name}: local {1e3 * r['local_s']:.1f} ms, cluster {1e3 * r['cluster_s']:.1f} ms "
                  f"({r['ratio']:.2f}x), workers busy {r['worker_cores']:.2f} cores", flush=True)
    if "rebalance" in parts:
        out["rebalance"] = r = rebalance(paths, ksks_repeats)
        print(f"scale(3): first evaluation {1e3 * r['first_after_scale_s']:.1f} ms, moved "
              f"{r['moved_partitions']} partitions ({r['moved_bytes']} bytes), "
              f"steady {1e3 * r['steady_3_workers_s']:.1f} ms on 3 workers, "
              f"{1e3 * r['steady_2_workers_s']:.1f} ms on 2", flush=True)
    out["available_cores_end"] = available_cores()
    print(f"two GIL-free threads got {out['available_cores_start']:.2f} cores at the start, "
          f"{out['available_cores_end']:.2f} at the end", flush=True)
    if results:
        write_results(results, out)
    return out


def build_parser() -> argparse.ArgumentParser:
    """Options of the cluster benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=50, help="evaluations per overhead median")
    ap.add_argument("--ksks-repeats", type=int, default=10, help="alternating KsKs calls per median")
    ap.add_argument("--parts", default="overhead,ksks,rebalance")
    ap.add_argument("--outdir", default=None, help="where the KsKs sample is (default: bench-data/)")
    ap.add_argument("--results", default=os.path.join(RESULTS_DIR, "cluster.json"))
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``benchmarks/bench_cluster.py``."""
    a = build_parser().parse_args(argv)
    run(repeats=a.repeats, ksks_repeats=a.ksks_repeats, outdir=a.outdir, results=a.results or None,
        parts=tuple(a.parts.split(",")))
    return 0
