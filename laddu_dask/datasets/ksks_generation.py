"""The KsKs toy of :mod:`laddu_dask.datasets.ksks` drawn by laddu-dask's :class:`~laddu_dask.Generator`.

:func:`laddu_dask.datasets.ksks.generate` is the hand-written sampler of the benchmark sample's
distributions (those of ``shared/bench/ksks.py``, not its draws); this module draws them as
one use of the Generator, with Dask tasks, any number of threads or workers, and Parquet
output:

* :func:`channel` is the toy's reaction gamma p -> X p, X -> K_S K_S as a
  :class:`~laddu_dask.Channel`: an 8.5 GeV photon along z on a proton at rest, the X mass
  ``MassProposal(1.0, high=2.0)``, a t-exchange of slope 3 with no uniform part and an
  isotropic decay, with the output edges named as the toy's columns (``beam``, ``proton``,
  ``kshort1``, ``kshort2``), so :func:`~laddu_dask.datasets.ksks.model` reads its events.
* The channel's proposal *distribution* is the toy's (m flat, ``|t|`` from ``exp(-3 |t|)``
  over its physical range, isotropic decay angles), but an unweighted Generator draws
  events distributed as ``proposal weight x model``, with laddu's phase-space weight
  ``w = dPhi / q``, which depends on m and t:
  ``w = q(m) / (4 pi m) x 1 / (16 pi sqrt(s) p rho(t; m)) x (mass range)``.  Accepting
  against ``target x`` :func:`inverse_proposal_weight` (an expression of the event's
  four-vectors: ``m`` of X, ``t = (beam - X)^2``, the ``t`` range at that ``m``) makes
  ``w x model`` equal to the toy's target, so the accepted events follow the proposal
  density times the target: the toy's distribution.  This uses the Generator as laddu
  defines it (its default behaviour is unchanged, and laddu's Generator would draw the same
  distribution from the same model); the correction is the model's business.
* The targets are the toy's: :func:`acceptance_expression` for accepted MC and ``acceptance x``
  the truth intensity (:func:`~laddu_dask.datasets.ksks.model` at :data:`~laddu_dask.datasets.ksks.TRUTH`,
  the formula of :func:`~laddu_dask.datasets.ksks.truth_intensity`) for data, with the envelopes of
  :func:`~laddu_dask.datasets.ksks.generate`: 1 for accepted MC (the acceptance is at most 0.78) and
  the truth intensity's grid maximum times 1.3 for data (as ``max_weight``; ``w x correction``
  is 1 to rounding).

:func:`generate_datasets` returns ``(data, accepted_mc)`` as :class:`~laddu_dask.Dataset` s
(and writes them under ``path``); the same seed gives the same events, bitwise, for any
number of threads or workers.  The events are not :func:`~laddu_dask.datasets.ksks.generate`'s (other
random numbers), but follow the same distributions (``tests/datasets/test_ksks_toy_generator.py``).

Examples
--------
>>> from laddu_dask import ksks
>>> data, mc = ksks.generate_datasets(n_data=200, n_mc=300, seed=1)
>>> data.n_events, mc.n_events, data.p4_names()
(200, 300, ['beam', 'proton', 'kshort1', 'kshort2'])
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import numpy as np

from laddu_dask.data.dataset import Dataset
from laddu_dask.datasets.ksks_model import angle_expressions, model
from laddu_dask.datasets.ksks_physics import E_BEAM, M_KS, M_PROTON, MASS_RANGE, T_SLOPE, TRUTH, _envelope
from laddu_dask.errors import ParameterError
from laddu_dask.expr import particles
from laddu_dask.expr.model import Model
from laddu_dask.expr.node import Expr
from laddu_dask.expr.particles import Particle
from laddu_dask.expr.proposals import InitialMomentum, MassProposal, VertexProposal
from laddu_dask.expr.topology import Channel, Edge, Vertex
from laddu_dask.files import atomic_write, check_output
from laddu_dask.generation.generator import Generator
from laddu_dask.runtime.execution import Execution

__all__ = ["acceptance_expression", "angle_expressions", "channel", "generate_datasets",
           "inverse_proposal_weight"]


def channel() -> Channel:
    """The toy's reaction as a :class:`~laddu_dask.Channel` for the Generator.

    Examples
    --------
    >>> from laddu_dask import ksks
    >>> import laddu_dask as ld
    >>> events, _ = ld.Generator(ksks.channel()).weighted(5, seed=1)
    >>> events.p4_names()
    ['beam', 'proton', 'kshort1', 'kshort2']
    """
    low, high = MASS_RANGE

    def edge(name: str, particle: str, mass: float, **settings: Any) -> Edge:
        return Edge(name, particle=Particle(particle, mass=mass), **settings)  # the toy's masses

    return Channel("gamma p -> p K_S K_S (KsKs toy)", edges=[
        Edge("beam", particle=particles.PHOTON,
             initial_momentum=InitialMomentum.energy(E_BEAM, direction=[0.0, 0.0, 1.0])),
        edge("target", "p", M_PROTON, initial_momentum=InitialMomentum.momentum([0.0, 0.0, 0.0]),
             output=False),
        Edge("X", mass_proposal=MassProposal(low, high=high), output=False),
        edge("proton", "p", M_PROTON),
        edge("kshort1", "K_S", M_KS), edge("kshort2", "K_S", M_KS)],
        vertices=[Vertex("production", incoming=["beam", "target"], outgoing=["X", "proton"],
                         generation=VertexProposal.t_exchange(incoming="beam", outgoing="X",
                                                              slope=T_SLOPE, uniform_fraction=0.0)),
                  Vertex("decay", incoming=["X"], outgoing=["kshort1", "kshort2"],
                         generation=VertexProposal.isotropic())])


def acceptance_expression() -> Expr:
    """:func:`laddu_dask.datasets.ksks.acceptance` as an expression of the columns:
    ``0.5 (1 + 0.3 costheta) (1 - 0.2 cos 2 phi) (0.7 + 0.3 (m - 1))``."""
    _, x, costheta, phi = angle_expressions()
    return 0.5 * (1.0 + 0.3 * costheta) * (1.0 - 0.2 * (2.0 * phi).cos()) \
        * (0.7 + 0.3 * (x.m() - MASS_RANGE[0]))


def _breakup(s: Expr, a: Expr | float, b: float) -> Expr:
    """The two-body breakup momentum at ``s`` with squared masses ``a`` and ``b``."""
    return (s * s + a * a + b * b - 2.0 * (s * a + s * b + a * b)).sqrt() / (2.0 * s.sqrt())


def inverse_proposal_weight() -> Expr:
    """``1 / w``: the inverse of the Generator's proposal weight of a :func:`channel` event,
    from its four-vectors (``sqrt(s)`` of the beam on a proton at rest, ``m`` of X, ``t``).

    ``w = (m_high - m_low) x 1 / (16 pi sqrt(s) p rho(t)) x q / (4 pi m)``, with ``p`` (``q``) the
    breakup momentum of the initial state (of X), and ``rho(t) = b exp(b (t - t_low)) /
    (exp(b W) - 1)`` the density of the exponential ``t`` proposal of slope ``b`` over the
    physical range ``[t_low, t_low + W]`` at that ``m`` (``W = 4 p p_X``).

    Examples
    --------
    >>> import numpy as np
    >>> import laddu_dask as ld
    >>> from laddu_dask import ksks
    >>> events, _ = ld.Generator(ksks.channel()).weighted(1000, seed=2)
    >>> product = events.weights() * ld.Model(ksks.inverse_proposal_weight()).evaluate(events, real=True)
    >>> bool(np.allclose(product, 1.0, rtol=1e-9, atol=0))
    True
    """
    beam, x, _, _ = angle_expressions()
    mp2, mass2, m_beam2 = M_PROTON**2, x.m2(), beam.m2()
    s = m_beam2 + mp2 + 2.0 * M_PROTON * beam.e()
    p_in, p_out = _breakup(s, m_beam2, mp2), _breakup(s, mass2, mp2)
    e1, e3 = (m_beam2 + p_in * p_in).sqrt(), (mass2 + p_out * p_out).sqrt()
    t_low = m_beam2 + mass2 - 2.0 * (e1 * e3 + p_in * p_out)
    width = 4.0 * p_in * p_out
    t = (beam - x).m2()
    slope = T_SLOPE
    density = slope * (slope * (t - t_low)).exp() / ((slope * width).exp() - 1.0)
    q = (mass2 / 4.0 - M_KS**2).sqrt()
    low, high = MASS_RANGE
    return 16.0 * math.pi * s.sqrt() * p_in * density * (4.0 * math.pi * x.m() / q) / (high - low)


def _seeds(seed: Any) -> tuple[int, int]:
    """Two independent Generator seeds (data, accepted MC) from one."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ParameterError(f"seed must be an integer >= 0, got {seed!r}")
    data, mc = np.random.SeedSequence(int(seed)).generate_state(2, dtype=np.uint64)
    return int(data), int(mc)


def generate_datasets(n_data: int = 100_000, n_mc: int = 1_000_000, *, seed: int = 12345,
                      path: str | os.PathLike[str] | None = None, partition_events: int | None = None,
                      execution: Execution | None = None) -> tuple[Dataset, Dataset]:
    """Draw the toy's data (acceptance x truth intensity) and accepted MC (acceptance) with
    ``Generator(channel()).unweighted``.

    Parameters
    ----------
    n_data, n_mc : int
        Events in each sample.
    seed : int
        The seed; the two samples use the two words of ``SeedSequence(seed).generate_state(2)``
        as their Generator seeds, so they are independent.
    path : path-like, optional
        A folder to write ``data/`` and ``accmc/`` (folders of ``part-NNNNN.parquet`` files,
        laddu's convention) and ``truth.json`` into; the datasets then read those files.
        ``data/`` and ``accmc/`` must be new, empty or earlier outputs
        (:func:`~laddu_dask.files.check_output`; an ``UnsafeOutputError`` before anything is drawn).
    partition_events : int, optional
        Events per Generator partition (one Dask task each).
    execution : Execution, optional
        Where the tasks run (threads of the local scheduler, or a cluster's ``client``).

    Returns
    -------
    data, accepted_mc : Dataset
        Unit-weight events with the four-vectors of :data:`~laddu_dask.datasets.ksks.P4_NAMES`.

    Raises
    ------
    ParameterError
        For a count or seed that is not a non-negative integer.
    """
    for label, n in (("n_data", n_data), ("n_mc", n_mc)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ParameterError(f"{label} must be a non-negative integer, got {n!r}")
    data_seed, mc_seed = _seeds(seed)
    generator = Generator(channel())
    accepted = acceptance_expression() * inverse_proposal_weight()
    where = None if path is None else os.fspath(path)
    if where is not None:
        os.makedirs(where, exist_ok=True)
        for name in ("data", "accmc"):  # both refused before either is drawn
            check_output(os.path.join(where, name), folder=True)
        check_output(os.path.join(where, "truth.json"))

    def draw(n: int, model: Model, parameters: Any, envelope: float, folder: str, seed: int) -> Dataset:
        events, _ = generator.unweighted(int(n), model, parameters=parameters, max_weight=envelope, seed=seed,
                                         execution=execution, partition_events=partition_events,
                                         path=None if where is None else os.path.join(where, folder))
        return events

    intensity = model()
    data = draw(n_data, Model(accepted * intensity.expr), dict(TRUTH),
                _envelope(tuple(TRUTH.items())), "data", data_seed)
    mc = draw(n_mc, Model(accepted), None, 1.0, "accmc", mc_seed)
    if where is not None:
        with atomic_write(os.path.join(where, "truth.json")) as f:
            json.dump(TRUTH, f, indent=2)
    return data, mc
