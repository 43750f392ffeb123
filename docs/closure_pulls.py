#!/usr/bin/env python3
"""Draw docs/closure_pulls.png: the pulls of a KsKs closure study (``ClosureResult.plot``).

The study of the closure benchmark (``benchmarks/bench_closure.py``) and of
``tests/results/test_closure_study.py``: 30 replicas of 1,000 events accept-rejected from 1.3M
accepted-MC events of ``laddu_dask.datasets.ksks`` at ``ksks.TRUTH``, each normalized with 200k
independent accepted-MC events and fitted from the truth with MIGRAD + HESSE.

Usage: ``python3 docs/closure_pulls.py [--out docs/closure_pulls.png] [--replicas 30]``
"""

from __future__ import annotations

import argparse
import os

import matplotlib

matplotlib.use("Agg")

import laddu_dask as ld  # noqa: E402
from laddu_dask import ksks  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "closure_pulls.png"))
    ap.add_argument("--replicas", type=int, default=30)
    args = ap.parse_args()
    _, pool = ksks.generate(n_data=0, n_mc=1_300_000, seed=21)
    _, mc = ksks.generate(n_data=0, n_mc=200_000, seed=22)
    study = ld.closure_study(ksks.model(), ksks.TRUTH, source=ld.Dataset.from_arrays(p4s=pool),
                             accepted_mc=ld.Dataset.from_arrays(p4s=mc), n_events=1000,
                             n_replicas=args.replicas, seed=5)
    print(study)
    fig = study.plot()
    fig.suptitle(f"KsKs closure: {args.replicas} replicas of 1000 events, pulls against N(0, 1)")
    fig.savefig(args.out, dpi=90)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
