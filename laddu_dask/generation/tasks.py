"""What one :class:`~laddu_dask.Generator` task does: propose, weight, accept, keep or write.

Partition ``i`` draws its kinematics from ``SeedSequence(seed, spawn_key=(i,))`` and its
generated scalars from ``SeedSequence(seed, spawn_key=(i, 1))`` (so a scalar added to a
generator leaves every four-vector as it was); the unweighting pilot uses the spawn key
``(2**32 - 1,)`` and ``(2**32 - 1, 1)``, its second pilot (with a proposal adapted to the
model) ``(2**32 - 2,)`` and ``(2**32 - 2, 1)``.  A task returns its
:class:`~laddu_dask.generation.report.PartitionStats` and its events (a dict of columns), or
``None`` once it has written them as one Parquet file (the index column in its own unsigned
dtype, every other column as float64).

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.Edge("X", particle=ld.Particle(mass=1.8), initial_momentum=ld.InitialMomentum.momentum([0, 0, 0]))
>>> channel = ld.Channel("X -> K_S K_S", edges=[x, ld.Edge("a", particle=ld.particles.K_SHORT),
...                      ld.Edge("b", particle=ld.particles.K_SHORT)],
...                      vertices=[ld.Vertex("decay", incoming=["X"], outgoing=["a", "b"])])
>>> proposer = Proposer(ld.Generator(channel).plan, {"pol": ld.ScalarSource.fixed(0.4)}, None)
>>> stats, events = weighted_task(proposer, Target(None, None, "f64"), 7, 0, 3, 0, None)
>>> sorted(events), events["pol"].tolist(), stats.produced
(['X', 'a', 'b', 'pol', 'weight'], [0.4, 0.4, 0.4], 3)
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from laddu_dask.compile.layout import resolve_parameters
from laddu_dask.data.checks import resolve_chunk_size
from laddu_dask.data.dataset import Dataset
from laddu_dask.data.schema import WEIGHT_COLUMN, p4_columns
from laddu_dask.errors import GenerationError, NonFiniteError, NonPositiveIntensityError, ParameterError
from laddu_dask.expr.model import Model
from laddu_dask.expr.proposals import ScalarSource
from laddu_dask.generation.columns import IndexColumn, draw_scalar
from laddu_dask.generation.phase_space import PhaseSpacePlan
from laddu_dask.generation.report import PartitionStats
from laddu_dask.likelihood.events import evaluate_model
from laddu_dask.runtime.execution import Execution

__all__ = ["ADAPTED_PILOT_KEY", "PILOT_KEY", "Proposer", "Target", "stream", "unweighted_task",
           "weighted_task"]

#: The stream of the unweighting pilot: a spawn key no partition uses.
PILOT_KEY = (2**32 - 1,)
#: The stream of the second pilot, drawn with a proposal adapted to the model.
ADAPTED_PILOT_KEY = (2**32 - 2,)
#: The spawn-key suffix of a stream's generated scalars.
_SCALARS = 1


def stream(seed: int, key: tuple[int, ...]) -> np.random.Generator:
    """The random stream ``SeedSequence(seed, spawn_key=key)`` (PCG64)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key)))


class Proposer:
    """A plan's proposals with their generated scalars, and the output's extra columns."""

    def __init__(self, plan: PhaseSpacePlan, scalars: dict[str, ScalarSource], index: IndexColumn | None
                 ) -> None:
        self.plan, self.scalars, self.index = plan, scalars, index

    def streams(self, seed: int, key: tuple[int, ...]
                ) -> tuple[np.random.Generator, np.random.Generator | None]:
        """The kinematic and the scalar stream of ``key``."""
        return stream(seed, key), stream(seed, (*key, _SCALARS)) if self.scalars else None

    def propose(self, rngs: tuple[np.random.Generator, np.random.Generator | None], n: int,
                coordinates: dict[tuple[str, str], Any] | None = None
                ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray]:
        """``n`` proposals: the four-vectors of every edge, the scalars, the proposal weights
        (with ``coordinates``, the plan's adaptable coordinates recorded in it)."""
        p4s, weight = self.plan.propose(rngs[0], n, coordinates)
        values = {}
        for name, source in self.scalars.items():
            values[name], inverse = draw_scalar(source, rngs[1], n)  # type: ignore[arg-type]
            weight = weight * inverse
        return p4s, values, weight

    def output(self, p4s: dict[str, np.ndarray], values: dict[str, np.ndarray], rows: Any = slice(None)
               ) -> dict[str, np.ndarray]:
        """The output columns of the proposals ``rows``: four-vectors, then scalars."""
        out = {name: p4s[name][rows] for name in self.plan.output_names}
        out.update({name: v[rows] for name, v in values.items()})
        return out

    def columns(self) -> list[str]:
        """The output's column names (without the weight), in file order."""
        names = [c for n in self.plan.output_names for c in p4_columns(n)] + list(self.scalars)
        return names + ([self.index.name] if self.index is not None else [])

    def finish(self, events: dict[str, np.ndarray], weights: np.ndarray, folder: str | None, index: int,
               offset: int) -> dict[str, np.ndarray] | None:
        """The partition's events and weights (with its indices from row ``offset`` on), or
        ``None`` once they are written to ``folder``."""
        n = len(weights)
        if self.index is not None:
            events = {**events, self.index.name: self.index.values(offset, n)}
        if folder is None:
            return {**events, WEIGHT_COLUMN: weights}
        arrays, fields = [], []
        for name, values in events.items():
            if values.ndim == 2:
                for column, part in zip(p4_columns(name), values.T):
                    arrays.append(pa.array(np.ascontiguousarray(part)))
                    fields.append(pa.field(column, pa.float64(), nullable=False))
            else:
                arrays.append(pa.array(values))
                fields.append(pa.field(name, arrays[-1].type, nullable=False))
        arrays.append(pa.array(weights))
        fields.append(pa.field(WEIGHT_COLUMN, pa.float64(), nullable=False))
        table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
        pq.write_table(table, os.path.join(folder, f"part-{index:05d}.parquet"), write_page_checksum=True,
                       row_group_size=resolve_chunk_size(None))
        return None


class Target:
    """What a task needs to weight its proposals: the model, its parameters, the precision."""

    def __init__(self, model: Model | None, parameters: Any, precision: str) -> None:
        if model is not None and not isinstance(model, Model):
            raise ParameterError(f"model must be a laddu_dask Model, got {type(model).__name__}")
        if model is None and parameters is not None:
            raise ParameterError("parameters were given without a model")
        self.model, self.parameters, self.precision = model, parameters, precision
        if model is not None:  # the parameters are checked now, on the client
            names = model.parameter_names
            resolve_parameters(names, model.default_parameters if parameters is None else parameters,
                               defaults=dict(zip(names, model.default_parameters)))

    def weights(self, p4s: dict[str, np.ndarray], values: dict[str, np.ndarray], proposal: np.ndarray,
                offset: int) -> np.ndarray:
        """The proposal weights times the model's intensity (checked finite, non-negative)."""
        if self.model is None:
            return proposal
        events = Dataset.from_arrays(p4s=p4s, scalars=values or None)
        intensity = np.asarray(evaluate_model(self.model, events, self.parameters,
                                              Execution(num_workers=1, precision=self.precision),
                                              True, False), dtype=np.float64)
        bad = ~np.isfinite(intensity)
        if bad.any():
            i = int(np.argmax(bad))
            raise NonFiniteError(f"the model's intensity is {intensity[i]} for generated event "
                                 f"{offset + i}")
        if (intensity < 0.0).any():
            i = int(np.argmax(intensity < 0.0))
            raise NonPositiveIntensityError(f"the model's intensity is negative ({intensity[i]}) for "
                                            f"generated event {offset + i}; generation needs a "
                                            "non-negative intensity")
        return proposal * intensity


def weighted_task(proposer: Proposer, target: Target, seed: int, index: int, n: int, offset: int,
                  folder: str | None) -> tuple[PartitionStats, Any]:
    """Partition ``index``: ``n`` weighted events (rows ``offset`` on of the sample)."""
    p4s, values, proposal = proposer.propose(proposer.streams(seed, (index,)), n)
    weights = target.weights(p4s, values, proposal, offset)
    stats = PartitionStats.of(weights, proposals=n, produced=n)
    return stats, proposer.finish(proposer.output(p4s, values), weights, folder, index, offset)


def unweighted_task(proposer: Proposer, target: Target, seed: int, index: int, n: int, offset: int,
                    folder: str | None, envelope: float, chunk: int, max_proposals: int | None,
                    ) -> tuple[PartitionStats, Any]:
    """Partition ``index``: ``n`` unit-weight events accepted with probability
    ``weight / envelope`` from chunks of ``chunk`` proposals (at most ``max_proposals``)."""
    rngs = proposer.streams(seed, (index,))
    kept: list[dict[str, np.ndarray]] = []
    accepted = proposals = 0
    largest = 0.0
    sums = PartitionStats.empty()
    while accepted < n:
        if max_proposals is not None and proposals >= max_proposals:
            raise GenerationError(f"partition {index} reached its share of max_proposals "
                                  f"({max_proposals}) with {accepted} of {n} events accepted")
        size = chunk if max_proposals is None else min(chunk, max_proposals - proposals)
        p4s, values, proposal = proposer.propose(rngs, size)
        weights = target.weights(p4s, values, proposal, offset + proposals)
        u = rngs[0].random(size)
        largest = max(largest, float(weights.max()))
        if largest > envelope:
            return PartitionStats.exceeded(largest), None
        rows = np.flatnonzero(u * envelope < weights)[: n - accepted]
        done = accepted + len(rows) == n
        proposals += int(rows[-1]) + 1 if done and len(rows) else size
        sums = sums.add(PartitionStats.of(weights[rows], proposals=0, produced=len(rows)))
        kept.append(proposer.output(p4s, values, rows))
        accepted += len(rows)
    empty = proposer.output({k: np.zeros((0, 4)) for k in proposer.plan.output_names},
                            {k: np.zeros(0) for k in proposer.scalars})
    events = {k: np.concatenate([p[k] for p in kept]) if kept else v for k, v in empty.items()}
    stats = sums.add(PartitionStats(proposals=proposals, produced=0, maximum=largest))
    return stats, proposer.finish(events, np.ones(n), folder, index, offset)
