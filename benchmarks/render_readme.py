#!/usr/bin/env python3
"""Render the documentation's Benchmarks page, ``docs/benchmarks.md``, from ``benchmarks/results/*.json``.

See :mod:`laddu_dask_bench.readme`.  Usage::

    python3 benchmarks/render_readme.py [--write]
"""

import sys

from laddu_dask_bench.readme import main

if __name__ == "__main__":
    sys.exit(main())
