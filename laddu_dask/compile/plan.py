"""Reduction plans: what each event contributes to a weighted sum.

Each event contributes ``weight * transform(Re value)``.  The transforms are
``real`` (the value itself), ``positive_real`` (the value, which must be positive)
and ``log_positive_real`` (its logarithm, which needs a positive value).  Every
transform needs a finite value: an infinite or NaN one is a
:class:`~laddu_dask.errors.NonFiniteError`, a finite one that a positive transform
rejects a :class:`~laddu_dask.errors.NonPositiveIntensityError`, both naming the event
(:func:`rejected_value_error`; every kernel reports the same).  The plan also gives the
derivative of an event's term with respect to the value, the seed of the reverse-mode
gradient.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> plan = ld.ReductionPlan.weighted_log_positive_real()
>>> plan.terms(np.array([1.0, np.e]), np.array([2.0, 1.0]))
array([0., 1.])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from laddu_dask.errors import LadduDaskError, NonFiniteError, NonPositiveIntensityError
from laddu_dask.expr.arrayfuncs import array_module
from laddu_dask.options import Transform

TRANSFORMS = Transform.values()

#: Reduction transforms as the generated kernels number them.
TRANSFORM_CODES = {t: code for code, t in enumerate(TRANSFORMS)}


def transform_code(transform: str) -> int:
    """The kernels' number of a reduction transform.

    Examples
    --------
    >>> transform_code("log_positive_real")
    2
    """
    return TRANSFORM_CODES[Transform.check(transform, "reduction transform")]


def rejected_value_error(value: float, event: int, source: str, transform: str) -> LadduDaskError:
    """The error for an event whose value a reduction rejects.

    Parameters
    ----------
    value : float
        The event's (real) value.
    event : int
        Its global index.
    source : str
        Where it comes from (file and rows).
    transform : str
        The reduction transform.

    Examples
    --------
    >>> rejected_value_error(float("inf"), 7, "data.parquet", "real")
    NonFiniteError('non-finite intensity inf at event 7 (data.parquet); a real reduction needs finite values')
    >>> type(rejected_value_error(-1.0, 7, "data.parquet", "positive_real")).__name__
    'NonPositiveIntensityError'
    """
    if math.isfinite(value):
        return NonPositiveIntensityError(
            f"non-positive intensity {value!r} at event {event} ({source}); a {transform} "
            "reduction needs positive values"
        )
    return NonFiniteError(
        f"non-finite intensity {value!r} at event {event} ({source}); a {transform} reduction "
        "needs finite values"
    )


@dataclass(frozen=True)
class ReductionPlan:
    """A weighted event reduction ``sum_i w_i t(Re v_i)``.

    Parameters
    ----------
    transform : {"real", "positive_real", "log_positive_real"}
        The per-event transform ``t``.
    """

    transform: str = "real"

    def __post_init__(self) -> None:
        transform_code(self.transform)

    @classmethod
    def weighted_real(cls) -> ReductionPlan:
        """``sum w Re(v)`` (any finite value)."""
        return cls("real")

    @classmethod
    def weighted_positive_real(cls) -> ReductionPlan:
        """``sum w Re(v)``, rejecting a non-positive (or non-finite) value."""
        return cls("positive_real")

    @classmethod
    def weighted_log_positive_real(cls) -> ReductionPlan:
        """``sum w log(Re v)``, rejecting a non-positive (or non-finite) value."""
        return cls("log_positive_real")

    @property
    def needs_positive(self) -> bool:
        """Whether values must be positive."""
        return self.transform != "real"

    def check(self, real_value: Any, *, offset: int = 0, source: str = "events") -> None:
        """Raise if a value is not finite, or not positive where it must be.

        Raises
        ------
        NonFiniteError
            An infinite or NaN value, naming the first offending event's global index and
            its source.
        NonPositiveIntensityError
            The same for a finite value ``<= 0`` under a positive transform.
        """
        xp = array_module(real_value)
        if self.needs_positive:
            bad = ~((real_value > 0) & (real_value < math.inf))
        else:
            bad = ~xp.isfinite(real_value)
        if bool(xp.any(bad)):
            i = int(xp.argmax(bad))
            raise rejected_value_error(float(real_value[i]), offset + i, source, self.transform)

    def terms(self, real_value: Any, weights: Any, *, offset: int = 0, source: str = "events") -> Any:
        """Per-event terms ``w t(v)`` after :meth:`check`, in float64.

        The value and the weight are widened to float64 before the transform, as the fused
        and CUDA kernels do: in single precision only the model value is rounded to float32,
        never its logarithm, so which kernel runs does not change the precision of a term.
        """
        self.check(real_value, offset=offset, source=source)
        xp = array_module(real_value)
        v, w = xp.asarray(real_value, dtype=xp.float64), xp.asarray(weights, dtype=xp.float64)
        if self.transform == "log_positive_real":
            return w * xp.log(v)
        return w * v

    def seed(self, real_value: Any, weights: Any) -> Any:
        """``d (w t(v)) / d v`` per event, the reverse-mode seed, in the value's precision.

        ``w / v`` is computed in float64 and rounded once to the value's precision (the
        precision of the reverse sweep), as the fused kernel does.
        """
        if self.transform == "log_positive_real":
            xp = array_module(real_value)
            seed = xp.asarray(weights, dtype=xp.float64) / xp.asarray(real_value, dtype=xp.float64)
            return seed.astype(xp.asarray(real_value).dtype, copy=False)
        return weights

