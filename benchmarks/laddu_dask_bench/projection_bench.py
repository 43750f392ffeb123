"""Projection benchmark: a generated-MC sample of the K_S K_S model projected, streamed under
a host memory budget, against the raw Parquet read of the same files and laddu 0.28.1's
``Likelihood.projection`` on the same events.

``python benchmarks/bench_projection.py [--events N] [--parts K] [--budget B] [--repeat R]``
writes ``benchmarks/results/projection.json``.  The sample (the KsKs toy's Monte Carlo,
``ksks.write_sample``) is written once under ``bench-data/`` (git-ignored) and reused.  In
one process, in this order: pyarrow reading the files whole and batch by batch (the floor
of a streamed pass); laddu-dask's generated-MC integral (a streamed reduction), per-event
weights (NumPy, and summed as lazy Dask arrays) of the whole model and of the tagged D
wave, under ``Execution(memory=MemoryPlan(host=B))``; then, up to ``--laddu-max-events``,
laddu reading the files and projecting the whole model.  Times are the best of
``--repeat`` after one warm-up call.  The peak memory of each call comes from a second
pass in a child process (one call each after the warm-up) run with glibc's mmap threshold
fixed (:data:`MALLOC_ENV`) and pyarrow on the system allocator, so that memory one call
frees is not counted as resident before the next: the peak resident memory the call added
(the kernel's ``VmHWM``, reset before the call, less the resident memory before it).  The
timing pass runs with the default allocators.

Examples
--------
>>> from laddu_dask_bench.projection_bench import build_parser, measure
>>> build_parser().parse_args(["--events", "1000"]).events
1000
>>> seconds, out, added = measure(lambda: sum(range(10)), repeat=1)
>>> out, added >= 0
(45, True)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from laddu_dask import ksks
from laddu_dask.files import atomic_write
from laddu_dask_bench.results import RESULTS_DIR, ROOT, command_line, provenance, write_results

MIB = 2**20
#: glibc's fixed mmap threshold: freed buffers go back to the kernel, so a call's peak is its own.
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "65536"}


def _status(field: str) -> int:
    """A ``/proc/self/status`` memory field in bytes (0 where the kernel has none)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _reset_peak() -> bool:
    """Reset the process's peak resident memory (Linux ``clear_refs``); False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def measure(f: Callable[[], Any], repeat: int) -> tuple[float, Any, int]:
    """``(best seconds, last result, peak resident bytes added)`` of ``f`` over ``repeat``
    timed calls after one warm-up call."""
    f()
    best, out, added = float("inf"), None, 0
    for _ in range(repeat):
        out = None
        _reset_peak()
        before = _status("VmRSS")
        t0 = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t0)
        added = max(added, _status("VmHWM") - before)
    return best, out, added


def sample(folder: str, events: int, parts: int, seed: int = 11) -> dict[str, str]:
    """The KsKs toy sample (20,000 data events, ``events`` Monte Carlo events in ``parts``
    files) under ``folder``, written once and reused when its ``sample.json`` matches."""
    stamp = os.path.join(folder, "sample.json")
    want = {"events": events, "parts": parts, "seed": seed}
    paths = {k: os.path.join(folder, k) for k in ("data", "accmc")}
    if os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f) == want:
                return paths
    ksks.write_sample(folder, n_data=20_000, n_mc=events, seed=seed, parts=parts)
    with atomic_write(stamp) as f:
        json.dump(want, f)
    return paths


def _files(folder: str) -> list[str]:
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".parquet"))


def _raw_whole(files: list[str]) -> int:
    import pyarrow.parquet as pq

    tables = [pq.read_table(f) for f in files]  # the whole sample in memory at once
    return sum(t.num_rows for t in tables)


def _raw_batches(files: list[str]) -> int:
    import pyarrow.parquet as pq

    n = 0
    for f in files:
        for batch in pq.ParquetFile(f).iter_batches(batch_size=65_536):
            n += len([c.to_numpy() for c in batch.columns][0])
    return n


def _row(seconds: float, added: int) -> dict[str, float]:
    return {"s": seconds, "peak_added_mib": added / MIB}


def run_ours(paths: dict[str, str], budget: str, repeat: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """laddu-dask's timings (and its figures, for the comparison) under a host budget."""
    import laddu_dask as ld

    point = dict(ksks.TRUTH)
    ex = ld.Execution(memory=ld.MemoryPlan(host=budget))
    data = ld.read_parquet(paths["data"])
    gen = ld.read_parquet(paths["accmc"])
    lik = ld.Likelihood([ld.NLL(ksks.model(), data=data, accepted_mc=data, name="ksks")], execution=ex)
    whole = lik.projection("ksks", generated_mc=gen)
    d_wave = lik.projection("ksks", generated_mc=gen, tags=["D"])
    rows: dict[str, Any] = {}
    figures: dict[str, Any] = {}
    for label, proj in (("whole", whole), ("d_wave", d_wave)):
        s, integral, added = measure(lambda p=proj: p.generated_integral(point), repeat)
        rows[f"{label}_integral"] = _row(s, added)
        s, weights, added = measure(lambda p=proj: p.weights(point), repeat)
        rows[f"{label}_weights"] = _row(s, added)
        s, total, added = measure(lambda p=proj: float(p.weights(point, dask=True).sum().compute()), repeat)
        rows[f"{label}_weight_sum_dask"] = _row(s, added)
        figures[label] = {"integral": integral, "weights": weights, "dask_weight_sum": total}
    decisions = [d for d in ex.memory_decisions() if "generated" in d.dataset]
    storage = {"strategies": sorted({d.strategy for d in decisions}),
               "estimated_mib": max((d.estimated_bytes for d in decisions), default=0) / MIB,
               "peak_mib": max((d.peak_bytes for d in decisions), default=0) / MIB,
               "reasons": sorted({d.reason for d in decisions})}
    # the same integral with no budget: the prepared generated MC stays resident
    resident = ld.Likelihood([ld.NLL(ksks.model(), data=data, accepted_mc=data, name="ksks")])
    proj = resident.projection("ksks", generated_mc=gen)
    s, value, added = measure(lambda: proj.generated_integral(point), repeat)
    rows["whole_integral_resident"] = _row(s, added)
    figures["resident_integral"] = value
    return {"rows": rows, "storage": storage, "partitions": gen.n_partitions}, figures


def run_laddu(paths: dict[str, str], repeat: int) -> tuple[dict[str, Any], np.ndarray, float]:
    """laddu's read and whole-model projection of the same files."""
    import laddu

    from laddu_dask_bench.laddu_ksks import ksks_intensity_expr

    point = dict(ksks.TRUTH)
    expr = ksks_intensity_expr("bw")
    _reset_peak()
    before = _status("VmRSS")
    t0 = time.perf_counter()
    data = laddu.read_parquet(os.path.join(paths["data"], "*.parquet"))
    gen = laddu.read_parquet(os.path.join(paths["accmc"], "*.parquet"))
    read = _row(time.perf_counter() - t0, _status("VmHWM") - before)
    # laddu's expression helper has no wave tags: the whole model, tagged "all"
    lik = laddu.Likelihood([laddu.NLL(laddu.Model(expr.tagged("all")), data=data, accepted_mc=data,
                                      name="ksks")])
    proj = lik.projection("ksks", generated_mc=gen, tags=["all"])
    p = [point[n] for n in lik.parameter_names]
    s_w, weights, added_w = measure(lambda: np.asarray(proj.weights(p)), repeat)
    s_i, integral, added_i = measure(lambda: proj.generated_integral(p), repeat)
    rows = {"read": read, "whole_weights": _row(s_w, added_w), "whole_integral": _row(s_i, added_i)}
    return rows, weights, float(integral)


def run(events: int, parts: int, budget: str, repeat: int, laddu_max_events: int,
        folder: str | None = None, command: str | None = None) -> dict[str, Any]:
    """Measure everything (see the module docstring); returns the figures."""
    from laddu_dask_bench.laddu_ksks import laddu_available

    folder = folder or os.path.join(ROOT, "bench-data", f"projection-{events}-{parts}")
    t0 = time.perf_counter()
    paths = sample(folder, events, parts)
    files = _files(paths["accmc"])
    out: dict[str, Any] = {
        "provenance": provenance(command or command_line(),
                                 {"events": events, "parts": parts, "budget": budget, "repeat": repeat,
                                  "laddu_max_events": laddu_max_events},
                                 extra_packages=("laddu", "pyarrow")),
        "events": events, "parts": parts, "budget": budget,
        "sample_bytes": sum(os.path.getsize(f) for f in files),
        "sample_seconds": time.perf_counter() - t0,
        "peak_memory_measured": _reset_peak(),
    }
    s, n, added = measure(lambda: _raw_whole(files), repeat)
    assert n == events, (n, events)
    raw = {"whole": _row(s, added)}
    s, n, added = measure(lambda: _raw_batches(files), repeat)
    raw["batches"] = _row(s, added)
    out["raw_read"] = raw
    ours, figures = run_ours(paths, budget, repeat)
    out["laddu_dask"] = ours
    w = figures["whole"]["weights"]
    out["checks"] = {
        "whole_integral": figures["whole"]["integral"],
        "d_wave_integral": figures["d_wave"]["integral"],
        "weights_sum_minus_integral_rel": abs(float(np.sum(w)) - figures["whole"]["integral"])
        / abs(figures["whole"]["integral"]),
        "dask_sum_minus_integral_rel": abs(figures["whole"]["dask_weight_sum"] - figures["whole"]["integral"])
        / abs(figures["whole"]["integral"]),
        "resident_minus_streamed_integral_rel":
            abs(figures["resident_integral"] - figures["whole"]["integral"])
            / abs(figures["whole"]["integral"]),
    }
    del figures
    if not laddu_available():
        out["laddu"] = {"status": "not installed"}
    elif events > laddu_max_events:
        out["laddu"] = {"status": f"skipped: {events:,} events is above --laddu-max-events "
                                  f"{laddu_max_events:,}"}
    else:
        rows, theirs_w, theirs_i = run_laddu(paths, repeat)
        out["laddu"] = {"status": "compared", "rows": rows}
        out["agreement"] = {
            "max_weight_relative_difference": float(np.max(np.abs(w - theirs_w) / np.abs(theirs_w))),
            "weights_normwise_relative_difference":
                float(np.max(np.abs(w - theirs_w)) / np.max(np.abs(theirs_w))),
            "events_above_1e-10_relative": int(np.sum(np.abs(w - theirs_w) > 1e-10 * np.abs(theirs_w))),
            "integral_relative_difference": abs(out["checks"]["whole_integral"] - theirs_i) / abs(theirs_i),
        }
    return out


def readme_lines(r: dict[str, Any]) -> list[str]:
    """The README's lines for a ``projection.json`` result."""
    from laddu_dask_bench.readme_format import ratio, run_line, seconds

    prov, raw, ours = r["provenance"], r["raw_read"], r["laddu_dask"]
    rows, st = ours["rows"], ours["storage"]
    laddu = r.get("laddu", {})
    theirs = laddu.get("rows", {})

    def mem(row: dict[str, float] | None) -> str:
        return "-" if row is None else f"{row['peak_added_mib']:,.0f} MiB"

    def line(label: str, mine: dict[str, float] | None, against: dict[str, float] | None) -> str:
        a, b = (mine or {}).get("s"), (against or {}).get("s")
        return (f"| {label} | {seconds(a)} | {mem(mine)} | {seconds(b)} | {mem(against)} "
                f"| {ratio(None if a is None or b is None else a / b)} |")

    n = r["events"]
    strategy = " and ".join(f"`{s}`" for s in st["strategies"]) or "not reported"
    out = ["### Projection of a generated-MC sample", "",
           f"{n:,} generated-MC events of the KsKs toy in {r['parts']} Parquet files "
           f"({r['sample_bytes'] / MIB:,.0f} MiB on disk), projected with `Likelihood.projection(\"ksks\", "
           f"generated_mc=...)` at the true parameters under "
           f"`Execution(memory=MemoryPlan(host=\"{r['budget']}\"))` (the planner's storage of the "
           f"generated MC: {strategy}; its estimate of the prepared data {st['estimated_mib']:,.0f} MiB), "
           "against pyarrow reading the same files and laddu's `Likelihood.projection` on the same "
           f"events, in one process, best of {prov['parameters']['repeat']} after a warm-up. Memory: the "
           "peak resident memory a call added (the process's high-water mark, reset before the call, "
           "less its resident memory before), from a second run of one call each in a child process "
           "whose allocators return freed memory to the system at once. "
           + run_line(prov, ("laddu-dask", "laddu", "pyarrow", "numpy", "dask")), "",
           "| | laddu-dask | peak memory added | against | its peak memory added | ratio |",
           "|---|---|---|---|---|---|",
           line("generated integral, whole model, against the whole-file read", rows["whole_integral"],
                raw["whole"]),
           line("generated integral, whole model, against the batch-by-batch read", rows["whole_integral"],
                raw["batches"]),
           line("weights as Dask arrays, summed, against the batch-by-batch read",
                rows["whole_weight_sum_dask"], raw["batches"]),
           line("per-event weights (NumPy, 8 bytes an event), whole model, against the whole-file read",
                rows["whole_weights"], raw["whole"])]
    if "whole_integral_resident" in rows:
        out.append(line("generated integral, whole model, streamed, against the same with no budget "
                        "(prepared data resident)", rows["whole_integral"], rows["whole_integral_resident"]))
    if laddu.get("status") == "compared":
        out += [line("per-event weights, whole model, against laddu", rows["whole_weights"],
                     theirs["whole_weights"]),
                line("generated integral, whole model, streamed, against laddu (sample in memory)",
                     rows["whole_integral"], theirs["whole_integral"])]
        if "whole_integral_resident" in rows:
            out.append(line("generated integral, whole model, no budget (prepared data resident), "
                            "against laddu", rows["whole_integral_resident"], theirs["whole_integral"]))
    out += [line("generated integral, tagged D wave", rows["d_wave_integral"], None),
            line("per-event weights, tagged D wave", rows["d_wave_weights"], None), ""]
    if laddu.get("status") == "compared":
        a = r["agreement"]
        above = a.get("events_above_1e-10_relative")
        detail = (f"; {above:,} of the {n:,} events differ by more than 1e-10 relative, the largest "
                  f"difference is {a['weights_normwise_relative_difference']:.1e} of the largest weight"
                  if above is not None else "")
        out += [f"The weights agree with laddu's to {a['max_weight_relative_difference']:.1e} relative "
                f"(largest over the events{detail}) and the integrals to "
                f"{a['integral_relative_difference']:.1e}. "
                "laddu holds the whole sample in memory; under the budget laddu-dask reads and prepares "
                "each partition in every call, and with no budget it keeps the prepared generated MC "
                f"resident ({st['estimated_mib']:,.0f} MiB, held between calls, so its calls add none).",
                ""]
    else:
        out += [f"laddu: {laddu.get('status', 'not run')}.", ""]
    return out


def build_parser() -> argparse.ArgumentParser:
    """Options of the projection benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=10_000_000, help="generated-MC events")
    ap.add_argument("--parts", type=int, default=40, help="Parquet files of the generated MC")
    ap.add_argument("--budget", default="256 MiB", help="laddu-dask's host memory budget")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--laddu-max-events", type=int, default=10_000_000,
                    help="skip laddu above this many events (it holds the sample in memory)")
    ap.add_argument("--folder", default=None, help="where the sample is written (default bench-data/)")
    ap.add_argument("--results", default=os.path.join(RESULTS_DIR, "projection.json"))
    ap.add_argument("--memory-pass", default=None, help=argparse.SUPPRESS)
    return ap


def _peaks(rows: dict[str, Any], peaks: dict[str, Any]) -> None:
    """Put the memory pass's peaks into the timing pass's rows (matching keys)."""
    for key, row in rows.items():
        if isinstance(row, dict) and "peak_added_mib" in row:
            row["peak_added_mib"] = peaks.get(key, {}).get("peak_added_mib")
        elif isinstance(row, dict):
            _peaks(row, peaks.get(key, {}))


def memory_pass(argv: list[str]) -> dict[str, Any]:
    """Run the benchmark once more in a child process under :data:`MALLOC_ENV` (one call
    each) and return its figures."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "memory.json")
        cmd = [sys.executable, "-m", "laddu_dask_bench.projection_bench", *argv, "--memory-pass", out]
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # benchmarks/
        path = os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])
        subprocess.run(cmd, check=True, env={**os.environ, **MALLOC_ENV, "PYTHONPATH": path},
                       stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``benchmarks/bench_projection.py``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    a = build_parser().parse_args(argv)
    if a.memory_pass:
        import pyarrow as pa

        pa.set_memory_pool(pa.system_memory_pool())
        r = run(a.events, a.parts, a.budget, 1, a.laddu_max_events, folder=a.folder)
        with open(a.memory_pass, "w") as f:
            json.dump(r, f, default=str)
        return 0
    r = run(a.events, a.parts, a.budget, a.repeat, a.laddu_max_events, folder=a.folder,
            command=command_line())
    mem = memory_pass([x for x in argv if x])
    r["memory_pass"] = {"allocator": MALLOC_ENV, "pyarrow_pool": "system"}
    _peaks(r, mem)
    print({k: r[k] for k in ("raw_read", "laddu_dask", "laddu") if k in r})
    if a.results:
        write_results(a.results, r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
