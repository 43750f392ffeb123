#!/usr/bin/env python3
"""The fixed cost of one small-likelihood evaluation, laddu-dask against laddu 0.28.1, in one process.

See :mod:`laddu_dask_bench.small_eval_bench` for what is measured.  Usage::

    python benchmarks/small_eval.py [--data 1000 10000] [--mc 10000] [--repeats 3000] [--threads 2]
                                    [--results FILE.json]
"""

import sys

from laddu_dask_bench.small_eval_bench import main

if __name__ == "__main__":
    sys.exit(main())
