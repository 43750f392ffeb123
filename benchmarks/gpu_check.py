#!/usr/bin/env python3
"""One-shot GPU check of the generated CUDA kernels on the KsKs benchmark.

Usage::

    python benchmarks/gpu_check.py [--data N] [--mc N] [--lineshape bw|rbw] [--parts K]
                                   [--repeats R] [--json FILE] [--dry-run]

On a machine with a CUDA device and CuPy it

1. generates the KsKs sample (``--data`` data events, ``--mc`` accepted-MC events;
   default 1M and 10M, drawn in parallel chunks) and prepares the event-only cache
   on the CPU, in f64 and f32;
2. computes the reference sums on the CPU with the fused f64 kernels (data:
   ``sum w log I``; accepted MC: ``sum w I``; value and gradient) at the displaced
   start point;
3. checks the GPU f64 kernels against it to 1e-10 (relative, value and every gradient
   component) and the GPU f32 kernels to 1e-4, and prints the f32 CPU kernels'
   error beside them (what f32 arithmetic itself costs);
4. checks that the resident layout (one partition per sample, on the device) and the
   streaming layout (``--parts`` partitions copied to the device on every evaluation)
   give the same certified sums to the last bit;
5. times value and value+gradient of both samples together (median of ``--repeats``
   after warm-up, with device synchronisation), the kernels alone (CUDA events), and
   prints the bytes-per-evaluation floor from a measured device copy bandwidth;
6. runs the NLL through the public API, ``Execution(device="gpu")`` against the CPU, with
   resident and streamed datasets, and times it.

``--dry-run`` needs no GPU: it generates the sources, compiles them with nvcc (when
found) and with the host C++ compiler, checks the host emulation against the CPU
kernels on a small sample, and exits.  The exit status is 0 when every check passes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from laddu_dask import ksks  # noqa: E402
from laddu_dask.compile.compiled import CompiledModel  # noqa: E402
from laddu_dask.compile.cuda import compile_with_nvcc, generate_cuda_source  # noqa: E402
from laddu_dask.compile.plan import ReductionPlan  # noqa: E402
from laddu_dask.runtime.accumulate import ExactPartials  # noqa: E402
from laddu_dask.runtime.cuda_backend import CudaKernels  # noqa: E402
from laddu_dask.runtime.reducer import (  # noqa: E402
    CertifiedPartials,
    Params,
    PartitionReducer,
    PreparedPartition,
    Uncertified,
)

SAMPLES = {"data": "log_positive_real", "accmc": "real"}
CHUNK = 250_000
FAILURES: list[str] = []


def log(msg: str) -> None:
    print(msg, flush=True)


def check(ok: bool, what: str) -> None:
    log(f"  [{'PASS' if ok else 'FAIL'}] {what}")
    if not ok:
        FAILURES.append(what)


# ---------------------------------------------------------------------------------------
# sample
# ---------------------------------------------------------------------------------------
def _draw(args: tuple[int, int, int]) -> tuple[dict, dict]:
    n_data, n_mc, seed = args
    return ksks.generate(n_data=n_data, n_mc=n_mc, seed=seed)


def sample(n_data: int, n_mc: int, seed: int) -> dict[str, dict[str, np.ndarray]]:
    """Columns of both samples, drawn in chunks on every core (deterministic per sizes)."""
    jobs = []
    k = 0
    while n_data > 0 or n_mc > 0:
        a, b = min(n_data, CHUNK // 10), min(n_mc, CHUNK)
        jobs.append((a, b, seed + k))
        n_data, n_mc, k = n_data - a, n_mc - b, k + 1
    with ProcessPoolExecutor(max_workers=os.cpu_count()) as pool:
        parts = list(pool.map(_draw, jobs))
    out = {}
    for i, key in enumerate(("data", "accmc")):
        p4 = {name: np.concatenate([p[i][name] for p in parts]) for name in ksks.P4_NAMES}
        out[key] = {f"{name}_{c}": np.ascontiguousarray(v[:, j]) for name, v in p4.items()
                    for j, c in enumerate(("e", "px", "py", "pz"))}
    return out


def chunks(n: int, parts: int) -> list[tuple[int, int]]:
    edges = np.linspace(0, n, parts + 1).astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


# ---------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------
def cpu_reduce(reducer: PartitionReducer, cache: list, weights: np.ndarray, params: tuple,
               transform: str, with_gradient: bool, parts: int) -> tuple[float, np.ndarray | None]:
    """Fused CPU kernels over ``parts`` partitions on threads, exact merge."""
    plan = ReductionPlan(transform)
    p = Params(params)

    def one(bounds: tuple[int, int], exact: bool = False) -> CertifiedPartials:
        a, b = bounds
        part = PreparedPartition([c[a:b] for c in cache], weights[a:b], b - a, a, "cpu")
        return reducer.partials(part, p, plan, with_gradient, exact)

    spans = chunks(len(weights), parts)
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        partials = list(pool.map(one, spans))
    try:
        return reducer.finish(CertifiedPartials.merge(partials), p, with_gradient)
    except Uncertified:
        with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
            partials = list(pool.map(lambda s: one(s, True), spans))
        return reducer.finish(CertifiedPartials.merge(partials), p, with_gradient)


def gpu_partials(kernels: CudaKernels, cache: list, weights: Any, params: tuple, transform: str,
                 with_gradient: bool) -> CertifiedPartials:
    """What the runtime's chunk step does on the GPU: certified pairs, exact fallback."""
    out = kernels.reduce(cache, weights, params, transform, with_gradient)
    if out.bad_index >= 0:
        raise ValueError(f"non-positive intensity {out.bad_value!r} at event {out.bad_index}")
    return CertifiedPartials(out.terms, out.bound)


def gpu_finish(kernels: CudaKernels, partials: list[CertifiedPartials], params: tuple,
               with_gradient: bool, exact: Any) -> tuple[float, np.ndarray | None, bool]:
    merged = CertifiedPartials.merge(partials)
    certified = True
    try:
        totals = merged.certified_floats()
    except Uncertified:
        certified = False
        totals = exact()
    value = float(totals[0])
    if not with_gradient:
        return value, None, certified
    grad = kernels.backprop(np.asarray(params, dtype=np.float64), totals[1:])
    return value, np.asarray(grad, dtype=np.float64), certified


def rel_errors(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    return np.abs(got - ref) / np.maximum(np.abs(ref), np.finfo(float).tiny)


def compare(label: str, got: tuple, ref: tuple, tol: float | None, normwise: bool = False) -> None:
    """Value and every gradient component (relative each), or with ``normwise`` the value
    and the gradient relative to its largest component; ``tol=None`` only reports."""
    g = np.concatenate([[got[0]], got[1]])
    r = np.concatenate([[ref[0]], ref[1]])
    rel = rel_errors(g, r)
    worst = int(np.argmax(rel))
    what = "value" if worst == 0 else f"gradient[{worst - 1}]"
    text = f"{label}: max relative error {rel.max():.2e} ({what})"
    if normwise:
        norm = float(np.max(np.abs(got[1] - ref[1])) / np.max(np.abs(ref[1])))
        text += f", gradient error / max |gradient| {norm:.2e}"
        ok = rel[0] <= (tol or 0.0) and norm <= (tol or 0.0)
    else:
        ok = bool(np.all(rel <= (tol or 0.0)))
    if tol is None:
        log(f"  [info] {text}")
    else:
        check(bool(ok), f"{text}; tolerance {tol:.0e}{' (normwise)' if normwise else ''}")


# ---------------------------------------------------------------------------------------
# dry run (no GPU)
# ---------------------------------------------------------------------------------------
def dry_run(args: argparse.Namespace) -> int:
    cm = CompiledModel.from_expr(ksks.model(args.lineshape))
    data = sample(min(args.data, 20_000), min(args.mc, 20_000), args.seed) if shutil.which("g++") else {}
    for precision in ("f64", "f32"):
        src = generate_cuda_source(cm.split, precision)
        log(f"{precision}: {len(src.text)} characters of CUDA, {src.rows} gradient rows, "
            f"{len(src.cache_kinds)} cached columns, {src.n_params} parameters")
        if shutil.which("nvcc"):
            t0 = time.perf_counter()
            out = compile_with_nvcc(src.text, args.arch)
            log(f"  nvcc -arch={args.arch}: {out.stat().st_size} bytes of cubin in "
                f"{time.perf_counter() - t0:.1f} s")
        else:
            log("  nvcc not found: not compiled")
        if shutil.which("g++"):
            sys.path.insert(0, os.path.join(ROOT, "tests"))
            from cuda_emulation import HostEmulation  # the tests' host emulation of the source

            emu = HostEmulation(src)
            params = tuple(np.float64(v) for v in cm.parameter_vector(ksks.displaced_start()))
            for key, transform in SAMPLES.items():
                cols = data[key]
                cache64 = cm.event_cache({c: cols[c] for c in cm.columns})
                cache = cm.event_cache({c: cols[c] for c in cm.columns}, precision)
                w = np.ones(len(cols[cm.columns[0]]))
                reducer = PartitionReducer(cm, "f64", "numpy")
                ref = cpu_reduce(reducer, cache64, w, params, transform, True, 1)
                triples, bad = emu.sums(cache, w, params, transform, True, threads=256)
                totals = CertifiedPartials(triples[:, :2].copy(), triples[:, 2].copy()).certified_floats()
                kernels = CudaKernels(cm.split, precision)
                got = (float(totals[0]), kernels.backprop(np.array(params), totals[1:]))
                compare(f"host emulation {precision} {key} vs CPU f64", got, ref,
                        1e-10 if precision == "f64" else 1e-3)
    return 1 if FAILURES else 0


# ---------------------------------------------------------------------------------------
# the GPU run
# ---------------------------------------------------------------------------------------
def timed(fn: Any, repeats: int, warmup: int = 3) -> float:
    import cupy

    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        fn()
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def copy_bandwidth() -> float:
    """Device-to-device copy bandwidth (bytes read + written per second)."""
    import cupy

    n = 1 << 30
    a = cupy.ones(n // 8, dtype=cupy.float64)
    b = cupy.empty_like(a)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    best = math.inf
    for _ in range(10):
        start.record()
        b[...] = a
        stop.record()
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return 2 * n / best


def gpu_run(args: argparse.Namespace) -> int:
    import cupy

    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    log(f"device: {props['name'].decode()} ({props['multiProcessorCount']} SMs), CuPy "
        f"{cupy.__version__}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}")
    cm = CompiledModel.from_expr(ksks.model(args.lineshape))
    params = tuple(np.float64(v) for v in cm.parameter_vector(ksks.displaced_start()))
    t0 = time.perf_counter()
    data = sample(args.data, args.mc, args.seed)
    log(f"sample: {args.data} data + {args.mc} accepted-MC events in {time.perf_counter() - t0:.1f} s")
    caches = {}
    weights = {}
    for key, cols in data.items():
        n = len(cols[cm.columns[0]])
        weights[key] = np.ones(n)
        for precision in ("f64", "f32"):
            caches[(key, precision)] = cm.event_cache({c: cols[c] for c in cm.columns}, precision)
    # -- CPU references -------------------------------------------------------------------
    ref: dict[tuple[str, str], tuple] = {}
    for precision in ("f64", "f32"):
        reducer = PartitionReducer(cm, precision, "fused")
        real = np.float32 if precision == "f32" else np.float64
        for key, transform in SAMPLES.items():
            t0 = time.perf_counter()
            ref[(key, precision)] = cpu_reduce(reducer, caches[(key, precision)],
                                               weights[key].astype(real),
                                               tuple(real(v) for v in params), transform, True,
                                               4 * (os.cpu_count() or 1))
            log(f"CPU fused {precision} {key}: {time.perf_counter() - t0:.2f} s")
    for key in SAMPLES:
        compare(f"CPU fused f32 {key} vs CPU f64 (what f32 costs)", ref[(key, "f32")],
                ref[(key, "f64")], None, normwise=True)
    # -- GPU: resident and streaming ----------------------------------------------------------
    results: dict[str, Any] = {"device": props["name"].decode(), "data": args.data, "mc": args.mc,
                               "lineshape": args.lineshape}
    bandwidth = copy_bandwidth()
    log(f"device copy bandwidth: {bandwidth / 1e9:.0f} GB/s (read + write)")
    results["copy_bandwidth_GBps"] = bandwidth / 1e9
    for precision in ("f64", "f32"):
        real = np.float32 if precision == "f32" else np.float64
        t0 = time.perf_counter()
        kernels = CudaKernels(cm.split, precision)
        for role in ("value_sum", "gradient_sum", "merge", "values"):
            kernels.function(role)
        log(f"{precision}: NVRTC compile {time.perf_counter() - t0:.2f} s")
        resident = {key: ([cupy.asarray(c) for c in caches[(key, precision)]],
                          cupy.asarray(weights[key].astype(real))) for key in SAMPLES}
        nbytes = sum(sum(c.nbytes for c in cols) + w.nbytes for cols, w in resident.values())

        def evaluate(with_gradient: bool, kernels=kernels, resident=resident) -> dict:
            out = {}
            for key, transform in SAMPLES.items():
                cache, w = resident[key]
                part = gpu_partials(kernels, cache, w, params, transform, with_gradient)

                def exact(cache=cache, w=w, transform=transform) -> np.ndarray:
                    terms, _, _ = kernels.terms(cache, w, params, transform, with_gradient)
                    return ExactPartials.from_terms(terms).to_floats()

                out[key] = gpu_finish(kernels, [part], params, with_gradient, exact)
            return out

        def streaming(with_gradient: bool, kernels=kernels, precision=precision, real=real) -> dict:
            out = {}
            for key, transform in SAMPLES.items():
                host = caches[(key, precision)]
                w = weights[key].astype(real)
                parts = []
                for a, b in chunks(len(w), args.parts):
                    dev_cache = [cupy.asarray(c[a:b]) for c in host]
                    parts.append(gpu_partials(kernels, dev_cache, cupy.asarray(w[a:b]), params,
                                              transform, with_gradient))

                def exact(host=host, w=w, transform=transform) -> np.ndarray:
                    total = None
                    for a, b in chunks(len(w), args.parts):
                        terms, _, _ = kernels.terms([cupy.asarray(c[a:b]) for c in host],
                                                    cupy.asarray(w[a:b]), params, transform,
                                                    with_gradient)
                        part = ExactPartials.from_terms(terms)
                        total = part if total is None else total + part
                    return total.to_floats()

                out[key] = gpu_finish(kernels, parts, params, with_gradient, exact)
            return out

        res = evaluate(True)
        tol = 1e-10 if precision == "f64" else 1e-4
        for key in SAMPLES:
            value, grad, certified = res[key]
            log(f"GPU {precision} {key}: value {value!r}, certified {certified}")
            # f32 arithmetic itself misses 1e-4 on gradient components that cancel (the CPU
            # f32 kernels alike, printed above): the f32 check is normwise
            compare(f"GPU {precision} {key} vs CPU f64", (value, grad), ref[(key, "f64")], tol,
                    normwise=precision == "f32")
            if precision == "f32":
                compare(f"GPU f32 {key} vs CPU f32 (same arithmetic)", (value, grad),
                        ref[(key, "f32")], 1e-5, normwise=True)
        stream = streaming(True)
        for key in SAMPLES:
            same = stream[key][0] == res[key][0] and np.array_equal(stream[key][1], res[key][1])
            check(bool(same), f"GPU {precision} {key}: streaming ({args.parts} partitions) "
                              "equals resident to the last bit")
        cache0, _ = resident["data"]
        got_values = kernels.values(cache0, params).get()
        want_values = cm.values(caches[("data", "f64")], params)
        err = float(np.max(np.abs(got_values - want_values)) / np.max(np.abs(want_values)))
        vtol = 1e-12 if precision == "f64" else 1e-3  # f32: the f32 event cache dominates
        check(err <= vtol, f"GPU {precision} values kernel (evaluate_batch) vs CPU f64: "
                           f"max error / max |value| {err:.2e}; tolerance {vtol:.0e}")
        value_only = evaluate(False)
        for key in SAMPLES:
            check(value_only[key][0] == res[key][0],
                  f"GPU {precision} {key}: value-only kernel equals the gradient kernel's value")
        # -- timings ------------------------------------------------------------------------------
        t_value = timed(lambda: evaluate(False), args.repeats)
        t_grad = timed(lambda: evaluate(True), args.repeats)
        t_stream = timed(lambda: streaming(True), max(3, args.repeats // 10), warmup=1)
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        cache, w = resident["accmc"]
        kernel_times = {}
        for role, grad in (("value_sum", False), ("gradient_sum", True)):
            samples = []
            for _ in range(args.repeats):
                start.record()
                kernels.reduce(cache, w, params, "real", grad)
                stop.record()
                stop.synchronize()
                samples.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
            kernel_times[role] = statistics.median(samples)
        floor = nbytes / (bandwidth / 2)
        log(f"GPU {precision}: {nbytes / 1e6:.0f} MB read per evaluation; floor at the copy "
            f"bandwidth {floor * 1e3:.3f} ms")
        log(f"  value            {t_value * 1e3:8.3f} ms  ({t_value / floor:.2f} x floor)")
        log(f"  value+gradient   {t_grad * 1e3:8.3f} ms  ({t_grad / floor:.2f} x floor)")
        log(f"  streaming v+g    {t_stream * 1e3:8.3f} ms  ({args.parts} partitions per sample)")
        mc_floor = (sum(c.nbytes for c in cache) + w.nbytes) / (bandwidth / 2)
        for role, t in kernel_times.items():
            log(f"  accepted-MC reduce ({role} + merge + copy back), CUDA events: {t * 1e3:.3f} ms "
                f"({t / mc_floor:.2f} x its floor {mc_floor * 1e3:.3f} ms)")
        results[precision] = {
            "bytes_per_evaluation": nbytes, "floor_ms": floor * 1e3, "value_ms": t_value * 1e3,
            "value_gradient_ms": t_grad * 1e3, "streaming_value_gradient_ms": t_stream * 1e3,
            "kernel_ms": {k: v * 1e3 for k, v in kernel_times.items()},
            "values": {k: res[k][0] for k in SAMPLES},
        }
        del resident
        cupy.get_default_memory_pool().free_all_blocks()
    runtime_nll(args, data, results)
    results["failures"] = FAILURES
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2, default=float)
    log("ALL CHECKS PASSED" if not FAILURES else f"{len(FAILURES)} CHECK(S) FAILED")
    return 1 if FAILURES else 0


def runtime_nll(args: argparse.Namespace, data: dict, results: dict) -> None:
    """The NLL through the public API: ``Execution(device="gpu")`` against the CPU, for
    resident and streamed datasets, with its time per evaluation."""
    import traceback

    import laddu_dask as ld

    try:
        ld.Execution(device="gpu")
    except Exception as err:  # noqa: BLE001 - report and go on
        log(f"runtime: Execution(device='gpu') not available ({type(err).__name__}: {err})")
        return

    def dataset(cols: dict, policy: str) -> Any:
        p4s = {name: np.column_stack([cols[f"{name}_{c}"] for c in ("e", "px", "py", "pz")])
               for name in ksks.P4_NAMES}
        return ld.Dataset.from_arrays(p4s=p4s, memory_policy=policy)

    def likelihood(ex: Any, policy: str) -> Any:
        nll = ld.NLL(ksks.model(args.lineshape), data=dataset(data["data"], policy),
                     accepted_mc=dataset(data["accmc"], policy))
        return ld.Likelihood([nll], execution=ex)

    point = ksks.displaced_start()
    t0 = time.perf_counter()
    ref = likelihood(ld.Execution(), "resident").value_and_gradient(point)
    log(f"runtime: CPU f64 NLL {ref[0]!r} (first evaluation {time.perf_counter() - t0:.1f} s)")
    out = {}
    for policy in ("resident", "streaming"):
        for precision in ("f64", "f32"):
            label = f"runtime GPU {precision} {policy}"
            try:
                ex = ld.Execution(device="gpu", precision=precision)
                lik = likelihood(ex, policy)
                t0 = time.perf_counter()
                got = lik.value_and_gradient(point)
                first = time.perf_counter() - t0
                # the NLL's data - N log(MC) combination cancels: f32 gets 1e-3 (normwise)
                compare(f"{label} NLL vs CPU f64", got, ref, 1e-10 if precision == "f64" else 1e-3,
                        normwise=precision == "f32")
                n = args.repeats if policy == "resident" else max(3, args.repeats // 10)
                t_v = timed(lambda lik=lik: lik.value(point), n, warmup=1)
                t_g = timed(lambda lik=lik: lik.value_and_gradient(point), n, warmup=1)
                log(f"  {label}: first evaluation (with preparation) {first:.2f} s; value "
                    f"{t_v * 1e3:.2f} ms, value+gradient {t_g * 1e3:.2f} ms")
                out[f"{precision}_{policy}"] = {"value_ms": t_v * 1e3, "value_gradient_ms": t_g * 1e3,
                                                "first_s": first}
            except Exception as err:  # noqa: BLE001 - one failure must not hide the rest
                traceback.print_exc()
                check(False, f"{label}: {type(err).__name__}: {err}")
    results["runtime"] = out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=int, default=1_000_000, help="data events (1M)")
    parser.add_argument("--mc", type=int, default=10_000_000, help="accepted-MC events (10M)")
    parser.add_argument("--lineshape", choices=("bw", "rbw"), default="bw")
    parser.add_argument("--parts", type=int, default=8, help="streaming partitions per sample")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--arch", default="sm_90", help="nvcc -arch of the dry run")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--dry-run", action="store_true", help="no GPU: generate and compile only")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.dry_run:
        return dry_run(args)
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() == 0:
            raise RuntimeError("no CUDA device")
    except Exception as err:  # noqa: BLE001
        log(f"no usable GPU ({type(err).__name__}: {err}); use --dry-run on a machine without one")
        return 2
    return gpu_run(args)


if __name__ == "__main__":
    sys.exit(main())
