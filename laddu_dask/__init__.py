"""laddu-dask: amplitude analysis on Dask.

Models are symbolic expressions compiled to per-partition array kernels; datasets
are Dask-partitioned event samples, kept resident or streamed from Parquet under a
memory budget; likelihoods and their exact gradients are reduced with exact
(error-free) partial sums, so results do not depend on partitioning.

The public namespace is organised by topic, the topics of the API reference's pages
(``docs/api/``): models, reactions, data, likelihoods and fits, many fits, results, generation,
execution, errors; each has one import block below and one group of ``__all__``.  ``Model``,
``Channel`` and the likelihoods come from ``laddu_dask.facade``, which assembles them above the
layers whose methods they carry.  ``tests/public_api.txt`` lists every public name and signature;
the snapshot test fails on any change to them that was not written there on purpose.

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

# models: expressions, amplitudes, line shapes
from laddu_dask import amplitudes
from laddu_dask.expr import (
    Angles,
    BarrierKind,
    DisplayColor,
    Expr,
    ExprNodeKind,
    Matrix,
    NodeSelector,
    NodeStyle,
    NodeStyleRule,
    ParameterSpec,
    ParameterUpdate,
    Polarization,
    PolPhase,
    Predicate,
    Sheet,
    Vec3,
    Vec4,
    Vector,
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
from laddu_dask.facade import Model

# isort: split
# reactions, particles and quantum numbers
from laddu_dask.expr import (
    AllowedPartialWave,
    Edge,
    Isospin,
    J,
    L,
    M,
    MandelstamChannel,
    Parity,
    PartialWave,
    Particle,
    RuleCheck,
    RuleReport,
    RuleSet,
    S,
    SelectionRules,
    Statistics,
    Vertex,
    VertexFrame,
    particles,
)
from laddu_dask.facade import Channel

# isort: split
# data: datasets, files, histograms
from laddu_dask import io
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
from laddu_dask.data.sources import ParquetSource, RootSource

# isort: split
# likelihoods and fits
from laddu_dask.analysis.snapshot import AnalysisSnapshot
from laddu_dask.facade import NLL, ExtendedNLL, Likelihood
from laddu_dask.likelihood import FitResult, LassoPenalty, RidgePenalty, fit, ganesh
from laddu_dask.likelihood.artifact import FitArtifact
from laddu_dask.likelihood.artifact_ensemble import FitEnsembleArtifact
from laddu_dask.likelihood.bound_state import BoundFitState
from laddu_dask.likelihood.diagnostics import DatasetDiagnostics, LikelihoodDiagnostics

# isort: split
# many fits: restarts, bootstrap, bins, closure, MCMC
from laddu_dask.analysis import BinFit, FitEnsemble, MCMCSummary, bootstrap_fit, fit_restarts
from laddu_dask.facade import binned_likelihoods, fit_bins
from laddu_dask.likelihood import Ensemble
from laddu_dask.results import ClosureResult, closure_study

# isort: split
# results: projections, fit fractions, yields, cross sections
from laddu_dask.results import (
    AreaUnit,
    Axis,
    BinnedEstimate,
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
    fit_fractions,
    plot_projection,
    projection_histograms,
)

# isort: split
# Monte Carlo generation
from laddu_dask.expr import InitialMomentum, MassProposal, ScalarSource, VertexProposal
from laddu_dask.generation import GenerationReport, Generator, ProvenEnvelopeReport

# isort: split
# execution, memory and backends
from laddu_dask import gpu
from laddu_dask.compile import CompiledModel, ReductionPlan
from laddu_dask.memory_resources import MemoryResource, MemoryState
from laddu_dask.options import Device, FitMethod, Kernel, MemoryPolicy, Normalization, Precision, Scheduler
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

# isort: split
# errors and warnings
from laddu_dask.errors import (
    BudgetError,
    ClosureError,
    ClusterError,
    ClusterTimeoutError,
    DataChangedError,
    DataError,
    DiskTierError,
    FitArtifactError,
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

# isort: split
# the tour's toy reaction: `from laddu_dask import ksks` (laddu_dask.datasets; not in __all__)
from laddu_dask.datasets import ksks  # noqa: F401

__version__ = "0.1.0"

#: laddu's name for the base class of every error laddu-dask raises.
LadduError = LadduDaskError

__all__ = [
    # models: expressions, amplitudes, line shapes
    "Angles", "BarrierKind", "DisplayColor", "Expr", "ExprNodeKind", "Matrix", "Model", "NodeSelector",
    "NodeStyle", "NodeStyleRule", "ParameterSpec", "ParameterUpdate", "PolPhase", "Polarization", "Predicate",
    "Sheet", "Vec3", "Vec4", "Vector", "WignerD", "Zlm", "acos", "amplitudes", "atan2", "blatt_weisskopf",
    "blatt_weisskopf_barriers", "blatt_weisskopf_custom", "breakup_momentum", "breit_wigner",
    "chew_mandelstam", "cis", "clebsch_gordan", "complex", "constant", "cparameter", "dot", "f_vector",
    "flatte", "k_matrix", "matmul", "matrix", "matvec", "p_vector", "parameter", "polar_complex", "q",
    "relativistic_breit_wigner", "relativistic_breit_wigner_custom", "rho", "scalar", "solve",
    "spherical_harmonic", "vector",
    # reactions, particles and quantum numbers
    "AllowedPartialWave", "Channel", "Edge", "Isospin", "J", "L", "M", "MandelstamChannel", "Parity",
    "PartialWave", "Particle", "RuleCheck", "RuleReport", "RuleSet", "S", "SelectionRules", "Statistics",
    "Vertex", "VertexFrame", "particles",
    # data: datasets, files, histograms
    "Bin", "BinnedDataset", "Dataset", "DatasetStats", "EventBatch", "Histogram", "JointHistogram",
    "JointHistogramDiagnostics", "ParquetSink", "ParquetSource", "RootSink", "RootSource", "Schema", "io",
    "read_parquet", "read_root",
    # likelihoods and fits
    "AnalysisSnapshot", "BoundFitState", "DatasetDiagnostics", "ExtendedNLL", "FitArtifact",
    "FitEnsembleArtifact", "FitResult", "LassoPenalty", "Likelihood", "LikelihoodDiagnostics", "NLL",
    "RidgePenalty", "fit", "ganesh",
    # many fits: restarts, bootstrap, bins, closure, MCMC
    "BinFit", "ClosureResult", "Ensemble", "FitEnsemble", "MCMCSummary", "binned_likelihoods",
    "bootstrap_fit", "closure_study", "fit_bins", "fit_restarts",
    # results: projections, fit fractions, yields, cross sections
    "AreaUnit", "Axis", "BinnedEstimate", "ComponentYieldProjection", "CrossSection",
    "CrossSectionProjection", "Estimate", "FitFractions", "IntensityIntegrals", "LikelihoodProjection",
    "Luminosity", "ProjectionHistograms", "RateClosure", "ScalarErrorView", "Yield", "YieldHistogramView",
    "YieldProjection", "fit_fractions", "plot_projection", "projection_histograms",
    # Monte Carlo generation
    "GenerationReport", "Generator", "InitialMomentum", "MassProposal", "ProvenEnvelopeReport",
    "ScalarSource", "VertexProposal",
    # execution, memory and backends
    "CompiledModel", "Device", "ExactPartials", "Execution", "FitMethod", "Kernel", "MemoryBudget",
    "MemoryDecision", "MemoryPlan", "MemoryPolicy", "MemoryResource", "MemoryState", "Normalization",
    "Precision", "PreparedDataset", "PreparedModel", "PreparedStats", "ReductionEvaluation", "ReductionPlan",
    "Scheduler", "backend", "capabilities", "exact_sum", "gpu",
    # errors and warnings
    "BudgetError", "ClosureError", "ClusterError", "ClusterTimeoutError", "DataChangedError", "DataError",
    "DiskTierError", "FitArtifactError", "GenerationError", "KernelCacheError", "LadduDaskError",
    "LadduError", "ModelError", "NonFiniteError", "NonPositiveIntensityError", "NormalizationError",
    "ParameterError", "RestartWarning", "SchedulerLostError", "SchemaError", "UnsafeOutputError",
]

# A library logs, the application decides where to: without a handler of the user's, Python's
# last-resort handler would print every warning a second time next to its warnings.warn.
logging.getLogger("laddu_dask").addHandler(logging.NullHandler())
