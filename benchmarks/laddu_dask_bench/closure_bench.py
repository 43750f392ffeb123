"""A KsKs closure study: ``ld.closure_study`` against the same study done by hand with laddu.

Both fit the same replicas (``replicas`` of ``events`` events accept-rejected from a
``pool``-event accepted-MC pool at ``ksks.TRUTH``, normalized with ``mc`` accepted-MC
events) from the truth with the same MIGRAD + HESSE (iminuit, strategy 1, tolerance 0.1).
laddu-dask runs the replicas as Dask tasks on ``threads`` threads (one thread each); by
hand, each replica's laddu likelihood is built on ``laddu.Execution("jit", threads=threads)``
and fitted in turn.  Every pair of minima must agree (-2 ln L within 1e-6 relative, values
within 1e-3 of their error).  ``python3 benchmarks/bench_closure.py`` runs it.

Examples
--------
>>> build_parser().parse_args([]).replicas
30
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np

from laddu_dask_bench.results import RESULTS_DIR, command_line, provenance, write_results


def build_parser() -> argparse.ArgumentParser:
    """Options of the closure benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicas", type=int, default=30)
    ap.add_argument("--events", type=int, default=1000)
    ap.add_argument("--mc", type=int, default=200_000)
    ap.add_argument("--pool", type=int, default=1_300_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--results", default=os.path.join(RESULTS_DIR, "closure.json"))
    return ap


def run(replicas: int, events: int, mc: int, pool: int, threads: int, results: str | None) -> dict[str, Any]:
    """Measure both studies (see the module); the results as a dict, written to ``results``."""
    import laddu

    import laddu_dask as ld
    from laddu_dask import ksks
    from laddu_dask.results.pseudo_data import PoolSource, replica_stream
    from laddu_dask_bench.compare import migrad
    from laddu_dask_bench.laddu_ksks import laddu_ksks_nll

    prov = provenance(command_line(), {"replicas": replicas, "events": events, "mc": mc, "pool": pool,
                                       "threads": threads}, ("laddu", "iminuit"))
    _, pool_arrays = ksks.generate(n_data=0, n_mc=pool, seed=21)
    _, mc_arrays = ksks.generate(n_data=0, n_mc=mc, seed=22)
    pool_ds, mc_ds = ld.Dataset.from_arrays(p4s=pool_arrays), ld.Dataset.from_arrays(p4s=mc_arrays)
    ld.closure_study(ksks.model(), ksks.TRUTH, source=pool_ds, accepted_mc=mc_ds, n_events=200, n_replicas=2,
                     seed=99)  # kernels compiled and cached first (untimed)

    t0 = time.perf_counter()
    ours = ld.closure_study(ksks.model(), ksks.TRUTH, source=pool_ds, accepted_mc=mc_ds, n_events=events,
                            n_replicas=replicas, seed=5, execution=ld.Execution(num_workers=threads))
    ours_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    source = PoolSource(pool_ds, ksks.model(), ksks.TRUTH, n_replicas=replicas, seed=5)
    drawn = [source.draw(k, events, replica_stream(5, (k,))) for k in range(replicas)]
    draw_s = time.perf_counter() - t0
    execution = laddu.Execution("jit", threads=threads, precision="f64")
    t0 = time.perf_counter()
    theirs = []
    for data in drawn:
        arrays = {n: np.column_stack([data.column(f"{n}_{c}") for c in ("e", "px", "py", "pz")])
                  for n in ksks.P4_NAMES}
        theirs.append(migrad(laddu_ksks_nll(arrays, mc_arrays, execution=execution), dict(ksks.TRUTH)))
    theirs_s = time.perf_counter() - t0

    names = ours.parameter_names
    pairs = list(zip(ours.fits, theirs, strict=True))
    out = {
        "provenance": prov,
        "laddu_dask_s": ours_s, "laddu_by_hand_s": draw_s + theirs_s, "laddu_fits_s": theirs_s,
        "draws_s": draw_s, "ratio": ours_s / (draw_s + theirs_s),
        "worst_fval_rel": max(abs(f.fval - t["fval"]) / abs(t["fval"]) for f, t in pairs),
        "worst_value_in_errors": max(abs(f.named_parameters[n] - t["values"][j]) / f.errors[n]
                                     for f, t in pairs for j, n in enumerate(names)),
        "valid": [sum(f.valid for f in ours.fits), sum(t["valid"] for t in theirs)],
        "pulls_agree_3_sigma": all(ours.agrees(3.0).values()),
        "summary": ours.summary(),
    }
    if out["worst_fval_rel"] > 1e-6 or out["worst_value_in_errors"] > 1e-3:
        raise RuntimeError(f"the two closure studies reached different minima: {out}")
    if results:
        write_results(results, out)
    return out


def readme_lines(r: dict[str, Any]) -> list[str]:
    """The README's lines for a ``closure.json`` result."""
    from laddu_dask_bench.readme_format import ratio, run_line, seconds

    prov = r["provenance"]
    p = prov["parameters"]
    return ["### Closure study", "",
            f"`ld.closure_study` on the KsKs toy: {p['replicas']} replicas of {p['events']:,} events "
            f"accept-rejected from {p['pool']:,} accepted-MC events at the truth, each normalized with "
            f"{p['mc']:,} accepted-MC events and fitted from the truth (MIGRAD + HESSE), against the same "
            "study by hand with laddu (the same replicas, one laddu likelihood each on "
            f"`Execution(\"jit\", threads={p['threads']})`, the same MIGRAD driver); laddu-dask runs the "
            f"replicas as tasks on {p['threads']} threads. Every pair of minima agrees (-2 ln L within "
            f"{r['worst_fval_rel']:.1e} relative, values within {r['worst_value_in_errors']:.1e} of an "
            f"error); {r['valid'][0]} and {r['valid'][1]} fits are valid. "
            + run_line(prov, ("laddu-dask", "laddu", "dask", "iminuit")), "",
            "| | laddu-dask | laddu by hand | ratio |", "|---|---|---|---|",
            f"| {p['replicas']} replicas: draw, build, fit | {seconds(r['laddu_dask_s'])} | "
            f"{seconds(r['laddu_by_hand_s'])} | {ratio(r['ratio'])} |", ""]


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``benchmarks/bench_closure.py``."""
    a = build_parser().parse_args(argv)
    run(a.replicas, a.events, a.mc, a.pool, a.threads, a.results)
    return 0
