#!/usr/bin/env python3
"""Projection weights and integrals against laddu and the raw Parquet read (see
laddu_dask_bench.projection_bench)."""

import sys

from laddu_dask_bench.projection_bench import main

if __name__ == "__main__":
    sys.exit(main())
