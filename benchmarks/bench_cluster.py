#!/usr/bin/env python3
"""Evaluations on a LocalCluster: per-evaluation cost, the KsKs sample on 1x2 and 2x1 workers
against the local pool, and the rebalance after ``scale(3)``.

See :mod:`laddu_dask_bench.cluster_bench`.  Usage: ``python3 benchmarks/bench_cluster.py``.
"""

import sys

from laddu_dask_bench.cluster_bench import main

if __name__ == "__main__":
    sys.exit(main())
