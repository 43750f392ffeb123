"""Example datasets: the KsKs toy reaction of the demo, the tour and the benchmarks.

:mod:`~laddu_dask.datasets.ksks` writes a deterministic sample of gamma p -> p K_S K_S in
laddu's Parquet convention and builds its S + D-wave intensity; ``from laddu_dask import
ksks`` is the same module.

Examples
--------
>>> from laddu_dask.datasets import ksks
>>> sorted(ksks.TRUTH)[:2]
['d0_im', 'd0_re']
"""

from laddu_dask.datasets import ksks

__all__ = ["ksks"]
