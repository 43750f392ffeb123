"""The disk tier against memory, source streaming and the raw reads, on one large sample.

Writes (once) an accepted-MC sample of N K_S K_S events (the toy's own sample repeated)
in row groups of 65,536 rows, then times, in one process and alternating, one
``value_and_gradient`` of the K_S K_S NLL (its accepted-MC sum by the event loop,
``normalization="general"``, so every evaluation passes over all N events) with the
accepted MC

* ``resident`` (prepared once, kept in memory),
* ``disk`` (prepared once, kept in laddu-dask's files on the local disk, mapped back each
  evaluation),
* ``streaming`` (re-read from the Parquet file and re-prepared each evaluation),

and the two floors: pyarrow reading the columns the model reads and the weights (what
source streaming must at least do) and reading the disk tier's files from the page cache into memory
(what the disk tier must at least do).  Prints the times and the ratios of the issue's
goals and writes them, with the run's provenance, to ``benchmarks/results/disk_tier.json``.

Examples
--------
>>> from laddu_dask_bench.disk_tier_bench import build_parser
>>> build_parser().parse_args(["--events", "1000"]).events
1000
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import tempfile
import time
from typing import Any

import numpy as np

from laddu_dask_bench.results import RESULTS_DIR, command_line, provenance, write_results

GROUP = 65_536


def write_sample(folder: str, n: int) -> dict[str, str]:
    """The K_S K_S data (20,000 events) and an accepted MC of ``n`` events (the toy's
    200,000 repeated) under ``folder``; written once."""
    import pyarrow.parquet as pq

    from laddu_dask import ksks
    from laddu_dask.files import atomic_path

    small = os.path.join(folder, "small")
    paths = {"data": os.path.join(small, "data.parquet"), "accmc": os.path.join(folder, f"accmc-{n}.parquet")}
    if not os.path.exists(paths["data"]):
        ksks.write_sample(small, n_data=20_000, n_mc=200_000, seed=7)
    if not os.path.exists(paths["accmc"]):
        base = pq.read_table(os.path.join(small, "accmc.parquet"))
        with atomic_path(paths["accmc"]) as tmp, pq.ParquetWriter(tmp, base.schema) as writer:
            for start in range(0, n, len(base)):
                writer.write_table(base.slice(0, min(len(base), n - start)), row_group_size=GROUP)
    return paths


def read_files(paths: list[str]) -> int:
    """Read ``paths`` whole into one reused buffer (the page cache's floor); returns bytes."""
    size = max((os.path.getsize(p) for p in paths), default=0)
    buffer = bytearray(size)
    total = 0
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            total += f.readinto(buffer)
    return total


def run(events: int = 10_000_000, repeats: int = 3, folder: str = "bench-data", budget: str = "2 GiB",
        results: str | None = None, command: str | None = None) -> dict[str, Any]:
    """Measure; returns the figures."""
    import dask
    import pyarrow.parquet as pq

    import laddu_dask as ld
    from laddu_dask import ksks

    out: dict[str, Any] = {"provenance": provenance(
        command or command_line(), {"events": events, "repeats": repeats, "budget": budget})}
    os.makedirs(folder, exist_ok=True)
    paths = write_sample(os.path.abspath(folder), events)
    model = ksks.model("bw")
    data = ld.read_parquet(paths["data"])
    tier = tempfile.mkdtemp(prefix="disk-tier-", dir=os.path.abspath(folder))
    point = None
    liks, values = {}, {}
    with dask.config.set({"laddu-dask.disk.directory": tier, "laddu-dask.disk.budget": None}):
        for policy in ("resident", "disk", "streaming"):
            memory = None if policy == "resident" else ld.MemoryPlan(host=budget)
            ex = ld.Execution(memory=memory, normalization="general")
            mc = ld.read_parquet(paths["accmc"], memory_policy=policy)
            t0 = time.perf_counter()
            liks[policy] = lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)], execution=ex)
            point = [ksks.TRUTH[name] * 1.02 for name in lik.parameter_names]
            values[policy] = lik.value_and_gradient(point)
            out[f"{policy}_first_s"] = time.perf_counter() - t0  # preparation and first evaluation
            out[f"{policy}_decision"] = ex.memory_decisions()[-1].reason
    same = all(values[p][0] == values["resident"][0] and np.array_equal(values[p][1], values["resident"][1])
               for p in values)
    files = sorted(glob.glob(os.path.join(tier, "*", "*.ldprep")))
    columns = [*ld.CompiledModel.from_expr(model).columns, "weight"]  # what streaming reads
    runs: dict[str, list[float]] = {k: [] for k in ("resident", "disk", "streaming", "pyarrow", "page_cache")}
    for _ in range(repeats):
        for policy, lik in liks.items():
            t0 = time.perf_counter()
            lik.value_and_gradient(point)
            runs[policy].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        table = pq.read_table(paths["accmc"], columns=columns)
        arrays = [table.column(k).to_numpy() for k in columns]
        runs["pyarrow"].append(time.perf_counter() - t0)
        del table, arrays
        t0 = time.perf_counter()
        disk_bytes = read_files(files)
        runs["page_cache"].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in runs.items()}
    out.update(events=events, budget=budget, bitwise_equal=same, disk_files=len(files), disk_bytes=disk_bytes,
               columns=len(columns), seconds=med, runs_s=runs,
               disk_over_page_cache=med["disk"] / med["page_cache"],
               streaming_over_disk=med["streaming"] / med["disk"],
               streaming_over_pyarrow=med["streaming"] / med["pyarrow"],
               disk_over_resident=med["disk"] / med["resident"])
    print(f"{events:,} accepted-MC events; host budget {budget} for disk and streaming; "
          f"same bits in all three: {same}")
    for key in ("resident", "disk", "streaming", "pyarrow", "page_cache"):
        print(f"  {key:<10} {med[key] * 1e3:9.1f} ms")
    print(f"disk / page-cache read of its {disk_bytes / 2**20:.0f} MiB: {out['disk_over_page_cache']:.2f}x "
          f"(goal <= 2); streaming / disk: {out['streaming_over_disk']:.1f}x (goal >= 5); "
          f"streaming / pyarrow read of {len(columns)} columns: {out['streaming_over_pyarrow']:.2f}x "
          f"(goal <= 2)")
    if results:
        write_results(results, out)
    return out


def build_parser() -> argparse.ArgumentParser:
    """Options of the disk-tier benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--folder", default="bench-data")
    ap.add_argument("--budget", default="2 GiB")
    ap.add_argument("--results", default=os.path.join(RESULTS_DIR, "disk_tier.json"))
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``benchmarks/bench_disk_tier.py``."""
    a = build_parser().parse_args(argv)
    run(a.events, a.repeats, a.folder, a.budget, a.results)
    return 0
