"""laddu's ``ganesh`` namespace: minimizer configurations, terminators, observers and
summaries, run on well-kept libraries (SciPy, ``cma``) with the likelihood's exact gradient.

The names, keywords and meanings are laddu 0.28.1's (``laddu.ganesh``); a script passes them
to :meth:`~laddu_dask.Likelihood.fit`, ``fit_restarts``, ``bootstrap_fit`` and ``sample``.
The engine every fit goes through is :func:`~laddu_dask.likelihood.ganesh.engine.minimize`.

Where the minimizers differ from laddu's (each for the reason given):

- L-BFGS-B is SciPy's: its own line search (``line_search`` and ``max_step`` are recorded),
  and it ends a run (not a success) when its line search cannot lower ``f`` any more, where
  laddu's keeps stepping until ``MaxSteps``.
- Conjugate gradient uses SciPy's strong-Wolfe ``line_search`` for both line-search kinds
  (SciPy has neither Moré–Thuente nor Hager–Zhang as a public search); a failed search is
  retried along the unit steepest descent, so a steep start is left in a few steps (on the
  KsKs toy's displaced start ours converges in ~280 evaluations where laddu's takes 4000 steps).
- Trust region solves its subproblem with SciPy's ``trust-exact`` for either ``subproblem``;
  SciPy caps ``eta`` below 0.25. Inside bounds it works where laddu 0.28.1's fails.
- CMA-ES is ``cma``'s: its stopping criteria stand for the CMA-ES terminators, so a run may
  end on a different one (e.g. ``TOLFUN`` where laddu's says ``CONDITION COVARIANCE``).
- Smooth bounds are MINUIT's transforms; near a bound the path (not the minimum) can differ.
- A run nothing can stop (``PSOConfig`` without ``MaxSteps``, ``default_callbacks=False``
  without terminators) is a ``GaneshConfigError`` up front; laddu's would run forever.
- A Hessian counts once in ``evals.h`` (its ``2 n`` exact gradients are not added to ``g``);
  Adam's first evaluation also counts a gradient (``g`` is laddu's plus one).

Examples
--------
>>> import laddu_dask as ld
>>> counts = ld.ganesh.EvalCounts(f=12, g=12)
>>> counts.f, counts.g, counts.h
(12, 12, 0)
>>> ld.ganesh.NelderMeadConfig(initial_step=0.1).initial_step
0.1
"""

from laddu_dask.errors import GaneshConfigError, GaneshError
from laddu_dask.likelihood.ganesh.configs import (
    AdamConfig,
    CMAESConfig,
    ConjugateGradientConfig,
    DifferentialEvolutionConfig,
    HagerZhangLineSearch,
    LBFGSBConfig,
    MoreThuenteLineSearch,
    NelderMeadConfig,
    PSOConfig,
    SimulatedAnnealingConfig,
    TrustRegionConfig,
)
from laddu_dask.likelihood.ganesh.observers import DebugObserver, ProgressObserver
from laddu_dask.likelihood.ganesh.status import EvalCounts, StatusMessage, StatusSnapshot
from laddu_dask.likelihood.ganesh.summaries import MinimizationSummary, MultiStartSummary
from laddu_dask.likelihood.ganesh.terminators import (
    AdamEMATerminator,
    CMAESConditionCovTerminator,
    CMAESEqualFunValuesTerminator,
    CMAESNoEffectAxisTerminator,
    CMAESNoEffectCoordTerminator,
    CMAESSigmaTerminator,
    CMAESStagnationTerminator,
    CMAESTolFunTerminator,
    CMAESTolXTerminator,
    CMAESTolXUpTerminator,
    ConjugateGradientGTerminator,
    LBFGSBFTerminator,
    LBFGSBGTerminator,
    LBFGSBInfNormGTerminator,
    MaxSteps,
    NelderMeadFTerminator,
    NelderMeadXTerminator,
    SimulatedAnnealingTerminator,
    TrustRegionGTerminator,
)
from laddu_dask.likelihood.ganesh.transforms import (
    Bounds,
    PeriodicTransform,
    ScaleTransform,
    TransformChain,
    VectorInit,
)

__all__ = [
    "AdamConfig", "AdamEMATerminator", "Bounds", "CMAESConditionCovTerminator", "CMAESConfig",
    "CMAESEqualFunValuesTerminator", "CMAESNoEffectAxisTerminator", "CMAESNoEffectCoordTerminator",
    "CMAESSigmaTerminator", "CMAESStagnationTerminator", "CMAESTolFunTerminator", "CMAESTolXTerminator",
    "CMAESTolXUpTerminator", "ConjugateGradientConfig", "ConjugateGradientGTerminator", "DebugObserver",
    "DifferentialEvolutionConfig", "EvalCounts", "GaneshConfigError", "GaneshError", "HagerZhangLineSearch",
    "LBFGSBConfig", "LBFGSBFTerminator", "LBFGSBGTerminator", "LBFGSBInfNormGTerminator", "MaxSteps",
    "MinimizationSummary", "MoreThuenteLineSearch", "MultiStartSummary", "NelderMeadConfig",
    "NelderMeadFTerminator", "NelderMeadXTerminator", "PSOConfig", "PeriodicTransform", "ProgressObserver",
    "ScaleTransform", "SimulatedAnnealingConfig", "SimulatedAnnealingTerminator", "StatusMessage",
    "StatusSnapshot", "TransformChain", "TrustRegionConfig", "TrustRegionGTerminator", "VectorInit",
]

# MCMC: the samplers' inits, moves, configs, chain storage, autocorrelation terminator and summary
from laddu_dask.likelihood.ganesh.autocorrelation import AutocorrelationTerminator  # noqa: E402
from laddu_dask.likelihood.ganesh.mcmc_configs import (  # noqa: E402
    AIESConfig,
    AIESInit,
    AIESMove,
    ChainStorage,
    ESSConfig,
    ESSInit,
    ESSMove,
)
from laddu_dask.likelihood.ganesh.mcmc_summary import MCMCSummary  # noqa: E402

__all__ += ["AIESConfig", "AIESInit", "AIESMove", "AutocorrelationTerminator", "ChainStorage", "ESSConfig",
            "ESSInit", "ESSMove", "MCMCSummary"]
