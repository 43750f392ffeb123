"""The ensemble slice sampler (Karamanis & Beutler 2021, the algorithm of zeus and of
laddu's ``ESS``), vectorised over walkers.

Each step draws one move (by weight) and updates the ensemble in two random halves, each
from the other: every walker of the active half gets a direction from the complementary
half (see :class:`~laddu_dask.likelihood.ganesh.mcmc_configs.ESSMove`) and takes one slice
sampling update along it (Neal 2003: a slice level ``ln p - Exponential(1)``, an interval of
``bracket_width`` placed at random around the walker, stepped out with Neal's limit
``m = max_shrink_steps``, then shrunk until a point inside the slice is drawn). Because
the directions do not depend on the active walker, every move leaves the target invariant.
All the walkers of a half that still need a point are evaluated together: each stepping
out or shrinking round is one call of the vectorised log-density.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.likelihood.ganesh.ess import EnsembleSlice
>>> from laddu_dask.likelihood.ganesh.mcmc_configs import ESSConfig
>>> log_p = lambda x: -0.5 * np.sum(x * x, axis=1)  # a standard normal
>>> sampler = EnsembleSlice(log_p, ESSConfig(), np.random.default_rng(1))
>>> x = np.random.default_rng(2).normal(size=(16, 2))
>>> lp = log_p(x)
>>> for step in range(200):
...     x, lp, moved = sampler.step(x, lp, step)
>>> bool(np.all(np.isclose(lp, log_p(x))))
True
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from laddu_dask.likelihood.ganesh.mcmc_configs import ESSConfig, ESSMove

#: Bounds of the factor by which one tuning step changes the direction scale.
TUNE_FACTOR = (0.1, 10.0)


def choose_move(moves: tuple, rng: np.random.Generator):
    """One of ``moves``, drawn with probability proportional to its weight."""
    weights = np.array([m.weight for m in moves], dtype=float)
    return moves[int(rng.choice(len(moves), p=weights / weights.sum()))]


def _covariance(points: np.ndarray) -> np.ndarray:
    if len(points) < 2:
        return np.zeros((points.shape[1],) * 2)
    return np.atleast_2d(np.cov(points, rowvar=False))


def _normal(rng: np.random.Generator, covariance: np.ndarray, size: int) -> np.ndarray:
    return rng.multivariate_normal(np.zeros(len(covariance)), covariance, size=size, check_valid="ignore")


def directions(move: ESSMove, complement: np.ndarray, k: int, mu: float,
               rng: np.random.Generator) -> np.ndarray:
    """``k`` directions for the active walkers, from the complementary walkers only.

    ``differential``: ``mu (x_j - x_k)`` of two distinct complementary walkers;
    ``gaussian``: ``mu`` times a draw of ``N(0, 2 C)``, ``C`` their covariance (the
    differential move's spread); ``global``: see :func:`global_directions`.
    """
    if move.kind == "differential":
        first = rng.integers(0, len(complement), size=k)
        second = (first + rng.integers(1, len(complement), size=k)) % len(complement)
        return mu * (complement[first] - complement[second])
    if move.kind == "gaussian":
        return mu * _normal(rng, 2.0 * _covariance(complement), k)
    return global_directions(move, complement, k, rng)


def global_directions(move: ESSMove, complement: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """The global move's directions: a ``components``-cluster Gaussian mixture of the
    complementary walkers (k-means, each cluster's mean and covariance; a cluster of fewer
    than two walkers takes the whole complement's covariance); two complementary walkers
    drawn at random name two clusters: the same one gives ``2 scale`` times a draw of
    its covariance, two different ones ``2 (a - b)`` with ``a``, ``b`` drawn from their
    Gaussians with covariances times ``rescale_covariance`` (a jump between modes)."""
    from scipy.cluster.vq import kmeans2  # here, not at import: scipy.cluster is slow to import

    whole = _covariance(complement)
    clusters = min(move.components, len(complement))
    scale = np.sqrt(np.maximum(np.diag(whole), np.finfo(float).tiny))
    _, labels = kmeans2(complement / scale, clusters, minit="++", seed=rng)
    means = np.array([complement[labels == c].mean(axis=0) if np.any(labels == c) else complement.mean(axis=0)
                      for c in range(clusters)])
    roots = np.array([_root(_covariance(complement[labels == c]) if np.sum(labels == c) > 1 else whole)
                      for c in range(clusters)])
    first = labels[rng.integers(0, len(complement), size=k)]
    second = labels[rng.integers(0, len(complement), size=k)]
    z = rng.standard_normal((2, k, complement.shape[1]))
    draw_a = np.einsum("kij,kj->ki", roots[first], z[0])
    draw_b = np.einsum("kij,kj->ki", roots[second], z[1])
    jump = 2.0 * (means[first] - means[second] + np.sqrt(move.rescale_covariance) * (draw_a - draw_b))
    return np.where((first == second)[:, None], 2.0 * move.scale * draw_a, jump)


def _root(covariance: np.ndarray) -> np.ndarray:
    """A matrix ``R`` with ``R R^T = covariance`` (negative rounding eigenvalues clipped)."""
    values, vectors = np.linalg.eigh(covariance)
    return vectors * np.sqrt(np.clip(values, 0.0, None))


class EnsembleSlice:
    """The sampler's state between steps: the log-density, the config, the random generator
    and the direction scale ``mu`` (tuned during ``adaptive_steps``)."""

    def __init__(self, log_prob: Callable[[np.ndarray], np.ndarray], config: ESSConfig,
                 rng: np.random.Generator) -> None:
        self.log_prob = log_prob
        self.config = config
        self.rng = rng
        self.mu = config.direction_scale
        self.last_move = config.moves[0]

    def step(self, walkers: np.ndarray, log_p: np.ndarray,
             step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One step of every walker; returns the new walkers, their log-densities and which moved."""
        walkers, log_p = walkers.copy(), log_p.copy()
        move = self.last_move = choose_move(self.config.moves, self.rng)
        order = self.rng.permutation(len(walkers))
        halves = (order[: len(order) // 2], order[len(order) // 2:])
        counts = np.zeros(2, dtype=np.int64)  # expansions, contractions
        moved = np.zeros(len(walkers), dtype=bool)
        for active, other in (halves, halves[::-1]):
            d = directions(move, walkers[other], len(active), self.mu, self.rng)
            x, lp, ok, c = self._slice(walkers[active], log_p[active], d)
            walkers[active], log_p[active], moved[active] = x, lp, ok
            counts += c
        if step < self.config.adaptive_steps and counts.sum():
            self.mu *= float(np.clip(2.0 * counts[0] / counts.sum(), *TUNE_FACTOR))
        return walkers, log_p, moved

    def _slice(self, x0: np.ndarray, lp0: np.ndarray, d: np.ndarray):
        """One slice update of each row of ``x0`` along the matching row of ``d``."""
        rng, w, m = self.rng, self.config.bracket_width, self.config.max_shrink_steps
        k = len(x0)
        level = lp0 - rng.exponential(size=k)
        left = -w * rng.uniform(size=k)
        right = left + w
        j = np.floor(m * rng.uniform(size=k)).astype(np.int64)  # Neal's stepping out, limit m
        budget = np.stack([j, m - 1 - j])
        expansions = 0
        grow = budget > 0
        while grow.any():
            rows = [np.flatnonzero(grow[0]), np.flatnonzero(grow[1])]
            points = np.concatenate([x0[rows[0]] + left[rows[0], None] * d[rows[0]],
                                     x0[rows[1]] + right[rows[1], None] * d[rows[1]]])
            inside = self.log_prob(points) > np.concatenate([level[rows[0]], level[rows[1]]])
            for side, (r, ins) in enumerate(zip(rows, np.split(inside, [len(rows[0])]))):
                out = r[ins]
                if side == 0:
                    left[out] -= w
                else:
                    right[out] += w
                budget[side, out] -= 1
                grow[side, r[~ins]] = False
                grow[side] &= budget[side] > 0
                expansions += len(out)
        x, lp = x0.copy(), lp0.copy()
        moved = np.zeros(k, dtype=bool)
        todo = np.arange(k)
        contractions = 0
        for _ in range(m):
            if not len(todo):
                break
            t = rng.uniform(left[todo], right[todo])
            points = x0[todo] + t[:, None] * d[todo]
            values = self.log_prob(points)
            inside = values > level[todo]
            x[todo[inside]], lp[todo[inside]], moved[todo[inside]] = points[inside], values[inside], True
            rest, t = todo[~inside], t[~inside]
            left[rest] = np.where(t < 0, t, left[rest])
            right[rest] = np.where(t < 0, right[rest], t)
            contractions += len(rest)
            todo = rest
        return x, lp, moved, np.array([expansions, contractions])
