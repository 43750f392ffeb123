"""Counts and weight statistics of a generation run (laddu's ``GenerationReport``).

The report is the exact reduction of :mod:`laddu_dask.sums`: each generation task returns
a :class:`PartitionStats` (the ``chunk`` step, :meth:`PartitionStats.of`), :func:`merge_stats`
combines them and :meth:`GenerationReport.build` is the ``aggregate`` step.  The weight sums
are held as exact partial sums (:class:`~laddu_dask.sums.ExactPartials`) and rounded once,
in the report, so ``sum_weights`` and ``sum_squared_weights`` are ``math.fsum`` of every
event's ``w`` and ``w * w``, bitwise the same however the events are partitioned.

Examples
--------
>>> import numpy as np
>>> a = PartitionStats.of(np.array([1.0, 2.0]), proposals=4, produced=2)
>>> b = PartitionStats.of(np.array([0.5]), proposals=1, produced=1)
>>> report = GenerationReport.build(merge_stats([a, b]), requested=3, seed=1)
>>> report.produced, report.rejected, report.sum_weights, report.acceptance_rate
(3, 2, 3.5, 0.6)
>>> GenerationReport.from_json(report.to_json()) == report
True
"""

from __future__ import annotations

import dataclasses
import json as _json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from laddu_dask.sums import ExactPartials

__all__ = ["GenerationReport", "PartitionStats", "merge_stats"]


def _no_sums() -> ExactPartials:
    return ExactPartials.zeros(2)


@dataclass(frozen=True)
class PartitionStats:
    """What one generation task reports: its counts and weight statistics.

    ``sums`` holds the exact sums of the weights and of their squares (each ``w * w``
    rounded to float64, as ``math.fsum(w * w for w in weights)`` sums them); merging is
    exact, so the totals never depend on the partitioning.
    """

    proposals: int = 0
    produced: int = 0
    maximum: float = 0.0
    minimum: float = math.inf
    sums: ExactPartials = field(default_factory=_no_sums)

    @property
    def sum_weights(self) -> float:
        """The correctly rounded sum of the weights."""
        return float(self.sums.to_floats()[0])

    @property
    def sum_squared_weights(self) -> float:
        """The correctly rounded sum of the squared weights."""
        return float(self.sums.to_floats()[1])

    @classmethod
    def empty(cls) -> PartitionStats:
        """No proposals, no events."""
        return cls()

    @classmethod
    def exceeded(cls, largest: float) -> PartitionStats:
        """A task stopped by a weight ``largest`` above its envelope."""
        return cls(maximum=largest)

    @classmethod
    def of(cls, weights: np.ndarray, *, proposals: int, produced: int) -> PartitionStats:
        """The statistics of the event ``weights`` kept from ``proposals`` proposals."""
        if len(weights) == 0:
            return cls(proposals=proposals, produced=produced)
        weights = np.asarray(weights, dtype=np.float64)
        with np.errstate(over="ignore"):
            terms = np.stack([weights, weights * weights])
        return cls(proposals, produced, float(weights.max()), float(weights.min()),
                   ExactPartials.from_terms(terms))

    def add(self, other: PartitionStats) -> PartitionStats:
        """Both tasks' statistics together."""
        return PartitionStats(self.proposals + other.proposals, self.produced + other.produced,
                              max(self.maximum, other.maximum), min(self.minimum, other.minimum),
                              self.sums + other.sums)


def merge_stats(parts: Sequence[PartitionStats]) -> PartitionStats:
    """Every partition's statistics, merged (the ``combine`` step: the sums exactly, rounded
    only in the report)."""
    return PartitionStats(sum(p.proposals for p in parts), sum(p.produced for p in parts),
                          max((p.maximum for p in parts), default=0.0),
                          min((p.minimum for p in parts), default=math.inf),
                          ExactPartials.merge([p.sums for p in parts], k=2))


@dataclass(frozen=True)
class GenerationReport:
    """Diagnostics of a weighted or unweighted generation run (laddu's ``GenerationReport``).

    Attributes
    ----------
    requested, produced, proposals, rejected : int
        Event and proposal counts (``proposals`` excludes the pilot).
    acceptance_rate : float
        Produced events divided by proposals.
    envelope : float or None
        The unweighting envelope, when applicable.
    maximum_weight, minimum_weight, sum_weights, sum_squared_weights : float
        Statistics of the produced events' target weights (proposal weight times intensity).
    seed : int
        The random seed.
    chunk_events : int
        Events per partition (the largest).
    partitions : int
        Output partitions (Dask tasks).
    pilot_proposals : int
        Proposals of the envelope's pilot run.
    estimated_peak_bytes : int
        Planned working memory of one partition.
    actual_high_water_bytes : None
        Not measured (laddu's observed allocator high-water mark).
    proven_weight_interval, proven_continuous_dimensions, proven_piecewise_regions, proven_subdivisions
        With ``proven_envelope=True``, the proof's
        :class:`~laddu_dask.generation.envelope.ProvenEnvelopeReport` fields (else ``None``).
    """

    requested: int
    produced: int
    proposals: int
    rejected: int
    envelope: float | None
    maximum_weight: float
    minimum_weight: float
    sum_weights: float
    sum_squared_weights: float
    seed: int
    chunk_events: int = 0
    partitions: int = 0
    pilot_proposals: int = 0
    estimated_peak_bytes: int = 0
    actual_high_water_bytes: int | None = field(default=None)
    proven_weight_interval: tuple[float, float] | None = None
    proven_continuous_dimensions: int | None = None
    proven_piecewise_regions: int | None = None
    proven_subdivisions: int | None = None

    @classmethod
    def build(cls, stats: PartitionStats, *, requested: int, seed: int, envelope: float | None = None,
              chunk_events: int = 0, partitions: int = 0, pilot_proposals: int = 0,
              estimated_peak_bytes: int = 0, proven: Any = None) -> GenerationReport:
        """The report of a run whose merged task statistics are ``stats`` (and envelope proof
        ``proven``, a :class:`~laddu_dask.generation.envelope.ProvenEnvelopeReport`)."""
        minimum = stats.minimum if stats.produced else 0.0
        proof = (None,) * 4 if proven is None else (
            tuple(proven.weight_interval), proven.continuous_dimensions, proven.piecewise_regions,
            proven.subdivisions)
        return cls(requested, stats.produced, stats.proposals, stats.proposals - stats.produced, envelope,
                   stats.maximum, minimum, stats.sum_weights, stats.sum_squared_weights, seed,
                   chunk_events, partitions, pilot_proposals, estimated_peak_bytes, None, *proof)

    @property
    def acceptance_rate(self) -> float:
        """Fraction of proposals accepted (1 for weighted generation)."""
        return self.produced / self.proposals if self.proposals else 0.0

    def to_json(self) -> str:
        """The report as a JSON object (laddu's field names)."""
        return _json.dumps(dataclasses.asdict(self))

    @staticmethod
    def from_json(json: str) -> GenerationReport:
        """A report from :meth:`to_json`'s text."""
        fields = _json.loads(json)
        if fields.get("proven_weight_interval") is not None:
            fields["proven_weight_interval"] = tuple(fields["proven_weight_interval"])
        return GenerationReport(**fields)

    def __repr__(self) -> str:
        return (f"GenerationReport(produced={self.produced}, proposals={self.proposals}, "
                f"acceptance_rate={self.acceptance_rate:.3f})")
