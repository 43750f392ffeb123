"""Runtime: executions, memory plans, prepared models and datasets, exact reductions.

Examples
--------
>>> from laddu_dask.runtime import Execution
>>> Execution().device
'cpu'
"""

from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.memory import (
    MemoryBudget,
    MemoryDecision,
    MemoryPlan,
    decide_storage,
    parse_bytes,
)
from laddu_dask.runtime.preparation import PreparedDataset, PreparedStats
from laddu_dask.runtime.prepared import PreparedModel, ReductionEvaluation
from laddu_dask.sums import ExactPartials, exact_sum

__all__ = [
    "ExactPartials",
    "Execution",
    "MemoryBudget",
    "MemoryDecision",
    "MemoryPlan",
    "PreparedDataset",
    "PreparedModel",
    "PreparedStats",
    "ReductionEvaluation",
    "decide_storage",
    "exact_sum",
    "parse_bytes",
]
