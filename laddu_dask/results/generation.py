"""Monte Carlo generation on Dask: laddu's ``Generator(channel).weighted/unweighted``.

A :class:`Generator` draws events from a channel's phase-space proposals
(:class:`~laddu_dask.results.phase_space.PhaseSpacePlan`) as one Dask task per output
partition.  Partition ``i`` draws from its own random stream,
``numpy.random.SeedSequence(seed, spawn_key=(i,))`` (the ``i``-th child of
``SeedSequence(seed).spawn``), so a seed gives the same events, bitwise, on any scheduler and
any number of workers or threads; the partition sizes follow from ``events`` and
``partition_events`` (or the memory budget) alone, and a budget limits how many tasks run at
once on the local threads rather than the partitions' sizes.

``weighted`` gives every event its proposal weight (times the model's intensity when a
model is given); ``unweighted`` accepts a proposal with probability
``weight x intensity / envelope``, the envelope being ``max_weight`` or
``safety_factor`` times the largest weight of ``pilot_proposals`` pilot proposals (their
own stream), and gives unit weights.  A weight above the envelope is a
:class:`~laddu_dask.errors.GenerationError`, or with ``grow_envelope=True`` restarts every
partition with the larger envelope (so all partitions share one).

With ``path=`` each task writes its partition as one Parquet file in laddu's convention
(``EDGE_e, EDGE_px, EDGE_py, EDGE_pz`` for every output edge, ``weight``) into a new
folder that replaces ``path`` when every partition is written; nothing else is kept in
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

from laddu_dask.compile.layout import resolve_parameters
from laddu_dask.data.dataset import Dataset
from laddu_dask.data.parquet import read_parquet
from laddu_dask.data.parquet_writer import write_parquet
from laddu_dask.errors import GenerationError, NonFiniteError, NonPositiveIntensityError, ParameterError
from laddu_dask.expr.model import Model
from laddu_dask.expr.topology import Channel
from laddu_dask.files import atomic_folder
from laddu_dask.likelihood.events import evaluate_model
from laddu_dask.results.phase_space import PhaseSpacePlan
from laddu_dask.results.report import GenerationReport, PartitionStats, merge_stats
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.memory import MemoryPlan

__all__ = ["Generator"]

#: Events per partition when neither ``partition_events`` nor a memory budget says otherwise.
DEFAULT_PARTITION_EVENTS = 100_000
#: Float64 arrays per edge and event while an event is built (its four-vector and the
#: temporaries of boosts and rotations), and per event for weights and intensities.
_WORK_ARRAYS_PER_EDGE, _WORK_ARRAYS_PER_EVENT = 16, 8
#: The stream of the unweighting pilot: a spawn key no partition uses; proposals drawn at once.
_PILOT_KEY, _PILOT_CHUNK = (2**32 - 1,), 1024


def _count(value: Any, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ParameterError(f"{what} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _positive(value: Any, what: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{what} must be a number, got {value!r}") from None
    if not (math.isfinite(number) and number > 0.0):
        raise ParameterError(f"{what} must be finite and positive, got {value!r}")
    return number


def _stream(seed: int, key: tuple[int, ...]) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key)))


class _Target:
    """What a task needs to weight its proposals: the model, its parameters, the precision."""

    def __init__(self, model: Model | None, parameters: Any, precision: str) -> None:
        if model is not None and not isinstance(model, Model):
            raise ParameterError(f"model must be a laddu_dask Model, got {type(model).__name__}")
        if model is None and parameters is not None:
            raise ParameterError("parameters were given without a model")
        self.model, self.parameters, self.precision = model, parameters, precision
        if model is not None:  # the parameters are checked now, on the client
            _check_parameters(model, parameters)

    def weights(self, p4s: dict[str, np.ndarray], proposal: np.ndarray, offset: int) -> np.ndarray:
        if self.model is None:
            return proposal
        events = Dataset.from_arrays(p4s=p4s)
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


def _check_parameters(model: Model, parameters: Any) -> None:
    names = model.parameter_names
    resolve_parameters(names, model.default_parameters if parameters is None else parameters,
                       defaults=dict(zip(names, model.default_parameters)))


def _output(plan: PhaseSpacePlan, p4s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: p4s[name] for name in plan.output_names}


def _finish(plan: PhaseSpacePlan, p4s: dict[str, np.ndarray], weights: np.ndarray, folder: str | None,
            index: int) -> dict[str, np.ndarray] | None:
    events = _output(plan, p4s)
    if folder is None:
        return {**events, "weight": weights}
    dataset = Dataset.from_arrays(p4s=events, weights=weights)
    write_parquet(dataset, os.path.join(folder, f"part-{index:05d}.parquet"))
    return None


def _weighted_task(plan: PhaseSpacePlan, target: _Target, seed: int, index: int, n: int, offset: int,
                   folder: str | None) -> tuple[PartitionStats, Any]:
    rng = _stream(seed, (index,))
    p4s, proposal = plan.propose(rng, n)
    weights = target.weights(p4s, proposal, offset)
    stats = PartitionStats.of(weights, proposals=n, produced=n)
    return stats, _finish(plan, p4s, weights, folder, index)


def _unweighted_task(plan: PhaseSpacePlan, target: _Target, seed: int, index: int, n: int, offset: int,
                     folder: str | None, envelope: float, chunk: int, max_proposals: int | None,
                     ) -> tuple[PartitionStats, Any]:
    rng = _stream(seed, (index,))
    kept: list[tuple[dict[str, np.ndarray], np.ndarray]] = []
    accepted = proposals = 0
    largest = 0.0
    sums = PartitionStats.empty()
    while accepted < n:
        if max_proposals is not None and proposals >= max_proposals:
            raise GenerationError(f"partition {index} reached its share of max_proposals "
                                  f"({max_proposals}) with {accepted} of {n} events accepted")
        size = chunk if max_proposals is None else min(chunk, max_proposals - proposals)
        p4s, proposal = plan.propose(rng, size)
        weights = target.weights(p4s, proposal, offset + proposals)
        u = rng.random(size)
        largest = max(largest, float(weights.max()))
        if largest > envelope:
            return PartitionStats.exceeded(largest), None
        rows = np.flatnonzero(u * envelope < weights)[: n - accepted]
        done = accepted + len(rows) == n
        proposals += int(rows[-1]) + 1 if done and len(rows) else size
        sums = sums.add(PartitionStats.of(weights[rows], proposals=0, produced=len(rows)))
        kept.append(({k: v[rows] for k, v in _output(plan, p4s).items()}, weights[rows]))
        accepted += len(rows)
    events = {k: np.concatenate([p[k] for p, _ in kept]) if kept else np.zeros((0, 4))
              for k in plan.output_names}
    stats = sums.add(PartitionStats(proposals=proposals, produced=0, maximum=largest))
    return stats, _finish(plan, events, np.ones(n), folder, index)


class Generator:
    """A phase-space event generator compiled from a reaction channel (laddu's ``Generator``).

    Parameters
    ----------
    channel : Channel
        The reaction topology with its proposals: every initial edge an
        ``initial_momentum``, every other edge a ``mass_proposal`` or a particle with a
        mass, every vertex an isotropic decay (the default for one-to-two) or a t-exchange.
    scalars : None
        laddu's generated scalar columns (``ScalarSource``) are not available yet; only
        ``None`` is accepted.

    Raises
    ------
    ModelError
        When the channel's generation settings are incomplete, naming the edge or vertex.
    """

    def __init__(self, channel: Channel, *, scalars: Mapping[str, Any] | None = None) -> None:
        if scalars:
            raise ParameterError("generated scalar columns (scalars=) are not supported by "
                                 "laddu-dask's Generator yet")
        self.channel = channel
        self.plan = PhaseSpacePlan(channel)

    def __repr__(self) -> str:
        return f"Generator({self.channel!r})"

    # -- layout ----------------------------------------------------------------------------

    def _layout(self, kind: str, events: int, partition_events: int | None, memory: Any,
                execution: Execution) -> tuple[list[int], int, int, int]:
        """Partition sizes, working bytes per proposal, the most proposals drawn at once, and
        how many tasks may run at once.

        A weighted task holds its events' working arrays; an unweighted one its accepted
        events and one chunk of proposals (twice as much).  The sizes depend on the budget
        alone, never on the number of threads (so neither do the events): the threads in use
        are limited instead, to as many tasks as the budget holds.
        """
        per_event = 8 * (_WORK_ARRAYS_PER_EDGE * self.plan.n_edges + _WORK_ARRAYS_PER_EVENT)
        budget = MemoryPlan(host=memory).host_bytes() if memory is not None else execution.memory.host_bytes()
        factor = 2 if kind == "unweighted" else 1
        cap = DEFAULT_PARTITION_EVENTS
        if budget is not None:
            cap = max(1, min(cap, budget // (factor * per_event)))
        size = cap if partition_events is None else _count(partition_events, "partition_events", 1)
        sizes = [size] * (events // size) + ([events % size] if events % size else [])
        concurrency = execution.num_workers
        if budget is not None:
            concurrency = max(1, min(concurrency, budget // (factor * per_event * max(size, 1))))
        return sizes, per_event, cap, concurrency

    def _run(self, tasks: list[Any], execution: Execution, concurrency: int) -> list[Any]:
        if execution.client is not None:
            return execution.client.gather(execution.client.compute(tasks))
        return list(dask.compute(*tasks, scheduler="threads", num_workers=concurrency))

    def _collect(self, results: list[Any], path: Any) -> Dataset:
        if path is not None:
            return read_parquet(os.fspath(path))
        parts = [r for _, r in results]
        if not parts:
            return Dataset.from_arrays(p4s={n: np.zeros((0, 4)) for n in self.plan.output_names},
                                       weights=np.zeros(0))
        p4s = {n: np.concatenate([p[n] for p in parts]) for n in self.plan.output_names}
        return Dataset.from_arrays(p4s=p4s, weights=np.concatenate([p["weight"] for p in parts]),
                                   chunk_size=max(len(p["weight"]) for p in parts))

    def _generate(self, kind: str, events: int, model: Model | None, parameters: Any,
                  execution: Execution | None, memory: Any, seed: int, path: Any,
                  partition_events: int | None, **unweighting: Any) -> tuple[Dataset, GenerationReport]:
        events = _count(events, "events", 0)
        seed = _count(seed, "seed", 0)
        if execution is not None and not isinstance(execution, Execution):
            raise ParameterError(f"execution must be a laddu_dask Execution, got {type(execution).__name__}")
        execution = execution if execution is not None else Execution()
        target = _Target(model, parameters, execution.precision)
        sizes, per_event, cap, concurrency = self._layout(kind, events, partition_events, memory, execution)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()
        envelope, pilot = None, 0
        if kind == "unweighted":
            envelope, acceptance, pilot = self._envelope(target, seed, **unweighting)
            unweighting = {**unweighting, "acceptance": acceptance, "chunk_cap": cap}
        while True:
            try:
                results = self._attempt(kind, target, seed, sizes, offsets, path, envelope, unweighting,
                                        events, execution, concurrency)
                break
            except _Regrow as grown:
                envelope = grown.envelope
        stats = merge_stats([s for s, _ in results])
        report = GenerationReport.build(stats, requested=events, seed=seed, envelope=envelope,
                                        chunk_events=max(sizes, default=0),
                                        estimated_peak_bytes=per_event * max(sizes, default=0)
                                        * (2 if kind == "unweighted" else 1),
                                        pilot_proposals=pilot, partitions=len(sizes))
        return self._collect(results, path), report

    def _attempt(self, kind: str, target: _Target, seed: int, sizes: list[int], offsets: list[int],
                 path: Any, envelope: float | None, unweighting: dict[str, Any], events: int,
                 execution: Execution, concurrency: int) -> list[Any]:
        if path is None:
            results = self._run(self._tasks(kind, target, seed, sizes, offsets, None, envelope,
                                            unweighting, events), execution, concurrency)
            self._check_envelope(results, envelope, unweighting)
            return results
        with atomic_folder(os.fspath(path)) as folder:
            results = self._run(self._tasks(kind, target, seed, sizes, offsets, folder, envelope,
                                            unweighting, events), execution, concurrency)
            self._check_envelope(results, envelope, unweighting)
        return results

    def _tasks(self, kind: str, target: _Target, seed: int, sizes: list[int], offsets: list[int],
               folder: str | None, envelope: float | None, unweighting: dict[str, Any],
               events: int) -> list[Any]:
        tasks = []
        limit = unweighting.get("max_proposals")
        for i, n in enumerate(sizes):
            name = f"laddu-dask-generate-{kind}-{i}"
            if kind == "weighted":
                task = dask.delayed(_weighted_task, pure=True, name=name)(
                    self.plan, target, seed, i, n, offsets[i], folder)
            else:
                share = None if limit is None else max(1, math.ceil(limit * n / events))
                chunk = max(1, min(math.ceil(1.1 * n / unweighting["acceptance"]) + 16,
                                   unweighting["chunk_cap"]))
                task = dask.delayed(_unweighted_task, pure=True, name=name)(
                    self.plan, target, seed, i, n, offsets[i], folder, envelope, chunk, share)
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

    def _envelope(self, target: _Target, seed: int, *, max_weight: float | None, pilot_proposals: int,
                  safety_factor: float, **_: Any) -> tuple[float, float, int]:
        """The envelope, the expected acceptance and the number of pilot proposals drawn."""
        pilot = _count(pilot_proposals, "pilot_proposals", 1)
        rng = _stream(seed, _PILOT_KEY)
        largest, total = 0.0, []
        for start in range(0, pilot, _PILOT_CHUNK):  # fixed chunks: the same envelope for any budget
            n = min(_PILOT_CHUNK, pilot - start)
            p4s, proposal = self.plan.propose(rng, n)
            weights = target.weights(p4s, proposal, start)
            largest = max(largest, float(weights.max()))
            total.append(math.fsum(weights.tolist()))
        mean = math.fsum(total) / pilot
        if max_weight is not None:
            envelope = _positive(max_weight, "max_weight")
        elif largest > 0:
            envelope = largest * safety_factor
        else:
            raise GenerationError(f"every one of the {pilot} pilot proposals has zero weight; "
                                  "the model vanishes on the proposed phase space")
        return envelope, max(mean / envelope, 1e-6), pilot

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
        path : path-like, optional
            A folder to write one Parquet file per partition into (replaced when done).
        partition_events : int, optional
            Events per partition (else from the memory budget, at most 100 000).
        diagnostics, index_column, index_dtype, index_start
            laddu's keywords; ``diagnostics`` is accepted (the report is the same), an
            ``index_column`` is not supported yet (a ``ParameterError``).

        Returns
        -------
        dataset : Dataset
        report : GenerationReport

        Raises
        ------
        ParameterError
            For a bad count, seed, model or parameters.
        ModelError
            For an event outside phase space (a closed threshold), naming the vertex.
        """
        _laddu_only(index_column=index_column)
        return self._generate("weighted", events, model, parameters, execution, memory, seed, path,
                              partition_events)

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
        envelope), ``grow_envelope`` (restart with a larger envelope instead of an error).

        Raises
        ------
        GenerationError
            When a weight exceeds the envelope (without ``grow_envelope``) or the proposal
            limit is reached.
        """
        _laddu_only(proven_envelope=proven_envelope, index_column=index_column)
        if max_proposals is not None:
            max_proposals = _count(max_proposals, "max_proposals", 1)
        factor = _positive(safety_factor, "safety_factor")
        if factor < 1.0:
            raise ParameterError(f"safety_factor must be at least 1, got {safety_factor!r}")
        dataset, report = self._generate(
            "unweighted", events, model, parameters, execution, memory, seed, path, partition_events,
            max_weight=max_weight, pilot_proposals=pilot_proposals, safety_factor=factor,
            grow_envelope=bool(grow_envelope), max_proposals=max_proposals)
        return dataset, report


def _laddu_only(**given: Any) -> None:
    """Refuse laddu keywords whose feature laddu-dask's generator does not have yet."""
    for name, value in given.items():
        if value not in (None, False):
            raise ParameterError(f"{name}={value!r} is not supported by laddu-dask's Generator yet")


class _Regrow(Exception):
    """Inside the atomic folder: a grown envelope (the folder is dropped, the run restarts)."""

    def __init__(self, envelope: float) -> None:
        super().__init__(envelope)
        self.envelope = envelope

