#!/usr/bin/env python3
"""A KsKs closure study: ``ld.closure_study`` against the same study done by hand with laddu.

See :mod:`laddu_dask_bench.closure_bench` for what is measured.  Usage::

    python benchmarks/bench_closure.py [--replicas 30] [--events 1000] [--mc N] [--pool N]
                                       [--threads 2] [--results FILE.json]
"""

import sys

from laddu_dask_bench.closure_bench import main

if __name__ == "__main__":
    sys.exit(main())
