#!/usr/bin/env python3
"""Streaming throughput against the raw Parquet read (see laddu_dask_bench.streaming_bench)."""

import sys

from laddu_dask_bench.streaming_bench import main

if __name__ == "__main__":
    sys.exit(main())
