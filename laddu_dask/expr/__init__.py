"""Expressions: the immutable, hash-consed graph a model is written in.

Examples
--------
>>> from laddu_dask.expr import scalar, parameter, Model
>>> Model(scalar("x") * parameter("a", initial=2.0)).parameter_names
['a']
"""

from laddu_dask.expr.amplitudes import (
    Q_R,
    blatt_weisskopf,
    breakup_momentum,
    breit_wigner,
    relativistic_breit_wigner,
    spherical_harmonic,
)
from laddu_dask.expr.model import Model
from laddu_dask.expr.node import (
    Expr,
    apply,
    as_expr,
    atan2,
    column,
    complex_,
    constant,
    polar_complex,
    powi,
    scalar,
    walk,
)
from laddu_dask.expr.ops import register_operation, unregister_operation
from laddu_dask.expr.parameter import ParameterSpec, merge_parameters, parameter
from laddu_dask.expr.vectors import Vec3, Vec4

__all__ = [
    "Q_R",
    "Expr",
    "Model",
    "ParameterSpec",
    "Vec3",
    "Vec4",
    "apply",
    "as_expr",
    "atan2",
    "blatt_weisskopf",
    "breakup_momentum",
    "breit_wigner",
    "column",
    "complex_",
    "constant",
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
]
