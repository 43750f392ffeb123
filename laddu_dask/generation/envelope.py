"""A proven upper bound of the phase-space proposal weight (laddu's ``phase_space_envelope``).

Without a model, an unweighted generator accepts a proposal with probability
``weight / envelope``; the envelope must bound every weight the proposals can give.  laddu
proves one by interval arithmetic (``Generator.phase_space_envelope()``, used by
``unweighted(proven_envelope=True)``); :func:`prove_envelope` does the same for laddu-dask's
proposals, whose weights are laddu's (:mod:`~laddu_dask.generation.phase_space`):

* the proposal coordinates that move the bound are the uniformly drawn initial energies and
  the uniform masses (as fractions of their ranges); the decay angles do not enter the weight,
  and a t-exchange's weight is largest where its ``t`` density is smallest, at an end of the
  ``t`` range, so ``t`` is bounded analytically (the density's minimum falls as the range
  widens, for the uniform, exponential and mixed proposals alike; a t-histogram's smallest
  drawn height over its total, a pole's density at the far end of the widest range); a
  histogram energy is a coordinate like a uniform one, with its largest inverse density;
* over a box of coordinates every factor is bounded by interval arithmetic: ``sqrt(s)`` of the
  initial state from the energies' intervals, each mass range clipped to ``[0, sqrt(s)]``, a
  decay's ``q / (4 pi m)`` (increasing in the parent's mass, decreasing in the daughters'), a
  t-exchange's ``1 / (16 pi sqrt(s) p rho_min)`` with the widest ``t`` range in the box, and
  every scalar source's largest inverse density;
* a branch and bound splits the box with the largest bound (along its widest coordinate)
  until that bound is within a relative ``1e-8`` of the largest weight found at a box's
  centre, or after 4096 splits.  The largest bound left is rounded up by a relative
  ``1e-10`` (far above the few-ulp rounding of the weights and of the bound) and reported.

A box where a two-body threshold is closed, or the ``t`` range is empty, holds no event (the
generator raises :class:`~laddu_dask.errors.ModelError` there) and bounds nothing.  A
t-exchange must scatter two initial edges (laddu's condition too).

Examples
--------
>>> import laddu_dask as ld
>>> x = ld.Edge("X", particle=ld.Particle(mass=1.8), initial_momentum=ld.InitialMomentum.momentum([0, 0, 0]))
>>> channel = ld.Channel("X -> K_S K_S", edges=[x, ld.Edge("a", particle=ld.particles.K_SHORT),
...                      ld.Edge("b", particle=ld.particles.K_SHORT)],
...                      vertices=[ld.Vertex("decay", incoming=["X"], outgoing=["a", "b"])])
>>> report = ld.Generator(channel).phase_space_envelope()
>>> report.continuous_dimensions, round(report.maximum_weight, 8)
(2, 0.03315384)
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from laddu_dask.errors import GenerationError, ModelError
from laddu_dask.expr.proposals import ScalarSource, VertexProposal
from laddu_dask.generation.columns import inverse_density_range
from laddu_dask.generation.phase_space import PhaseSpacePlan
from laddu_dask.generation.shaped_proposals import pole_density

__all__ = ["ProvenEnvelopeReport", "prove_envelope"]

#: The relative gap between the bound and the largest weight found that ends the search.
GAP = 1e-8
#: The most boxes split.
MAX_SPLITS = 4096
#: The relative margin the final bound is rounded up by.
ROUNDING = 1e-10

Interval = tuple[float, float]


@dataclass(frozen=True)
class ProvenEnvelopeReport:
    """An upper bound of every phase-space proposal weight (laddu's ``ProvenEnvelopeReport``).

    Attributes
    ----------
    weight_interval : tuple of float
        ``(0, maximum_weight)``: every proposal weight lies in it.
    maximum_weight : float
        The bound, the envelope of ``unweighted(proven_envelope=True)``.
    continuous_dimensions : int
        Continuous proposal coordinates (laddu's count: uniform energies and masses, two per
        vertex, one per drawn scalar).
    piecewise_regions : int
        Analytic pieces of the weight (the product of the mixture components of every
        t-exchange and of the non-empty bins of every histogram scalar).
    subdivisions : int
        Boxes split by the branch and bound.
    """

    weight_interval: tuple[float, float]
    maximum_weight: float
    continuous_dimensions: int
    piecewise_regions: int
    subdivisions: int

    def __repr__(self) -> str:
        return (f"ProvenEnvelopeReport(weight_interval={list(self.weight_interval)}, "
                f"maximum_weight={self.maximum_weight})")


# -- interval helpers ---------------------------------------------------------------------


def _mul(a: Interval, b: Interval) -> Interval:
    products = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return min(products), max(products)


def _breakup(parent: Interval, first: Interval, second: Interval) -> Interval:
    """The two-body breakup momentum, increasing in the parent's mass and decreasing in the
    daughters' (0 where the threshold is closed)."""
    return _momentum(parent[0], first[1], second[1]), _momentum(parent[1], first[0], second[0])


def _momentum(parent: float, first: float, second: float) -> float:
    if parent <= first + second:
        return 0.0
    return math.sqrt((parent**2 - (first + second) ** 2) * (parent**2 - (first - second) ** 2)) / (2 * parent)


def _min_density(proposal: VertexProposal, width: float) -> float:
    """The smallest ``t`` density of the proposal over a range of ``width`` (decreasing in it)."""
    fraction = 1.0 if proposal.slope is None or abs(proposal.slope) < 1e-10 else proposal.uniform_fraction
    if fraction >= 1.0:
        return 1.0 / width
    rate = abs(float(proposal.slope))  # type: ignore[arg-type]
    tail = rate / math.expm1(rate * width) if rate * width < 700.0 else 0.0
    return fraction / width + (1.0 - fraction) * tail


def _shaped_min_density(proposal: VertexProposal, low: float, high: float) -> float:
    """A lower bound of a histogram's or a pole's ``t`` density where it draws, for any
    range inside ``[low, high]``: a histogram's smallest drawn height over its total; a
    pole's density at the far end of the widest range, ``(m^2 - low)^-p / Z(low, high)``."""
    if proposal.kind == "t_exchange_histogram":
        h: dict = proposal.histogram  # type: ignore[assignment]
        counts, widths = np.array(h["counts"]), np.diff(np.array(h["bin_edges"]))
        drawn = counts > 0
        return float(np.min(counts[drawn] / widths[drawn]) / counts.sum())
    mass2, power = float(proposal.exchange_mass) ** 2, float(proposal.power)  # type: ignore[arg-type]
    if not mass2 - high > 0.0:
        return 0.0
    return float(pole_density(math.sqrt(mass2), power, np.array([low]), np.array([low]), np.array([high]))[0])


# -- the bound over one box ---------------------------------------------------------------


class _Bound:
    """The weight's upper bound over boxes of the proposal coordinates of one plan."""

    def __init__(self, plan: PhaseSpacePlan, scalars: Sequence[ScalarSource]) -> None:
        self.plan = plan
        self.static = 1.0
        self.coordinates: list[tuple[str, str]] = []  # ("energy" | "mass", edge)
        self.domain: list[Interval] = []
        for name, spec in plan.initial.items():
            if spec.kind == "uniform_energy":
                self.static *= spec.values[1] - spec.values[0]
                self.coordinates.append(("energy", name))
                self.domain.append((spec.values[0], spec.values[1]))
            elif spec.kind == "histogram_energy":  # the largest inverse density of a drawn bin
                edges, counts = np.array(spec.values), np.array(spec.weights)
                drawn = counts > 0
                self.static *= float(np.max(counts.sum() * np.diff(edges)[drawn] / counts[drawn]))
                self.coordinates.append(("energy", name))
                self.domain.append((spec.values[0], spec.values[-1]))
        for name in plan.mass_ranges:
            self.coordinates.append(("mass", name))
            self.domain.append((0.0, 1.0))
        for source in scalars:
            self.static *= inverse_density_range(source)[1]
        for step in plan.steps:
            if step.proposal.kind == "t_exchange" and set(step.incoming) - set(plan.initial):
                raise ModelError(f"channel {plan.channel_name!r}: a proven envelope needs the t-exchange "
                                 f"of vertex {step.name!r} to scatter two initial edges")

    def _initial(self, box: Sequence[Interval]) -> dict[str, tuple[Interval, list[Interval], float]]:
        """Each initial edge's energy and momentum components (intervals) and mass."""
        ranges = {edge: box[i] for i, (kind, edge) in enumerate(self.coordinates) if kind == "energy"}
        out = {}
        for name, spec in self.plan.initial.items():
            mass = self.plan.fixed_masses[name]
            if spec.kind == "p4":
                e, px, py, pz = spec.values
                out[name] = ((e, e), [(px, px), (py, py), (pz, pz)],
                             math.sqrt(max(e * e - px * px - py * py - pz * pz, 0.0)))
                continue
            if spec.kind == "momentum":
                p3 = spec.values
                e = math.sqrt(mass**2 + sum(p * p for p in p3))
                out[name] = ((e, e), [(p, p) for p in p3], mass)
                continue
            energy = ranges.get(name, (spec.values[0], spec.values[0]))
            p = (math.sqrt(max(energy[0] ** 2 - mass**2, 0.0)), math.sqrt(max(energy[1] ** 2 - mass**2, 0.0)))
            direction = np.array(spec.direction) / np.linalg.norm(spec.direction)  # type: ignore[arg-type]
            out[name] = (energy, [_mul(p, (float(d), float(d))) for d in direction], mass)
        return out

    @staticmethod
    def _root(edges: Sequence[tuple[Interval, list[Interval], float]]) -> Interval:
        """``sqrt(s)`` of initial edges: ``sum m^2 + 2 sum_{i<j} (E_i E_j - p_i . p_j)``."""
        low = high = sum(m * m for _, _, m in edges)
        for i, (e1, p1, _) in enumerate(edges):
            for e2, p2, _ in edges[i + 1:]:
                ee = _mul(e1, e2)
                dot = [_mul(a, b) for a, b in zip(p1, p2)]
                low += 2.0 * (ee[0] - sum(d[1] for d in dot))
                high += 2.0 * (ee[1] - sum(d[0] for d in dot))
        return math.sqrt(max(low, 0.0)), math.sqrt(max(high, 0.0))

    def __call__(self, box: Sequence[Interval]) -> float:
        """An upper bound of the weight over ``box`` (0 where it holds no event)."""
        plan = self.plan
        initial = self._initial(box)
        root = self._root(list(initial.values()))
        weight = self.static
        masses: dict[str, Interval] = {k: (v, v) for k, v in plan.fixed_masses.items()}
        for name, (_, _, mass) in initial.items():
            masses[name] = (mass, mass)
        fractions = {edge: box[i] for i, (kind, edge) in enumerate(self.coordinates) if kind == "mass"}
        for name, (low, high) in plan.mass_ranges.items():
            lo = max(low, 0.0)
            top = (min(high, root[0]), min(high, root[1]))
            if top[1] <= lo:
                return 0.0
            widest = top[1] - lo
            u = fractions[name]
            masses[name] = (lo + u[0] * max(top[0] - lo, 0.0), lo + u[1] * widest)
            weight *= widest
        for step in plan.steps:
            if step.proposal.kind == "isotropic":
                parent = masses[step.incoming[0]]
                q = _breakup(parent, masses[step.outgoing[0]], masses[step.outgoing[1]])[1]
                weight *= q / (4.0 * math.pi * parent[1]) if q > 0.0 else 0.0
            else:
                weight *= self._exchange(step, initial, masses)
            if weight <= 0.0:
                return 0.0
        return weight

    def _exchange(self, step, initial, masses: dict[str, Interval]) -> float:  # noqa: ANN001
        proposal = step.proposal
        a = proposal.incoming
        b = step.incoming[1] if step.incoming[0] == a else step.incoming[0]
        c = proposal.outgoing
        d = step.outgoing[1] if step.outgoing[0] == c else step.outgoing[0]
        root = self._root([initial[a], initial[b]])
        m1, m2, m3, m4 = masses[a], masses[b], masses[c], masses[d]
        p_in = _breakup(root, m1, m2)
        p_out = _breakup(root, m3, m4)
        if p_in[0] <= 0.0 or p_out[1] <= 0.0:
            return 0.0
        e1 = (math.hypot(m1[0], p_in[0]), math.hypot(m1[1], p_in[1]))
        e3 = (math.hypot(m3[0], p_out[0]), math.hypot(m3[1], p_out[1]))
        center = (m1[0] ** 2 + m3[0] ** 2 - 2.0 * e1[1] * e3[1],
                  m1[1] ** 2 + m3[1] ** 2 - 2.0 * e1[0] * e3[0])
        span = (2.0 * p_in[0] * p_out[0], 2.0 * p_in[1] * p_out[1])
        # the widest t range: min(high, t_max) - max(low, t_min) over the box
        widths = [2.0 * span[1]]
        if proposal.t_max is not None:
            widths.append(proposal.t_max - (center[0] - span[1]))
        if proposal.t_min is not None:
            widths.append(center[1] + span[1] - proposal.t_min)
        if proposal.t_min is not None and proposal.t_max is not None:
            widths.append(proposal.t_max - proposal.t_min)
        width = min(widths)
        if width <= 0.0:
            return 0.0
        low = center[0] - span[1] if proposal.t_min is None else max(center[0] - span[1], proposal.t_min)
        high = center[1] + span[1] if proposal.t_max is None else min(center[1] + span[1], proposal.t_max)
        density = _shaped_min_density(proposal, low, high) if proposal.kind != "t_exchange" \
            else _min_density(proposal, width)
        if density <= 0.0:
            return math.inf
        return 1.0 / (16.0 * math.pi * root[0] * p_in[0] * density)


def _dimensions(plan: PhaseSpacePlan, scalars: Sequence[ScalarSource]) -> tuple[int, int]:
    """laddu's continuous dimensions and piecewise regions of the proposal domain."""
    dims = sum(1 for spec in plan.initial.values() if spec.kind in ("uniform_energy", "histogram_energy")) \
        + len(plan.mass_ranges)
    dims += 2 * len(plan.steps) + sum(1 for s in scalars if s.kind != "fixed")
    regions = 1
    for spec in plan.initial.values():
        if spec.kind == "histogram_energy":
            regions *= sum(1 for c in spec.weights if c > 0.0)
    for step in plan.steps:
        p = step.proposal
        if p.kind == "t_exchange" and p.slope is not None and abs(p.slope) >= 1e-10 \
                and 0.0 < p.uniform_fraction < 1.0:
            regions *= 2
        if p.kind == "t_exchange_histogram":
            regions *= sum(1 for c in p.histogram["counts"] if c > 0.0)  # type: ignore[index]
    for s in scalars:
        if s.kind == "histogram":
            regions *= sum(1 for c in s.counts if c > 0.0)
    return dims, regions


def prove_envelope(plan: PhaseSpacePlan, scalars: Sequence[ScalarSource] = ()) -> ProvenEnvelopeReport:
    """The proven upper bound of the proposal weights of ``plan`` (with ``scalars``' factors).

    Raises
    ------
    ModelError
        For a t-exchange that does not scatter two initial edges.
    GenerationError
        When no finite positive bound exists (a purely exponential ``t`` proposal over a range
        so wide that its density underflows, or a domain that holds no event).
    """
    bound = _Bound(plan, scalars)
    domain = bound.domain
    full = [hi - lo for lo, hi in domain]

    def centre(box: list[Interval]) -> float:
        return bound([((lo + hi) / 2, (lo + hi) / 2) for lo, hi in box])

    best = centre(domain)
    queue = [(-bound(domain), 0, domain)]
    splits, counter = 0, 1
    while domain and queue and splits < MAX_SPLITS:
        top = -queue[0][0]
        if not math.isfinite(top) or top <= best * (1.0 + GAP):
            break
        _, _, box = heapq.heappop(queue)
        axis = max(range(len(box)), key=lambda i: (box[i][1] - box[i][0]) / full[i])
        lo, hi = box[axis]
        for half in ((lo, (lo + hi) / 2), ((lo + hi) / 2, hi)):
            child = [*box[:axis], half, *box[axis + 1:]]
            upper = bound(child)
            if upper > 0.0:
                best = max(best, centre(child))
                heapq.heappush(queue, (-upper, counter, child))
                counter += 1
        splits += 1
    upper = -queue[0][0] if queue else 0.0
    if not (math.isfinite(upper) and upper > 0.0):
        raise GenerationError(f"channel {plan.channel_name!r}: the phase-space proposal weight has no finite "
                              f"positive proven bound (got {upper})")
    upper *= 1.0 + ROUNDING
    dims, regions = _dimensions(plan, scalars)
    return ProvenEnvelopeReport((0.0, upper), upper, dims, regions, splits)
