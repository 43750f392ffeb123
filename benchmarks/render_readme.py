#!/usr/bin/env python3
"""Render the README's Benchmarks section from ``benchmarks/results/*.json``.

See :mod:`laddu_dask_bench.readme`.  Usage::

    python3 benchmarks/render_readme.py [--write]
"""

import sys

from laddu_dask_bench.readme import main

if __name__ == "__main__":
    sys.exit(main())
