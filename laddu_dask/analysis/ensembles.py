"""Ensembles of fits: restarts, bootstrap replicas, the fits of a binned analysis.

A :class:`FitEnsemble` is a list of :class:`~laddu_dask.likelihood.FitResult` (laddu's
``fit_restarts`` returns a list) that also knows which fits failed and why, the best fit,
the spread of the valid ones, and the parameter draws laddu's ``Ensemble`` holds.  A fit
that raised (a non-finite or non-positive intensity, a start outside the bounds, an
empty bin) is recorded as a result with ``valid=False``, ``fval`` NaN and the error in its
``message``, never silently: the other fits complete.

Examples
--------
>>> from laddu_dask.likelihood.fit import FitResult
>>> good = FitResult([1.0], [0.1], 3.0, True, 12, "migrad", None, ["a"])
>>> worse = FitResult([1.4], [0.1], 5.0, True, 15, "migrad", None, ["a"])
>>> ens = FitEnsemble([worse, good, failed_fit(["a"], [9.0], "migrad", ValueError("bad start"))])
>>> ens.best.fval, len(ens.valid), ens.failed
(3.0, 2, [(2, 'failed: ValueError: bad start')])
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from laddu_dask.files import read_json, write_json
from laddu_dask.likelihood.fit import FitResult

__all__ = ["FitEnsemble", "failed_fit"]


def failed_fit(names: Sequence[str], start: Sequence[float], method: str | None,
               error: BaseException) -> FitResult:
    """The record of a fit that raised ``error`` from ``start``: not valid, not converged
    (``outcome`` ``"failed"``), NaN ``fval``; ``method`` None is laddu's default, ``"lbfgsb"``."""
    return FitResult(
        values=[float(v) for v in start], errors=[math.nan] * len(names), fval=math.nan, valid=False,
        n_calls=0, method=method or "lbfgsb", covariance=None, parameter_names=list(names),
        message=f"failed: {type(error).__name__}: {error}", converged=False,
    )


class FitEnsemble(list):
    """Fits of one likelihood (restarts) or of its replicas (bootstrap), in order.

    Attributes
    ----------
    parameter_names : list of str
        The order of :attr:`draws`.
    starts : numpy.ndarray
        The start of each fit (rows), when known.
    label : str
        What the fits are (``"restarts"``, ``"bootstrap"``, ``"bin 3 [1.1, 1.2)"``).
    message : str
        What the ensemble as a whole should tell (``""``: nothing), such as restarts that all
        start at the same point because no parameter has a starting range.
    """

    def __init__(self, results: Iterable[FitResult] = (), *, parameter_names: Sequence[str] | None = None,
                 starts: Any = None, label: str = "", message: str = "") -> None:
        super().__init__(results)
        if parameter_names is None:
            parameter_names = self[0].parameter_names if self else []
        self.parameter_names = list(parameter_names)
        self.starts = None if starts is None else np.asarray(starts, dtype=np.float64)
        self.label = label
        self.message = message

    @property
    def valid(self) -> list[FitResult]:
        """The valid fits."""
        return [r for r in self if r.valid]

    @property
    def failed(self) -> list[tuple[int, str]]:
        """``(index, message)`` of every fit that is not valid (raised, or did not converge)."""
        return [(i, r.message) for i, r in enumerate(self) if not r.valid]

    @property
    def best(self) -> FitResult | None:
        """The valid fit of lowest ``fval`` (the lowest finite one when none is valid; None
        when every fit raised)."""
        for pool in (self.valid, [r for r in self if math.isfinite(r.fval)]):
            if pool:
                return min(pool, key=lambda r: r.fval)
        return None

    @property
    def draws(self) -> np.ndarray:
        """The values of the valid fits, one row each, :attr:`parameter_names` order
        (laddu's ``Ensemble.draws``)."""
        rows = [[r.named_parameters[n] for n in self.parameter_names] for r in self.valid]
        return np.array(rows, dtype=np.float64).reshape(len(rows), len(self.parameter_names))

    def spread(self) -> dict[str, float]:
        """The standard deviation (``ddof=1``) of each parameter over the valid fits (NaN
        for fewer than two): for a bootstrap, the parameter errors."""
        draws = self.draws
        if draws.shape[0] < 2:
            return {n: math.nan for n in self.parameter_names}
        return dict(zip(self.parameter_names, map(float, draws.std(axis=0, ddof=1)), strict=True))

    def __repr__(self) -> str:
        best = self.best
        head = (f"FitEnsemble({self.label + ': ' if self.label else ''}{len(self)} fits, "
                f"{len(self.valid)} valid, {len(self) - len(self.valid)} not")
        note = f"\n  {self.message}" if self.message else ""
        if best is None:
            return head + ")" + note
        lines = [head + f"; best fval = {best.fval:.10g})" + note]
        spread = self.spread()
        for name in self.parameter_names:
            lines.append(f"  {name:>14s} = {best.named_parameters[name]: .6g}  spread {spread[name]:.3g}")
        return "\n".join(lines)

    # -- results that last ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form: every fit's :meth:`~FitResult.to_dict`, the starts, the label and
        the message."""
        return {"kind": "laddu_dask.FitEnsemble", "label": self.label, "message": self.message,
                "parameter_names": self.parameter_names,
                "starts": None if self.starts is None else self.starts.tolist(),
                "fits": [r.to_dict() for r in self]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FitEnsemble:
        """The ensemble :meth:`to_dict` described."""
        return cls([FitResult.from_dict(f) for f in d["fits"]], parameter_names=d["parameter_names"],
                   starts=d.get("starts"), label=d.get("label", ""), message=d.get("message", ""))

    def save(self, path: Any) -> None:
        """Write the ensemble as JSON, atomically, with provenance."""
        write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: Any) -> FitEnsemble:
        """The ensemble :meth:`save` wrote."""
        return cls.from_dict(read_json(path, "laddu_dask.FitEnsemble"))
