"""Streaming throughput: one evaluation of a streamed sample against the raw Parquet read.

Writes (once) a sample of N events with two scalar columns and weights in row groups
of 65,536 rows, then times, in one process: pyarrow reading the same three columns
into NumPy (the floor: a streamed evaluation must at least read them), and one
laddu-dask evaluation (value and gradient) of a complex two-parameter model streamed
under a 64 MiB host budget.  Prints events per second of both and their ratio (streamed
evaluation / raw read) and writes them, with the run's provenance, to
``benchmarks/results/streaming.json``.

Examples
--------
>>> from laddu_dask_bench.streaming_bench import build_parser
>>> build_parser().parse_args(["--events", "1000"]).events
1000
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import numpy as np

from laddu_dask_bench.results import RESULTS_DIR, command_line, provenance, write_results


def write_sample(path: str, n: int) -> None:
    """Write the benchmark sample (x, y uniform in [-1, 1], weights in [0.5, 1.5])."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from laddu_dask.files import atomic_path

    rng = np.random.default_rng(1)
    schema = pa.schema([("x", pa.float64()), ("y", pa.float64()), ("weight", pa.float64())])
    with atomic_path(path) as tmp, pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, n, 1_000_000):
            m = min(1_000_000, n - start)
            writer.write_table(pa.table({"x": rng.uniform(-1, 1, m), "y": rng.uniform(-1, 1, m),
                                         "weight": rng.uniform(0.5, 1.5, m)}), row_group_size=65536)


def run(events: int = 8_000_000, repeats: int = 5, path: str | None = None,
        budget: str = "64 MiB", results: str | None = None, command: str | None = None) -> dict[str, Any]:
    """Measure (the raw read and the streamed evaluation alternating); returns the figures."""
    import pyarrow.parquet as pq

    import laddu_dask as ld

    out: dict[str, Any] = {"provenance": provenance(
        command or command_line(), {"events": events, "repeats": repeats, "budget": budget})}
    path = path or os.path.join("bench-data", f"stream-{events}.parquet")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        write_sample(path, events)
    x, y = ld.scalar("x"), ld.scalar("y")
    c = ld.complex(ld.parameter("re", initial=0.5), ld.parameter("im", initial=0.2))
    model = ld.Model((c * x + y.to_complex() * (x * 2.0).cos()).norm_sqr() + 0.1)
    tiny = ld.Dataset.from_arrays(scalars={"x": np.array([0.1]), "y": np.array([0.3])})
    ex = ld.Execution(memory=ld.MemoryPlan(host=budget), normalization="general")
    lik = ld.Likelihood([ld.NLL(model, data=tiny, accepted_mc=ld.read_parquet(path))], execution=ex)
    lik.value_and_gradient([0.5, 0.2])
    raw, ours = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        table = pq.read_table(path, columns=["x", "y", "weight"])
        arrays = [table.column(k).to_numpy() for k in ("x", "y", "weight")]
        raw.append(time.perf_counter() - t0)
        del table, arrays
        t0 = time.perf_counter()
        lik.value_and_gradient([0.5, 0.2])
        ours.append(time.perf_counter() - t0)
    r, o = statistics.median(raw), statistics.median(ours)
    decision = ex.memory_decisions()[-1]
    out.update(events=events, budget=budget, storage=decision.strategy, raw_read_s=r, streamed_s=o,
               ratio=o / r, raw_read_runs_s=raw, streamed_runs_s=ours)
    print(f"{events} events, storage {decision.strategy} under {budget}")
    print(f"raw pyarrow read of the 3 columns: {r:.3f} s ({events / r / 1e6:.1f} M events/s)")
    print(f"streamed evaluation (value+gradient): {o:.3f} s ({events / o / 1e6:.1f} M events/s), "
          f"{o / r:.2f}x the raw read")
    if results:
        write_results(results, out)
    return out


def build_parser() -> argparse.ArgumentParser:
    """Options of the streaming benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=8_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--path")
    ap.add_argument("--budget", default="64 MiB")
    ap.add_argument("--results", default=os.path.join(RESULTS_DIR, "streaming.json"))
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``benchmarks/bench_streaming.py``."""
    a = build_parser().parse_args(argv)
    run(a.events, a.repeats, a.path, a.budget, a.results)
    return 0
