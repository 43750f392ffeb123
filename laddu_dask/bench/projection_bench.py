"""Projection benchmark: per-event weights and intensity integrals of the tagged D wave of
the K_S K_S model on a generated-MC sample, laddu-dask against laddu 0.28.1's
``Likelihood.projection`` on the same events, and the raw Parquet read of the sample.

``python benchmarks/bench_projection.py [--events N] [--parts K] [--repeat R]`` writes
``benchmarks/results/projection.json``.  Times are the best of ``--repeat`` after one
warm-up call (which compiles the kernels and prepares the datasets).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

import numpy as np

from laddu_dask import ksks
from laddu_dask.bench.results import provenance, write_results

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _best(f: Any, repeat: int) -> tuple[float, Any]:
    f()
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "projection.json"))
    args = parser.parse_args(argv)
    import pyarrow.parquet as pq

    import laddu_dask as ld
    from laddu_dask.bench.laddu_ksks import ksks_intensity_expr, laddu_available

    folder = tempfile.mkdtemp(prefix="laddu-dask-projection-")
    paths = ksks.write_sample(folder, n_data=20_000, n_mc=args.events, seed=11, parts=args.parts)
    files = sorted(os.path.join(paths["accmc"], f) for f in os.listdir(paths["accmc"]))
    point = dict(ksks.TRUTH)
    rows: dict[str, float] = {}
    rows["parquet_read_s"], _ = _best(lambda: [pq.read_table(f) for f in files], args.repeat)

    data = ld.read_parquet(paths["data"])
    gen = ld.read_parquet(paths["accmc"])
    lik = ld.Likelihood([ld.NLL(ksks.model(), data=data, accepted_mc=data, name="ksks")])
    proj = lik.projection("ksks", generated_mc=gen, tags=["D"])
    rows["weights_s"], ours_w = _best(lambda: proj.weights(point), args.repeat)
    rows["integral_s"], ours_i = _best(lambda: proj.generated_integral(point), args.repeat)
    result: dict[str, Any] = {"events": args.events, "parts": args.parts, "laddu_dask": dict(rows)}
    if laddu_available():
        import laddu

        expr = ksks_intensity_expr("bw")
        # laddu's expression helper has no wave tags: compare the whole model (tagged "all")
        theirs_data = laddu.read_parquet(os.path.join(paths["data"], "*.parquet"))
        theirs_gen = laddu.read_parquet(os.path.join(paths["accmc"], "*.parquet"))
        tl = laddu.Likelihood([laddu.NLL(laddu.Model(expr.tagged("all")), data=theirs_data,
                                         accepted_mc=theirs_data, name="ksks")])
        tp = tl.projection("ksks", generated_mc=theirs_gen, tags=["all"])
        names = tl.parameter_names
        p = [point[n] for n in names]
        whole = lik.projection("ksks", generated_mc=gen)
        ours_full_s, ours_full = _best(lambda: whole.weights(point), args.repeat)
        ours_int_s, ours_int = _best(lambda: whole.generated_integral(point), args.repeat)
        t_w, theirs_w = _best(lambda: np.asarray(tp.weights(p)), args.repeat)
        t_i, theirs_i = _best(lambda: tp.generated_integral(p), args.repeat)
        result["whole_model"] = {
            "laddu_dask_weights_s": ours_full_s, "laddu_weights_s": t_w,
            "laddu_dask_integral_s": ours_int_s, "laddu_integral_s": t_i,
            "weights_ratio": ours_full_s / t_w, "integral_ratio": ours_int_s / t_i,
            "max_relative_difference": float(np.max(np.abs(ours_full - theirs_w) / np.abs(theirs_w))),
            "integral_relative_difference": abs(ours_int - theirs_i) / abs(theirs_i),
        }
    result["d_wave_integral"] = ours_i
    result["d_wave_weight_sum"] = float(np.sum(ours_w))
    command = " ".join(["python3", "benchmarks/bench_projection.py", *(argv or sys.argv[1:])])
    parameters = {"events": args.events, "parts": args.parts, "repeat": args.repeat}
    result["provenance"] = provenance(command, parameters,
                                      extra_packages=("laddu", "pyarrow"))
    print(result)
    write_results(args.out, result)
    return 0
