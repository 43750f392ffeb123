#!/usr/bin/env python3
"""Each ganesh minimizer on the KsKs toy, laddu-dask against laddu 0.28.1, in one process.

See :mod:`laddu_dask_bench.ganesh_bench` for what is measured.  Usage::

    python benchmarks/ganesh_methods.py [--data 2000] [--mc 10000] [--steps 300] [--threads 2]
                                        [--free-lineshapes] [--methods M ...] [--results FILE.json]
"""

import sys

from laddu_dask_bench.ganesh_bench import main

if __name__ == "__main__":
    sys.exit(main())
