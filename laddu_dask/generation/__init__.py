"""Monte Carlo generation: phase-space plans of reaction channels, proposals shaped by
line shapes, proven unweighting envelopes, the :class:`Generator` and its
:class:`GenerationReport`.

Generation is Dask work: each partition of a generated sample is drawn by its own task
from a seed that depends only on the run's seed and the partition, and the report's
weight totals are exact sums (:mod:`laddu_dask.sums`), the same for any partitioning.
``ld.Channel.validate_generation`` is assembled by :mod:`laddu_dask.facade`.

Examples
--------
>>> import laddu_dask as ld
>>> ld.Generator.__module__, ld.GenerationReport.__module__
('laddu_dask.generation.generator', 'laddu_dask.generation.report')
"""

from laddu_dask.generation.envelope import ProvenEnvelopeReport
from laddu_dask.generation.generator import Generator
from laddu_dask.generation.phase_space import PhaseSpacePlan, validate_generation
from laddu_dask.generation.report import GenerationReport

__all__ = ["GenerationReport", "Generator", "PhaseSpacePlan", "ProvenEnvelopeReport", "validate_generation"]
