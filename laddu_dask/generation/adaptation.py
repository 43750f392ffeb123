"""Proposals adapted to a model from a pilot sample (defensive importance sampling).

Unweighted generation accepts a proposal with probability ``w / W``, where ``w`` is the
target-to-proposal weight (phase-space weight times the model's intensity) and ``W`` the
envelope, so its acceptance is ``mean(w) / W``: low where the model is peaked in a
coordinate the channel proposes flat (a resonance in a uniformly proposed mass) or where the
channel's proposal is peaked and the model is not (an exponential ``t`` proposal for a model
flat in the production angle).  Before it estimates the envelope, ``Generator.unweighted``
(with a pilot envelope) learns from its pilot proposals the target's marginal distribution
in each adaptable coordinate of the channel,

* the mass of every edge with a uniform mass proposal, as the fraction ``u`` of its event's
  range ``[lo, min(hi, sqrt(s))]``;
* the ``t`` of every t-exchange, as the fraction of its event's ``t`` range;
* the polar angle of every two-body decay, as ``u = (1 + cos theta) / 2``,

as a histogram ``h`` of the pilot's weights over ``u`` (equal bins of ``[0, 1]``, as many as
one of :data:`BIN_CHOICES`), and may draw that coordinate from the mixture

    ``q(u) = f b(u) + (1 - f) h(u)``

of the channel's own proposal ``b`` and ``h``, with the defensive fraction ``f =``
:data:`DEFENSIVE`.  Each event's weight is multiplied by ``b(u) / q(u)``, so the weighted
proposals estimate the same integrals and the accepted events follow the same distribution
(the model times phase space) as with the channel's proposals; only the spread of the
weights shrinks.  Since ``q >= f b``, a weight grows by at most ``1 / f`` per adapted
coordinate, and every point the channel can give is still proposed.

The coordinates (and their bin counts) are adapted greedily: the one that raises the pilot's
efficiency ``sum(w) / (n max(w))`` most, by a factor of at least :data:`MINIMUM_GAIN`,
measured out of sample (a histogram of one half of the pilot reweights the other half; see
:func:`learn`), then the next on the reweighted pilot, until none gains.  The envelope
then comes from a second pilot drawn with the adapted proposal, from its own random stream,
so it is not fitted to the events that shaped the proposal.  laddu 0.28.1 adapts one mass
(and the decay angle of a vertex without an explicit proposal) in the same spirit;
laddu-dask also adapts ``t`` and every decay angle, which is what lifts its acceptance above
laddu's on the photoproduction tutorial.

Examples
--------
>>> import numpy as np
>>> h = LearnedDensity.learn(np.array([0.1, 0.5, 0.5, 0.9]), np.array([1.0, 2.0, 2.0, 1.0]), bins=4)
>>> h.cdf.tolist()
[0.0, 0.16666666666666666, 0.16666666666666666, 0.8333333333333334, 1.0]
>>> u, ratio = h.mix(np.random.default_rng(1), np.array([0.3, 0.6, 0.95]), lambda u: 1.0)
>>> bool(((u >= 0) & (u <= 1)).all()), bool((ratio <= 1 / DEFENSIVE).all())
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from laddu_dask.sums import exact_sum

__all__ = ["BINS", "BIN_CHOICES", "DEFENSIVE", "MINIMUM_GAIN", "LearnedDensity", "efficiency", "learn"]

#: Equal bins of ``[0, 1]`` in a learned histogram by default.
BINS = 64
#: The bin counts a coordinate's histogram may have (the one gaining most is kept).
BIN_CHOICES = (8, 16, 32, 64)
#: The probability of drawing a coordinate from the channel's own proposal.
DEFENSIVE = 0.2
#: The least factor by which an adaptation must raise the pilot's efficiency.
MINIMUM_GAIN = 1.02


def efficiency(weights: np.ndarray) -> float:
    """The acceptance ``sum(w) / (n max(w))`` of weights ``w`` under their largest as envelope
    (``0.0`` for no or all-zero weights).

    Examples
    --------
    >>> efficiency(np.array([1.0, 3.0, 2.0]))
    0.6666666666666666
    """
    largest = float(weights.max(initial=0.0))
    return exact_sum(weights) / (len(weights) * largest) if largest > 0.0 else 0.0


@dataclass(frozen=True, eq=False)
class LearnedDensity:
    """A piecewise-constant density on ``[0, 1]`` mixed with a coordinate's own proposal.

    Attributes
    ----------
    cdf : numpy.ndarray
        The cumulative probability at the ``len(cdf) - 1`` equal bins' edges, 0 to 1.
    defensive : float
        The probability of keeping the coordinate's own proposal.
    """

    cdf: np.ndarray
    defensive: float = DEFENSIVE

    @classmethod
    def learn(cls, u: np.ndarray, weights: np.ndarray, bins: int = BINS) -> LearnedDensity | None:
        """The histogram of ``weights`` over ``u``, or ``None`` when fewer than two bins hold
        weight (nothing to learn)."""
        counts, _ = np.histogram(u, bins=bins, range=(0.0, 1.0), weights=weights)
        if np.count_nonzero(counts > 0.0) < 2:
            return None
        cdf = np.concatenate([[0.0], np.cumsum(counts)])
        cdf /= cdf[-1]
        cdf[-1] = 1.0
        return cls(cdf, DEFENSIVE)

    @property
    def bins(self) -> int:
        """The number of bins."""
        return len(self.cdf) - 1

    def pdf(self, u: np.ndarray) -> np.ndarray:
        """The histogram's density at ``u`` in ``[0, 1]``."""
        k = np.clip((u * self.bins).astype(np.int64), 0, self.bins - 1)
        return (self.cdf[k + 1] - self.cdf[k]) * self.bins

    def inverse(self, y: np.ndarray) -> np.ndarray:
        """The histogram's quantiles at ``y`` in ``[0, 1)`` (always inside a bin with weight)."""
        k = np.clip(np.searchsorted(self.cdf, y, side="right") - 1, 0, self.bins - 1)
        step = self.cdf[k + 1] - self.cdf[k]
        within = np.where(step > 0.0, (y - self.cdf[k]) / np.where(step > 0.0, step, 1.0), 0.0)
        return np.clip((k + within) / self.bins, 0.0, 1.0)

    def ratio(self, u: np.ndarray, base: Any) -> np.ndarray:
        """The weight factor ``b / q`` at ``u`` for the own proposal's density ``base``."""
        return base / (self.defensive * base + (1.0 - self.defensive) * self.pdf(u))

    def mix(self, rng: np.random.Generator, u: np.ndarray, base: Callable[[np.ndarray], Any]
            ) -> tuple[np.ndarray, np.ndarray]:
        """Coordinates from the mixture (``u``, drawn by the own proposal of density ``base``,
        kept with probability ``defensive``) and their weight factors ``b / q``."""
        n = len(u)
        pick, y = rng.random(n), rng.random(n)
        u = np.where(pick < self.defensive, u, self.inverse(y))
        return u, self.ratio(u, base(u))


def learn(coordinates: dict[tuple[str, str], tuple[np.ndarray, Any]], weights: np.ndarray
          ) -> dict[tuple[str, str], LearnedDensity]:
    """The adapted coordinates for pilot proposals of the channel's own proposal.

    Every gain is measured out of sample: a histogram learned on one half of the pilot
    (alternate proposals) reweights the other half, and the two halves' efficiencies are
    averaged, so a histogram that merely fits the pilot's few largest weights gains nothing.
    The same measure picks each coordinate's number of bins among :data:`BIN_CHOICES`.  The
    densities returned are learned on the whole pilot.

    Parameters
    ----------
    coordinates : dict
        The pilot's unit coordinates and their proposal densities by key, as
        ``PhaseSpacePlan.propose(..., coordinates=...)`` records them.
    weights : numpy.ndarray
        The pilot's target weights.

    Returns
    -------
    dict
        The learned densities of the coordinates worth adapting (empty for none).
    """
    halves = (slice(0, None, 2), slice(1, None, 2))
    currents = [weights[h] for h in halves]
    best = sum(efficiency(c) for c in currents) / 2.0
    if best <= 0.0:
        return {}
    # per coordinate and bin count: each half's histogram with the other half's points
    candidates: dict[tuple[str, str], dict[int, list[tuple[np.ndarray, Any, LearnedDensity]]]] = {}
    for key, (u, base) in coordinates.items():
        base = np.broadcast_to(base, u.shape)
        options = {}
        for bins in BIN_CHOICES:
            parts = [(u[other], base[other], LearnedDensity.learn(u[own], weights[own], bins))
                     for own, other in (halves, halves[::-1])]
            if all(h is not None for _, _, h in parts):
                options[bins] = parts
        candidates[key] = options  # type: ignore[assignment]
    chosen: dict[tuple[str, str], LearnedDensity] = {}
    while candidates:
        pick = None
        for key, options in candidates.items():
            for bins, parts in options.items():
                # half i is reweighted by the histogram of the other half
                trials = [currents[i] * h.ratio(u, b) for i, (u, b, h) in zip((1, 0), parts)][::-1]
                gain = sum(efficiency(t) for t in trials) / 2.0
                if gain >= MINIMUM_GAIN * best and (pick is None or gain > pick[0]):
                    pick = (gain, key, bins, trials)
        if pick is None:
            break
        best, key, bins, currents = pick
        del candidates[key]
        whole = LearnedDensity.learn(coordinates[key][0], weights, bins)
        if whole is not None:
            chosen[key] = whole
    return chosen
