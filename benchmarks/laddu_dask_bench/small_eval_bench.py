"""The fixed cost of one small-likelihood evaluation: laddu-dask against laddu 0.28.1, in one
process on the same events.

Both libraries build the KsKs likelihood (line shapes fixed at the truth, six free
coefficients) on samples of :func:`laddu_dask.datasets.ksks.write_sample` with ``--data`` events
(by default 1,000 and 10,000) and ``--mc`` accepted-MC events; for each size each side
evaluates ``Likelihood.value(x)`` and ``Likelihood.value_and_gradient(x)`` at the displaced
start (a float64 array, as a minimizer passes it) ``--repeats`` times after a warm-up (every
kernel compiled), in turns of :data:`RUN` calls so that both sides see the same machine load.
Printed and written: the median wall time of one call of each, ours / laddu's, and each
side's fixed cost per call (:func:`fixed_costs`).
``python3 benchmarks/small_eval.py`` runs it.

Examples
--------
>>> build_parser().parse_args([]).data
[1000, 10000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from laddu_dask_bench.results import RESULTS_DIR, command_line, provenance, write_results

__all__ = ["build_parser", "fixed_costs", "main", "readme_lines", "run"]

#: Calls of one method on one side in a row, before the next takes its turn: as in a fit,
#: calls back to back (laddu's thread pool stays awake; shorter turns slow it down by half),
#: and still turns short enough that a change of the machine's load hits both libraries alike.
RUN = 250


def build_parser() -> argparse.ArgumentParser:
    """Options of the small-evaluation benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=int, nargs="+", default=[1000, 10_000], help="data events (each a run)")
    ap.add_argument("--mc", type=int, default=10_000, help="accepted-MC events")
    ap.add_argument("--repeats", type=int, default=5000, help="timed calls of each method on each side")
    ap.add_argument("--threads", type=int, default=2, help="laddu's Execution threads")
    ap.add_argument("--results", default=os.path.join(RESULTS_DIR, "small_eval.json"))
    return ap


def _medians(calls: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """The median seconds of one call of each of ``calls``, each called ``repeats`` times in
    turns of :data:`RUN` calls."""
    times: dict[str, list[float]] = {k: [] for k in calls}
    clock = time.perf_counter
    for _ in range(max(1, repeats // RUN)):
        for key, call in calls.items():
            out = times[key]
            for _ in range(RUN):
                t0 = clock()
                call()
                out.append(clock() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def fixed_costs(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per call and side, the time at no data events: the straight line through the smallest
    and the largest data size, at zero (the cost that does not grow with the events).

    Examples
    --------
    >>> rows = [{"call": "value", "data": n, "laddu-dask_s": 1e-5 + 1e-8 * n, "laddu_s": 2e-8 * n}
    ...         for n in (1000, 10_000)]
    >>> {k: round(v, 12) for k, v in fixed_costs(rows)["value"].items()}
    {'laddu-dask_s': 1e-05, 'laddu_s': 0.0}
    """
    out = {}
    for method in dict.fromkeys(r["call"] for r in rows):
        mine = sorted((r for r in rows if r["call"] == method), key=lambda r: r["data"])
        lo, hi = mine[0], mine[-1]
        if hi["data"] == lo["data"]:
            continue
        out[method] = {side: lo[side] - lo["data"] * (hi[side] - lo[side]) / (hi["data"] - lo["data"])
                       for side in ("laddu-dask_s", "laddu_s")}
    return out


def readme_lines(r: dict[str, Any]) -> list[str]:
    """The README's lines for a ``small_eval.json`` result."""
    from laddu_dask_bench.readme_format import ratio, run_line

    def seconds(t: float) -> str:  # microseconds: these calls take tens of them
        return f"{t * 1e6:.1f} us"

    prov = r["provenance"]
    p = prov["parameters"]
    out = ["### Small likelihoods: the cost of one evaluation", "",
           "The fixed cost of one call decides fits of a few thousand events (a bin of a mass-independent "
           "analysis, a bootstrap replica): both libraries evaluate the KsKs likelihood (line shapes fixed, "
           f"six free coefficients; {p['mc']:,} accepted-MC events) at one point, `value(x)` and "
           f"`value_and_gradient(x)`, median of {p['repeats']:,} calls a side in turns of {RUN}, in one "
           f"process; laddu `Execution(\"jit\", threads={p['threads']})`, "
           "laddu-dask's default `Execution()`. "
           + run_line(prov, ("laddu", "laddu-dask", "numpy", "numba", "dask")), "",
           "| data events | call | laddu-dask | laddu | ratio |", "|---|---|---|---|---|"]
    for row in r["rows"]:
        out.append(f"| {row['data']:,} | `{row['call']}` | {seconds(row['laddu-dask_s'])} "
                   f"| {seconds(row['laddu_s'])} | {ratio(row['ratio'])} |")
    fixed = r.get("fixed") or {}
    if fixed:
        out += ["", "The cost that does not grow with the events (the line through both sizes, at zero "
                "events): " + "; ".join(f"`{call}` laddu-dask {seconds(c['laddu-dask_s'])}, laddu "
                                        f"{seconds(c['laddu_s'])}" for call, c in fixed.items()) + "."]
    return [*out, ""]


def _bound(method: Callable[[Any], Any], x: np.ndarray) -> Callable[[], Any]:
    """``method(x)`` as a call without arguments."""
    return lambda: method(x)


def run(data: list[int], mc: int, repeats: int, threads: int, results: str | None) -> dict[str, Any]:
    """Time both libraries at every data size (see the module); the results as a dict, written
    to ``results``."""
    import laddu

    import laddu_dask as ld
    from laddu_dask import ksks
    from laddu_dask.runtime.compilations import wait_compilations
    from laddu_dask_bench.laddu_ksks import laddu_ksks_nll

    prov = provenance(command_line(), {"data": data, "mc": mc, "repeats": repeats, "threads": threads},
                      ("laddu",))
    rows = []
    print(f"{'data':>7s} {'call':>20s} {'laddu-dask':>12s} {'laddu':>10s} {'ratio':>6s}")
    for n_data in data:
        with tempfile.TemporaryDirectory() as folder:
            sample = ksks.write_sample(folder, n_data=n_data, n_mc=mc, seed=7)
            theirs = laddu_ksks_nll(sample["data"], sample["accmc"], fixed_lineshapes=True,
                                    execution=laddu.Execution("jit", threads=threads,
                                                              precision="f64")).likelihood
            ours = ld.Likelihood([ld.NLL(ksks.model(fixed_lineshapes=True),
                                         data=ld.read_parquet(sample["data"]),
                                         accepted_mc=ld.read_parquet(sample["accmc"]), name="ksks")])
            x = np.array([ksks.displaced_start()[n] for n in ours.parameter_names], dtype=np.float64)
            for lik in (theirs, ours):
                lik.value(x)
                lik.value_and_gradient(x)
            wait_compilations()  # the fused kernels, not the interim tier-0 ones, are timed
            calls = {(side, method): _bound(getattr(lik, method), x)
                     for side, lik in (("laddu-dask", ours), ("laddu", theirs))
                     for method in ("value", "value_and_gradient")}
            _medians(calls, RUN)  # warm caches and branch predictors
            wait_compilations()  # and the point programs, compiled after their first calls
            medians = _medians(calls, repeats)
        for method in ("value", "value_and_gradient"):
            row = {"data": n_data, "mc": mc, "call": method, "laddu-dask_s": medians["laddu-dask", method],
                   "laddu_s": medians["laddu", method]}
            row["ratio"] = row["laddu-dask_s"] / row["laddu_s"]
            rows.append(row)
            print(f"{n_data:7d} {method:>20s} {1e3 * row['laddu-dask_s']:9.4f} ms "
                  f"{1e3 * row['laddu_s']:7.4f} ms {row['ratio']:6.2f}", flush=True)
    out = {"provenance": prov, "rows": rows, "fixed": fixed_costs(rows)}
    for method, fixed in out["fixed"].items():
        print(f"fixed cost of {method} (extrapolated to no data events): laddu-dask "
              f"{1e3 * fixed['laddu-dask_s']:.4f} ms, laddu {1e3 * fixed['laddu_s']:.4f} ms")
    if results:
        write_results(results, out)
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``benchmarks/small_eval.py``."""
    a = build_parser().parse_args(argv)
    run(a.data, a.mc, a.repeats, a.threads, a.results)
    return 0
