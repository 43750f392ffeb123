"""Monte Carlo generation on Dask: laddu's ``Generator(channel).weighted/unweighted``.

A :class:`Generator` draws events from a channel's phase-space proposals
(:class:`~laddu_dask.generation.phase_space.PhaseSpacePlan`) as one Dask task per output
partition.  Partition ``i`` draws from its own random stream,
``numpy.random.SeedSequence(seed, spawn_key=(i,))`` (the ``i``-th child of
``SeedSequence(seed).spawn``), so a seed gives the same events, bitwise, on any scheduler and
any number of workers or threads; the partition sizes follow from ``events`` and
``partition_events`` (or the memory budget) alone, and a budget limits how many tasks run at
once on the local threads rather than the partitions' sizes.

``weighted`` gives every event its proposal weight (times the model's intensity when a
model is given); ``unweighted`` accepts a proposal with probability
``weight x intensity / envelope``, the envelope being ``max_weight``, the proven bound of
the phase-space weight (``proven_envelope=True``, without a model:
:meth:`Generator.phase_space_envelope`, :mod:`~laddu_dask.generation.envelope`), or
``safety_factor`` times the largest weight of ``pilot_proposals`` pilot proposals (their
own stream), and gives unit weights.  With a pilot envelope the proposal is first adapted to
the model (:mod:`~laddu_dask.generation.adaptation`: the pilot's marginals in the masses, ``t``
and decay angles, mixed with the channel's own proposals), and the envelope comes from a
second pilot of the adapted proposal: the accepted events follow the same distribution, with
fewer proposals.  A weight above the envelope is a
:class:`~laddu_dask.errors.GenerationError`, or with ``grow_envelope=True`` restarts every
partition with the larger envelope (so all partitions share one).

With ``path=`` each task writes its partition as one Parquet file in laddu's convention
(``EDGE_e, EDGE_px, EDGE_py, EDGE_pz`` for every output edge, the generated scalars of
``Generator(channel, scalars=...)``, the ``index_column``, ``weight``; see
:mod:`~laddu_dask.generation.columns`) into a new
folder that replaces ``path`` when every partition is written (``path`` must be new, empty
or a previous output of laddu-dask: see :func:`~laddu_dask.files.check_output`, checked
before anything is drawn); nothing else is kept in
memory, so a sample larger than memory is generated within the memory budget.  The
returned dataset reads that folder.  Without ``path`` the partitions are gathered into an
in-memory dataset.

Examples
--------
>>> import laddu_dask as ld
>>> beam = ld.Edge("beam", particle=ld.particles.PHOTON,
...                initial_momentum=ld.InitialMomentum.uniform_energy(low=8.0, high=9.0, direction=[0, 0, 1]))
>>> target = ld.Edge("target", particle=ld.particles.PROTON,
...                  initial_momentum=ld.InitialMomentum.momentum([0, 0, 0]))
>>> x = ld.Edge("X", mass_proposal=ld.MassProposal(1.0, high=2.0), output=False)
>>> channel = ld.Channel("gamma p -> K_S K_S p", edges=[
...     beam, target, x, ld.Edge("recoil", particle=ld.particles.PROTON),
...     ld.Edge("ks1", particle=ld.particles.K_SHORT), ld.Edge("ks2", particle=ld.particles.K_SHORT)],
...     vertices=[ld.Vertex("production", incoming=["beam", "target"], outgoing=["X", "recoil"],
...                         generation=ld.VertexProposal.t_exchange(incoming="beam", outgoing="X", slope=4.0,
...                                                                 uniform_fraction=0.5)),
...               ld.Vertex("decay", incoming=["X"], outgoing=["ks1", "ks2"])])
>>> events, report = ld.Generator(channel).weighted(1000, seed=7)
>>> events.n_events, report.produced, events.p4_names()
(1000, 1000, ['beam', 'target', 'recoil', 'ks1', 'ks2'])
>>> unit, report = ld.Generator(channel).unweighted(200, seed=7)
>>> report.produced, float(unit.weights().max()), report.proposals > 200
(200, 1.0, True)
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import dask
import numpy as np

from laddu_dask.cluster_waits import compute
from laddu_dask.data.dataset import Dataset
from laddu_dask.data.parquet import read_parquet
from laddu_dask.errors import GenerationError, ParameterError
from laddu_dask.expr.model import Model
from laddu_dask.expr.topology import Channel
from laddu_dask.files import atomic_folder, check_output
from laddu_dask.generation.adaptation import learn
from laddu_dask.generation.columns import IndexColumn, check_scalars
from laddu_dask.generation.envelope import ProvenEnvelopeReport, prove_envelope
from laddu_dask.generation.phase_space import PhaseSpacePlan
from laddu_dask.generation.report import GenerationReport, merge_stats
from laddu_dask.generation.tasks import (
    ADAPTED_PILOT_KEY,
    PILOT_KEY,
    Proposer,
    Target,
    unweighted_task,
    weighted_task,
)
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.memory import MemoryPlan, decide_storage
from laddu_dask.runtime.prepared import budget_chunk
from laddu_dask.sums import exact_sum
from laddu_dask.validate import integer, number

__all__ = ["Generator"]

#: Events per partition when neither ``partition_events`` nor a memory budget says otherwise.
DEFAULT_PARTITION_EVENTS = 100_000
#: Float64 arrays per edge and event while an event is built (its four-vector and the
#: temporaries of boosts and rotations), per event for weights and intensities, and per
#: generated scalar (and the index) for its values and weight factor.
_WORK_ARRAYS_PER_EDGE, _WORK_ARRAYS_PER_EVENT, _WORK_ARRAYS_PER_SCALAR = 16, 8, 4
#: Pilot proposals drawn at once.
_PILOT_CHUNK = 1024


def _count(value: Any, what: str, minimum: int) -> int:
    return integer(value, what, minimum=minimum)


def _positive(value: Any, what: str) -> float:
    return number(value, what, above=0.0)


class Generator:
    """A phase-space event generator compiled from a reaction channel (laddu's ``Generator``).

    Parameters
    ----------
    channel : Channel
        The reaction topology with its proposals: every initial edge an
        ``initial_momentum``, every other edge a ``mass_proposal`` or a particle with a
        mass, every vertex an isotropic decay (the default for one-to-two) or a t-exchange.
    scalars : dict of str to ScalarSource, optional
        Generated scalar columns, drawn with every event (after the four-vectors in the
        output); each multiplies the proposal weight by its value's inverse density, and a
        model may read them.

    Raises
    ------
    ModelError
        When the channel's generation settings are incomplete, naming the edge or vertex.
    ParameterError
        For a scalar column name that is empty, an edge's, or an output column's.
    """

    def __init__(self, channel: Channel, *, scalars: Mapping[str, Any] | None = None) -> None:
        self.channel = channel
        self.plan = PhaseSpacePlan(channel)
        self.scalars = check_scalars(scalars, self.plan.edge_names, self.plan.output_names)

    def __repr__(self) -> str:
        return f"Generator({self.channel!r})"

    def phase_space_envelope(self) -> ProvenEnvelopeReport:
        """A proven upper bound of every phase-space proposal weight (laddu's
        ``phase_space_envelope``; see :mod:`laddu_dask.generation.envelope`).

        Raises
        ------
        ModelError
            For a t-exchange that does not scatter two initial edges.
        GenerationError
            When the weights have no finite bound (a steep purely exponential ``t`` proposal).
        """
        return prove_envelope(self.plan, list(self.scalars.values()))

    # -- layout ----------------------------------------------------------------------------

    def _layout(self, kind: str, events: int, partition_events: int | None, memory: Any,
                execution: Execution) -> tuple[list[int], int, int, int]:
        """Partition sizes, working bytes per proposal, the most proposals drawn at once, and
        how many tasks may run at once.

        A weighted task holds its events' working arrays; an unweighted one its accepted
        events and one chunk of proposals (twice as much).  The sizes depend on the budget
        alone, never on the number of threads (so neither do the events): the threads in use
        are limited instead, to as many tasks as the budget holds.  The budget is applied
        as a likelihood applies it: an automatic partition is cut to the budget by
        :func:`~laddu_dask.runtime.prepared.budget_chunk` (never below its floor), and
        :func:`~laddu_dask.runtime.memory.decide_storage` raises a ``BudgetError`` when one
        partition does not fit; the decision is recorded on ``execution``.
        """
        per_event = 8 * (_WORK_ARRAYS_PER_EDGE * self.plan.n_edges + _WORK_ARRAYS_PER_EVENT
                         + _WORK_ARRAYS_PER_SCALAR * (len(self.scalars) + 1))
        budget = MemoryPlan(host=memory).host_bytes() if memory is not None else execution.memory.host_bytes()
        factor = 2 if kind == "unweighted" else 1
        cap = DEFAULT_PARTITION_EVENTS
        if budget is not None:
            cap = max(1, min(cap, budget // (factor * per_event)))
        if partition_events is not None:
            size = _count(partition_events, "partition_events", 1)
        else:
            size = DEFAULT_PARTITION_EVENTS if budget is None else budget_chunk(
                DEFAULT_PARTITION_EVENTS, 0, factor * per_event, 0, budget)
        sizes = [size] * (events // size) + ([events % size] if events % size else [])
        concurrency = execution.num_workers
        if budget is not None:
            concurrency = max(1, min(concurrency, budget // (factor * per_event * max(size, 1))))
        largest = max(sizes, default=0)
        output_bytes = 8 * (4 * len(self.plan.output_names) + len(self.scalars) + 2)
        execution.record(decide_storage(
            f"generated {kind} events", "streaming", resident_bytes=output_bytes * events,
            partition_bytes=factor * per_event * largest, chunk_size=largest, partitions=len(sizes),
            budget_bytes=budget, workers=concurrency, chunk_keyword="partition_events"))
        return sizes, per_event, cap, concurrency

    def _run(self, tasks: list[Any], execution: Execution, concurrency: int) -> list[Any]:
        scheduler = "threads" if execution.client is None else execution.client
        return list(compute(*tasks, what="the Generator's partitions", scheduler=scheduler,
                            num_workers=concurrency))

    def _collect(self, results: list[Any], path: Any, proposer: Proposer) -> Dataset:
        if path is not None:
            return read_parquet(os.fspath(path))
        parts = [r for _, r in results if r is not None]
        names = self.plan.output_names
        extra = [*self.scalars, *([proposer.index.name] if proposer.index is not None else [])]
        if not parts:
            return Dataset.from_arrays(p4s={n: np.zeros((0, 4)) for n in names},
                                       scalars={n: np.zeros(0) for n in extra} or None, weights=np.zeros(0))
        p4s = {n: np.concatenate([p[n] for p in parts]) for n in names}
        scalars = {n: np.concatenate([p[n] for p in parts]) for n in extra}
        return Dataset.from_arrays(p4s=p4s, scalars=scalars or None,
                                   weights=np.concatenate([p["weight"] for p in parts]),
                                   chunk_size=max(len(p["weight"]) for p in parts))

    def _generate(self, kind: str, events: int, model: Model | None, parameters: Any,
                  execution: Execution | None, memory: Any, seed: int, path: Any,
                  partition_events: int | None, index: tuple[Any, Any, Any],
                  **unweighting: Any) -> tuple[Dataset, GenerationReport]:
        events = _count(events, "events", 0)
        seed = _count(seed, "seed", 0)
        if path is not None:
            check_output(path, folder=True)
        if execution is not None and not isinstance(execution, Execution):
            raise ParameterError(f"execution must be a laddu_dask Execution, got {type(execution).__name__}")
        execution = execution if execution is not None else Execution()
        target = Target(model, parameters, execution.precision)
        proposer = Proposer(self.plan, self.scalars, None)
        proposer.index = IndexColumn.build(*index, events=events, taken=proposer.columns())
        sizes, per_event, cap, concurrency = self._layout(kind, events, partition_events, memory, execution)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()
        envelope, pilot, proven = None, 0, None
        if kind == "unweighted":
            proposer, envelope, acceptance, pilot, proven = self._envelope(proposer, target, seed,
                                                                           **unweighting)
            unweighting = {**unweighting, "acceptance": acceptance, "chunk_cap": cap}
        while True:
            try:
                results = self._attempt(kind, proposer, target, seed, sizes, offsets, path, envelope,
                                        unweighting, events, execution, concurrency)
                break
            except _Regrow as grown:
                envelope = grown.envelope
        stats = merge_stats([s for s, _ in results])
        report = GenerationReport.build(stats, requested=events, seed=seed, envelope=envelope,
                                        chunk_events=max(sizes, default=0),
                                        estimated_peak_bytes=per_event * max(sizes, default=0)
                                        * (2 if kind == "unweighted" else 1),
                                        pilot_proposals=pilot, partitions=len(sizes), proven=proven)
        return self._collect(results, path, proposer), report

    def _attempt(self, kind: str, proposer: Proposer, target: Target, seed: int, sizes: list[int],
                 offsets: list[int], path: Any, envelope: float | None, unweighting: dict[str, Any],
                 events: int, execution: Execution, concurrency: int) -> list[Any]:
        def run(folder: str | None) -> list[Any]:
            results = self._run(self._tasks(kind, proposer, target, seed, sizes, offsets, folder, envelope,
                                            unweighting, events), execution, concurrency)
            self._check_envelope(results, envelope, unweighting)
            return results

        if path is None:
            return run(None)
        with atomic_folder(os.fspath(path)) as folder:
            return run(folder)

    @staticmethod
    def _tasks(kind: str, proposer: Proposer, target: Target, seed: int, sizes: list[int],
               offsets: list[int], folder: str | None, envelope: float | None, unweighting: dict[str, Any],
               events: int) -> list[Any]:
        tasks = []
        limit = unweighting.get("max_proposals")
        for i, n in enumerate(sizes):
            name = f"laddu-dask-generate-{kind}-{i}"
            if kind == "weighted":
                task = dask.delayed(weighted_task, pure=True, name=name)(
                    proposer, target, seed, i, n, offsets[i], folder)
            else:
                share = None if limit is None else max(1, math.ceil(limit * n / events))
                chunk = max(1, min(math.ceil(1.1 * n / unweighting["acceptance"]) + 16,
                                   unweighting["chunk_cap"]))
                task = dask.delayed(unweighted_task, pure=True, name=name)(
                    proposer, target, seed, i, n, offsets[i], folder, envelope, chunk, share)
            tasks.append(task)
        return tasks

    @staticmethod
    def _check_envelope(results: list[Any], envelope: float | None, unweighting: dict[str, Any]) -> None:
        """Raise when a partition saw a weight above the envelope (``_Regrow`` when growing)."""
        if envelope is None:
            return
        largest = max((s.maximum for s, _ in results), default=0.0)
        if largest <= envelope:
            return
        if not unweighting["grow_envelope"]:
            raise GenerationError(f"a weight ({largest}) exceeds the unweighting envelope ({envelope}); "
                                  "give a larger max_weight or safety_factor, or grow_envelope=True")
        raise _Regrow(largest * unweighting["safety_factor"])

    def _envelope(self, proposer: Proposer, target: Target, seed: int, *, max_weight: float | None,
                  pilot_proposals: int, safety_factor: float, proven_envelope: bool, **_: Any
                  ) -> tuple[Proposer, float, float, int, ProvenEnvelopeReport | None]:
        """The proposer, the envelope, the expected acceptance, the pilot proposals drawn and
        the proof.

        A proven envelope needs no pilot; a probe of one pilot chunk then estimates the
        acceptance, which only sizes the chunks of proposals.  A pilot envelope first adapts
        the proposal to the model (:mod:`~laddu_dask.generation.adaptation`); when it does, a
        second pilot of as many proposals, drawn with the adapted proposal from its own
        stream, gives the envelope.
        """
        proven = self.phase_space_envelope() if proven_envelope else None
        pilot = _PILOT_CHUNK if proven is not None else _count(pilot_proposals, "pilot_proposals", 1)
        if max_weight is not None and proven is None:
            max_weight = _positive(max_weight, "max_weight")
        adapting = proven is None and max_weight is None
        coordinates, weights = self._pilot(proposer, target, seed, PILOT_KEY, pilot, adapting)
        drawn = 0 if proven is not None else pilot
        learned = learn(coordinates, weights) if adapting else {}
        if learned:
            proposer = Proposer(proposer.plan.adapt(learned), proposer.scalars, proposer.index)
            _, weights = self._pilot(proposer, target, seed, ADAPTED_PILOT_KEY, pilot, False)
            drawn += pilot
        largest = float(weights.max())
        mean = exact_sum(weights) / pilot
        if proven is not None:
            envelope = proven.maximum_weight
        elif max_weight is not None:
            envelope = max_weight
        elif largest > 0:
            envelope = largest * safety_factor
        else:
            raise GenerationError(f"every one of the {pilot} pilot proposals has zero weight; "
                                  "the model vanishes on the proposed phase space")
        return proposer, envelope, max(mean / envelope, 1e-6), drawn, proven

    @staticmethod
    def _pilot(proposer: Proposer, target: Target, seed: int, key: tuple[int, ...], pilot: int,
               keep: bool) -> tuple[dict[tuple[str, str], Any], np.ndarray]:
        """``pilot`` proposals of the stream ``key`` and their target weights, drawn in fixed
        chunks (the same for any budget); with ``keep``, the adaptable coordinates of the
        proposals (:mod:`~laddu_dask.generation.adaptation`), else none."""
        rngs = proposer.streams(seed, key)
        chunks: list[dict[tuple[str, str], Any]] = []
        weights = []
        for start in range(0, pilot, _PILOT_CHUNK):
            coordinates: dict[tuple[str, str], Any] | None = {} if keep else None
            p4s, values, proposal = proposer.propose(rngs, min(_PILOT_CHUNK, pilot - start), coordinates)
            weights.append(target.weights(p4s, values, proposal, start))
            if coordinates is not None:
                chunks.append(coordinates)
        kept = {}
        for key in chunks[0] if chunks else {}:
            bases = [c[key][1] for c in chunks]
            flat = all(np.ndim(b) == 0 and b == bases[0] for b in bases)  # a uniform proposal
            kept[key] = (np.concatenate([c[key][0] for c in chunks]), bases[0] if flat else np.concatenate(
                [np.broadcast_to(b, c[key][0].shape) for b, c in zip(bases, chunks)]))
        return kept, np.concatenate(weights)

    # -- laddu's calls ---------------------------------------------------------------------

    def weighted(self, events: int, *, model: Model | None = None, parameters: Any = None,
                 execution: Execution | None = None, memory: Any = None, seed: int = 0,
                 diagnostics: bool = False, index_column: str | None = None, index_dtype: Any = "uint64",
                 index_start: int = 0, path: str | os.PathLike[str] | None = None,
                 partition_events: int | None = None) -> tuple[Dataset, GenerationReport]:
        """Generate weighted phase-space events (weights times the model's intensity if given).

        Parameters
        ----------
        events : int
            Number of events to produce.
        model : Model, optional
            Intensity multiplied into the proposal weights.
        parameters : sequence of float or dict, optional
            The model's parameter values (defaults where omitted).
        execution : Execution, optional
            Where the tasks run: ``client=`` a Dask cluster, else the threaded scheduler on
            ``num_workers`` threads; its host memory budget sizes the partitions.
        memory : MemoryBudget, int or str, optional
            Host memory budget for the partitions in flight (overrides the execution's).
        seed : int, default 0
            Random seed.
        diagnostics : bool, default False
            laddu's keyword, accepted (the report is the same).
        index_column : str, optional
            A column of output row ordinals plus ``index_start``, contiguous over the
            partitions in order (see :mod:`laddu_dask.generation.columns`).
        index_dtype : str or NumPy dtype, default "uint64"
            Its unsigned dtype in Parquet files (``"uint8"`` ... ``"uint64"``, ``"u8"`` ...
            ``"u64"`` or a NumPy unsigned dtype).
        index_start : int, default 0
            The first index; the whole range must fit ``index_dtype`` and stay below ``2**53``.
        path : path-like, optional
            A folder to write one Parquet file per partition into (replaced when done): a new
            or empty folder, or one a previous laddu-dask write left.
        partition_events : int, optional
            Events per partition (else from the memory budget, at most 100 000).

        Returns
        -------
        dataset : Dataset
        report : GenerationReport

        Raises
        ------
        ParameterError
            For a bad count, seed, model, parameters or index column.
        UnsafeOutputError
            When ``path`` holds files laddu-dask did not write, is the working folder or a
            folder above it, a file or a symbolic link (before anything is drawn).
        ModelError
            For an event outside phase space (a closed threshold), naming the vertex.
        """
        return self._generate("weighted", events, model, parameters, execution, memory, seed, path,
                              partition_events, (index_column, index_dtype, index_start))

    def unweighted(self, events: int, model: Model | None = None, *, parameters: Any = None,
                   execution: Execution | None = None, memory: Any = None, seed: int = 0,
                   max_proposals: int | None = None, max_weight: float | None = None,
                   pilot_proposals: int = 10_000, safety_factor: float = 2.0,
                   proven_envelope: bool = False, grow_envelope: bool = False, diagnostics: bool = False,
                   index_column: str | None = None, index_dtype: Any = "uint64", index_start: int = 0,
                   path: str | os.PathLike[str] | None = None,
                   partition_events: int | None = None) -> tuple[Dataset, GenerationReport]:
        """Generate unit-weight events by accept-reject against ``model`` (or phase space).

        Parameters are those of :meth:`weighted` and laddu's: ``max_proposals`` (an error
        past this many proposals, shared among partitions by their sizes), ``max_weight``
        (a known envelope), ``pilot_proposals`` and ``safety_factor`` (the estimated
        envelope), ``proven_envelope`` (the envelope of :meth:`phase_space_envelope`; only
        without a model, ``max_weight`` and ``grow_envelope``), ``grow_envelope`` (restart
        with a larger envelope instead of an error).  With a pilot envelope (neither
        ``max_weight`` nor ``proven_envelope``) the proposal is adapted to the model first
        and the report counts both pilots (:mod:`~laddu_dask.generation.adaptation`).

        Raises
        ------
        GenerationError
            When a weight exceeds the envelope (without ``grow_envelope``) or the proposal
            limit is reached.
        ParameterError
            For bad keywords, or ``proven_envelope`` with a model, ``max_weight`` or
            ``grow_envelope``.
        """
        if proven_envelope:
            for given, what in ((max_weight is not None, "max_weight"), (model is not None, "a model"),
                                (grow_envelope, "grow_envelope")):
                if given:
                    raise ParameterError(f"proven_envelope=True cannot be combined with {what}: the proven "
                                         "envelope bounds the phase-space weight alone, fixed in advance")
        if max_proposals is not None:
            max_proposals = _count(max_proposals, "max_proposals", 1)
        factor = _positive(safety_factor, "safety_factor")
        if factor < 1.0:
            raise ParameterError(f"safety_factor must be at least 1, got {safety_factor!r}")
        return self._generate(
            "unweighted", events, model, parameters, execution, memory, seed, path, partition_events,
            (index_column, index_dtype, index_start), max_weight=max_weight, pilot_proposals=pilot_proposals,
            safety_factor=factor, grow_envelope=bool(grow_envelope), max_proposals=max_proposals,
            proven_envelope=bool(proven_envelope))


class _Regrow(Exception):
    """Inside the atomic folder: a grown envelope (the folder is dropped, the run restarts)."""

    def __init__(self, envelope: float) -> None:
        super().__init__(envelope)
        self.envelope = envelope
