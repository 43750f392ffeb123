#!/usr/bin/env python3
"""Fan-out: one cluster evaluation on 4 to 64 worker processes, flat and as a reduction tree.

See :mod:`laddu_dask_bench.fanout_bench` for what is measured and modelled.  Usage::

    python3 benchmarks/bench_fanout.py [--workers 4 16 32 64] [--fan-in 4] [--evals 40] [--blocks 3]
                                       [--results FILE.json]
"""

import sys

from laddu_dask_bench.fanout_bench import main

if __name__ == "__main__":
    sys.exit(main())
