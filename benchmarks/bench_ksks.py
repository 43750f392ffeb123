#!/usr/bin/env python3
"""KsKs benchmark: laddu-dask against laddu's JIT, in one process, on the same files.

Generates (or reuses) the benchmark sample - by default 100,000 data and 1,000,000
accepted-MC events, 10 free parameters - with the shared reference generator
``../shared/bench/ksks.py`` when it exists, else with ``laddu_dask.ksks``; then
alternates laddu-dask and laddu evaluations at the same points and prints the
medians and the ratios (laddu-dask time / laddu time: below 1 means faster).

Usage::

    python benchmarks/bench_ksks.py [--data N] [--mc N] [--repeats R] [--outdir DIR]
                                    [--results FILE.json] [--lineshape bw|rbw]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "bench", "ksks.py")


def make_sample(outdir: str, n_data: int, n_mc: int) -> dict[str, str]:
    """Write the sample once (reused when ``truth.json`` says it has the right size)."""
    stamp = os.path.join(outdir, "sizes.json")
    paths = {
        "data": os.path.join(outdir, "data.parquet"),
        "accmc": os.path.join(outdir, "accmc.parquet"),
    }
    if os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f) == {"data": n_data, "mc": n_mc}:
                return paths
    os.makedirs(outdir, exist_ok=True)
    if os.path.exists(SHARED):
        subprocess.run(
            [sys.executable, SHARED, outdir, "--data", str(n_data), "--mc", str(n_mc)], check=True
        )
    else:
        from laddu_dask import ksks

        ksks.write_sample(outdir, n_data=n_data, n_mc=n_mc)
    with open(stamp, "w") as f:
        json.dump({"data": n_data, "mc": n_mc}, f)
    return paths


def timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=int, default=100_000)
    ap.add_argument("--mc", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--lineshape", choices=("bw", "rbw"), default="bw")
    ap.add_argument("--outdir", default=os.path.join(ROOT, "bench-data"))
    ap.add_argument("--results", default=os.path.join(HERE, "results", "bench_ksks.json"))
    args = ap.parse_args(argv)

    import laddu_dask as ld
    from laddu_dask import ksks

    paths = make_sample(args.outdir, args.data, args.mc)
    names = list(ksks.TRUTH)
    rng = np.random.default_rng(7)
    points = [np.array([ksks.TRUTH[n] for n in names]) * rng.uniform(0.98, 1.02, len(names))
              for _ in range(args.repeats)]

    t0 = time.perf_counter()
    lik = ld.Likelihood([ld.NLL(ksks.model(args.lineshape), data=ld.read_parquet(paths["data"]),
                                accepted_mc=ld.read_parquet(paths["accmc"]), name="ksks")])
    lik.value(points[0])
    ours_first = time.perf_counter() - t0

    competitors = {}
    try:
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        import laddu
        from laddu_reference import laddu_ksks_nll

        t0 = time.perf_counter()
        ref = laddu_ksks_nll(paths["data"], paths["accmc"], lineshape=args.lineshape,
                             execution=laddu.Execution("jit", threads=2, precision="f64"))
        ref.value(points[0])
        competitors["laddu-jit"] = (ref, time.perf_counter() - t0)
    except ImportError as err:
        print(f"laddu not installed ({err}); timing laddu-dask alone")

    rows: dict[str, dict[str, list[float]]] = {"laddu-dask": {"value": [], "value+gradient": []}}
    for name in competitors:
        rows[name] = {"value": [], "value+gradient": []}
    agreement = {}
    for p in points:
        rows["laddu-dask"]["value"].append(timed(lik.value, p))
        rows["laddu-dask"]["value+gradient"].append(timed(lik.value_and_gradient, p))
        for name, (ref, _) in competitors.items():
            rows[name]["value"].append(timed(ref.value, p))
            rows[name]["value+gradient"].append(timed(ref.value_and_gradient, p))
    for name, (ref, _) in competitors.items():
        v, g = lik.value_and_gradient(points[0])
        vr, gr = ref.value_and_gradient(points[0])
        agreement[name] = {"value_rel": abs(v / vr - 1),
                           "gradient_rel": float(np.max(np.abs(g - gr)) / np.max(np.abs(gr)))}

    medians = {k: {m: statistics.median(v) for m, v in d.items()} for k, d in rows.items()}
    firsts = {"laddu-dask": ours_first, **{k: t for k, (_, t) in competitors.items()}}
    print(f"\nKsKs benchmark: {args.data} data, {args.mc} accepted MC, {len(names)} free parameters, "
          f"{args.lineshape}, median of {args.repeats}")
    print(f"{'':14s} {'value (ms)':>12s} {'value+grad (ms)':>16s} {'first eval (s)':>15s}")
    for k, m in medians.items():
        print(f"{k:14s} {1e3 * m['value']:12.2f} {1e3 * m['value+gradient']:16.2f} {firsts[k]:15.2f}")
    ratios = {}
    for name in competitors:
        ratios[name] = {m: medians["laddu-dask"][m] / medians[name][m] for m in medians[name]}
        ratios[name]["first"] = ours_first / firsts[name]
        print(f"ratio laddu-dask / {name}: value {ratios[name]['value']:.2f}x, "
              f"value+gradient {ratios[name]['value+gradient']:.2f}x, first {ratios[name]['first']:.2f}x; "
              f"agreement: value {agreement[name]['value_rel']:.1e}, "
              f"gradient {agreement[name]['gradient_rel']:.1e}")
    result = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "sample": {"data": args.data, "mc": args.mc, "lineshape": args.lineshape},
        "medians_s": medians, "first_s": firsts, "ratios": ratios, "agreement": agreement,
    }
    os.makedirs(os.path.dirname(args.results), exist_ok=True)
    tmp = args.results + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=2)
    os.replace(tmp, args.results)
    return result


if __name__ == "__main__":
    main()
