"""The population minimizers (PSO, CMA-ES, Nelder-Mead's simplex) evaluate a generation in
one round of the objective's ``values(points)`` when it has one, and visit the same points:
the end point, value and evaluation counts are bitwise those of the one-point-at-a-time
run, written down once from it (commit e52668d, before the rounds) on the bounded
Rosenbrock function, seed 5. An objective without ``values`` is asked one point at a time.
(``Likelihood.values`` is bitwise ``value`` at each point: ``tests/analysis/test_mcmc.py``.)
"""

from __future__ import annotations

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.likelihood.ganesh.engine import minimize

BOX = ((-2.0, 2.0), (-1.0, 3.0))
START = [-1.2, 1.0]


class OnePoint:
    """``1 + (1 - a)^2 + 100 (b - a^2)^2``, one point per call, counting the calls."""

    def __init__(self) -> None:
        self.singles = 0

    def value(self, x):
        self.singles += 1
        a, b = x
        return float(1 + (1 - a) ** 2 + 100 * (b - a * a) ** 2)


class Rounds(OnePoint):
    """The same function, with ``values(points)``: the size of each round it was asked."""

    def __init__(self) -> None:
        super().__init__()
        self.rounds: list[int] = []

    def values(self, points):
        self.rounds.append(len(points))
        singles = self.singles
        out = np.array([self.value(p) for p in points])
        self.singles = singles
        return out


#: (config, MaxSteps or None, x as float.hex, fx as float.hex, f) of the one-point-at-a-time run.
GOLDEN = {
    "PSO global": (ld.ganesh.PSOConfig(), 30, ("0x1.04aca5ce641d5p+0", "0x1.0ddb94f860d38p+0"),
                   "0x1.07baa7f676043p+0", 620),
    "PSO ring": (ld.ganesh.PSOConfig(topology="ring"), 30, ("0x1.22fb3becbcb17p-1", "0x1.48ff8ced0e75ap-2"),
                 "0x1.2fc75467106bdp+0", 620),
    "PSO asynchronous": (ld.ganesh.PSOConfig(update_method="asynchronous"), 30,
                         ("0x1.0a73445efbfddp+0", "0x1.1560b064f63a5p+0"), "0x1.006d76b82e950p+0", 620),
    "CMA-ES": (ld.ganesh.CMAESConfig(), None, ("0x1.ffffffd546f73p-1", "0x1.ffffffaa4075ep-1"),
               "0x1.0000000000000p+0", 696),
    "Nelder-Mead": (ld.ganesh.NelderMeadConfig(), None, ("-0x1.fd9079119b587p-1", "0x1.009344127bfc5p+0"),
                    "0x1.3faa601a430efp+2", 28),
}


def _run(objective, name):
    config, steps, *_ = GOLDEN[name]
    seen = []
    summary = minimize(objective, START, config=config, seed=5, bounds=BOX,
                       terminators=[] if steps is None else [ld.ganesh.MaxSteps(steps)],
                       observers=[lambda step, snapshot: seen.append(step)])
    return summary, seen


#: Methods whose arithmetic goes through LAPACK (CMA-ES's eigendecomposition of its
#: covariance): their last bits follow the CPU's BLAS kernels (AVX2 or AVX-512), so the
#: golden run holds to 1e-12 there, and the two objectives are compared bit for bit.
LAPACK = {"CMA-ES"}


@pytest.mark.parametrize("objective", [Rounds, OnePoint])
@pytest.mark.parametrize("name", list(GOLDEN))
def test_same_points_as_one_at_a_time(name, objective):
    _, steps, x, fx, f = GOLDEN[name]
    summary, seen = _run(objective(), name)
    if name in LAPACK:
        assert summary.x == pytest.approx([float.fromhex(v) for v in x], rel=1e-12, abs=1e-12)
        assert summary.fx == pytest.approx(float.fromhex(fx), rel=1e-12)
        other, _ = _run(OnePoint() if objective is Rounds else Rounds(), name)
        assert [float(v).hex() for v in summary.x] == [float(v).hex() for v in other.x]
        assert float(summary.fx).hex() == float(other.fx).hex()
    else:
        assert [float(v).hex() for v in summary.x] == list(x)
        assert float(summary.fx).hex() == fx
    assert (summary.evals.f, summary.evals.g, summary.evals.h) == (f, 0, 0)
    if steps is not None:
        assert seen == list(range(steps))  # every step observed once


def test_cmaes_asks_each_generation_in_one_round():
    objective = Rounds()
    summary, seen = _run(objective, "CMA-ES")
    lam = 4 + int(3 * np.log(2))
    assert objective.singles == 0
    assert objective.rounds == [lam] * len(objective.rounds)
    assert sum(objective.rounds) == summary.evals.f
    assert len(objective.rounds) in (len(seen), len(seen) + 1)  # the last step may be unobserved


def test_pso_rounds():
    # synchronous, global: the particles up to the swarm's best one, then those after it
    objective = Rounds()
    summary, _ = _run(objective, "PSO global")
    assert objective.rounds[0] == 20  # the starting swarm in one round
    assert len(objective.rounds) + objective.singles <= 1 + 2 * 30
    assert sum(objective.rounds) + objective.singles == summary.evals.f
    # synchronous, ring: fewer rounds than particles per step
    objective = Rounds()
    _run(objective, "PSO ring")
    assert len(objective.rounds) + objective.singles < 30 * 20 / 2
    # asynchronous: each particle follows the bests of those before it, one point at a time
    objective = Rounds()
    summary, _ = _run(objective, "PSO asynchronous")
    assert objective.rounds == [20]
    assert objective.singles == summary.evals.f - 20


def test_nelder_mead_simplex_in_one_round():
    objective = Rounds()
    summary, _ = _run(objective, "Nelder-Mead")
    assert objective.rounds[0] == 3  # the starting simplex; each shrink is one more round
    assert sum(objective.rounds) + objective.singles == summary.evals.f
