#!/usr/bin/env python3
"""The disk tier against memory, source streaming and the raw reads (see laddu_dask_bench.disk_tier_bench)."""

import sys

from laddu_dask_bench.disk_tier_bench import main

if __name__ == "__main__":
    sys.exit(main())
