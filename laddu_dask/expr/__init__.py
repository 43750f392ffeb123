"""Expressions: the immutable, hash-consed graph a model is written in.

Examples
--------
>>> from laddu_dask.expr import scalar, parameter, Model
>>> Model(scalar("x") * parameter("a", initial=2.0)).parameter_names
['a']
"""

from laddu_dask.expr.amplitudes import spherical_harmonic
from laddu_dask.expr.display_styles import DisplayColor, NodeSelector, NodeStyle, NodeStyleRule
from laddu_dask.expr.exprjson import ExprNodeKind
from laddu_dask.expr.extension import register_operation, unregister_operation
from laddu_dask.expr.functions import acos, atan2, cis, complex_, polar_complex
from laddu_dask.expr.graph import walk
from laddu_dask.expr.kmatrix import f_vector, k_matrix, p_vector
from laddu_dask.expr.linalg import Matrix, Vector, dot, matmul, matrix, matvec, solve, vector
from laddu_dask.expr.lineshapes import (
    Q_R,
    BarrierKind,
    blatt_weisskopf,
    blatt_weisskopf_barriers,
    blatt_weisskopf_custom,
    breit_wigner,
    flatte,
    relativistic_breit_wigner,
    relativistic_breit_wigner_custom,
)
from laddu_dask.expr.model import Model
from laddu_dask.expr.node import (
    Expr,
    apply,
    as_expr,
    column,
    constant,
    powi,
    scalar,
)
from laddu_dask.expr.parameter import ParameterSpec, cparameter, merge_parameters, parameter
from laddu_dask.expr.positivity import is_nonnegative
from laddu_dask.expr.predicate import Predicate
from laddu_dask.expr.tags import project, strip_tags, tags_of
from laddu_dask.expr.two_body import Sheet, breakup_momentum, chew_mandelstam, q, rho
from laddu_dask.expr.updates import ParameterUpdate
from laddu_dask.expr.vectors import Vec3, Vec4

# isort: split
# the particle table as a submodule (ld.particles), then the toolkit's modules (issue 11)
from laddu_dask.expr import particles
from laddu_dask.expr.angular import WignerD, clebsch_gordan
from laddu_dask.expr.frames import MandelstamChannel, VertexFrame
from laddu_dask.expr.isospin import Isospin
from laddu_dask.expr.particles import Particle
from laddu_dask.expr.polarization import Angles, Polarization, PolPhase, Zlm
from laddu_dask.expr.proposals import InitialMomentum, MassProposal, ScalarSource, VertexProposal
from laddu_dask.expr.quantum import J, L, M, Parity, S, Statistics
from laddu_dask.expr.rules import (
    AllowedPartialWave,
    PartialWave,
    RuleCheck,
    RuleReport,
    RuleSet,
)
from laddu_dask.expr.selection_rules import SelectionRules
from laddu_dask.expr.topology import Channel, Edge, Vertex

__all__ = [
    "Q_R",
    "Expr",
    "Model",
    "ParameterSpec",
    "Predicate",
    "ExprNodeKind",
    "Vec3",
    "Vec4",
    "acos",
    "apply",
    "as_expr",
    "atan2",
    "blatt_weisskopf",
    "breakup_momentum",
    "breit_wigner",
    "cis",
    "column",
    "complex_",
    "constant",
    "cparameter",
    "is_nonnegative",
    "merge_parameters",
    "parameter",
    "polar_complex",
    "relativistic_breit_wigner",
    "powi",
    "register_operation",
    "scalar",
    "spherical_harmonic",
    "unregister_operation",
    "walk",
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
    "project",
    "strip_tags",
    "tags_of",
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
# the colors and style rules of the expression displays
__all__ += ["DisplayColor", "NodeSelector", "NodeStyle", "NodeStyleRule"]
