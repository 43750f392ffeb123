"""Reduction plans: what each event contributes to a weighted sum.

Each event contributes ``weight * transform(Re value)``.  The transforms are
``real`` (the value itself), ``positive_real`` (the value, which must be positive)
and ``log_positive_real`` (its logarithm, which needs a positive value).  The plan
also gives the derivative of an event's term with respect to the value, the seed
of the reverse-mode gradient.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> plan = ld.ReductionPlan.weighted_log_positive_real()
>>> plan.terms(np.array([1.0, np.e]), np.array([2.0, 1.0]))
array([0., 1.])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from laddu_dask.errors import NonPositiveIntensityError

TRANSFORMS = ("real", "positive_real", "log_positive_real")


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
        if self.transform not in TRANSFORMS:
            raise ValueError(
                f"unknown reduction transform {self.transform!r}; use one of {', '.join(TRANSFORMS)}"
            )

    @classmethod
    def weighted_real(cls) -> ReductionPlan:
        """``sum w Re(v)``."""
        return cls("real")

    @classmethod
    def weighted_positive_real(cls) -> ReductionPlan:
        """``sum w Re(v)``, rejecting a non-positive value."""
        return cls("positive_real")

    @classmethod
    def weighted_log_positive_real(cls) -> ReductionPlan:
        """``sum w log(Re v)``, rejecting a non-positive value."""
        return cls("log_positive_real")

    @property
    def needs_positive(self) -> bool:
        """Whether values must be positive."""
        return self.transform != "real"

    def check(self, real_value: Any, *, offset: int = 0, source: str = "events") -> None:
        """Raise if a value that must be positive is not.

        Raises
        ------
        NonPositiveIntensityError
            Naming the first offending event's global index and its source.
        """
        if not self.needs_positive:
            return
        xp = _xp(real_value)
        bad = ~(real_value > 0)
        if bool(xp.any(bad)):
            i = int(xp.argmax(bad))
            raise NonPositiveIntensityError(
                f"non-positive intensity {float(real_value[i])!r} at event {offset + i} "
                f"({source}); a {self.transform} reduction needs positive values"
            )

    def terms(self, real_value: Any, weights: Any, *, offset: int = 0, source: str = "events") -> Any:
        """Per-event terms ``w t(v)`` after :meth:`check`."""
        self.check(real_value, offset=offset, source=source)
        if self.transform == "log_positive_real":
            return weights * _xp(real_value).log(real_value)
        return weights * real_value

    def seed(self, real_value: Any, weights: Any) -> Any:
        """``d (w t(v)) / d v`` per event, the reverse-mode seed."""
        if self.transform == "log_positive_real":
            return weights / real_value
        return weights


def _xp(a: Any) -> Any:
    from laddu_dask.expr.arrayfuncs import array_module

    return array_module(a)
