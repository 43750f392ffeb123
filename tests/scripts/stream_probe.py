"""Subprocess probe of tests/runtime/test_streaming.py: the peak memory of a streamed evaluation.

Usage: stream_probe.py PATH BUDGET POLICY [WORKERS].  Warms up first: a resident
evaluation and a streamed one of a small Parquet file under the same budget and number
of threads, so that code pages, thread pools and the allocators' first arenas are
already in the baseline.  The warm-up starts the fused kernels' background compilation
(the evaluations meanwhile run the tier-0 kernel); loading their machine code brings in
Numba and LLVM, some 70 MiB once per process, so the probe waits for it: otherwise, on a
cold kernel cache or a loaded machine, it lands in the measured window (a 1-in-3 failure
of the test, +88 MiB instead of +22).  Then it resets the kernel's peak-RSS counter (VmHWM), opens
PATH, evaluates value and gradient twice, and prints one JSON line: the RSS before
(``base``) and the peak RSS after (``peak``), the value and gradient, the memory
decisions and the time of each evaluation.
"""

import json
import os
import sys
import tempfile
import time

import numpy as np

import laddu_dask as ld
from laddu_dask.runtime.compilations import wait_compilations


def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024


path, budget, policy = sys.argv[1], int(sys.argv[2]), sys.argv[3]
workers = int(sys.argv[4]) if len(sys.argv) > 4 else None
x, y = ld.scalar("x"), ld.scalar("y")
c = ld.complex(ld.parameter("re", initial=0.5), ld.parameter("im", initial=0.2))
model = ld.Model((c * x + y.to_complex() * (x * 2.0).cos()).norm_sqr() + 0.1)
tiny = ld.Dataset.from_arrays(scalars={"x": np.array([0.1, 0.2]), "y": np.array([0.3, 0.4])})


def execution():
    return ld.Execution(memory=ld.MemoryPlan(host=budget), normalization="general",
                        num_workers=workers)


# warm-up: the same code paths on a small file (16 partitions, so that every thread runs)
rng = np.random.default_rng(2)
small = ld.Dataset.from_arrays(scalars={"x": rng.uniform(-1, 1, 16_384), "y": rng.uniform(-1, 1, 16_384)},
                               weights=rng.uniform(0.5, 1.5, 16_384), chunk_size=1024)
with tempfile.TemporaryDirectory() as tmp:
    small.write_parquet(os.path.join(tmp, "small.parquet"))
    warm = ld.read_parquet(os.path.join(tmp, "small.parquet"), chunk_size=1024, memory_policy="streaming")
    ld.Likelihood([ld.NLL(model, data=tiny, accepted_mc=warm)],
                  execution=execution()).value_and_gradient([0.5, 0.2])
ld.Likelihood([ld.NLL(model, data=tiny, accepted_mc=tiny)],
              execution=execution()).value_and_gradient([0.5, 0.2])
if not wait_compilations(600.0):
    sys.exit("stream_probe: the fused kernels' compilation ran for more than 10 minutes")

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak RSS (VmHWM) to the current RSS
base = status("VmRSS")
ex = execution()
mc = ld.read_parquet(path, memory_policy=policy)
lik = ld.Likelihood([ld.NLL(model, data=tiny, accepted_mc=mc)], execution=ex)
t = time.perf_counter()
v, g = lik.value_and_gradient([0.5, 0.2])
t1 = time.perf_counter() - t
t = time.perf_counter()
lik.value_and_gradient([0.5, 0.2])
t2 = time.perf_counter() - t
decision = ex.memory_decisions()[-1]
print(json.dumps({"base": base, "peak": status("VmHWM"), "value": v, "gradient": list(g),
                  "storage": [d.strategy for d in ex.memory_decisions()],
                  "reason": decision.reason, "estimated": decision.estimated_bytes,
                  "planned": decision.peak_bytes, "chunk_size": decision.chunk_size,
                  "t_first": t1, "t_eval": t2, "events": mc.n_events}))
