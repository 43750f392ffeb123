"""Benchmarks against competitors (laddu's JIT, TensorWaves), run by the scripts in ``benchmarks/``.

Modules: :mod:`~laddu_dask_bench.ksks_bench` (the KsKs benchmark),
:mod:`~laddu_dask_bench.compare` (one fit driver for every side, checks that both sides
compute and reach the same thing), :mod:`~laddu_dask_bench.first_eval` (first evaluation
in fresh processes, cold and warm caches), :mod:`~laddu_dask_bench.results` (results
files and their provenance), :mod:`~laddu_dask_bench.readme` (the documentation's Benchmarks
page, ``docs/benchmarks.md``, rendered from them), and the overhead and streaming benchmarks.  The library
never imports this package.

Examples
--------
>>> from laddu_dask_bench import laddu_ksks
>>> laddu_ksks.PARAMETER_NAMES[:2]
('s_mass', 's_width')
"""
