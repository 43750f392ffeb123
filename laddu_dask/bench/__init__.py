"""Benchmarks against competitors (laddu's JIT), runnable as ``laddu-dask bench``.

Examples
--------
>>> from laddu_dask.bench import laddu_ksks
>>> laddu_ksks.PARAMETER_NAMES[:2]
('s_mass', 's_width')
"""
