#!/usr/bin/env python3
"""KsKs benchmark, laddu-dask against laddu's JIT.

See :mod:`laddu_dask_bench.ksks_bench` for what is measured.  Usage::

    python benchmarks/bench_ksks.py [--data N] [--mc N] [--repeats R] [--lineshape bw|rbw]
                                    [--outdir DIR] [--results FILE.json] [--no-fit]
                                    [--models [zlm] [kmatrix]] [--models-results FILE.json] [--no-ksks]
                                    [--binned] [--binned-bins B] [--binned-restarts R] [--binned-no-cluster]
"""

import sys

from laddu_dask_bench.ksks_bench import main

if __name__ == "__main__":
    sys.exit(main())
