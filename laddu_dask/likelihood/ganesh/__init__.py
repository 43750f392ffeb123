"""laddu's ``ganesh`` namespace: minimizer configurations, terminators, observers and
summaries, run on well-kept libraries (SciPy, ``cma``) with the likelihood's exact gradient.

The names, keywords and meanings are laddu 0.28.1's (``laddu.ganesh``); a script passes them
to :meth:`~laddu_dask.Likelihood.fit`, ``fit_restarts``, ``bootstrap_fit`` and ``sample``.
The engine every fit goes through is :func:`~laddu_dask.likelihood.ganesh.engine.minimize`.

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
