"""laddu-dask: amplitude analysis on Dask.

Models are symbolic expressions compiled to per-partition array kernels; datasets
are Dask-partitioned event samples, kept resident or streamed from Parquet under a
memory budget; likelihoods and their exact gradients are reduced with exact
(error-free) partial sums, so results do not depend on partitioning.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> a = ld.parameter("a", initial=1.0, bounds=(0.0, 10.0))
>>> model = ld.Model(a * x * x + 1.0)
>>> data = ld.Dataset.from_arrays(scalars={"x": np.array([0.2, 0.9, 0.95])})
>>> mc = ld.Dataset.from_arrays(scalars={"x": np.linspace(0.0, 1.0, 1001)})
>>> lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
>>> lik.parameter_names
['a']
"""

import logging

from laddu_dask.analysis import BinFit, FitEnsemble, MCMCSummary, bootstrap_fit, fit_restarts
from laddu_dask.compile import CompiledModel, ReductionPlan
from laddu_dask.data import (
    Bin,
    BinnedDataset,
    Dataset,
    DatasetStats,
    EventBatch,
    Histogram,
    JointHistogram,
    JointHistogramDiagnostics,
    ParquetSink,
    RootSink,
    Schema,
    read_parquet,
    read_root,
)

# the demo's toy reaction, `from laddu_dask import ksks` (laddu_dask.datasets)
from laddu_dask.datasets import ksks  # noqa: F401
from laddu_dask.errors import (
    BudgetError,
    ClosureError,
    ClusterError,
    ClusterTimeoutError,
    DataChangedError,
    DataError,
    GenerationError,
    KernelCacheError,
    LadduDaskError,
    ModelError,
    NonFiniteError,
    NonPositiveIntensityError,
    NormalizationError,
    ParameterError,
    RestartWarning,
    SchedulerLostError,
    SchemaError,
    UnsafeOutputError,
)
from laddu_dask.expr import (
    AllowedPartialWave,
    Angles,
    BarrierKind,
    Edge,
    Expr,
    ExprNodeKind,
    InitialMomentum,
    Isospin,
    J,
    L,
    M,
    MandelstamChannel,
    MassProposal,
    Matrix,
    ParameterSpec,
    ParameterUpdate,
    Parity,
    PartialWave,
    Particle,
    Polarization,
    PolPhase,
    Predicate,
    RuleCheck,
    RuleReport,
    RuleSet,
    S,
    ScalarSource,
    SelectionRules,
    Sheet,
    Statistics,
    Vec3,
    Vec4,
    Vector,
    Vertex,
    VertexFrame,
    VertexProposal,
    WignerD,
    Zlm,
    acos,
    atan2,
    blatt_weisskopf,
    blatt_weisskopf_barriers,
    blatt_weisskopf_custom,
    breakup_momentum,
    breit_wigner,
    chew_mandelstam,
    cis,
    clebsch_gordan,
    constant,
    cparameter,
    dot,
    f_vector,
    flatte,
    k_matrix,
    matmul,
    matrix,
    matvec,
    p_vector,
    parameter,
    particles,
    polar_complex,
    q,
    relativistic_breit_wigner,
    relativistic_breit_wigner_custom,
    rho,
    scalar,
    solve,
    spherical_harmonic,
    vector,
)
from laddu_dask.expr import complex_ as complex  # noqa: A001 - laddu's name

# the public classes with the methods of the layers above theirs (laddu_dask.facade):
# Likelihood's many fits, projections and yields, Model's evaluation, Channel's generation check
from laddu_dask.facade import NLL, Channel, ExtendedNLL, Likelihood, Model, binned_likelihoods, fit_bins
from laddu_dask.generation import GenerationReport, Generator, ProvenEnvelopeReport
from laddu_dask.likelihood import (
    Ensemble,  # laddu's named parameter draws (bootstrap_fit, Ensemble.from_mcmc)
    FitResult,
    LassoPenalty,
    RidgePenalty,
    fit,
    ganesh,  # laddu's minimizer and sampler configurations
)
from laddu_dask.options import Device, FitMethod, Kernel, MemoryPolicy, Normalization, Precision, Scheduler

# the results layer: projections, fit fractions, yields, cross sections, closure studies
from laddu_dask.results import (
    AreaUnit,
    Axis,
    BinnedEstimate,
    ClosureResult,
    ComponentYieldProjection,
    CrossSection,
    CrossSectionProjection,
    Estimate,
    FitFractions,
    IntensityIntegrals,
    LikelihoodProjection,
    Luminosity,
    ProjectionHistograms,
    RateClosure,
    ScalarErrorView,
    Yield,
    YieldHistogramView,
    YieldProjection,
    closure_study,
    fit_fractions,
    plot_projection,
    projection_histograms,
)
from laddu_dask.runtime import (
    ExactPartials,
    Execution,
    MemoryBudget,
    MemoryDecision,
    MemoryPlan,
    PreparedDataset,
    PreparedModel,
    PreparedStats,
    ReductionEvaluation,
    exact_sum,
)
from laddu_dask.runtime.capabilities import backend, capabilities

__version__ = "0.1.0"

__all__ = [
    "BudgetError",
    "ClusterError",
    "ClusterTimeoutError",
    "CompiledModel",
    "DataChangedError",
    "DataError",
    "Dataset",
    "Device",
    "EventBatch",
    "ExactPartials",
    "Execution",
    "Expr",
    "ExtendedNLL",
    "FitMethod",
    "FitResult",
    "Kernel",
    "KernelCacheError",
    "LadduDaskError",
    "Likelihood",
    "MemoryBudget",
    "MemoryDecision",
    "MemoryPlan",
    "MemoryPolicy",
    "Model",
    "ModelError",
    "NLL",
    "NonFiniteError",
    "NonPositiveIntensityError",
    "Normalization",
    "NormalizationError",
    "ParameterError",
    "ParameterSpec",
    "Precision",
    "Predicate",
    "PreparedDataset",
    "PreparedModel",
    "PreparedStats",
    "ReductionEvaluation",
    "ReductionPlan",
    "RestartWarning",
    "Scheduler",
    "SchedulerLostError",
    "Schema",
    "SchemaError",
    "ExprNodeKind",
    "Vec3",
    "Vec4",
    "acos",
    "atan2",
    "blatt_weisskopf",
    "breakup_momentum",
    "breit_wigner",
    "cis",
    "complex",
    "constant",
    "cparameter",
    "exact_sum",
    "fit",
    "parameter",
    "polar_complex",
    "read_parquet",
    "read_root",
    "relativistic_breit_wigner",
    "scalar",
    "spherical_harmonic",
    # line shapes (issue 11)
    "BarrierKind",
    "Sheet",
    "blatt_weisskopf_barriers",
    "blatt_weisskopf_custom",
    "chew_mandelstam",
    "flatte",
    "q",
    "relativistic_breit_wigner_custom",
    "rho",
    # tags and parameter updates (issue 11, item 5)
    "ParameterUpdate",
    # angular momentum (issue 11)
    "Angles",
    "J",
    "L",
    "M",
    "Parity",
    "PolPhase",
    "Polarization",
    "S",
    "WignerD",
    "Zlm",
    "clebsch_gordan",
]

# matrices, vectors and the K-matrix (issue 11, items 2 and 3)
__all__ += ["Matrix", "Vector", "dot", "matmul", "matrix", "matvec", "solve", "vector"]
__all__ += ["f_vector", "k_matrix", "p_vector"]
# reaction topology and frames (issue 11, item 4)
__all__ += ["Channel", "Edge", "MandelstamChannel", "Particle", "Vertex", "VertexFrame", "particles"]
# generation settings of a channel
__all__ += ["InitialMomentum", "MassProposal", "ScalarSource", "VertexProposal"]
# particle metadata types
__all__ += ["Isospin", "Statistics"]
# quantum-number selection rules and partial waves
__all__ += ["AllowedPartialWave", "PartialWave", "RuleCheck", "RuleReport", "RuleSet", "SelectionRules"]
# dataset operations (issue 12)
__all__ += ["Bin", "BinnedDataset", "DatasetStats", "Histogram", "JointHistogram",
            "JointHistogramDiagnostics"]
# penalties and laddu's name of the error base class
__all__ += ["LassoPenalty", "LadduError", "RidgePenalty"]
# laddu's file destinations
__all__ += ["ParquetSink", "RootSink"]

#: laddu's name for the base class of every error laddu-dask raises.
LadduError = LadduDaskError
# many fits (issue 12)
__all__ += ["BinFit", "FitEnsemble", "MCMCSummary", "binned_likelihoods", "bootstrap_fit", "fit_bins",
            "fit_restarts"]
# physics results: projections, fractions, yields, cross sections, generation (issue 13)
__all__ += ["AreaUnit", "CrossSection", "Estimate", "FitFractions", "GenerationError", "GenerationReport",
            "Generator", "IntensityIntegrals", "LikelihoodProjection", "Luminosity", "ProjectionHistograms",
            "ProvenEnvelopeReport", "ScalarErrorView", "Yield", "fit_fractions", "plot_projection",
            "projection_histograms"]
# binned yields and cross sections, rate closure, combinations of periods
__all__ += ["Axis", "BinnedEstimate", "ComponentYieldProjection", "CrossSectionProjection", "RateClosure",
            "YieldHistogramView", "YieldProjection"]
# closure (input-output) studies (issue 13)
__all__ += ["ClosureError", "ClosureResult", "closure_study"]
# outputs that would replace what laddu-dask did not write (issue 23)
__all__ += ["UnsafeOutputError"]

# A library logs, the application decides where to: without a handler of the user's, Python's
# last-resort handler would print every warning a second time next to its warnings.warn.
logging.getLogger("laddu_dask").addHandler(logging.NullHandler())
# laddu's minimizer and sampler namespace (issue 24)
__all__ += ["ganesh"]
__all__ += ["backend", "capabilities"]

# laddu's io module: Schema, WriteResult, EventBatch, the readers (issue 24)
from laddu_dask import io  # noqa: E402 - the facade's last layer: it re-exports the data layer's names

__all__ += ["io"]
# laddu's parameter draws of a bootstrap or an MCMC run (issue 24)
__all__ += ["Ensemble"]
# laddu's amplitudes module, GPU discovery and expression display styles (issue 24)
# the facade's last layer: modules that re-export the expr layer's builders and the runtime's device list
from laddu_dask import amplitudes, gpu  # noqa: E402
from laddu_dask.expr import DisplayColor, NodeSelector, NodeStyle, NodeStyleRule  # noqa: E402

__all__ += ["DisplayColor", "NodeSelector", "NodeStyle", "NodeStyleRule", "amplitudes", "gpu"]
# laddu's diagnostics and memory telemetry (issue 24)
from laddu_dask.likelihood.diagnostics import DatasetDiagnostics, LikelihoodDiagnostics  # noqa: E402
from laddu_dask.memory_resources import MemoryResource, MemoryState  # noqa: E402

__all__ += ["DatasetDiagnostics", "LikelihoodDiagnostics", "MemoryResource", "MemoryState"]
# laddu's fit artifacts and analysis snapshots: fits saved without their data (issue 24)
from laddu_dask.analysis.snapshot import AnalysisSnapshot  # noqa: E402 - the facade's last layer
from laddu_dask.errors import FitArtifactError  # noqa: E402
from laddu_dask.likelihood.artifact import FitArtifact  # noqa: E402
from laddu_dask.likelihood.artifact_ensemble import FitEnsembleArtifact  # noqa: E402
from laddu_dask.likelihood.bound_state import BoundFitState  # noqa: E402

__all__ += ["AnalysisSnapshot", "BoundFitState", "FitArtifact", "FitArtifactError", "FitEnsembleArtifact"]
# laddu's I/O plug-in formats: bound sources of the registered Parquet and ROOT formats (issue 24)
from laddu_dask.data.sources import ParquetSource, RootSource  # noqa: E402

__all__ += ["ParquetSource", "RootSource"]
