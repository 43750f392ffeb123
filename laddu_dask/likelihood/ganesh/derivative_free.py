"""The derivative-free methods behind ``NelderMeadConfig``, ``SimulatedAnnealingConfig``,
``PSOConfig``, ``DifferentialEvolutionConfig`` (``scipy.optimize.differential_evolution``)
and ``CMAESConfig`` (``cma``).

Each is ``method(problem, run, y0, config, rng, (lo, hi)) -> (y, fx, message)`` on internal
coordinates (bounds arrive there as smooth bounds). Nelder-Mead is our own because SciPy's
takes neither laddu's coefficients nor shows its simplex to the simplex terminators;
simulated annealing is our own because SciPy's ``dual_annealing`` has no cooling rate nor
temperature terminator (laddu's is the classic Metropolis walk); PSO has no maintained
SciPy-level library. Every random draw comes from the run's seeded generator.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.likelihood.ganesh.engine import minimize
>>> from laddu_dask.likelihood.ganesh.configs import NelderMeadConfig
>>> class Bowl:
...     def value(self, x):
...         return float((x[0] - 1) ** 2 + (x[1] + 2) ** 2)
...     def value_and_gradient(self, x):
...         raise AssertionError("Nelder-Mead takes no gradient")
>>> s = minimize(Bowl(), [0.5, 0.5], config=NelderMeadConfig())
>>> np.round(s.x, 1).tolist(), s.evals.g
([1.0, -2.0], 0)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.optimize as so

from laddu_dask.likelihood.ganesh.status import StatusMessage
from laddu_dask.likelihood.ganesh.terminators import _CMAES, CMAESSigmaTerminator

__all__ = ["annealing", "cmaes", "evolution", "nelder_mead", "swarm"]


def nelder_mead(problem: Any, run: Any, y0: np.ndarray, config: Any, rng: Any, bounds: tuple) -> tuple:
    """Nelder-Mead with laddu's coefficients; a step is one reflection with its expansion,
    contraction or shrink."""
    n = len(y0)
    if config.initial_simplex is not None:
        if config.initial_simplex.shape != (n + 1, n):
            from laddu_dask.errors import GaneshConfigError

            raise GaneshConfigError(
                f"initial_simplex must have shape ({n + 1}, {n}), got {config.initial_simplex.shape}"
            )
        xs = np.array([problem.internal(p) for p in config.initial_simplex])
    else:
        xs = np.tile(y0, (n + 1, 1))
        for i in range(n):
            xs[i + 1, i] = config.initial_zero_step if y0[i] == 0 else y0[i] * (1 + config.initial_step)
    fs = problem.values(xs)
    order = np.argsort(fs, kind="stable")
    xs, fs = xs[order], fs[order]
    spread0, volume = float(np.linalg.norm(xs[-1] - xs[0])), 1.0
    a, b, c, s = config.reflection, config.expansion, config.contraction, config.shrink
    while True:
        centroid = xs[:-1].mean(axis=0)
        xr = centroid + a * (centroid - xs[-1])
        fr = problem.value(xr)
        if fr < fs[0]:
            xe = centroid + a * b * (centroid - xs[-1])
            fe = problem.value(xe)
            take_e = fe < fr if config.expansion_method == "greedy_minimization" else True
            xs[-1], fs[-1] = (xe, fe) if take_e else (xr, fr)
            volume *= a * b if take_e else a
            label = "EXPAND"  # as laddu labels it, whichever point greedy selection keeps
        elif fr < fs[-2]:
            xs[-1], fs[-1] = xr, fr
            volume *= a
            label = "REFLECT"
        else:
            outside = fr < fs[-1]
            xc = centroid + c * ((xr if outside else xs[-1]) - centroid)
            fc = problem.value(xc)
            if fc < (fr if outside else fs[-1]):
                xs[-1], fs[-1] = xc, fc
                volume *= a * c if outside else c
                label = "CONTRACT OUT" if outside else "CONTRACT IN"
            else:
                xs[1:] = xs[0] + s * (xs[1:] - xs[0])
                fs[1:] = problem.values(xs[1:])
                volume *= s**n
                label = "SHRINK"
        order = np.argsort(fs, kind="stable")
        xs, fs = xs[order], fs[order]
        if run.after_step(
            xs[0],
            fs[0],
            simplex_x=xs,
            simplex_f=fs,
            relative_volume=volume,
            initial_spread=spread0,
            label=label,
        ):
            return xs[0], float(fs[0]), run.message


def annealing(problem: Any, run: Any, y0: np.ndarray, config: Any, rng: Any, bounds: tuple) -> tuple:
    """Metropolis simulated annealing with geometric cooling; one proposal per step."""
    y = np.array(y0, dtype=float)
    f = problem.value(y)
    best_y, best_f = y.copy(), f
    temperature = config.initial_temperature
    while True:
        proposal = y + config.proposal_scale * rng.standard_normal(len(y))
        fp = problem.value(proposal)
        if fp <= f or rng.random() < math.exp(-(fp - f) / temperature):
            y, f = proposal, fp
            if f < best_f:
                best_y, best_f = y.copy(), f
        temperature *= config.cooling_rate
        if run.after_step(best_y, best_f, temperature=temperature, current=f):
            return best_y, best_f, run.message


def swarm(problem: Any, run: Any, y0: np.ndarray, config: Any, rng: Any, bounds: tuple) -> tuple:
    """Particle swarm (inertia, cognitive and social weights); one move of the whole swarm
    per step. Synchronous moves are evaluated together (:meth:`Problem.values`), in as few
    rounds as the guides allow: a particle whose guide moved before it in this step follows
    the guide's new best (for the global topology two rounds, the particles up to the
    swarm's best one and those after it); asynchronous moves one particle at a time."""
    n = len(y0)
    count = config.particles or max(20, 10 * n)
    if config.position_bounds is not None:
        lo, hi = np.array(config.position_bounds, dtype=float).T
        if len(lo) != n:
            from laddu_dask.errors import GaneshConfigError

            raise GaneshConfigError(f"position_bounds has {len(lo)} entries, the problem has {n} parameters")
        xs = lo + (hi - lo) * rng.random((count, n))
        xs[0] = np.clip(y0, lo, hi)
    else:
        xs = y0 + config.initial_scale * (2 * rng.random((count, n)) - 1)
        xs[0] = y0
    vs = (
        np.zeros((count, n))
        if config.velocity_scale is None
        else (config.velocity_scale * (2 * rng.random((count, n)) - 1))
    )
    fs = problem.values(xs)
    best_x, best_f = xs.copy(), fs.copy()

    def neighbour(i: int) -> int:
        """The particle whose best guides particle ``i`` now."""
        if config.topology == "global":
            return int(np.argmin(best_f))
        idx = [(i + k) % count for k in range(-config.ring_radius, config.ring_radius + 1)]
        return idx[int(np.argmin(best_f[idx]))]

    def move(i: int, guide: np.ndarray) -> None:
        r1, r2 = rng.random(n), rng.random(n)
        vs[i] = (
            config.inertia * vs[i]
            + config.cognitive * r1 * (best_x[i] - xs[i])
            + config.social * r2 * (guide - xs[i])
        )
        xs[i] = xs[i] + vs[i]

    def evaluate(rows: range) -> None:
        fs[rows] = problem.values(xs[rows]) if len(rows) > 1 else [problem.value(xs[i]) for i in rows]
        for i in rows:
            if fs[i] < best_f[i]:
                best_x[i], best_f[i] = xs[i], fs[i]

    while True:
        if config.update_method == "asynchronous":  # each particle follows the bests so far
            for i in range(count):
                move(i, best_x[neighbour(i)])
                evaluate(range(i, i + 1))
        else:  # guides chosen before the move; a guide that moves earlier in it leads with its new best
            guides = [neighbour(i) for i in range(count)]
            first = 0
            for i in range(count + 1):
                if i == count or first <= guides[i] < i:  # a round: those moved since ``first``
                    evaluate(range(first, i))
                    first = i
                if i < count:
                    move(i, best_x[guides[i]])
        k = int(np.argmin(best_f))
        if run.after_step(best_x[k], best_f[k], swarm=xs):
            return best_x[k].copy(), float(best_f[k]), run.message


def evolution(problem: Any, run: Any, y0: np.ndarray, config: Any, rng: Any, bounds: tuple) -> tuple:
    """``scipy.optimize.differential_evolution`` (rand/1/bin, no polish): the population
    starts at ``y0`` and ``y0 + initial_scale * N(0, 1)``; one generation per step.
    SciPy needs a finite box: ``y0 +- 1e4 max(1, |y0|, initial_scale)``."""
    n = len(y0)
    count = config.population_size or max(10 * n, 4)
    half = 1e4 * np.maximum(np.maximum(np.abs(y0), 1.0), config.initial_scale)
    lo, hi = y0 - half, y0 + half
    init = np.clip(y0 + config.initial_scale * rng.standard_normal((count, n)), lo, hi)
    init[0] = y0
    last: list[Any] = [y0, math.nan]

    def callback(intermediate_result: Any) -> None:
        last[:] = [np.array(intermediate_result.x), float(intermediate_result.fun)]
        if run.after_step(last[0], last[1]):
            raise StopIteration

    res = so.differential_evolution(
        problem.value,
        list(zip(lo, hi)),
        strategy="rand1bin",
        maxiter=10**9,
        init=init,
        tol=0.0,
        atol=-1.0,  # SciPy's own test (population spread <= atol) never passes: terminators decide
        mutation=config.differential_weight,
        recombination=config.crossover_probability,
        rng=rng,
        polish=False,
        callback=callback,
    )
    if run.message is not None:
        return last[0], last[1], run.message
    return (
        np.asarray(res.x),
        float(res.fun),
        StatusMessage(False, f"differential evolution stopped: {res.message}"),
    )


#: ``cma`` options that would stop a run on their own, switched off unless a terminator asks.
_CMA_OFF = {
    "tolfun": 0.0,
    "tolx": 0.0,
    "tolfunhist": 0.0,
    "tolfunrel": 0.0,
    "tolconditioncov": 1e300,
    "tolfacupx": 1e300,
    "tolupsigma": 1e300,
    "tolstagnation": 10**12,
    "tolflatfitness": 10**12,
    "maxiter": 10**12,
    "maxfevals": 10**15,
}


def cmaes(problem: Any, run: Any, y0: np.ndarray, config: Any, rng: Any, bounds: tuple) -> tuple:
    """``cma.CMAEvolutionStrategy``: one ask-evaluate-tell generation per step. The CMA-ES
    terminators set ``cma``'s own criteria, which ``stop()`` reports after each step."""
    import cma

    n = len(y0)
    lam = config.population_size or 4 + int(3 * math.log(n))
    opts = dict(
        _CMA_OFF, popsize=lam, verbose=-9, seed=np.nan, randn=lambda *shape: rng.standard_normal(shape)
    )
    for t in run.terminators:
        if isinstance(t, _CMAES) and t.option is not None and not isinstance(t, CMAESSigmaTerminator):
            opts[t.option] = t.option_value(n, lam)
    es = cma.CMAEvolutionStrategy(np.array(y0, dtype=float), config.initial_sigma, opts)
    while True:
        xs = es.ask()
        es.tell(xs, [float(f) for f in problem.values(np.array(xs))])
        best = es.result
        if run.after_step(
            np.array(best.xbest), float(best.fbest), sigma=float(es.sigma), cma_stop=dict(es.stop())
        ):
            return np.array(best.xbest), float(best.fbest), run.message
