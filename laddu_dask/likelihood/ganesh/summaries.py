"""What a ``ganesh`` minimization returns: laddu's ``MinimizationSummary`` and
``MultiStartSummary``.

``covariance`` is laddu's raw ganesh convention: the inverse Hessian of the objective. For
a ``-2 ln L`` objective that is *half* the physical covariance (a ``FitResult`` doubles
it); ``std`` is the square root of its diagonal. Methods without a Hessian (the
derivative-free ones, Adam, L-BFGS-B with ``error_mode="skip"``) leave both NaN.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.likelihood.ganesh.summaries import MinimizationSummary
>>> from laddu_dask.likelihood.ganesh.status import EvalCounts, StatusMessage
>>> s = MinimizationSummary(x=np.array([1.0]), fx=2.0, x0=np.array([0.0]), covariance=np.array([[0.25]]),
...                         evals=EvalCounts(f=3, g=3), message=StatusMessage(True, "GRADIENT CONVERGED"))
>>> s.std
array([0.5])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from laddu_dask.likelihood.ganesh.status import EvalCounts, StatusMessage

__all__ = ["MinimizationSummary", "MultiStartSummary"]


@dataclass(frozen=True, eq=False)
class MinimizationSummary:
    """A minimization's result: the point ``x`` and value ``fx`` it reached from ``x0``,
    the inverse-Hessian ``covariance`` and ``std`` (NaN where the method has none), the
    evaluation counts, the status message and the parameter names."""

    x: np.ndarray
    fx: float
    x0: np.ndarray
    covariance: np.ndarray
    evals: EvalCounts
    message: StatusMessage
    parameter_names: list[str] | None = None
    bounds: Sequence[tuple[float, float]] | None = field(default=None, repr=False)

    @property
    def std(self) -> np.ndarray:
        """The square roots of the covariance's diagonal (NaN where it is negative or NaN)."""
        d = np.diag(np.asarray(self.covariance, dtype=float)).copy()
        with np.errstate(invalid="ignore"):
            return np.where(d >= 0, np.sqrt(np.where(d >= 0, d, 0.0)), np.nan)

    @property
    def converged(self) -> bool:
        """Whether a convergence test stopped the run (``message.success``)."""
        return self.message.success

    def __str__(self) -> str:
        names = self.parameter_names or [f"x{i}" for i in range(len(self.x))]
        bounds = self.bounds or [(-np.inf, np.inf)] * len(self.x)
        status = "Converged" if self.message.success else "Not converged"
        lines = [
            "MINIMIZATION SUMMARY",
            f"Status: {status}   f(x) = {self.fx:.6g}   # f(x) = {self.evals.f}   "
            f"# grad f(x) = {self.evals.g}   # H(x) = {self.evals.h}",
            f"Message: {self.message}",
            f"{'Name':<12}{'Value':>14}{'Uncertainty':>14}{'Initial':>14}{'Lower':>12}{'Upper':>12}",
        ]
        for name, v, e, v0, (lo, hi) in zip(names, self.x, self.std, self.x0, bounds):
            lines.append(f"{name:<12}{v:>14.6g}{e:>14.6g}{v0:>14.6g}{lo:>12.6g}{hi:>12.6g}")
        return "\n".join(lines)


@dataclass(frozen=True, eq=False)
class MultiStartSummary:
    """Several minimizations of one objective from different starts: every run, the one
    with the lowest ``fx`` (``best``, ``best_run_index``; ``None`` without runs) and the
    number of restarts after the first run.

    Examples
    --------
    >>> import numpy as np
    >>> from laddu_dask.likelihood.ganesh.status import EvalCounts, StatusMessage
    >>> def run(fx):
    ...     return MinimizationSummary(np.zeros(1), fx, np.zeros(1), np.full((1, 1), np.nan),
    ...                                EvalCounts(), StatusMessage(True, "done"))
    >>> m = MultiStartSummary([run(3.0), run(1.0), run(2.0)])
    >>> m.best_run_index, m.best.fx, m.restart_count
    (1, 1.0, 2)
    """

    runs: list[MinimizationSummary]

    @property
    def best_run_index(self) -> int | None:
        finite = [i for i, r in enumerate(self.runs) if np.isfinite(r.fx)]
        return min(finite, key=lambda i: self.runs[i].fx) if finite else None

    @property
    def best(self) -> MinimizationSummary | None:
        i = self.best_run_index
        return None if i is None else self.runs[i]

    @property
    def restart_count(self) -> int:
        return max(len(self.runs) - 1, 0)

    def __str__(self) -> str:
        head = f"MULTISTART SUMMARY: {len(self.runs)} runs, best run {self.best_run_index}"
        return head if self.best is None else f"{head}\n{self.best}"
