"""Physics results derived from models and fits: Monte Carlo generation and closure studies.

This layer sits above ``likelihood`` and ``analysis`` and may import them; nothing below
imports it.

Examples
--------
>>> from laddu_dask.results import Generator, GenerationReport
>>> Generator.__name__, GenerationReport.__name__
('Generator', 'GenerationReport')
"""

from laddu_dask.results.closure import ClosureResult, closure_study
from laddu_dask.results.generation import Generator
from laddu_dask.results.phase_space import PhaseSpacePlan
from laddu_dask.results.report import GenerationReport

__all__ = ["ClosureResult", "GenerationReport", "Generator", "PhaseSpacePlan", "closure_study"]
