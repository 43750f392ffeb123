"""Subprocess probe of tests/test_streaming.py: one likelihood evaluation under a host budget.

Usage: stream_probe.py PATH BUDGET POLICY.  Prints one JSON line: the RSS before reading the
sample (after warm-up) and the peak RSS after two evaluations, the value and gradient, and
the memory decisions.
"""

import json
import sys
import time

import numpy as np

import laddu_dask as ld


def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024

path, budget, policy = sys.argv[1], sys.argv[2], sys.argv[3]
x, y = ld.scalar("x"), ld.scalar("y")
c = ld.complex(ld.parameter("re", initial=0.5), ld.parameter("im", initial=0.2))
model = ld.Model((c * x + y.to_complex() * (x * 2.0).cos()).norm_sqr() + 0.1)
tiny = ld.Dataset.from_arrays(scalars={"x": np.array([0.1, 0.2]), "y": np.array([0.3, 0.4])})
ld.Likelihood([ld.NLL(model, data=tiny, accepted_mc=tiny)],
              execution=ld.Execution(normalization="general")).value_and_gradient([0.5, 0.2])
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak RSS (VmHWM) to the current RSS
base = status("VmRSS")
ex = ld.Execution(memory=ld.MemoryPlan(host=budget), normalization="general")
mc = ld.read_parquet(path, memory_policy=policy)
lik = ld.Likelihood([ld.NLL(model, data=tiny, accepted_mc=mc)], execution=ex)
t = time.perf_counter()
v, g = lik.value_and_gradient([0.5, 0.2])
t1 = time.perf_counter() - t
t = time.perf_counter()
lik.value_and_gradient([0.5, 0.2])
t2 = time.perf_counter() - t
print(json.dumps({"base": base, "peak": status("VmHWM"), "value": v, "gradient": list(g),
                  "storage": [d.strategy for d in ex.memory_decisions()],
                  "reason": ex.memory_decisions()[-1].reason,
                  "estimated": ex.memory_decisions()[-1].estimated_bytes,
                  "t_first": t1, "t_eval": t2, "events": mc.n_events}))
