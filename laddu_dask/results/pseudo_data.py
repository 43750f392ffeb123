"""Pseudo-data of a closure study: events drawn from a model at given (true) parameters.

Two sources, one random stream per replica (``numpy.random.SeedSequence(seed,
spawn_key=(k,))`` for replica ``k``), so a seed gives the same replicas whatever runs them:

* :class:`PoolSource`, accept-reject of a given sample (accepted Monte Carlo, or generated
  phase space): the model's intensity ``I`` at the truth is evaluated once on the execution,
  every event of the sample is given to exactly one replica (a seeded random split into
  ``n_replicas`` equal shares, so the replicas share no event and are independent), and
  replica ``k`` keeps event ``i`` of its share when ``u_i < w_i I_i / max(w I)``.  Its
  ``n`` events are drawn at random from those kept; too few kept is a ``DataError``.
  The kept events follow ``w I`` times the sample's density: with accepted Monte Carlo,
  the detector acceptance comes with them.
* :class:`GeneratorSource`, :meth:`Generator.unweighted
  <laddu_dask.generation.generator.Generator.unweighted>` against the model at the truth,
  with a seed of the replica's own stream.

The event count of a replica is ``n_events``, or a Poisson number of mean ``n_events``
(``poisson=True``, what an extended likelihood's closure needs).

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> model = ld.Model(1.0 + ld.parameter("a", initial=0.5) * x)
>>> pool = ld.Dataset.from_arrays(scalars={"x": np.random.default_rng(1).uniform(-1, 1, 4000)})
>>> source = PoolSource(pool, model, [0.5], n_replicas=2, seed=3)
>>> replicas = [source.draw(k, 300, replica_stream(3, (k,))) for k in range(2)]
>>> [r.n_events for r in replicas], bool(replicas[0].column("x").mean() > 0.0)
([300, 300], True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laddu_dask.data.dataset import Dataset
from laddu_dask.errors import DataError, NonFiniteError, NonPositiveIntensityError, ParameterError
from laddu_dask.expr.model import Model
from laddu_dask.expr.topology import Channel
from laddu_dask.generation.generator import Generator
from laddu_dask.likelihood.events import evaluate_model
from laddu_dask.runtime.execution import Execution

__all__ = ["GeneratorSource", "PoolSource", "event_count", "replica_stream"]

#: The spawn key of the stream that splits a pool among the replicas (no replica uses it).
_SPLIT_KEY = (2**32 - 1,)
_COMPONENTS = ("e", "px", "py", "pz")


def replica_stream(seed: int, key: tuple[int, ...]) -> np.random.Generator:
    """The random stream ``SeedSequence(seed, spawn_key=key)`` (replica ``k``: ``key=(k,)``).

    Examples
    --------
    >>> float(replica_stream(1, (0,)).random()) == float(replica_stream(1, (0,)).random())
    True
    """
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key)))


def event_count(rng: np.random.Generator, n_events: float, poisson: bool) -> int:
    """The events of one replica: ``n_events``, or Poisson of mean ``n_events``."""
    return int(rng.poisson(n_events)) if poisson else int(n_events)


def _host(values: Any) -> np.ndarray:
    get = getattr(values, "get", None)  # a CuPy array comes to the host
    return np.asarray(get() if callable(get) else values, dtype=np.float64)


class PoolSource:
    """Replicas accept-rejected from ``dataset`` against ``model`` at ``truth`` (see the module).

    Parameters
    ----------
    dataset : Dataset
        The sample drawn from (loaded into memory; its weights, if any, multiply the
        intensity and must not be negative).
    model : Model
    truth : sequence or mapping
        The model's free parameters.
    n_replicas : int
        How many shares the sample is split into.
    seed : int
    execution : Execution, optional
        Where the intensity is evaluated.

    Raises
    ------
    DataError
        For a negative weight, or a sample on which ``w I`` vanishes everywhere.
    NonFiniteError, NonPositiveIntensityError
        For a non-finite or negative intensity, naming the event.
    """

    def __init__(self, dataset: Dataset, model: Model, truth: Any, *, n_replicas: int, seed: int,
                 execution: Execution | None = None) -> None:
        if not isinstance(dataset, Dataset):
            raise ParameterError(f"source must be a Dataset, a Channel or a Generator, got "
                                 f"{type(dataset).__name__}")
        self.p4_names, self.scalar_names = dataset.p4_names(), dataset.scalar_names()
        self.p4s = {n: np.column_stack([dataset.column(f"{n}_{c}") for c in _COMPONENTS])
                    for n in self.p4_names}
        self.scalars = {n: dataset.column(n) for n in self.scalar_names}
        weights = dataset.weights()
        intensity = _host(evaluate_model(model, dataset, truth, execution, True, False))
        for what, bad in (("non-finite", ~np.isfinite(intensity)), ("negative", intensity < 0.0)):
            if bad.any():
                i = int(np.argmax(bad))
                error = NonFiniteError if what == "non-finite" else NonPositiveIntensityError
                raise error(f"the model's intensity at the truth is {what} ({intensity[i]}) for event {i} "
                            "of the closure source")
        if (weights < 0.0).any():
            i = int(np.argmax(weights < 0.0))
            raise DataError(f"event {i} of the closure source has a negative weight ({weights[i]}); "
                            "accept-reject needs non-negative weights")
        target = weights * intensity
        envelope = float(target.max()) if len(target) else 0.0
        if not envelope > 0.0:
            raise DataError("the model's intensity times the weight vanishes on every event of the closure "
                            "source; nothing can be accepted")
        self.probability = target / envelope
        #: Expected fraction of the sample kept (``mean(w I) / max(w I)``).
        self.efficiency = float(self.probability.mean())
        order = replica_stream(seed, _SPLIT_KEY).permutation(len(target))
        self.shares = np.array_split(order, n_replicas)

    def expected_accepted(self, replica: int) -> float:
        """The mean number of events replica ``replica`` keeps from its share."""
        return float(self.probability[self.shares[replica]].sum())

    def draw(self, replica: int, n: int, rng: np.random.Generator) -> Dataset:
        """``n`` events of replica ``replica`` drawn with ``rng`` (its stream), unit weights.

        Raises
        ------
        DataError
            When the replica's share keeps fewer than ``n`` events.
        """
        share = self.shares[replica]
        kept = share[rng.random(len(share)) < self.probability[share]]
        if len(kept) < n:
            need = int(np.ceil(1.2 * n * len(self.shares) / max(self.efficiency, 1e-300)))
            raise DataError(
                f"replica {replica} kept {len(kept)} events of its share ({len(share)} of the closure "
                f"source's events, efficiency {self.efficiency:.3g}), fewer than the {n} it needs; give a "
                f"source of about {need} events or ask for fewer events or replicas")
        rows = np.sort(rng.choice(kept, size=n, replace=False))
        return Dataset.from_arrays(p4s={k: v[rows] for k, v in self.p4s.items()} or None,
                                   scalars={k: v[rows] for k, v in self.scalars.items()} or None)


class GeneratorSource:
    """Replicas from :meth:`Generator.unweighted` against ``model`` at ``truth``.

    ``source`` is a :class:`~laddu_dask.Channel` or a :class:`~laddu_dask.Generator`; each
    replica's generator seed comes from the replica's stream, and ``options`` go to
    ``unweighted`` (``pilot_proposals``, ``safety_factor``, ``max_proposals``, ...).
    """

    def __init__(self, source: Channel | Generator, model: Model, truth: Any, *,
                 execution: Execution | None = None, **options: Any) -> None:
        self.generator = source if isinstance(source, Generator) else Generator(source)
        self.model, self.truth, self.execution, self.options = model, truth, execution, options

    def draw(self, replica: int, n: int, rng: np.random.Generator) -> Dataset:
        """``n`` unit-weight events of replica ``replica``, seeded from ``rng``."""
        seed = int(rng.integers(0, 2**63))
        events, _ = self.generator.unweighted(n, self.model, parameters=self.truth, execution=self.execution,
                                              seed=seed, **self.options)
        return events
