#!/usr/bin/env python3
"""Generation throughput against laddu's ``Generator``, events per second per core.

See :mod:`laddu_dask_bench.generation_bench`.  Usage: ``python3 benchmarks/bench_generation.py``.
"""

import sys

from laddu_dask_bench.generation_bench import main

if __name__ == "__main__":
    sys.exit(main())
