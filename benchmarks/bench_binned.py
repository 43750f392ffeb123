#!/usr/bin/env python3
"""A mass-independent analysis (bins x restarts of a 4-wave angular model), laddu-dask against laddu,
then the closure study of ``bench_closure.py``: every many-fit row in one run.

See :mod:`laddu_dask_bench.binned_bench` for what is measured.  Usage::

    python benchmarks/bench_binned.py [--data N] [--mc N] [--bins B] [--restarts R]
                                      [--driver-restarts R] [--bootstrap K] [--no-cluster]
                                      [--outdir DIR] [--results FILE.json] [--no-closure]
"""

import sys

from laddu_dask_bench.binned_bench import main

if __name__ == "__main__":
    sys.exit(main())
