"""Phase-space proposals of a reaction :class:`~laddu_dask.Channel`, vectorized with NumPy.

A :class:`PhaseSpacePlan` reads a channel's generation settings (laddu's
``InitialMomentum``, ``MassProposal`` and ``VertexProposal``) once and then draws events in
batches from a ``numpy.random.Generator``.  Each event carries laddu's proposal weight
``dPhi / q``, the product of

* the inverse density of every sampled initial energy (``high - low`` of a uniform energy)
  and of every sampled mass (the width of the uniform mass range, clipped to
  ``[0, sqrt(s)]`` of the initial state);
* for an isotropic two-body decay of a parent of mass ``m``, ``q / (4 pi m)`` with ``q``
  the breakup momentum;
* for a t-exchange ``a b -> c d`` (``a -> c`` the named pair), ``1 / (16 pi sqrt(s) p q_t)``
  with ``p`` the initial momentum in the centre-of-momentum frame and ``q_t`` the density
  of the sampled ``t``: uniform over the physical range (intersected with
  ``[t_min, t_max]``), exponential ``exp(slope t)`` or their mixture with
  ``uniform_fraction`` of the uniform part.

These are laddu 0.28.1's definitions, so the weighted distributions (and the mean weight,
the phase-space integral) are laddu's; the random numbers are NumPy's.  Vertices are
sampled from the initial state outwards; an edge's mass is its fixed or proposed mass, or
its particle's mass.  A plan adapted to a model (:meth:`PhaseSpacePlan.adapt`, see
:mod:`~laddu_dask.generation.adaptation`) draws some masses, ``t`` values and decay angles from
learned mixtures instead, and divides the weight by their densities accordingly.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> beam = ld.Edge("beam", particle=ld.particles.PHOTON,
...                initial_momentum=ld.InitialMomentum.energy(8.5, direction=[0, 0, 1]))
>>> target = ld.Edge("target", particle=ld.particles.PROTON,
...                  initial_momentum=ld.InitialMomentum.momentum([0, 0, 0]))
>>> pion = ld.Edge("pion", particle=ld.particles.PI_ZERO)
>>> proton = ld.Edge("proton", particle=ld.particles.PROTON)
>>> vertex = ld.Vertex("production", incoming=["beam", "target"], outgoing=["pion", "proton"],
...                    generation=ld.VertexProposal.t_exchange(incoming="beam", outgoing="pion"))
>>> plan = PhaseSpacePlan(ld.Channel("gamma p -> pi0 p", edges=[beam, target, pion, proton],
...                                  vertices=[vertex]))
>>> p4s, weights = plan.propose(np.random.default_rng(1), 3)
>>> sorted(p4s), p4s["pion"].shape, bool((weights > 0).all())
(['beam', 'pion', 'proton', 'target'], (3, 4), True)
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from laddu_dask.errors import ModelError
from laddu_dask.expr.proposals import InitialMomentum, MassProposal, VertexProposal
from laddu_dask.expr.topology import Channel
from laddu_dask.generation.shaped_proposals import (
    histogram_density,
    pole_density,
    sample_histogram,
    sample_pole,
)

__all__ = ["PhaseSpacePlan", "boost", "breakup_momentum"]


def _m2(p4: np.ndarray) -> np.ndarray:
    return p4[0] * p4[0] - p4[1] * p4[1] - p4[2] * p4[2] - p4[3] * p4[3]


def _mass(p4: np.ndarray) -> np.ndarray:
    return np.sqrt(np.maximum(_m2(p4), 0.0))


def boost(p4: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Four-vectors ``p4`` ``(4, n)`` (rows ``E, px, py, pz``) boosted by velocities ``beta``
    ``(3, n)`` (laddu's ``Vec4.boost``: a particle at rest acquires the velocity ``beta``).

    Examples
    --------
    >>> import numpy as np
    >>> boost(np.array([[1.0], [0], [0], [0]]), np.array([[0], [0], [0.6]])).round(12).T.tolist()
    [[1.25, 0.0, 0.0, 0.75]]
    """
    bx, by, bz = beta
    b2 = bx * bx + by * by + bz * bz
    gamma = 1.0 / np.sqrt(1.0 - b2)
    bp = bx * p4[1] + by * p4[2] + bz * p4[3]
    # (gamma - 1) / b2 = gamma^2 / (gamma + 1), finite at b2 = 0
    factor = gamma * gamma / (gamma + 1.0) * bp + gamma * p4[0]
    out = np.empty_like(p4)
    out[0] = gamma * (p4[0] + bp)
    out[1] = p4[1] + factor * bx
    out[2] = p4[2] + factor * by
    out[3] = p4[3] + factor * bz
    return out


def breakup_momentum(parent: np.ndarray, first: np.ndarray | float, second: np.ndarray | float) -> np.ndarray:
    """The two-body breakup momentum ``sqrt(lambda(M^2, m1^2, m2^2)) / 2M`` (``nan`` below
    threshold).

    Examples
    --------
    >>> import numpy as np
    >>> float(breakup_momentum(np.array([5.0]), 3.0, 0.0)[0])
    1.6
    """
    lam = (parent**2 - (first + second) ** 2) * (parent**2 - (first - second) ** 2)
    with np.errstate(invalid="ignore"):
        return np.where(parent >= first + second, np.sqrt(np.maximum(lam, 0.0)), np.nan) / (2.0 * parent)


def _on_shell(direction: np.ndarray, momentum: np.ndarray, mass: np.ndarray, sign: float = 1.0) -> np.ndarray:
    """``(4, n)`` four-vectors of mass ``mass`` and momentum ``sign * momentum * direction``."""
    out = np.empty((4, len(momentum)))
    np.sqrt(mass * mass + momentum * momentum, out=out[0])
    np.multiply(direction, sign * momentum, out=out[1:])
    return out


def _velocity(p4: np.ndarray) -> np.ndarray:
    return p4[1:] / p4[0]


@dataclass(frozen=True)
class _VertexStep:
    name: str
    incoming: tuple[str, ...]
    outgoing: tuple[str, ...]
    proposal: VertexProposal


def validate_generation(channel: Channel) -> None:
    """Check everything generation needs from ``channel`` (laddu's ``Channel.validate_generation``,
    which ``import laddu_dask`` gives every :class:`~laddu_dask.Channel`): an initial state,
    a mass or mass proposal for every edge, an output edge, and a proposal fitting every vertex.

    Raises
    ------
    ModelError
        Naming the edge or vertex at fault (a ``LadduError``, as laddu's).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.Channel("empty", edges=[ld.Edge("X")], vertices=[]).validate_generation()
    Traceback (most recent call last):
    ...
    laddu_dask.errors.ModelError: channel 'empty': edge 'X' has neither particle properties ...
    """
    PhaseSpacePlan(channel)


class PhaseSpacePlan:
    """The generation plan of a channel: masses, initial momenta and vertices in order.

    Parameters
    ----------
    channel : Channel
        A channel whose initial edges have an ``initial_momentum``, whose other edges have
        a ``mass_proposal`` or a particle with a mass, and whose vertices are one-to-two
        decays (isotropic, the default) or two-to-two t-exchanges.

    Raises
    ------
    ModelError
        Naming the edge or vertex whose settings are missing or do not fit.
    """

    def __init__(self, channel: Channel) -> None:
        if not isinstance(channel, Channel):
            raise ModelError(f"Generator takes a Channel, got {type(channel).__name__}")
        self.channel_name = channel.name
        where = f"channel {channel.name!r}"
        edges = {name: channel._edge(name) for name in channel.edge_names}
        self.edge_names: tuple[str, ...] = tuple(edges)
        self.output_names: tuple[str, ...] = tuple(n for n, e in edges.items() if e.output)
        if not self.output_names:
            raise ModelError(f"{where}: no edge has output=True, so generated events would be empty")
        self.fixed_masses: dict[str, float] = {}
        self.mass_ranges: dict[str, tuple[float, float]] = {}
        self.initial: dict[str, InitialMomentum] = {}
        for name, edge in edges.items():
            proposal: MassProposal | None = edge.mass_proposal
            if proposal is not None and not proposal.is_fixed:
                assert proposal.high is not None
                self.mass_ranges[name] = (proposal.value, proposal.high)
            elif proposal is not None:
                self.fixed_masses[name] = proposal.value
            elif edge.particle is not None and edge.particle.mass is not None:
                self.fixed_masses[name] = float(edge.particle.mass)
            else:
                raise ModelError(f"{where}: edge {name!r} has neither particle properties with a "
                                 "mass nor a mass proposal")
            if edge.initial_momentum is not None:
                if name in self.mass_ranges:
                    raise ModelError(f"{where}: initial edge {name!r} cannot use a generated mass")
                self.initial[name] = edge.initial_momentum
        if not self.initial:
            raise ModelError(f"{where}: no edge has an initial_momentum, so there is no initial state")
        self.steps = self._order(channel, where)
        #: Proposals adapted to a model (:mod:`~laddu_dask.generation.adaptation`) by coordinate;
        #: empty for the channel's own proposals.
        self.adapted: dict[tuple[str, str], Any] = {}

    def adapt(self, learned: dict[tuple[str, str], Any]) -> PhaseSpacePlan:
        """A copy of this plan drawing the coordinates ``learned`` names (``("mass", edge)``,
        ``("t", vertex)``, ``("decay", vertex)``) from their learned mixtures (see
        :mod:`~laddu_dask.generation.adaptation`)."""
        plan = copy.copy(self)
        plan.adapted = {**self.adapted, **learned}
        return plan

    def _order(self, channel: Channel, where: str) -> tuple[_VertexStep, ...]:
        known = set(self.initial)
        pending = [channel._vertices[name] for name in channel.vertex_names]
        steps: list[_VertexStep] = []
        while pending:
            ready = [v for v in pending if all(e in known for e in v.incoming)]
            if not ready:
                raise ModelError(f"{where}: vertex {pending[0].name!r} cannot be reached from the "
                                 "initial edges")
            for vertex in ready:
                pending.remove(vertex)
                settled = [e for e in vertex.outgoing if e in known]
                if settled:
                    raise ModelError(f"{where}: edge {settled[0]!r} is produced by more than one "
                                     f"vertex or is an initial edge (vertex {vertex.name!r})")
                proposal = vertex.generation
                shape = (len(vertex.incoming), len(vertex.outgoing))
                if proposal is None:
                    if shape != (1, 2):
                        raise ModelError(f"{where}: vertex {vertex.name!r} has no generation proposal")
                    proposal = VertexProposal.isotropic()
                wanted = (1, 2) if proposal.kind == "isotropic" else (2, 2)
                if shape != wanted:
                    kind = "an isotropic decay" if wanted == (1, 2) else "a t-exchange"
                    raise ModelError(f"{where}: vertex {vertex.name!r} is {kind}, which needs "
                                     f"{wanted[0]} incoming and 2 outgoing edges, got {shape[0]} "
                                     f"and {shape[1]}")
                steps.append(_VertexStep(vertex.name, tuple(vertex.incoming), tuple(vertex.outgoing),
                                         proposal))
                known.update(vertex.outgoing)
        missing = [e for e in self.edge_names if e not in known]
        if missing:
            raise ModelError(f"{where}: edge {missing[0]!r} is neither an initial edge nor produced "
                             "by a vertex")
        return tuple(steps)

    @property
    def n_edges(self) -> int:
        """The number of edges (each a four-vector while an event is built)."""
        return len(self.edge_names)

    # -- drawing ---------------------------------------------------------------------------

    def propose(self, rng: np.random.Generator, n: int, coordinates: dict[tuple[str, str], Any] | None = None
                ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Draw ``n`` events: the four-momenta ``(n, 4)`` of every edge and the proposal weights.

        With ``coordinates`` (a dict), every adaptable coordinate's unit values ``u`` and its
        proposal's density in ``u`` are stored in it by key (``("mass", edge)``,
        ``("t", vertex)``, ``("decay", vertex)``: the mass and ``t`` as fractions of their
        events' ranges, ``(1 + cos theta) / 2`` of a decay).

        Raises
        ------
        ModelError
            When a sampled event is not physical (a closed two-body threshold, an initial
            energy below the particle's mass, configured t limits outside the physical
            range), naming the vertex or edge.
        """
        where = f"channel {self.channel_name!r}"
        weight = np.ones(n)
        p4s: dict[str, np.ndarray] = {}
        for name, spec in self.initial.items():
            p4s[name] = self._initial(name, spec, rng, n, weight, where)
        total = sum(p4s[name] for name in self.initial)
        root_s = _mass(total)  # type: ignore[arg-type]
        masses: dict[str, np.ndarray] = {k: np.full(n, v) for k, v in self.fixed_masses.items()}
        for name, (low, high) in self.mass_ranges.items():
            lo, hi = np.maximum(low, 0.0), np.minimum(high, root_s)
            if not (hi > lo).all():
                raise ModelError(f"{where}: the uniform mass range [{low}, {high}] of edge {name!r} "
                                 f"does not overlap [0, sqrt(s)] = [0, {float(root_s.min())}]")
            u = self._coordinate(("mass", name), rng, rng.random(n), _flat, weight, coordinates)
            masses[name] = lo + u * (hi - lo)
            weight *= hi - lo
        for step in self.steps:
            if step.proposal.kind == "isotropic":
                self._decay(step, p4s, masses, rng, n, weight, where, coordinates)
            else:
                self._exchange(step, p4s, masses, rng, n, weight, where, coordinates)
        return {name: p4.T for name, p4 in p4s.items()}, weight

    def _coordinate(self, key: tuple[str, str], rng: np.random.Generator, u: np.ndarray,
                    base: Callable[[np.ndarray], Any], weight: np.ndarray,
                    coordinates: dict[tuple[str, str], Any] | None) -> np.ndarray:
        """The unit coordinate ``key``: ``u`` as the channel's proposal drew it (density ``base``
        in ``u``), or redrawn from its adapted mixture (the weight then multiplied by
        ``base / mixture``); recorded in ``coordinates`` when given."""
        learned = self.adapted.get(key)
        if learned is not None:
            u, ratio = learned.mix(rng, u, base)
            weight *= ratio
        if coordinates is not None:
            coordinates[key] = (u, base(u))
        return u

    def _initial(self, name: str, spec: InitialMomentum, rng: np.random.Generator, n: int,
                 weight: np.ndarray, where: str) -> np.ndarray:
        mass = self.fixed_masses[name]
        if spec.kind == "p4":
            return np.repeat(np.array(spec.values)[:, None], n, axis=1)
        if spec.kind == "momentum":
            p3 = np.array(spec.values)
            return np.repeat(np.array([math.sqrt(mass**2 + p3 @ p3), *p3])[:, None], n, axis=1)
        assert spec.direction is not None
        direction = np.array(spec.direction) / np.linalg.norm(spec.direction)
        if spec.kind == "energy":
            energy = np.full(n, spec.values[0])
        elif spec.kind == "histogram_energy":
            edges = np.array(spec.values)
            energy, density = sample_histogram(edges, np.array(spec.weights), np.full(n, edges[0]),
                                               np.full(n, edges[-1]), rng, n, f"{where}: edge {name!r}")
            weight /= density
        else:
            low, high = spec.values
            energy = low + rng.random(n) * (high - low)
            weight *= high - low
        if (energy < mass).any():
            raise ModelError(f"{where}: the initial energy of edge {name!r} ({float(energy.min())}) is "
                             f"below its mass {mass}")
        momentum = np.sqrt(energy**2 - mass**2)
        return np.vstack([energy, direction[:, None] * momentum])

    def _isotropic(self, vertex: str, rng: np.random.Generator, n: int, weight: np.ndarray,
                   coordinates: dict[tuple[str, str], Any] | None) -> np.ndarray:
        u = self._coordinate(("decay", vertex), rng, rng.random(n), _flat, weight, coordinates)
        costheta = 2.0 * u - 1.0
        phi = 2.0 * math.pi * rng.random(n)
        sintheta = np.sqrt(1.0 - costheta**2)
        return np.vstack([sintheta * np.cos(phi), sintheta * np.sin(phi), costheta])

    def _decay(self, step: _VertexStep, p4s: dict[str, np.ndarray], masses: dict[str, np.ndarray],
               rng: np.random.Generator, n: int, weight: np.ndarray, where: str,
               coordinates: dict[tuple[str, str], Any] | None) -> None:
        parent = p4s[step.incoming[0]]
        m = _mass(parent)
        m1, m2 = masses[step.outgoing[0]], masses[step.outgoing[1]]
        q = breakup_momentum(m, m1, m2)
        _check_threshold(q, m, m1 + m2, step.name, where)
        direction = self._isotropic(step.name, rng, n, weight, coordinates)
        beta = _velocity(parent)
        p4s[step.outgoing[0]] = boost(_on_shell(direction, q, m1), beta)
        p4s[step.outgoing[1]] = boost(_on_shell(direction, q, m2, -1.0), beta)
        weight *= q / (4.0 * math.pi * m)

    def _exchange(self, step: _VertexStep, p4s: dict[str, np.ndarray], masses: dict[str, np.ndarray],
                  rng: np.random.Generator, n: int, weight: np.ndarray, where: str,
                  coordinates: dict[tuple[str, str], Any] | None) -> None:
        proposal = step.proposal
        a = proposal.incoming
        b = step.incoming[1] if step.incoming[0] == a else step.incoming[0]
        c = proposal.outgoing
        d = step.outgoing[1] if step.outgoing[0] == c else step.outgoing[0]
        total = p4s[a] + p4s[b]
        root_s = _mass(total)
        beta = _velocity(total)
        m1, m2 = _mass(p4s[a]), _mass(p4s[b])
        m3, m4 = masses[c], masses[d]
        p_in = breakup_momentum(root_s, m1, m2)
        p_out = breakup_momentum(root_s, m3, m4)
        _check_threshold(p_out, root_s, m3 + m4, step.name, where)
        if not (p_in > 0.0).all():
            raise ModelError(f"{where}: vertex {step.name!r}: t exchange is undefined at the incoming "
                             "threshold")
        e1, e3 = np.sqrt(m1**2 + p_in**2), np.sqrt(m3**2 + p_out**2)
        center = m1**2 + m3**2 - 2.0 * e1 * e3
        span = 2.0 * p_in * p_out
        low, high = center - span, center + span
        if proposal.t_min is not None:
            low = np.maximum(low, proposal.t_min)
        if proposal.t_max is not None:
            high = np.minimum(high, proposal.t_max)
        if not (high > low).all():
            raise ModelError(f"{where}: vertex {step.name!r}: the configured t limits "
                             f"[{proposal.t_min}, {proposal.t_max}] do not overlap the physical t range")
        t, density = _sample_t(proposal, low, high, rng, n)
        key = ("t", step.name)
        if key in self.adapted or coordinates is not None:
            width = high - low

            def base(u: np.ndarray) -> np.ndarray:
                return _t_density(proposal, low + u * width, low, high) * width

            u = self._coordinate(key, rng, (t - low) / width, base, weight, coordinates)
            if key in self.adapted:
                t = low + u * width
                density = _t_density(proposal, t, low, high)
        costheta = np.clip((t - center) / span, -1.0, 1.0)
        sintheta = np.sqrt(np.maximum(1.0 - costheta**2, 0.0))
        phi = 2.0 * math.pi * rng.random(n)
        z = boost(p4s[a], -beta)[1:]
        z /= np.sqrt(z[0] * z[0] + z[1] * z[1] + z[2] * z[2])
        # x = unit(seed x z) with seed = e_z when |z_z| < 0.9, else e_x; y = z x x
        along = np.abs(z[2]) < 0.9
        x = np.where(along, np.array([-z[1], z[0], np.zeros(n)]), np.array([np.zeros(n), -z[2], z[1]]))
        x /= np.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
        y = np.array([z[1] * x[2] - z[2] * x[1], z[2] * x[0] - z[0] * x[2], z[0] * x[1] - z[1] * x[0]])
        a_cos, a_sin = sintheta * np.cos(phi), sintheta * np.sin(phi)
        direction = z * costheta + x * a_cos + y * a_sin
        p4s[c] = boost(_on_shell(direction, p_out, m3), beta)
        p4s[d] = boost(_on_shell(direction, p_out, m4, -1.0), beta)
        weight *= 1.0 / (16.0 * math.pi * root_s * p_in * density)


def _check_threshold(q: np.ndarray, parent: np.ndarray, threshold: np.ndarray, vertex: str,
                     where: str) -> None:
    bad = ~(q >= 0.0)
    if bad.any():
        i = int(np.argmax(bad))
        raise ModelError(f"{where}: vertex {vertex!r}: two-body threshold is closed: "
                         f"{float(parent[i])} < {float(threshold[i])}")


def _flat(u: np.ndarray) -> float:
    """The density of a uniformly drawn unit coordinate."""
    return 1.0


def _uniform_fraction(proposal: VertexProposal) -> float:
    return 1.0 if proposal.slope is None or abs(proposal.slope) < 1e-10 else proposal.uniform_fraction


def _t_density(proposal: VertexProposal, t: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The density of the channel's ``t`` proposal at ``t`` in ``[low, high]``."""
    if proposal.kind == "t_exchange_pole":
        return pole_density(proposal.exchange_mass, proposal.power, t, low, high)  # type: ignore[arg-type]
    if proposal.kind == "t_exchange_histogram":
        h: dict = proposal.histogram  # type: ignore[assignment]
        return histogram_density(np.array(h["bin_edges"]), np.array(h["counts"]), t, low, high)
    width = high - low
    fraction = _uniform_fraction(proposal)
    if fraction >= 1.0:
        return 1.0 / width + 0.0 * t
    slope = float(proposal.slope)  # type: ignore[arg-type]
    return fraction / width + (1.0 - fraction) * slope * np.exp(slope * (t - low)) / np.expm1(slope * width)


def _sample_t(proposal: VertexProposal, low: np.ndarray, high: np.ndarray, rng: np.random.Generator,
              n: int) -> tuple[np.ndarray, np.ndarray]:
    """Sampled ``t`` in ``[low, high]`` and its proposal density (laddu's mixture, or a shape
    of :mod:`~laddu_dask.generation.shaped_proposals`)."""
    if proposal.kind == "t_exchange_pole":
        return sample_pole(proposal.exchange_mass, proposal.power, low, high, rng, n)  # type: ignore[arg-type]
    if proposal.kind == "t_exchange_histogram":
        h: dict = proposal.histogram  # type: ignore[assignment]
        return sample_histogram(np.array(h["bin_edges"]), np.array(h["counts"]), low, high, rng, n,
                                "a t-exchange histogram")
    width = high - low
    fraction = _uniform_fraction(proposal)
    choice = rng.random(n)
    u = rng.random(n)
    uniform_t = low + u * width
    if fraction >= 1.0:
        return uniform_t, 1.0 / width
    slope = float(proposal.slope)  # type: ignore[arg-type]
    scale = np.expm1(slope * width)
    exp_t = low + np.log1p(u * scale) / slope
    t = np.where(choice < fraction, uniform_t, exp_t) if fraction > 0.0 else exp_t
    density = fraction / width + (1.0 - fraction) * slope * np.exp(slope * (t - low)) / scale
    return t, density
