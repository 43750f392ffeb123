"""Compilation: parameter layout, graph split, generated kernels, reduction plans.

Examples
--------
>>> import laddu_dask as ld
>>> ld.CompiledModel.from_expr(ld.scalar("x") * ld.parameter("a")).parameter_names
['a']
"""

from laddu_dask.compile.compiled import CompiledModel, real_dtype
from laddu_dask.compile.layout import resolve_parameters
from laddu_dask.compile.plan import ReductionPlan

__all__ = ["CompiledModel", "ReductionPlan", "real_dtype", "resolve_parameters"]
