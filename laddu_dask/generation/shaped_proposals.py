"""The generation proposals drawn from a shape: a histogram's initial energy
(``InitialMomentum.histogram_energy``), and a ``t`` from a histogram
(``VertexProposal.t_exchange_histogram``) or from a t-channel pole
(``VertexProposal.t_exchange_pole``), as laddu 0.28.1 draws them.

* A histogram is a piecewise-constant density: a bin with probability proportional to its
  count, then uniformly within it. For ``t`` the density is the histogram restricted to the
  event's physical range ``[low, high]`` and renormalised there (each event its own range).
* A pole draws ``t`` in ``[low, high]`` with density proportional to
  ``(exchange_mass^2 - t)^-power`` (by inverting its cumulative distribution).

Each sampler returns the values and their proposal density, which the phase-space weight
divides by.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(1)
>>> t, density = sample_pole(0.5, 2.0, np.array([-2.0]), np.array([-0.1]), rng, 4)
>>> bool(((t >= -2.0) & (t <= -0.1)).all())
True
>>> z = (1 / (0.25 + 0.1) - 1 / (0.25 + 2.0))  # the integral of (0.25 - t)^-2 over [-2, -0.1]
>>> bool(np.allclose(density, (0.25 - t) ** -2 / z))
True
"""

from __future__ import annotations

import numpy as np

from laddu_dask.errors import ModelError

__all__ = ["histogram_density", "pole_density", "sample_histogram", "sample_pole"]


def _pole_span(mass: float, power: float, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, ...]:
    u_lo, u_hi = mass * mass - high, mass * mass - low
    if not (u_lo > 0).all():
        raise ModelError(f"a t-exchange pole at exchange_mass^2 = {mass * mass} must lie above the "
                         f"physical t range (up to {float(np.max(high))})")
    if abs(power - 1.0) < 1e-12:
        return u_lo, u_hi, np.log(u_hi / u_lo)
    a, b = u_lo ** (1.0 - power), u_hi ** (1.0 - power)
    return u_lo, u_hi, (b - a) / (1.0 - power)


def pole_density(mass: float, power: float, t: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The density of the pole proposal at ``t`` in ``[low, high]``."""
    _, _, z = _pole_span(mass, power, low, high)
    return (mass * mass - t) ** (-power) / z


def sample_pole(mass: float, power: float, low: np.ndarray, high: np.ndarray, rng: np.random.Generator,
                n: int) -> tuple[np.ndarray, np.ndarray]:
    """``t`` drawn from ``(mass^2 - t)^-power`` on ``[low, high]``, and its density."""
    u_lo, u_hi, _ = _pole_span(mass, power, low, high)
    r = rng.random(n)
    if abs(power - 1.0) < 1e-12:
        u = u_lo * (u_hi / u_lo) ** r
    else:
        a, b = u_lo ** (1.0 - power), u_hi ** (1.0 - power)
        u = (a + r * (b - a)) ** (1.0 / (1.0 - power))
    t = np.clip(mass * mass - u, low, high)
    return t, pole_density(mass, power, t, low, high)


def _masses(edges: np.ndarray, counts: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Each event's (row) probability mass of each bin (column) inside ``[low, high]``."""
    heights = counts / np.diff(edges)
    overlap = np.clip(np.minimum(high[:, None], edges[None, 1:]) - np.maximum(low[:, None], edges[None, :-1]),
                      0.0, None)
    return heights[None, :] * overlap


def histogram_density(edges: np.ndarray, counts: np.ndarray, x: np.ndarray, low: np.ndarray,
                      high: np.ndarray) -> np.ndarray:
    """The density at ``x`` of the histogram restricted to ``[low, high]`` (per event)."""
    total = _masses(edges, counts, low, high).sum(axis=1)
    j = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(counts) - 1)
    inside = (x >= edges[0]) & (x <= edges[-1])
    return np.where(inside, counts[j] / np.diff(edges)[j], 0.0) / total


def sample_histogram(edges: np.ndarray, counts: np.ndarray, low: np.ndarray, high: np.ndarray,
                     rng: np.random.Generator, n: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Values drawn from the histogram restricted to each event's ``[low, high]``, and their
    density.

    Raises
    ------
    ModelError
        When the histogram has no weight inside an event's range (naming ``what``).
    """
    masses = _masses(edges, counts, low, high)
    cumulative = np.cumsum(masses, axis=1)
    total = cumulative[:, -1]
    if not (total > 0).all():
        raise ModelError(f"{what}: the histogram has no weight inside the physical range "
                         f"[{float(np.min(low))}, {float(np.max(high))}]")
    target = rng.random(n) * total
    j = np.minimum((cumulative <= target[:, None]).sum(axis=1), len(counts) - 1)
    a = np.maximum(low, edges[j])
    b = np.minimum(high, edges[j + 1])
    x = a + rng.random(n) * (b - a)
    return x, (counts[j] / np.diff(edges)[j]) / total
