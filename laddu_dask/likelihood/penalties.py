"""Regularization terms of a likelihood (laddu's ``RidgePenalty`` and ``LassoPenalty``).

A penalty reads no data: it adds ``2 lambda_ sum(p**2)`` (ridge) or ``2 lambda_ sum(|p|)``
(lasso) of the named parameters to ``-2 ln L``, with its exact gradient (``4 lambda_ p``;
``2 lambda_ sign(p)``, 0 at 0).  Put it in a :class:`~laddu_dask.Likelihood` beside the
NLL terms whose parameters it names.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> model = ld.Model((ld.parameter("c0", initial=0.5) + ld.parameter("c1", initial=0.2) * x) ** 2 + 0.1)
>>> data = ld.Dataset.from_arrays(scalars={"x": np.linspace(-1, 1, 200)})
>>> nll = ld.NLL(model, data=data, accepted_mc=data)
>>> plain = ld.Likelihood([nll]).value([0.5, 0.2])
>>> ridge = ld.Likelihood([nll, ld.RidgePenalty(["c1"], lambda_=3.0)])
>>> round(ridge.value([0.5, 0.2]) - plain, 12)  # 2 * 3 * 0.2**2
0.24
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["LassoPenalty", "Penalty", "RidgePenalty"]


class Penalty:
    """The shared part of the penalties: parameter names, strength and name, checked."""

    kind = "penalty"

    def __init__(self, parameters: Sequence[str], *, lambda_: float, name: str) -> None:
        if isinstance(parameters, str) or not all(isinstance(p, str) and p for p in parameters):
            raise ValueError(f"{type(self).__name__}: parameters must be a sequence of parameter names, "
                             f"got {parameters!r}")
        if len(set(parameters)) != len(parameters) or not parameters:
            raise ValueError(f"{type(self).__name__}: name each parameter once (and at least one), got "
                             f"{list(parameters)}")
        if isinstance(lambda_, bool) or not isinstance(lambda_, int | float) or not (
                math.isfinite(lambda_) and lambda_ >= 0):
            raise ValueError(f"{type(self).__name__}: lambda_ must be a finite number >= 0, got {lambda_!r}")
        if not isinstance(name, str) or not name:
            raise ValueError(f"a term name must be a non-empty string, got {name!r}")
        self.parameter_names = list(parameters)
        self.lambda_ = float(lambda_)
        self.name = name

    def value_and_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """The penalty and its gradient at the values ``x`` of :attr:`parameter_names`."""
        raise NotImplementedError  # pragma: no cover - each penalty defines it

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.parameter_names}, lambda_={self.lambda_}, name={self.name!r})"


class RidgePenalty(Penalty):
    """``2 lambda_ sum(p**2)`` of the named parameters (laddu's ``RidgePenalty``)."""

    def __init__(self, parameters: Sequence[str], *, lambda_: float, name: str = "ridge") -> None:
        super().__init__(parameters, lambda_=lambda_, name=name)

    def value_and_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        return 2.0 * self.lambda_ * math.fsum(x * x), 4.0 * self.lambda_ * x


class LassoPenalty(Penalty):
    """``2 lambda_ sum(|p|)`` of the named parameters (laddu's ``LassoPenalty``)."""

    def __init__(self, parameters: Sequence[str], *, lambda_: float, name: str = "lasso") -> None:
        super().__init__(parameters, lambda_=lambda_, name=name)

    def value_and_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        return 2.0 * self.lambda_ * math.fsum(np.abs(x)), 2.0 * self.lambda_ * np.sign(x)
