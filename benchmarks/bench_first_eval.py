#!/usr/bin/env python3
"""Cold start: import to the first value and gradient in fresh processes, against laddu's JIT.

See :mod:`laddu_dask_bench.cold_bench`.  Usage: ``python3 benchmarks/bench_first_eval.py``.
"""

import sys

from laddu_dask_bench.cold_bench import main

if __name__ == "__main__":
    sys.exit(main())
