#!/usr/bin/env python3
"""Per-evaluation overhead, local scheduler vs a two-process LocalCluster (8/64/512 partitions).

See :mod:`laddu_dask_bench.overhead_bench`.  Usage: ``python benchmarks/bench_overhead.py``.
"""

import sys

from laddu_dask_bench.overhead_bench import main

if __name__ == "__main__":
    sys.exit(main())
