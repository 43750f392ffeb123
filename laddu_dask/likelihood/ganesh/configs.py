"""laddu's ``ganesh`` minimizer configurations and line searches, with laddu 0.28.1's
names, keywords and defaults. A bad value is a
:class:`~laddu_dask.errors.GaneshConfigError` naming the keyword, raised by the
constructor (as laddu does).

Which library runs each (see :func:`laddu_dask.likelihood.ganesh.engine.minimize`):

==========================  =====================================================
``LBFGSBConfig``            ``scipy.optimize.minimize(method="L-BFGS-B")``, exact gradient
``ConjugateGradientConfig`` own nonlinear CG loop on ``scipy.optimize.line_search``
``TrustRegionConfig``       ``scipy.optimize.minimize(method="trust-exact")`` with the
                            Hessian from exact gradients
``NelderMeadConfig``        own Nelder-Mead (laddu's coefficients and simplex terminators)
``DifferentialEvolutionConfig`` ``scipy.optimize.differential_evolution``
``CMAESConfig``             ``cma.CMAEvolutionStrategy``
``SimulatedAnnealingConfig``, ``PSOConfig``, ``AdamConfig``  own small implementations
==========================  =====================================================

Examples
--------
>>> import laddu_dask as ld
>>> ld.ganesh.LBFGSBConfig().history_size
10
>>> ld.ganesh.LBFGSBConfig(history_size=0)
Traceback (most recent call last):
...
laddu_dask.errors.GaneshConfigError: history_size must be an integer >= 1, got 0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask.errors import GaneshConfigError
from laddu_dask.likelihood.ganesh.line_searches import HagerZhangLineSearch, MoreThuenteLineSearch
from laddu_dask.likelihood.ganesh.line_searches import line_search as _line_search
from laddu_dask.likelihood.ganesh.transforms import check_transform
from laddu_dask.likelihood.ganesh.validate import (
    Settings,
    choice,
    count,
    intervals,
    names,
    number,
    positive,
    within,
)

__all__ = [
    "AdamConfig",
    "CMAESConfig",
    "ConjugateGradientConfig",
    "DifferentialEvolutionConfig",
    "HagerZhangLineSearch",
    "LBFGSBConfig",
    "MoreThuenteLineSearch",
    "NelderMeadConfig",
    "PSOConfig",
    "SimulatedAnnealingConfig",
    "TrustRegionConfig",
]


class _Config(Settings):
    """Keywords every minimizer configuration has."""

    def _common(self, parameter_names: Sequence[str] | None, transform: Any) -> None:
        self.parameter_names = names(parameter_names)
        self.transform = check_transform(transform)


class LBFGSBConfig(_Config):
    """L-BFGS-B: ``scipy.optimize.minimize(method="L-BFGS-B")`` with the exact gradient,
    ``maxcor = history_size`` and native ``bounds`` (the likelihood's when not given).

    ``error_mode="exact_hessian"`` gives the summary a covariance (the inverse Hessian,
    from exact gradients); ``"skip"`` leaves it NaN. ``max_step`` and ``line_search`` are
    recorded: SciPy's L-BFGS-B has its own Moré–Thuente search and no step limit.

    Examples
    --------
    >>> LBFGSBConfig(bounds=[(0, 1), (None, 2)]).bounds
    ((0.0, 1.0), (-inf, 2.0))
    """

    _fields = (
        "history_size",
        "max_step",
        "error_mode",
        "line_search",
        "bounds",
        "parameter_names",
        "transform",
    )

    def __init__(
        self,
        *,
        history_size: int = 10,
        max_step: float = 1e8,
        error_mode: str = "exact_hessian",
        line_search: Any | None = None,
        bounds: Sequence[tuple[float, float]] | None = None,
        parameter_names: Sequence[str] | None = None,
        transform: Any | None = None,
    ) -> None:
        self.history_size = count("history_size", history_size, 1)
        self.max_step = positive("max_step", max_step)
        self.error_mode = choice("error_mode", error_mode, ("exact_hessian", "skip"))
        self.line_search = _line_search(line_search)
        self.bounds = None if bounds is None else intervals("bounds", bounds, finite=False)
        self._common(parameter_names, transform)


class ConjugateGradientConfig(_Config):
    """Nonlinear conjugate gradient: ``update`` is one of ``"fletcher_reeves"``,
    ``"polak_ribiere_plus"``, ``"hestenes_stiefel_plus"``, ``"dai_yuan"``, ``"hager_zhang"``.

    Examples
    --------
    >>> ConjugateGradientConfig(update="dai_yuan").update
    'dai_yuan'
    """

    UPDATES = ("fletcher_reeves", "polak_ribiere_plus", "hestenes_stiefel_plus", "dai_yuan", "hager_zhang")
    _fields = ("update", "line_search", "parameter_names", "transform")

    def __init__(
        self,
        *,
        update: str = "polak_ribiere_plus",
        line_search: Any | None = None,
        parameter_names: Sequence[str] | None = None,
        transform: Any | None = None,
    ) -> None:
        self.update = choice("update", update, self.UPDATES)
        self.line_search = _line_search(line_search)
        self._common(parameter_names, transform)


class TrustRegionConfig(_Config):
    """Trust region with the Hessian from exact gradients, on SciPy's ``trust-exact``
    (``initial_trust_radius``, ``max_trust_radius``, ``eta`` are laddu's keywords).

    SciPy solves the subproblem nearly exactly for either ``subproblem`` (``"dogleg"``,
    ``"cauchy_point"``, recorded): that step is never worse than a dogleg or Cauchy step and,
    unlike SciPy's dogleg, needs no positive-definite Hessian.

    Examples
    --------
    >>> TrustRegionConfig(eta=0.1).eta
    0.1
    """

    _fields = ("subproblem", "initial_radius", "max_radius", "eta", "parameter_names", "transform")

    def __init__(
        self,
        *,
        subproblem: str = "dogleg",
        initial_radius: float = 1.0,
        max_radius: float = 1000.0,
        eta: float = 1e-4,
        parameter_names: Sequence[str] | None = None,
        transform: Any | None = None,
    ) -> None:
        self.subproblem = choice("subproblem", subproblem, ("dogleg", "cauchy_point"))
        self.initial_radius = positive("initial_radius", initial_radius)
        self.max_radius = positive("max_radius", max_radius)  # the run starts at min(initial, max)
        self.eta = within("eta", eta, 0.0, 1.0, closed_low=True)
        self._common(parameter_names, transform)


class NelderMeadConfig(_Config):
    """Nelder-Mead: reflection ``> 0``, expansion ``> 1`` (and ``> reflection``),
    contraction and shrink in ``(0, 1)``; the initial simplex is ``x0`` and, per coordinate,
    ``x0_i (1 + initial_step)`` (``initial_zero_step`` where ``x0_i = 0``), unless
    ``initial_simplex`` (``n + 1`` points) is given. ``expansion_method`` is
    ``"greedy_minimization"`` (keep the better of expanded and reflected points) or
    ``"greedy_expansion"`` (keep the expanded one).

    Examples
    --------
    >>> NelderMeadConfig().initial_step
    0.05
    """

    _fields = (
        "reflection",
        "expansion",
        "contraction",
        "shrink",
        "initial_step",
        "initial_zero_step",
        "expansion_method",
        "initial_simplex",
        "parameter_names",
        "transform",
    )

    def __init__(
        self,
        *,
        reflection: float = 1.0,
        expansion: float = 2.0,
        contraction: float = 0.5,
        shrink: float = 0.5,
        initial_step: float = 0.05,
        initial_zero_step: float = 0.00025,
        expansion_method: str = "greedy_minimization",
        initial_simplex: Sequence[Sequence[float]] | None = None,
        parameter_names: Sequence[str] | None = None,
        transform: Any | None = None,
    ) -> None:
        self.reflection = positive("reflection", reflection)
        self.expansion = number("expansion", expansion)
        if not (self.expansion > 1 and self.expansion > self.reflection):
            raise GaneshConfigError(
                f"expansion must be > 1 and > reflection ({reflection!r}), got {expansion!r}"
            )
        self.contraction = within("contraction", contraction, 0.0, 1.0)
        self.shrink = within("shrink", shrink, 0.0, 1.0)
        self.initial_step = positive("initial_step", initial_step)
        self.initial_zero_step = positive("initial_zero_step", initial_zero_step)
        self.expansion_method = choice(
            "expansion_method", expansion_method, ("greedy_minimization", "greedy_expansion")
        )
        self.initial_simplex = None
        if initial_simplex is not None:
            simplex = np.asarray(initial_simplex, dtype=float)
            if (
                simplex.ndim != 2
                or simplex.shape[0] != simplex.shape[1] + 1
                or not np.isfinite(simplex).all()
            ):
                raise GaneshConfigError(
                    f"initial_simplex must be n + 1 finite points of n coordinates, got shape {simplex.shape}"
                )
            self.initial_simplex = simplex
        self._common(parameter_names, transform)


class CMAESConfig(_Config):
    """CMA-ES on ``cma.CMAEvolutionStrategy``: ``population_size=0`` is
    ``4 + floor(3 ln n)``; ``initial_sigma`` is the initial step size.

    Examples
    --------
    >>> CMAESConfig(population_size=12).population_size
    12
    """

    _fields = ("population_size", "initial_sigma", "parameter_names", "transform")

    def __init__(
        self,
        *,
        population_size: int = 0,
        initial_sigma: float = 0.5,
        parameter_names: Sequence[str] | None = None,
        transform: Any | None = None,
    ) -> None:
        self.population_size = (
            population_size if population_size == 0 else count("population_size", population_size, 2)
        )
        self.initial_sigma = positive("initial_sigma", initial_sigma)
        self._common(parameter_names, transform)


class DifferentialEvolutionConfig(_Config):
    """Differential evolution on ``scipy.optimize.differential_evolution`` (rand/1/bin):
    ``population_size=0`` is ``max(10 n, 4)`` members, drawn around ``x0`` with
    ``initial_scale``; ``differential_weight`` is the mutation ``F``,
    ``crossover_probability`` the recombination rate.

    Examples
    --------
    >>> DifferentialEvolutionConfig().differential_weight
    0.8
    """

    _fields = (
        "population_size",
        "differential_weight",
        "crossover_probability",
        "initial_scale",
        "parameter_names",
        "transform",
    )

    def __init__(
        self,
        *,
        population_size: int = 0,
        differential_weight: float = 0.8,
        crossover_probability: float = 0.9,
        initial_scale: float = 1.0,
        parameter_names: Sequence[str] | None = None,
        transform: Any | None = None,
    ) -> None:
        self.population_size = (
            population_size if population_size == 0 else count("population_size", population_size, 4)
        )
        self.differential_weight = within("differential_weight", differential_weight, 0.0, 2.0)
        self.crossover_probability = number("crossover_probability", crossover_probability)
        if not 0 <= self.crossover_probability <= 1:
            raise GaneshConfigError(f"crossover_probability must be in [0, 1], got {crossover_probability!r}")
        self.initial_scale = positive("initial_scale", initial_scale)
        self._common(parameter_names, transform)


class SimulatedAnnealingConfig(_Config):
    """Simulated annealing: one Gaussian proposal of width ``proposal_scale`` per step,
    Metropolis acceptance at temperature ``T``, ``T *= cooling_rate`` each step from
    ``initial_temperature``; the best point seen is the result.

    Examples
    --------
    >>> SimulatedAnnealingConfig().cooling_rate
    0.999
    """

    _fields = ("initial_temperature", "cooling_rate", "proposal_scale", "parameter_names", "transform")

    def __init__(
        self,
        *,
        initial_temperature: float = 1.0,
        cooling_rate: float = 0.999,
        proposal_scale: float = 0.1,
        parameter_names: Sequence[str] | None = None,
        transform: Any | None = None,
    ) -> None:
        self.initial_temperature = positive("initial_temperature", initial_temperature)
        self.cooling_rate = within("cooling_rate", cooling_rate, 0.0, 1.0)
        self.proposal_scale = positive("proposal_scale", proposal_scale)
        self._common(parameter_names, transform)


class PSOConfig(_Config):
    """Particle swarm: ``particles=0`` is ``max(20, 10 n)``, placed uniformly within
    ``initial_scale`` of ``x0`` (or in ``position_bounds``); ``topology`` ``"global"`` or
    ``"ring"`` (neighbours within ``ring_radius``); ``update_method`` ``"synchronous"``
    (bests updated after the whole swarm moved) or ``"asynchronous"`` (after each particle);
    ``velocity_scale`` draws initial velocities uniformly in ``±velocity_scale``, else zero.

    Examples
    --------
    >>> PSOConfig(topology="ring").topology
    'ring'
    """

    _fields = (
        "particles",
        "inertia",
        "cognitive",
        "social",
        "initial_scale",
        "position_bounds",
        "topology",
        "ring_radius",
        "update_method",
        "velocity_scale",
        "parameter_names",
        "transform",
    )

    def __init__(
        self,
        *,
        particles: int = 0,
        inertia: float = 0.7298,
        cognitive: float = 1.49618,
        social: float = 1.49618,
        initial_scale: float = 1.0,
        position_bounds: Sequence[tuple[float, float]] | None = None,
        topology: str = "global",
        ring_radius: int = 1,
        update_method: str = "synchronous",
        velocity_scale: float | None = None,
        parameter_names: Sequence[str] | None = None,
        transform: Any | None = None,
    ) -> None:
        self.particles = particles if particles == 0 else count("particles", particles, 2)
        self.inertia = positive("inertia", inertia)
        self.cognitive = positive("cognitive", cognitive)
        self.social = positive("social", social)
        self.initial_scale = positive("initial_scale", initial_scale)
        self.position_bounds = (
            None if position_bounds is None else intervals("position_bounds", position_bounds, finite=True)
        )
        self.topology = choice("topology", topology, ("global", "ring"))
        self.ring_radius = count("ring_radius", ring_radius, 1)
        self.update_method = choice("update_method", update_method, ("synchronous", "asynchronous"))
        self.velocity_scale = None if velocity_scale is None else positive("velocity_scale", velocity_scale)
        self._common(parameter_names, transform)


class AdamConfig(_Config):
    """Adam: learning rate ``alpha``, moment decays ``beta_1``, ``beta_2`` in ``[0, 1)``,
    ``epsilon`` in the denominator; one exact gradient per step.

    Examples
    --------
    >>> AdamConfig(alpha=0.01).alpha
    0.01
    """

    _fields = ("alpha", "beta_1", "beta_2", "epsilon", "parameter_names", "transform")

    def __init__(
        self,
        *,
        alpha: float = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-8,
        parameter_names: Sequence[str] | None = None,
        transform: Any | None = None,
    ) -> None:
        self.alpha = positive("alpha", alpha)
        self.beta_1 = within("beta_1", beta_1, 0.0, 1.0, closed_low=True)
        self.beta_2 = within("beta_2", beta_2, 0.0, 1.0, closed_low=True)
        self.epsilon = positive("epsilon", epsilon)
        self._common(parameter_names, transform)
